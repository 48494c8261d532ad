package medic_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pario/pario/medic"
	"github.com/pario/pario/medic/medictest"
	_ "github.com/pario/pario/medic/plugin/zstd"
)

// replicaPlugin stands for an application plugin that needs a local
// resource: its metadata is a list of sequence ids, and the storage site
// regenerates the output by looking each one up in its replica (a file of
// "id<TAB>sequence" lines).
type replicaPlugin struct{}

func (replicaPlugin) Name() string { return "replica-test" }

func (replicaPlugin) Encode(_ context.Context, src medic.Source, meta io.Writer) error {
	b, err := os.ReadFile(src.Path)
	if err != nil {
		return err
	}
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		id, _, _ := strings.Cut(l, "\t")
		fmt.Fprintln(meta, id)
	}
	return nil
}

func (replicaPlugin) Decode(_ context.Context, meta io.Reader, out io.Writer, env medic.Env) error {
	db, err := env.Resource("replica-test.db")
	if err != nil {
		return err
	}
	b, err := os.ReadFile(db)
	if err != nil {
		return fmt.Errorf("%w: replica %s: %v", medic.ErrMissing, db, err)
	}
	seqs := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if id, s, ok := strings.Cut(l, "\t"); ok {
			seqs[id] = s
		}
	}
	sc := bufio.NewScanner(meta)
	for sc.Scan() {
		s, ok := seqs[sc.Text()]
		if !ok {
			return fmt.Errorf("%w: replica %s lacks sequence %s", medic.ErrMissing, db, sc.Text())
		}
		fmt.Fprintf(out, "%s\t%s\n", sc.Text(), s)
	}
	return sc.Err()
}

// liarPlugin regenerates something else than the original.
type liarPlugin struct{}

func (liarPlugin) Name() string                                          { return "liar-test" }
func (liarPlugin) Encode(context.Context, medic.Source, io.Writer) error { return nil }
func (liarPlugin) Decode(_ context.Context, _ io.Reader, out io.Writer, _ medic.Env) error {
	_, err := io.WriteString(out, "not what you sent\n")
	return err
}

func init() {
	medic.Register(replicaPlugin{})
	medic.Register(liarPlugin{})
}

type site struct {
	dest, staging string
	key           []byte
	addr          string
	srv           *medic.Server
}

func startServer(t *testing.T, s *site, res map[string]string, tc *tls.Config) {
	t.Helper()
	if s.dest == "" {
		s.dest, s.staging = t.TempDir(), t.TempDir()
	}
	s.srv, s.addr = serveConfig(t, medic.ServerConfig{Key: s.key, Store: medic.DirStore(s.dest), StagingDir: s.staging, Resources: res, TLS: tc})
}

// serveConfig starts a receiver with cfg on a loopback port (a store and
// a staging area of their own where cfg has none), closed at the test's
// end.
func serveConfig(t *testing.T, cfg medic.ServerConfig) (*medic.Server, string) {
	t.Helper()
	if cfg.Store == nil {
		cfg.Store = medic.DirStore(t.TempDir())
	}
	if cfg.StagingDir == "" {
		cfg.StagingDir = t.TempDir()
	}
	srv, err := medic.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return srv, ln.Addr().String()
}

func writeFile(t *testing.T, name string, data []byte) string {
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func report(n int) []byte {
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "q%d\tXP_%06d\t%.1f\t%d\t1e-%d\n", i%50, (i*7919)%100000, 50+float64(i%500)/10, 100+i%300, i%180)
	}
	return b.Bytes()
}

// onlyFile asserts that dest holds exactly the named files (no temporaries).
func onlyFiles(t *testing.T, dest string, names ...string) {
	t.Helper()
	es, _ := os.ReadDir(dest)
	var got []string
	for _, e := range es {
		got = append(got, e.Name())
	}
	if fmt.Sprint(got) != fmt.Sprint(names) {
		t.Fatalf("destination holds %v, want %v", got, names)
	}
}

func TestPluginsRoundTrip(t *testing.T) {
	p := writeFile(t, "r.txt", report(5000))
	medictest.RoundTrip(t, "raw", p, nil, medic.Env{})
	medictest.RoundTrip(t, "zstd", p, map[string]string{"level": "best"}, medic.Env{})
	empty := writeFile(t, "e.txt", nil)
	medictest.RoundTrip(t, "zstd", empty, nil, medic.Env{})
}

func sendFile(t *testing.T, s *site, path, plugin string, o medic.SendOptions) (*medic.FileReport, error) {
	o.Addr, o.Key = s.addr, s.key
	return medic.SendFile(context.Background(), path, medic.SendFileOptions{
		Encode:   medic.EncodeOptions{Plugin: plugin, Cipher: medic.CipherXChaCha20Poly1305, Key: s.key},
		Send:     o,
		SpoolDir: filepath.Join(filepath.Dir(path), "spool"),
	})
}

func TestSendStoresVerifiedOutput(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	startServer(t, s, nil, nil)
	data := report(20000)
	p := writeFile(t, "out.txt", data)
	rep, err := sendFile(t, s, p, "zstd", medic.SendOptions{Window: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(s.dest, "out.txt"))
	if !bytes.Equal(got, data) || rep.Send.Result.Size != int64(len(data)) {
		t.Fatal("stored output differs")
	}
	if rep.MetaSize*3 > int64(len(data)) {
		t.Fatalf("zstd metadata %d of %d", rep.MetaSize, len(data))
	}
	onlyFiles(t, s.dest, "out.txt")
	if es, _ := os.ReadDir(s.staging); len(es) != 0 {
		t.Fatalf("staging not cleaned: %v", es)
	}
}

func TestWrongKeyRefused(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	startServer(t, s, nil, nil)
	p := writeFile(t, "out.txt", report(100))
	other := *s
	other.key = medictest.Key(t)
	_, err := sendFile(t, &other, p, "zstd", medic.SendOptions{})
	if !errors.Is(err, medic.ErrAuth) {
		t.Fatalf("want ErrAuth, got %v", err)
	}
	onlyFiles(t, s.dest)
}

func TestMissingSequenceLeavesNothing(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	dir := t.TempDir()
	db := filepath.Join(dir, "replica")
	os.WriteFile(db, []byte("XP_1\tMKV\nXP_2\tMAL\n"), 0o644)
	startServer(t, s, map[string]string{"replica-test.db": db}, nil)
	data := []byte("XP_1\tMKV\nXP_123\tMQQ\nXP_2\tMAL\n")
	p := writeFile(t, "hits.txt", data)
	_, err := sendFile(t, s, p, "replica-test", medic.SendOptions{})
	if !errors.Is(err, medic.ErrMissing) || !strings.Contains(err.Error(), "lacks sequence XP_123") {
		t.Fatalf("want a missing-sequence error naming XP_123, got %v", err)
	}
	onlyFiles(t, s.dest)
	// The operator fixes the replica; the re-send needs no data.
	os.WriteFile(db, []byte("XP_1\tMKV\nXP_2\tMAL\nXP_123\tMQQ\n"), 0o644)
	rep, err := sendFile(t, s, p, "replica-test", medic.SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Send.Sent != 0 || rep.Send.Resumed != rep.Send.Size {
		t.Fatalf("re-send moved %d bytes, resumed at %d of %d", rep.Send.Sent, rep.Send.Resumed, rep.Send.Size)
	}
	onlyFiles(t, s.dest, "hits.txt")

	// A receiver without the resource says how to give it.
	s2 := &site{key: s.key}
	startServer(t, s2, nil, nil)
	_, err = sendFile(t, s2, p, "replica-test", medic.SendOptions{})
	if !errors.Is(err, medic.ErrMissing) || !strings.Contains(err.Error(), "--resource replica-test.db=") {
		t.Fatalf("got %v", err)
	}
}

func TestTamperedContainerRejected(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	startServer(t, s, nil, nil)
	p := writeFile(t, "out.txt", report(20000))
	for _, c := range []medic.Cipher{medic.CipherNone, medic.CipherAES256GCM} {
		var buf bytes.Buffer
		if _, err := medic.Encode(context.Background(), p, medic.EncodeOptions{Plugin: "zstd", Cipher: c, Key: s.key, ChunkSize: 4096}, &buf); err != nil {
			t.Fatal(err)
		}
		b := buf.Bytes()
		b[len(b)/2] ^= 0x10
		cp := writeFile(t, "bad.medic", b)
		_, err := medic.Send(context.Background(), cp, medic.SendOptions{Addr: s.addr, Key: s.key, Name: "out.txt"})
		if !errors.Is(err, medic.ErrIntegrity) || !strings.Contains(err.Error(), "chunk") {
			t.Fatalf("%v: want an integrity error naming the chunk, got %v", c, err)
		}
		onlyFiles(t, s.dest)
	}
}

func TestDigestMismatchRejected(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	startServer(t, s, nil, nil)
	p := writeFile(t, "out.txt", report(10))
	_, err := sendFile(t, s, p, "liar-test", medic.SendOptions{})
	if !errors.Is(err, medic.ErrIntegrity) || !errors.Is(err, medic.ErrDigest) || !strings.Contains(err.Error(), "digest") {
		t.Fatalf("got %v, want ErrDigest (an ErrIntegrity)", err)
	}
	onlyFiles(t, s.dest)
}

// A receiver that cannot regenerate the output gets it again through the
// fallback plugin; the report says which plugin carried it and why.
func TestDigestMismatchFallsBack(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	startServer(t, s, nil, nil)
	data := report(10)
	p := writeFile(t, "out.txt", data)
	rep, err := medic.SendFile(context.Background(), p, medic.SendFileOptions{
		Encode:   medic.EncodeOptions{Plugin: "liar-test", Cipher: medic.CipherXChaCha20Poly1305, Key: s.key},
		Send:     medic.SendOptions{Addr: s.addr, Key: s.key},
		SpoolDir: filepath.Join(filepath.Dir(p), "spool"),
		Fallback: "zstd",
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Plugin != "zstd" || !errors.Is(rep.FellBack, medic.ErrDigest) {
		t.Fatalf("carried by %q, fell back because %v; want zstd after ErrDigest", rep.Plugin, rep.FellBack)
	}
	// What the failed attempt cost is kept beside the fallback's report.
	f := rep.Failed
	if f == nil || f.Plugin != "liar-test" || f.Send == nil || f.Send.Sent != f.MetaSize || f.MetaSize == 0 || f.Wall <= 0 || f.Send.Receiver <= 0 {
		t.Fatalf("failed attempt: %+v", f)
	}
	var b bytes.Buffer
	medic.SendSummary{Path: p, Addr: s.addr, Size: int64(len(data)), Asked: "liar-test", Report: rep, Wall: time.Second}.WriteText(&b)
	if !strings.Contains(b.String(), "failed try  liar-test: encode f") {
		t.Fatalf("the report hides the failed attempt:\n%s", b.String())
	}
	got, err := os.ReadFile(filepath.Join(s.dest, "out.txt"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("stored output: %v (%d bytes, want %d)", err, len(got), len(data))
	}
	onlyFiles(t, s.dest, "out.txt")
	if left, _ := os.ReadDir(filepath.Join(filepath.Dir(p), "spool")); len(left) != 0 {
		t.Fatalf("spool keeps %d containers after the fallback landed", len(left))
	}
}

// cutConn drops the connection after limit bytes written.
type cutConn struct {
	net.Conn
	left *atomic.Int64
}

func (c cutConn) Write(p []byte) (int, error) {
	if c.left.Add(-int64(len(p))) < 0 {
		c.Conn.Close()
		return 0, errors.New("link cut (test)")
	}
	return c.Conn.Write(p)
}

func TestInterruptedTransferResumes(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	startServer(t, s, nil, nil)
	data := make([]byte, 3<<20) // incompressible: the container is as big
	rand.Read(data)
	p := writeFile(t, "big.bin", data)
	var left atomic.Int64
	left.Store(1 << 20)
	cut := func(ctx context.Context, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		return cutConn{c, &left}, err
	}
	_, err := sendFile(t, s, p, "raw", medic.SendOptions{Window: 128 << 10, Dial: cut})
	if err == nil || !strings.Contains(err.Error(), "send again to resume") {
		t.Fatalf("want a lost-connection error, got %v", err)
	}
	onlyFiles(t, s.dest)
	time.Sleep(50 * time.Millisecond) // let the receiver notice
	rep, err := sendFile(t, s, p, "raw", medic.SendOptions{Window: 128 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Reused || rep.Send.Resumed < 512<<10 || rep.Send.Sent >= rep.Send.Size {
		t.Fatalf("did not resume: reused %v, resumed %d, sent %d of %d", rep.Reused, rep.Send.Resumed, rep.Send.Sent, rep.Send.Size)
	}
	got, _ := os.ReadFile(filepath.Join(s.dest, "big.bin"))
	if !bytes.Equal(got, data) {
		t.Fatal("resumed output differs")
	}
}

func selfSigned(t *testing.T) (*tls.Config, *x509.CertPool) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "medic-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: k}}}, pool
}

func TestTLS(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	srvTLS, pool := selfSigned(t)
	startServer(t, s, nil, srvTLS)
	p := writeFile(t, "out.txt", report(1000))
	if _, err := sendFile(t, s, p, "zstd", medic.SendOptions{TLS: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}}); err != nil {
		t.Fatal(err)
	}
	onlyFiles(t, s.dest, "out.txt")
	// Plain TCP against a TLS receiver fails clearly, not by hanging.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := medic.Ping(ctx, medic.SendOptions{Addr: s.addr, Key: s.key, HandshakeTimeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "--tls on one side only") {
		t.Fatalf("plain TCP to a TLS receiver: %v", err)
	}
}

func TestMeasureBandwidth(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	startServer(t, s, nil, nil)
	b, rtt, err := medic.MeasureBandwidth(context.Background(), medic.SendOptions{Addr: s.addr, Key: s.key}, 100*time.Millisecond, 64<<20)
	if err != nil || b <= 0 || rtt <= 0 {
		t.Fatal(b, rtt, err)
	}
}

func TestCleanName(t *testing.T) {
	for _, n := range []string{"", "/etc/passwd", "../x", "a/../../x", "a//b", ".", ".medic-staging/x", "a\\b"} {
		if _, err := medic.CleanName(n); err == nil {
			t.Errorf("%q accepted", n)
		}
	}
	for _, n := range []string{"a", "a/b.txt", "run-1/out"} {
		if _, err := medic.CleanName(n); err != nil {
			t.Errorf("%q: %v", n, err)
		}
	}
}

// A receiver acknowledges a container every AckEvery of it, as the
// sender's offer asks (protocol version 2): a small container (raw
// random bytes, 48 KiB) every 4 KiB, not only at 32 KiB and its end, so
// that a send --auto bounds and measures the link from the first few
// KiB of it; a large one every ProgressAck, as before.
func TestSmallContainerAcknowledgedFinely(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	startServer(t, s, nil, nil)
	for _, n := range []int{48 << 10, 2 << 20} {
		data := make([]byte, n)
		rand.Read(data)
		p := writeFile(t, fmt.Sprintf("random%d.bin", n), data)
		var acks []int64
		var total int64
		rep, err := sendFile(t, s, p, "raw", medic.SendOptions{Progress: func(done, size int64) {
			acks, total = append(acks, done), size
		}})
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(filepath.Join(s.dest, filepath.Base(p))); !bytes.Equal(got, data) {
			t.Fatal("stored output differs")
		}
		every := medic.AckEvery(total)
		if n < 64<<10 && every != medic.MinAck || n > 1<<20 && every != medic.ProgressAck {
			t.Errorf("a container of %d bytes is acknowledged every %d bytes, want %d", total, every, map[bool]int64{true: medic.MinAck, false: medic.ProgressAck}[n < 64<<10])
		}
		// The offer's answer (0), then an acknowledgement every `every`
		// bytes and one of the end.
		if want := int((total+every-1)/every) + 1; len(acks) != want || acks[0] != 0 || acks[len(acks)-1] != total {
			t.Errorf("%d acknowledgements of a container of %d bytes (%v...), want %d from 0 to the end", len(acks), total, acks[:min(len(acks), 4)], want)
		}
		for i := 1; i < len(acks); i++ {
			if d := acks[i] - acks[i-1]; d <= 0 || d > every {
				t.Errorf("acknowledged %d bytes after %d, want at most %d at a time", d, acks[i-1], every)
				break
			}
		}
		if rep.Send.Sent != total {
			t.Errorf("sent %d bytes of %d", rep.Send.Sent, total)
		}
	}
}
