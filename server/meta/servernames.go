package meta

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"go.etcd.io/bbolt"
)

// keyServerNames, in bucketMeta, holds the I/O servers' names in index
// order (JSON), as Options.ServerNames gave them.
var keyServerNames = []byte("server-names")

// ServerOrderError is Open's refusal of I/O servers named in another
// order than the database recorded: a layout names its servers by index,
// and every server holds a file's datafile under the file's ID, so two
// servers that trade places (their lines swapped in the cluster file)
// would each serve the other's strips.
type ServerOrderError struct {
	Path  string
	Moved []string // "index 0: data1 here, data0 in the database"
}

func (e *ServerOrderError) Error() string {
	return fmt.Sprintf("meta: open %s: the I/O servers are not in the order the store's files use:\n  %s\n"+
		"Put the data lines of the cluster file (or --data) back in their original order (servers can be added at the end); "+
		"for servers renamed on purpose, start once with --rename-servers", e.Path, strings.Join(e.Moved, "\n  "))
}

// checkServerNames compares Options.ServerNames with the names the
// database recorded, index by index, and records them: the first time,
// for servers added at the end, and for names changed on purpose
// (RenameServers). Servers recorded beyond the names given keep their
// record (a cluster started with fewer servers than before).
func (s *Store) checkServerNames(path string) error {
	names := s.opts.ServerNames
	if len(names) == 0 {
		return nil
	}
	return s.db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketMeta)
		var recorded []string
		if v := b.Get(keyServerNames); v != nil {
			if err := json.Unmarshal(v, &recorded); err != nil {
				return fmt.Errorf("meta: open %s: %s: %w", path, keyServerNames, err)
			}
		}
		e := &ServerOrderError{Path: path}
		for i := range min(len(names), len(recorded)) {
			if names[i] != recorded[i] {
				e.Moved = append(e.Moved, fmt.Sprintf("I/O server %d: %s here, %s in the database", i, names[i], recorded[i]))
			}
		}
		if len(e.Moved) > 0 && !s.opts.RenameServers {
			return e
		}
		merged := slices.Clone(names)
		if len(recorded) > len(names) {
			merged = append(merged, recorded[len(names):]...)
		}
		if slices.Equal(merged, recorded) {
			return nil
		}
		v, err := json.Marshal(merged)
		if err != nil {
			return err
		}
		return b.Put(keyServerNames, v)
	})
}
