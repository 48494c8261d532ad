package blast

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pario/pario/medic"
)

// resourceKeys are the storage-site resources the plugin reads (doc.go).
var resourceKeys = []string{"blast.bin", "blast.chunks", "blast.db", "blast.workers"}

// dbExts are the extensions of a BLAST database's files; a resource named
// with one (nr.pin) names a file, not the database.
var dbExts = []string{".pal", ".nal", ".pin", ".nin", ".psq", ".nsq", ".phr", ".nhr", ".pdb", ".ndb",
	".pot", ".not", ".ptf", ".ntf", ".pto", ".nto", ".pos", ".nos", ".pog", ".nog"}

// checkTimeout bounds blastdbcmd -info at the receiver's start; it reads
// the index only, milliseconds even for nr.
const checkTimeout = time.Minute

// CheckResources implements medic.ResourceChecker: the keys are the
// plugin's, blast.workers and blast.chunks positive integers, blast.bin a
// directory holding the programs, and blast.db a database blastdbcmd can
// open (its files there, under the name given without an extension).
func (Plugin) CheckResources(ctx context.Context, res map[string]string) error {
	keys := make([]string, 0, len(res))
	for k := range res {
		if strings.HasPrefix(k, "blast.") {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.Contains(resourceKeys, k) {
			return &medic.ResourceError{Key: k, Value: res[k], Err: fmt.Errorf("the blast plugin has no such resource (it reads %s)", strings.Join(resourceKeys, ", "))}
		}
	}
	for _, k := range []string{"blast.workers", "blast.chunks"} {
		if _, err := positive(res, k, 1); err != nil {
			return &medic.ResourceError{Key: k, Value: res[k], Err: errors.New("want a positive integer")}
		}
	}
	bin, binSet := res["blast.bin"]
	if binSet {
		if err := checkBin(bin); err != nil {
			return &medic.ResourceError{Key: "blast.bin", Value: bin, Err: err}
		}
	}
	db, ok := res["blast.db"]
	if !ok {
		return nil // regeneration says it lacks it, sending the output raw still works
	}
	if err := checkDB(ctx, bin, db); err != nil {
		return &medic.ResourceError{Key: "blast.db", Value: db, Err: err}
	}
	return nil
}

func checkBin(bin string) error {
	st, err := os.Stat(bin)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return errors.New("not a directory: want the directory holding blastdbcmd, makeblastdb and the search programs")
	}
	for _, name := range []string{"blastdbcmd", "makeblastdb"} {
		if _, err := tool(bin, name); err != nil {
			return err
		}
	}
	return nil
}

func checkDB(ctx context.Context, bin, db string) error {
	if db == "" {
		return errors.New("empty: want the path of the database (/data/nr for /data/nr.pin)")
	}
	if st, err := os.Stat(db); err == nil {
		if st.IsDir() {
			return errors.New("is a directory: name the database in it by its files' name without the extension (DIR/nr for DIR/nr.pin)")
		}
		if ext := filepath.Ext(db); slices.Contains(dbExts, ext) {
			return fmt.Errorf("names one of the database's files: name the database without %s (%s)", ext, strings.TrimSuffix(db, ext))
		}
	}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	if _, _, err := dbInfo(ctx, bin, db); err != nil {
		if errors.Is(err, medic.ErrMissing) {
			return err // the programs, not the database
		}
		return fmt.Errorf("no BLAST database there (%s.pin or .pal, .nin or .nal, that blastdbcmd reads): %w", db, err)
	}
	return nil
}
