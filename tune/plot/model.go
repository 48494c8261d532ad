package plot

import (
	"os"

	"github.com/pario/pario/tune/model"
)

// The range of the optimal-n figure (fig4): 1..1000 GB, whose optimum
// (about 400 at 1000 GB) is well inside 1..2000.
const (
	Fig4Sizes = 1000
	Fig4MaxN  = 2000
)

// SaveModelFigures writes the paper's figures 3 and 4 for p into dir (tune
// model --plot), as PNG and SVG: fig3, E(T) against n = 1..maxN for a file
// of size GB, and fig4, the optimal n against sizes 1..Fig4Sizes GB, each
// by the exact formula and the paper's. It makes dir if need be and
// returns the paths written, those before a failure too.
func SaveModelFigures(p model.Params, size float64, maxN int, dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	labels := []string{"exact", "paper formula"}
	var curves [][]float64
	for _, f := range []model.Formula{model.Exact, model.Paper} {
		c, err := model.TimeCurve(p, size, maxN, f)
		if err != nil {
			return nil, err
		}
		curves = append(curves, c)
	}
	fig3, err := TimeCurve(size, labels, curves)
	if err != nil {
		return nil, err
	}
	paths, err := fig3.SaveAll(dir, "fig3")
	if err != nil {
		return paths, err
	}
	sizes := make([]float64, Fig4Sizes)
	for i := range sizes {
		sizes[i] = float64(i + 1)
	}
	var ns [][]int
	for _, f := range []model.Formula{model.Exact, model.Paper} {
		c, _, err := model.OptimalNCurve(p, sizes, Fig4MaxN, f)
		if err != nil {
			return paths, err
		}
		ns = append(ns, c)
	}
	fig4, err := OptimalNCurve(sizes, labels, ns)
	if err != nil {
		return paths, err
	}
	more, err := fig4.SaveAll(dir, "fig4")
	return append(paths, more...), err
}
