package medic

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// SendFileOptions configure SendFile.
type SendFileOptions struct {
	Encode EncodeOptions
	Send   SendOptions
	// SpoolDir keeps encoded containers until the receiver has stored
	// them, so that a failed send resumes with the very same bytes.
	SpoolDir string
	// Fallback names the plugin to send with when the receiver could not
	// regenerate the output with Encode.Plugin (ErrDigest: a regenerated
	// output that does not match the original). "" sends nothing more.
	Fallback string
}

// FileReport is what SendFile did.
type FileReport struct {
	Header   Header
	Encode   time.Duration // f: encoding and sealing (0 when the spool had it)
	Reused   bool          // the container came from the spool
	MetaSize int64         // container bytes (x)
	Send     *SendReport
	// Wall is the whole attempt as the sender saw it, encoding included.
	Wall time.Duration
	// Plugin is the plugin that carried the output: Encode.Plugin, or the
	// fallback, with FellBack saying why and Failed what the attempt with
	// Encode.Plugin cost (its Send is nil when no answer came).
	Plugin   string
	FellBack error
	Failed   *FileReport
}

// SendFile encodes the output at path (or finds its container in the
// spool from an earlier, interrupted attempt), sends it, and removes the
// spooled container once the receiver has stored the output. When the
// receiver cannot regenerate the output and o.Fallback names a plugin, it
// sends again with that plugin; the report says so.
func SendFile(ctx context.Context, path string, o SendFileOptions) (*FileReport, error) {
	rep, err := sendFile(ctx, path, o)
	if err == nil || o.Fallback == "" || o.Fallback == o.Encode.Plugin || !errors.Is(err, ErrDigest) {
		return rep, err
	}
	why, failed := err, rep
	// The first plugin's params (paths at this site) mean nothing to the
	// fallback; keep them out of its header.
	o.Encode.Plugin, o.Encode.Params = o.Fallback, nil
	rep, err = sendFile(ctx, path, o)
	if err != nil {
		return rep, fmt.Errorf("sending with %s after the receiver could not regenerate the output (%v): %w", o.Fallback, why, err)
	}
	rep.FellBack, rep.Failed = why, failed
	return rep, nil
}

func sendFile(ctx context.Context, path string, o SendFileOptions) (rep *FileReport, err error) {
	t0 := time.Now()
	defer func() {
		if rep != nil {
			rep.Wall = time.Since(t0)
		}
	}()
	if o.SpoolDir == "" {
		return nil, errors.New("medic: SendFile needs a spool directory")
	}
	if err := os.MkdirAll(o.SpoolDir, 0o700); err != nil {
		return nil, err
	}
	expireSpool(o.SpoolDir, SpoolTTL)
	if o.Send.Name == "" {
		o.Send.Name = filepath.Base(path)
	}
	if _, err := SourceFile(path); err != nil {
		return nil, err
	}
	_, dg, err := FileDigest(path)
	if err != nil {
		return nil, err
	}
	spool := filepath.Join(o.SpoolDir, SpoolName(dg, o.Encode, o.Send.Name))
	rep = &FileReport{Plugin: o.Encode.Plugin}
	if h, err := checkSpool(spool, o.Encode.Key); err == nil && h.Digest == dg {
		rep.Header, rep.Reused = h, true
		// Used now: SpoolTTL counts from here, as the receiver's
		// staging TTL counts from this send's resumption.
		now := time.Now()
		_ = os.Chtimes(spool, now, now)
	} else {
		t0 := time.Now()
		h, err := encodeFile(ctx, path, o.Encode, o.SpoolDir, spool)
		if err != nil {
			return nil, err
		}
		rep.Header, rep.Encode = h, time.Since(t0)
	}
	if st, err := os.Stat(spool); err == nil {
		rep.MetaSize = st.Size()
	}
	sr, err := Send(ctx, spool, o.Send)
	rep.Send = sr
	if err != nil {
		if errors.Is(err, ErrIntegrity) && !errors.Is(err, ErrTransit) {
			os.Remove(spool) // encode afresh next time
		}
		return rep, err
	}
	os.Remove(spool)
	return rep, nil
}

func checkSpool(path string, key []byte) (Header, error) {
	f, err := os.Open(path)
	if err != nil {
		return Header{}, err
	}
	defer f.Close()
	h, _, err := Verify(bufio.NewReader(f), key)
	if err != nil {
		return Header{}, fmt.Errorf("spooled container %s: %w", path, err)
	}
	return h, nil
}

// SpoolTTL is how long a spooled container is kept for a resumption,
// counted from the last send that used it: a send that failed and was
// never tried again leaves its container in the spool, which would
// otherwise grow for ever.
const SpoolTTL = DefaultStagingTTL

// expireSpool removes the containers (NAME.medic) and cut-short encodes
// (.encode-*) in dir older than ttl: a resumption after that encodes
// afresh. Nothing else in dir is touched.
func expireSpool(dir string, ttl time.Duration) {
	es, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range es {
		n := e.Name()
		if !e.Type().IsRegular() || !(strings.HasSuffix(n, ".medic") || strings.HasPrefix(n, ".encode-")) {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) >= ttl {
			_ = os.Remove(filepath.Join(dir, n))
		}
	}
}
