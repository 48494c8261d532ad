package search

import (
	"os"

	"github.com/pario/pario/tune/plot"
)

// SaveTrace writes dir/search-trace.png and .svg (tune search --plot): the
// best time so far against the number of evaluations, one line per method
// that found a point. It makes dir if need be and returns the paths
// written.
func SaveTrace(rec Recommendation, dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var traces []plot.Trace
	for _, m := range rec.Methods {
		if m.Result.Best != nil {
			traces = append(traces, plot.Trace{Method: m.Method, BestSoFar: m.Result.BestSoFar()})
		}
	}
	fig := plot.SearchTrace(rec.Title(), "best predicted write time (s)", traces)
	return fig.SaveAll(dir, "search-trace")
}
