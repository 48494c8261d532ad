package medic_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pario/pario/internal/testenv"
	"github.com/pario/pario/medic"
	"github.com/pario/pario/medic/medictest"
)

// incompressible is n bytes that neither zstd nor anything else shrinks.
func incompressible(seed uint64, n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, seed))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// growTmpfs gives the tmpfs at dir more room, as an operator frees space.
func growTmpfs(t *testing.T, dir, size string) {
	t.Helper()
	if out, err := exec.Command("mount", "-o", "remount,size="+size, dir).CombinedOutput(); err != nil {
		t.Fatalf("remount %s: %v: %s", dir, err, out)
	}
}

// leftovers lists what is in dir besides the names given.
func leftovers(t *testing.T, dir string, keep ...string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		if !slices.Contains(keep, e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out
}

// A receiver whose store fills while it regenerates: the sender is told
// so, naming the disk, nothing half-written stays in the store, the
// receiver goes on serving, and once there is room the same send
// completes.
func TestReceiverStoreFills(t *testing.T) {
	s := &site{key: medictest.Key(t), dest: testenv.Tmpfs(t, "4m"), staging: t.TempDir()}
	startServer(t, s, nil, nil)
	data := incompressible(1, 6<<20)
	p := writeFile(t, "big.bin", data)
	_, err := sendFile(t, s, p, "raw", medic.SendOptions{})
	if err == nil {
		t.Fatal("a 6 MiB output was stored on a 4 MiB disk")
	}
	if !strings.Contains(err.Error(), "no space left on device") {
		t.Errorf("the sender's error does not say the receiver's disk is full: %v", err)
	}
	t.Logf("the sender's error: %v", err)
	if left := leftovers(t, s.dest); len(left) > 0 {
		t.Errorf("the full store keeps %v after the failed send", left)
	}

	small := writeFile(t, "small.txt", report(100))
	if _, err := sendFile(t, s, small, "zstd", medic.SendOptions{}); err != nil {
		t.Fatalf("after the failure the receiver does not serve a small send: %v", err)
	}

	growTmpfs(t, s.dest, "16m")
	if _, err := sendFile(t, s, p, "raw", medic.SendOptions{}); err != nil {
		t.Fatalf("with room again the send fails: %v", err)
	}
	got, _ := os.ReadFile(filepath.Join(s.dest, "big.bin"))
	if !bytes.Equal(got, data) {
		t.Fatalf("stored %d bytes, not the %d sent", len(got), len(data))
	}
	if left := leftovers(t, s.dest, "big.bin", "small.txt"); len(left) > 0 {
		t.Errorf("the store keeps %v besides the outputs", left)
	}
}

// A receiver whose staging area fills while the container arrives: the
// sender is told so, the receiver drops what it staged of it (a partial
// container on a full disk would keep it full), and serves on; once
// there is room the send completes.
func TestReceiverStagingFills(t *testing.T) {
	s := &site{key: medictest.Key(t), dest: t.TempDir(), staging: testenv.Tmpfs(t, "4m")}
	startServer(t, s, nil, nil)
	data := incompressible(2, 6<<20)
	p := writeFile(t, "big.bin", data)
	_, err := sendFile(t, s, p, "raw", medic.SendOptions{})
	if err == nil {
		t.Fatal("a 6 MiB container was staged on a 4 MiB disk")
	}
	if !strings.Contains(err.Error(), "no space left on device") {
		t.Errorf("the sender's error does not say the receiver's disk is full: %v", err)
	}
	// Refused at the offer, from the staging area's free space: no byte
	// is sent that could not be kept (before, 4 MiB went over the link
	// and were dropped).
	if !strings.Contains(err.Error(), "this container needs 6.0 MiB more") {
		t.Errorf("the sender's error does not say the container was refused before its bytes were sent: %v", err)
	}
	t.Logf("the sender's error: %v", err)
	if left := leftovers(t, s.dest); len(left) > 0 {
		t.Errorf("the store keeps %v after the failed send", left)
	}

	small := writeFile(t, "small.txt", report(100))
	if _, err := sendFile(t, s, small, "zstd", medic.SendOptions{}); err != nil {
		t.Fatalf("after the failure the receiver does not serve a small send: %v", err)
	}

	growTmpfs(t, s.staging, "16m")
	if _, err := sendFile(t, s, p, "raw", medic.SendOptions{}); err != nil {
		t.Fatalf("with room again the send fails: %v", err)
	}
	got, _ := os.ReadFile(filepath.Join(s.dest, "big.bin"))
	if !bytes.Equal(got, data) {
		t.Fatalf("stored %d bytes, not the %d sent", len(got), len(data))
	}
	if left := leftovers(t, s.staging); len(left) > 0 {
		t.Errorf("the staging area keeps %v after the sends completed", left)
	}
}

// A sender whose spool fills while it encodes: the error names the
// spool, no partial container stays in it, and with room the send goes.
func TestSenderSpoolFills(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	startServer(t, s, nil, nil)
	data := incompressible(3, 6<<20)
	p := writeFile(t, "big.bin", data)
	spool := testenv.Tmpfs(t, "4m")
	send := func() error {
		_, err := medic.SendFile(context.Background(), p, medic.SendFileOptions{
			Encode:   medic.EncodeOptions{Plugin: "raw", Cipher: medic.CipherXChaCha20Poly1305, Key: s.key},
			Send:     medic.SendOptions{Addr: s.addr, Key: s.key},
			SpoolDir: spool,
		})
		return err
	}
	err := send()
	if err == nil {
		t.Fatal("a 6 MiB container was spooled on a 4 MiB disk")
	}
	t.Logf("the sender's error: %v", err)
	if !strings.Contains(err.Error(), "no space left on device") || !strings.Contains(err.Error(), spool) {
		t.Errorf("the error does not say the spool %s is full: %v", spool, err)
	}
	if left := leftovers(t, spool); len(left) > 0 {
		t.Errorf("the spool keeps %v after the failed encode", left)
	}
	if left := leftovers(t, s.dest); len(left) > 0 {
		t.Errorf("the receiver stored %v", left)
	}
	growTmpfs(t, spool, "16m")
	if err := send(); err != nil {
		t.Fatalf("with room again the send fails: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(s.dest, "big.bin")); !bytes.Equal(got, data) {
		t.Fatalf("stored %d bytes, not the %d sent", len(got), len(data))
	}
}

// Staged parts no send has touched for StagingTTL are removed when the
// receiver starts (and every so often after), and so is a saved state
// whose part is gone; younger ones are kept for a resumption. Before, they stayed until removed by hand, and every send
// --auto that switched plugins left one.
func TestStagedPartsExpire(t *testing.T) {
	staging := t.TempDir()
	old, young, orphan := strings.Repeat("a", 64), strings.Repeat("b", 64), strings.Repeat("c", 64)
	for _, n := range []string{old + ".part", old + ".sum", young + ".part", young + ".sum", orphan + ".sum"} {
		if err := os.WriteFile(filepath.Join(staging, n), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	long := time.Now().Add(-8 * 24 * time.Hour)
	for _, n := range []string{old + ".part", old + ".sum", orphan + ".sum"} {
		if err := os.Chtimes(filepath.Join(staging, n), long, long); err != nil {
			t.Fatal(err)
		}
	}
	s := &site{key: medictest.Key(t), dest: t.TempDir(), staging: staging}
	startServer(t, s, nil, nil)
	if left := leftovers(t, staging, young+".part", young+".sum"); len(left) > 0 {
		t.Errorf("the receiver kept %v, untouched for 8 days", left)
	}
	if _, err := os.Stat(filepath.Join(staging, young+".part")); err != nil {
		t.Errorf("the receiver removed a part touched just now: %v", err)
	}
}

// A send cut before its first byte leaves no part at the receiver: there
// is nothing to resume.
func TestSendCutBeforeItsDataLeavesNoPart(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	startServer(t, s, nil, nil)
	p := writeFile(t, "out.txt", report(20000))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := medic.SendFile(ctx, p, medic.SendFileOptions{
		Encode: medic.EncodeOptions{Plugin: "zstd", Cipher: medic.CipherXChaCha20Poly1305, Key: s.key},
		Send: medic.SendOptions{Addr: s.addr, Key: s.key, Progress: func(done, total int64) {
			if done == 0 {
				// The offer is answered: stop before the first frame.
				cancel()
				time.Sleep(100 * time.Millisecond)
			}
		}},
		SpoolDir: t.TempDir(),
	})
	if err == nil {
		t.Fatal("the send was not cut")
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		left := leftovers(t, s.staging)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the receiver keeps %v of a send cut before its data", left)
		}
	}
}

// The sender's spool keeps a container for a resumption, but not for
// ever: a send removes containers older than SpoolTTL (left by sends that
// failed and were never tried again), and nothing else there.
func TestOldSpooledContainersExpire(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	startServer(t, s, nil, nil)
	spool := t.TempDir()
	old, young, other := "0123456789abcdef0123456789abcdef.medic", "fedcba9876543210fedcba9876543210.medic", "notes.txt"
	for _, n := range []string{old, young, other} {
		if err := os.WriteFile(filepath.Join(spool, n), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	long := time.Now().Add(-medic.SpoolTTL - time.Hour)
	for _, n := range []string{old, other} {
		if err := os.Chtimes(filepath.Join(spool, n), long, long); err != nil {
			t.Fatal(err)
		}
	}
	p := writeFile(t, "out.txt", report(100))
	if _, err := medic.SendFile(context.Background(), p, medic.SendFileOptions{
		Encode:   medic.EncodeOptions{Plugin: "zstd", Cipher: medic.CipherXChaCha20Poly1305, Key: s.key},
		Send:     medic.SendOptions{Addr: s.addr, Key: s.key},
		SpoolDir: spool,
	}); err != nil {
		t.Fatal(err)
	}
	if left := leftovers(t, spool, young, other); len(left) > 0 {
		t.Errorf("the spool keeps %v, older than SpoolTTL", left)
	}
	for _, n := range []string{young, other} {
		if _, err := os.Stat(filepath.Join(spool, n)); err != nil {
			t.Errorf("the send removed %s: %v", n, err)
		}
	}
}
