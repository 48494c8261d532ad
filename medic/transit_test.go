package medic_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pario/pario/medic"
	"github.com/pario/pario/medic/medictest"
	"github.com/pario/pario/wire"
)

// tamperConn alters the nth data frame the sender writes: one bit of its
// data flipped, with the frame's checksum left as it was (a damaged
// frame) or recomputed (a frame altered on purpose, or by a middlebox
// that recomputes checksums).
type tamperConn struct {
	net.Conn
	op        uint8 // the frames to tamper with
	nth       int   // such frames to let through first
	recompute bool
	mu        sync.Mutex
	pending   []byte
	seen      int
	tampered  *atomic.Bool
}

// medic's offer and data frames (ops.go)
const (
	opOfferCode = 0x03
	opDataCode  = 0x04
)

func (c *tamperConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending = append(c.pending, p...)
	for len(c.pending) >= wire.HeaderSize {
		h, err := wire.DecodeHeader(c.pending[:wire.HeaderSize])
		if err != nil {
			return 0, err
		}
		n := wire.HeaderSize + int(h.ArgLen) + int(h.DataLen)
		if len(c.pending) < n {
			break
		}
		frame := bytes.Clone(c.pending[:n])
		c.pending = c.pending[n:]
		if h.Op == c.op && h.ArgLen+h.DataLen > 0 {
			if c.seen == c.nth {
				frame = c.tamper(frame, h)
				c.tampered.Store(true)
			}
			c.seen++
		}
		if _, err := c.Conn.Write(frame); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func (c *tamperConn) tamper(frame []byte, h wire.Header) []byte {
	if !c.recompute {
		frame[len(frame)-1] ^= 0x01
		return frame
	}
	f, err := wire.ReadFrame(bytes.NewReader(frame))
	if err != nil {
		panic(err)
	}
	f.Data[len(f.Data)/2] ^= 0x01
	return wire.AppendFrame(nil, h.Op, h.Flags, h.ReqID, f.Args, [][]byte{f.Data})
}

func tamperDial(op uint8, nth int, recompute bool, tampered *atomic.Bool) func(context.Context, string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		var d net.Dialer
		nc, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		return &tamperConn{Conn: nc, op: op, nth: nth, recompute: recompute, tampered: tampered}, nil
	}
}

// A frame damaged on the way is named as such by the sender, whether the
// wire's checksum catches it (the receiver answers with an error rather
// than dropping the connection) or the checksum was recomputed and only
// the container's digest does; the container in the spool is sound and
// the next send delivers it.
func TestCorruptedInTransit(t *testing.T) {
	for _, tc := range []struct {
		name      string
		op        uint8
		nth       int
		recompute bool
	}{
		{"data checksum fails", opDataCode, 3, false},
		{"data checksum recomputed", opDataCode, 3, true},
		{"offer checksum fails", opOfferCode, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &site{key: medictest.Key(t)}
			startServer(t, s, nil, nil)
			data := make([]byte, 1<<20)
			rand.Read(data)
			p := writeFile(t, "big.bin", data)
			var tampered atomic.Bool
			_, err := sendFile(t, s, p, "raw", medic.SendOptions{Window: 128 << 10, Dial: tamperDial(tc.op, tc.nth, tc.recompute, &tampered)})
			if !tampered.Load() {
				t.Fatal("no data frame was tampered with")
			}
			if !errors.Is(err, medic.ErrTransit) || !errors.Is(err, medic.ErrIntegrity) || !strings.Contains(err.Error(), "corrupted in transit") {
				t.Fatalf("want an error naming corruption in transit, got %v", err)
			}
			for _, wrong := range []string{"staging", "crashed"} {
				if strings.Contains(err.Error(), wrong) {
					t.Errorf("the error blames %s: %v", wrong, err)
				}
			}
			onlyFiles(t, s.dest)
			rep, err := sendFile(t, s, p, "raw", medic.SendOptions{Window: 128 << 10})
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Reused {
				t.Error("the sound container was not kept in the spool")
			}
			if got, _ := os.ReadFile(filepath.Join(s.dest, "big.bin")); !bytes.Equal(got, data) {
				t.Fatal("stored output differs")
			}
		})
	}
}

// Bytes that arrived intact but changed in the staging directory are
// named as corruption in staging.
func TestCorruptedInStaging(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	startServer(t, s, nil, nil)
	data := make([]byte, 2<<20)
	rand.Read(data)
	p := writeFile(t, "big.bin", data)
	var left atomic.Int64
	left.Store(1 << 20)
	cut := func(ctx context.Context, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		return cutConn{c, &left}, err
	}
	if _, err := sendFile(t, s, p, "raw", medic.SendOptions{Window: 128 << 10, Dial: cut}); err == nil {
		t.Fatal("the cut send succeeded")
	}
	time.Sleep(50 * time.Millisecond) // let the receiver notice
	parts, _ := filepath.Glob(filepath.Join(s.staging, "*.part"))
	if len(parts) != 1 {
		t.Fatalf("staged parts: %v", parts)
	}
	f, err := os.OpenFile(parts[0], os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	f.ReadAt(b, 100)
	b[0] ^= 0x01
	f.WriteAt(b, 100)
	f.Close()
	_, err = sendFile(t, s, p, "raw", medic.SendOptions{Window: 128 << 10})
	if !errors.Is(err, medic.ErrIntegrity) || errors.Is(err, medic.ErrTransit) || !strings.Contains(err.Error(), "corrupted in staging") {
		t.Fatalf("want an error naming corruption in staging, got %v", err)
	}
	onlyFiles(t, s.dest)
}

// slowPlugin is raw with a regeneration that takes the time its resource
// says; without the resource it lacks what it needs (ErrMissing), so the
// receiver keeps the staged container.
type slowPlugin struct{}

func (slowPlugin) Name() string { return "slow-test" }
func (slowPlugin) Encode(_ context.Context, src medic.Source, meta io.Writer) error {
	f, err := os.Open(src.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(meta, f)
	return err
}
func (slowPlugin) Decode(_ context.Context, meta io.Reader, out io.Writer, env medic.Env) error {
	v, err := env.Resource("slow-test.delay")
	if err != nil {
		return err
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return err
	}
	time.Sleep(d)
	_, err = io.Copy(out, meta)
	return err
}

func init() { medic.Register(slowPlugin{}) }

// A send that resumes with the whole container already at the receiver
// reports no transfer: the time went to the receiver's regeneration.
func TestResumedSendReportsPhases(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	startServer(t, s, nil, nil)
	data := report(20000)
	p := writeFile(t, "out.txt", data)
	if _, err := sendFile(t, s, p, "slow-test", medic.SendOptions{}); !errors.Is(err, medic.ErrMissing) {
		t.Fatalf("want ErrMissing, got %v", err)
	}
	s.srv.Close()
	const delay = 300 * time.Millisecond
	startServer(t, s, map[string]string{"slow-test.delay": delay.String()}, nil)
	t0 := time.Now()
	rep, err := sendFile(t, s, p, "slow-test", medic.SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sr := rep.Send
	if sr.Sent != 0 || sr.Resumed != sr.Size {
		t.Fatalf("resent %d bytes, resumed at %d of %d", sr.Sent, sr.Resumed, sr.Size)
	}
	if sr.Transfer != 0 || sr.Receiver < delay || sr.Connect <= 0 || sr.Connect+sr.Receiver > time.Since(t0) {
		t.Fatalf("phases: connect %v, transfer %v, receiver %v (regeneration takes %v)", sr.Connect, sr.Transfer, sr.Receiver, delay)
	}
	var b bytes.Buffer
	medic.SendSummary{Path: p, Addr: s.addr, Size: int64(len(data)), Asked: "slow-test", Report: rep, Wall: time.Since(t0)}.WriteText(&b)
	if !strings.Contains(b.String(), "transfer    none") || strings.Contains(b.String(), "0 B sent") {
		t.Fatalf("report:\n%s", b.String())
	}
}

// A part staged by an older receiver (no .sum beside it) still resumes:
// its bytes are hashed from the file.
func TestResumeWithoutSavedHash(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	startServer(t, s, nil, nil)
	data := make([]byte, 1<<20)
	rand.Read(data)
	p := writeFile(t, "big.bin", data)
	var buf bytes.Buffer
	if _, err := medic.Encode(context.Background(), p, medic.EncodeOptions{Plugin: "raw", Cipher: medic.CipherXChaCha20Poly1305, Key: s.key}, &buf); err != nil {
		t.Fatal(err)
	}
	cp := writeFile(t, "c.medic", buf.Bytes())
	_, id, err := medic.ContainerID(cp)
	if err != nil {
		t.Fatal(err)
	}
	half := buf.Len() / 2
	os.WriteFile(filepath.Join(s.staging, fmt.Sprintf("%x.part", id)), buf.Bytes()[:half], 0o600)
	rep, err := medic.Send(context.Background(), cp, medic.SendOptions{Addr: s.addr, Key: s.key, Name: "big.bin"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Resumed != int64(half) || rep.Sent != int64(buf.Len()-half) {
		t.Fatalf("resumed at %d, sent %d of %d", rep.Resumed, rep.Sent, buf.Len())
	}
	if got, _ := os.ReadFile(filepath.Join(s.dest, "big.bin")); !bytes.Equal(got, data) {
		t.Fatal("stored output differs")
	}
}
