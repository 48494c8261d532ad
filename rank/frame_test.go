package rank

import (
	"bytes"
	"encoding/binary"
	"io"
	"strings"
	"testing"
	"time"
)

func frameBytes(m outMsg) []byte { return append(append([]byte(nil), m.head...), m.payload...) }

func TestFrameRoundTrip(t *testing.T) {
	msgs := []outMsg{
		hello{job: "j", size: 4, rank: 3, host: "n001", pid: 1234}.encode(),
		welcome{host: "n000", pid: 1, interval: time.Second, timeout: 30 * time.Second}.encode(),
		contrib{seq: 7, kind: kindGather, op: 0, root: 2, data: []byte("data")}.encode(),
		resultMsg(7, []byte{1, 2, 3}),
		abortMsg(&RankError{Rank: 3, Host: "h", PID: 9, Reason: "died: connection reset"}),
		emptyMsg(msgHeartbeat),
	}
	var stream bytes.Buffer
	for _, m := range msgs {
		stream.Write(frameBytes(m))
	}
	for i, m := range msgs {
		typ, body, err := readFrame(&stream, maxFrame)
		if err != nil || typ != m.head[8] {
			t.Fatalf("frame %d: type %d, %v", i, typ, err)
		}
		if got, want := body, frameBytes(m)[9:]; !bytes.Equal(got, want) {
			t.Fatalf("frame %d: body %x, want %x", i, got, want)
		}
	}
	if _, _, err := readFrame(&stream, maxFrame); err != io.EOF {
		t.Fatalf("after the last frame: %v", err)
	}
	if h, err := decodeHello(frameBytes(msgs[0])[9:]); err != nil || h.host != "n001" || h.rank != 3 || h.size != 4 {
		t.Fatalf("hello: %+v, %v", h, err)
	}
}

func TestReadFrameLimits(t *testing.T) {
	huge := binary.LittleEndian.AppendUint64(nil, 1<<62)
	if _, _, err := readFrame(bytes.NewReader(huge), maxFrame); err == nil || !strings.Contains(err.Error(), "exceeds the limit") {
		t.Errorf("huge frame: %v", err)
	}
	// A big announced length with little behind it costs an error, not
	// the announced memory.
	short := append(binary.LittleEndian.AppendUint64(nil, 1<<39), 1, 2, 3)
	if _, _, err := readFrame(bytes.NewReader(short), maxFrame); err != io.ErrUnexpectedEOF {
		t.Errorf("truncated frame: %v", err)
	}
	if _, _, err := readFrame(bytes.NewReader(make([]byte, 8)), maxFrame); err == nil {
		t.Errorf("empty frame: no error")
	}
	// A frame larger than one read step arrives whole.
	big := bytes.Repeat([]byte{7}, 20<<20)
	b := frameBytes(resultMsg(1, big))
	typ, body, err := readFrame(bytes.NewReader(b), maxFrame)
	if err != nil || typ != msgResult || !bytes.Equal(body[8:], big) {
		t.Errorf("big frame: type %d, %d bytes, %v", typ, len(body), err)
	}
}

// FuzzFrame feeds arbitrary bytes to the frame reader and every decoder:
// no panic, and what decodes re-encodes to the same bytes.
func FuzzFrame(f *testing.F) {
	// The committed corpus in testdata/fuzz/FuzzFrame holds one frame of
	// each type.
	f.Add(frameBytes(hello{job: "j", size: 2, rank: 1, host: "h", pid: 5}.encode()))
	f.Fuzz(func(t *testing.T, data []byte) {
		typ, body, err := readFrame(bytes.NewReader(data), maxHello)
		if err != nil {
			return
		}
		frame := data[:9+len(body)]
		check := func(m outMsg) {
			if got := frameBytes(m); !bytes.Equal(got, frame) {
				t.Fatalf("type %d: re-encoded %x, read %x", typ, got, frame)
			}
		}
		switch typ {
		case msgHello:
			if h, err := decodeHello(body); err == nil {
				check(h.encode())
			}
		case msgWelcome:
			if w, err := decodeWelcome(body); err == nil {
				check(w.encode())
			}
		case msgContrib:
			if c, err := decodeContrib(body); err == nil {
				check(c.encode())
			}
		case msgResult:
			if seq, d, err := decodeResult(body); err == nil {
				check(resultMsg(seq, d))
			}
		case msgAbort:
			if e, err := decodeAbort(body); err == nil {
				check(abortMsg(e))
			}
		case msgReject:
			d := &dec{b: body}
			if s := d.str(); d.done() == nil {
				check(rejectMsg(s))
			}
		}
		for n := range 4 {
			if list, err := decodeList(body, n); err == nil {
				if got := encodeList(list); !bytes.Equal(got, body) {
					t.Fatalf("list of %d: re-encoded %x, read %x", n, got, body)
				}
			}
		}
	})
}
