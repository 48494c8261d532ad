package client_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/pario/pario/client"
	"github.com/pario/pario/cluster"
	"github.com/pario/pario/dist"
)

// A file striped in 4-byte strips over an embedded cluster of four I/O
// servers, written and read back through io.WriterAt and io.ReaderAt.
func ExampleFile() {
	dir, err := os.MkdirTemp("", "pario-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	servers, err := cluster.Start(ctx, cluster.Config{Dir: dir})
	if err != nil {
		log.Fatal(err)
	}
	defer servers.Close()
	c, err := servers.Client(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	layout, err := dist.ParseLayout("simple_stripe:strip_size=4")
	if err != nil {
		log.Fatal(err)
	}
	f, err := c.Create(ctx, "/hello", client.CreateOptions{Mode: client.DefaultFileMode, Layout: layout})
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte("hello, striped world"), 0); err != nil {
		log.Fatal(err)
	}
	if err := f.Sync(); err != nil { // durable on every I/O server
		log.Fatal(err)
	}

	p := make([]byte, 32)
	n, err := f.ReadAt(p, 7) // past the end: the bytes there, and io.EOF
	fmt.Printf("%q %v\n", p[:n], err == io.EOF)
	ds, err := f.Datafiles(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range ds {
		fmt.Printf("datafile %d: %d bytes\n", d.Datafile, d.Size)
	}
	// Output:
	// "striped world" true
	// datafile 0: 8 bytes
	// datafile 1: 4 bytes
	// datafile 2: 4 bytes
	// datafile 3: 4 bytes
}
