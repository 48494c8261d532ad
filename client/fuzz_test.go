package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"syscall"
	"testing"

	"github.com/pario/pario/client"
	"github.com/pario/pario/dist"
)

// FuzzCreateLayout gives the client's Create whatever a program may put
// in CreateOptions (a Layout's fields as they come, or a hint string
// parsed as a user's), against one in-process cluster of 4 I/O servers
// with stuffing on. A create either fails with an error that says what
// was wrong (EINVAL, or dist.ErrInvalid from the client's own hint
// parsing), naming the path, or makes a file whose recorded layout parses
// and whose bytes come back as written, across strips and a hole. No
// input may panic the client or the metadata server (it runs in this
// process: a panic there fails the target too).
func FuzzCreateLayout(f *testing.F) {
	for _, s := range []struct {
		dist, params string
		datafiles    int
		servers      string
		hints        string
	}{
		{"simple_stripe", "strip_size=4096", 0, "", ""},
		{"simple_stripe", "strip_size=1", 3, "", ""},
		{"basic", "", 0, "", ""},
		{"varstrip", "strips=0:100;1:5000;2:7", 0, "", ""},
		{"twod_stripe", "num_groups=2,strip_size=1000,group_strip_factor=3", 0, "", ""},
		{"simple_stripe", "strip_size=65536", 2, "3;1", ""},
		{"", "", 2, "", ""},
		{"", "strip_size=4096", 0, "", ""},
		{"simple_stripe", "strip_size=0", 0, "", ""},
		{"simple_stripe", "strip_size=1099511627777", 0, "", ""},
		{"varstrip", "strips=0:1;7:1", 0, "", ""},
		{"nonesuch", "", 0, "", ""},
		{"simple_stripe", "", -1, "", ""},
		{"simple_stripe", "", 9, "", ""},
		{"simple_stripe", "", 0, "0;0", ""},
		{"simple_stripe", "", 0, "9", ""},
		{"", "", 0, "", "dist=simple_stripe,strip_size=1m,num_datafiles=2"},
		{"", "", 0, "", "varstrip_dist:string:strips=0:200000;1:4000000"},
		{"", "", 0, "", "layout=twod_stripe:num_groups=3"},
		{"", "", 0, "", "strip_size=1"},
		{"", "", 0, "", "dist=basic,strip_size=4k"},
		{"", "", 0, "", "a=1,,b=2"},
	} {
		f.Add(s.dist, s.params, s.datafiles, s.servers, s.hints)
	}
	c := localClient(f, startLocal(f, true))
	ctx := context.Background()
	data := make([]byte, 20000)
	for i := range data {
		data[i] = byte(i%251 + 1)
	}
	n := 0
	f.Fuzz(func(t *testing.T, dname, params string, datafiles int, servers, hints string) {
		n++
		path := fmt.Sprintf("/fuzz%d", n)
		opts := client.CreateOptions{Mode: 0o644, Layout: dist.Layout{Dist: dname, Params: params, Datafiles: datafiles, Servers: servers}}
		if hints != "" {
			h, err := dist.ParseHintString(hints)
			if err != nil {
				return // FuzzParseHintString covers the parser
			}
			opts.Layout, opts.Hints = dist.Layout{}, h
		}
		file, err := c.Create(ctx, path, opts)
		if err != nil {
			if !errors.Is(err, syscall.EINVAL) && !errors.Is(err, dist.ErrInvalid) {
				t.Fatalf("Create(%+v): %v; want EINVAL or dist.ErrInvalid", opts, err)
			}
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("Create(%+v): %v does not name %s", opts, err, path)
			}
			return
		}
		defer func() {
			file.Close()
			if err := c.Remove(ctx, path); err != nil {
				t.Fatal(err)
			}
		}()
		a := file.Attr()
		if again, err := dist.ParseLayout(a.Layout.String()); err != nil || again.Dist != a.Layout.Dist || again.Params != a.Layout.Params {
			t.Fatalf("Create(%+v) recorded layout %q, which parses as %+v, %v", opts, a.Layout, again, err)
		}
		if _, err := file.WriteAt(data, 1000); err != nil {
			t.Fatalf("layout %s: write: %v", a.Layout, err)
		}
		back := bytes.Repeat([]byte{0xee}, 1000+len(data)+10)
		got, err := file.ReadAt(back, 0)
		if got != 1000+len(data) || err != io.EOF {
			t.Fatalf("layout %s: read = %d, %v; want %d, EOF", a.Layout, got, err, 1000+len(data))
		}
		if !bytes.Equal(back[:1000], make([]byte, 1000)) || !bytes.Equal(back[1000:got], data) {
			t.Fatalf("layout %s: the bytes read back differ from those written", a.Layout)
		}
		if _, err := c.Stat(ctx, path); errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("layout %s: the file is gone: %v", a.Layout, err)
		}
	})
}
