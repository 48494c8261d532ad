package medic_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/medic"
	"github.com/pario/pario/medic/medictest"
)

// growPlugin stands for an output still being written while it is
// encoded: its Encode appends to the file before it writes the metadata
// (the whole file as it then is).
type growPlugin struct{}

func (growPlugin) Name() string { return "grow-test" }

func (growPlugin) Encode(_ context.Context, src medic.Source, meta io.Writer) error {
	f, err := os.OpenFile(src.Path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	f.WriteString("a line written during the encode\n")
	f.Close()
	b, err := os.ReadFile(src.Path)
	if err != nil {
		return err
	}
	_, err = meta.Write(b)
	return err
}

func (growPlugin) Decode(_ context.Context, meta io.Reader, out io.Writer, _ medic.Env) error {
	_, err := io.Copy(out, meta)
	return err
}

func init() { medic.Register(growPlugin{}) }

// TestSourceChangedWhileEncoding: an output that changes while it is
// encoded is refused at the sender, naming the file, before anything is
// sent. Before, the container went out with the digest of the file as it
// was and the metadata of the file as it became: the receiver regenerated
// it, found the digest wrong and answered ErrDigest ("is the replica the
// same database?"), after the whole transfer, and send fell back to zstd.
func TestSourceChangedWhileEncoding(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	startServer(t, s, nil, nil)
	p := writeFile(t, "out.txt", report(200))
	rep, err := sendFile(t, s, p, "grow-test", medic.SendOptions{})
	if !errors.Is(err, medic.ErrSourceChanged) || !strings.Contains(err.Error(), p) {
		t.Fatalf("send of a file that grew while encoded: %v, want ErrSourceChanged naming %s", err, p)
	}
	if rep != nil && rep.Send != nil {
		t.Errorf("it was sent: %+v", rep.Send)
	}
	onlyFiles(t, s.dest)
	// Once complete it goes.
	if _, err := medic.Encode(context.Background(), p, medic.EncodeOptions{Plugin: "zstd", Cipher: medic.CipherNone}, io.Discard); err != nil {
		t.Fatal(err)
	}
}

// TestCLISendRefusesWhatIsNotAFile: send, send --auto and plan of a
// named pipe, a directory or a device are usage errors naming it. Before,
// a pipe blocked for a writer and /dev/zero was hashed for ever (neither
// stopped by SIGTERM or the first Ctrl-C), and a directory gave "read d:
// read d: is a directory", after which plan printed a table and exit 0.
func TestCLISendRefusesWhatIsNotAFile(t *testing.T) {
	needMedicCommand(t)
	dir := t.TempDir()
	key := filepath.Join(dir, "k")
	if out, code := run(t, "medic", "keygen", key); code != 0 {
		t.Fatal(out)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	spool := filepath.Join(dir, "spool")
	for path, what := range map[string]string{fifo: "a named pipe", dir: "a directory", "/dev/zero": "a character device"} {
		for _, args := range [][]string{
			{"medic", "send", path, "127.0.0.1:1", "--key", key, "--spool", spool},
			{"medic", "send", path, "127.0.0.1:1", "--key", key, "--spool", spool, "--auto"},
			{"medic", "plan", path, "--all", "--bandwidth", "1MB/s"},
		} {
			out, code := runBounded(t, 20*time.Second, args...)
			if code != 2 || !strings.Contains(out, path+" is "+what+", not a regular file") {
				t.Errorf("%s: exit %d, want 2 naming %s %s:\n%s", strings.Join(args, " "), code, path, what, out)
			}
		}
	}
}
