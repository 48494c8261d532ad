package vfs

import (
	"io/fs"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 99)) }

func itoa(n int) string { return " " + strconv.Itoa(n) }

func sortedNames(ents []fs.DirEntry) string {
	var names []string
	for _, e := range ents {
		names = append(names, e.Name()+":"+e.Type().String())
	}
	slices.Sort(names)
	return strings.Join(names, " ")
}
