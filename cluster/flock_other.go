//go:build !unix

package cluster

import "os"

// haveFlock: no flock here; a cluster directory's lock proves nothing, and
// a cluster file is read as it is.
const haveFlock = false

func tryFlock(*os.File, bool) (bool, error) { return true, nil }

func unflock(*os.File) {}
