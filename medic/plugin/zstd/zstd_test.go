package zstd_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pario/pario/medic"
	"github.com/pario/pario/medic/medictest"
	_ "github.com/pario/pario/medic/plugin/zstd"
)

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	var text bytes.Buffer
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(&text, "query_%d\tsp|P%05d|\t%.2f\t%d\n", i%40, i*31%99991, float64(i%1000)/10, i%400)
	}
	random := make([]byte, 300<<10)
	rand.Read(random)
	for name, data := range map[string][]byte{"empty": nil, "text": text.Bytes(), "random": random, "one": {42}} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, data, 0o644)
		for _, lvl := range []string{"", "fastest", "best"} {
			c := medictest.RoundTrip(t, "zstd", p, map[string]string{"level": lvl}, medic.Env{})
			if name == "text" && len(c)*4 > len(data) {
				t.Errorf("level %q: text compressed only to %d of %d", lvl, len(c), len(data))
			}
		}
	}
}

func TestBadParams(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x")
	os.WriteFile(p, []byte("x"), 0o644)
	for _, params := range []map[string]string{{"level": "ultra"}, {"concurrency": "0"}} {
		var b bytes.Buffer
		_, err := medic.Encode(context.Background(), p, medic.EncodeOptions{Plugin: "zstd", Params: params}, &b)
		if err == nil || !strings.Contains(err.Error(), "param") {
			t.Errorf("%v: %v", params, err)
		}
	}
}

func TestCorruptMetadata(t *testing.T) {
	// Metadata that is not zstd (but authentic: sealed by us) fails with
	// a decompression error, not a panic or a wrong output.
	var buf bytes.Buffer
	h := medic.Header{Plugin: "zstd", Size: 3}
	w, _ := medic.NewWriter(&buf, &h, nil)
	w.Write([]byte("not zstd at all"))
	w.Close()
	var out bytes.Buffer
	if _, err := medic.Decode(context.Background(), &buf, nil, medic.Env{}, &out); err == nil {
		t.Fatal("garbage metadata decoded")
	}
}
