package template

import (
	"fmt"
	"os"

	"github.com/pario/pario/template/annot"
)

// EnvAnnotations names the annotation file when no flag does, as ROMIO
// reads $ROMIO_HINTS.
const EnvAnnotations = "PARIO_ANNOTATIONS"

// LoadAnnotations reads the annotation file named by path (a flag's value)
// or, when path is empty, by $PARIO_ANNOTATIONS. It is read at run time:
// changing a line changes the program's I/O behaviour with no rebuild.
func LoadAnnotations(path string) (*annot.File, error) {
	if path == "" {
		path = os.Getenv(EnvAnnotations)
	}
	if path == "" {
		return nil, fmt.Errorf("template: no annotation file: pass one (--annotations) or set $%s", EnvAnnotations)
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("template: annotation file: %w", err)
	}
	return annot.Parse(path, src)
}
