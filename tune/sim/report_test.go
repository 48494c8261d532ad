package sim

import (
	"bytes"
	"github.com/pario/pario/internal/golden"
	"path/filepath"
	"testing"
	"time"
)

// TestWriteTextGolden is `pario tune simulate`'s report for results with
// and without a pilot, a met and a missed precision goal, the model inside
// and outside the interval, an empty start, and several groups.
func TestWriteTextGolden(t *testing.T) {
	cfg := Config{Lambda: 0.1, Gamma: 0.125, V: 0.0625, FileSize: 10, Stripes: 4, Time: 100, Seed: 1}
	piloted := Result{Mean: 114.5, StdDev: 20, CIHalfWidth99: 1.5, N: 4000, Pilot: 200, Required: 3900, Converged: true,
		Events: 123456, Model: 114.4107, HasModel: true, RelErr: (114.5 - 114.4107) / 114.4107, Elapsed: 1234567 * time.Microsecond}
	fixed := piloted
	fixed.Pilot, fixed.Required, fixed.N, fixed.Converged, fixed.Mean = 0, 0, 100, false, 120
	fixed.RelErr = (120 - 114.4107) / 114.4107
	empty := fixed
	emptyCfg := cfg
	emptyCfg.Init, emptyCfg.Time = Empty, 2
	empty.HasModel, empty.BiasBound = false, 0.75
	groupsCfg := cfg
	groupsCfg.FileSize, groupsCfg.Stripes, groupsCfg.Groups, groupsCfg.Targets = 100, 5, 4, 40
	groups := piloted
	groups.Mean, groups.HasModel, groups.Model, groups.RelErr = 251.5, false, 0, 0
	for _, tc := range []struct {
		name string
		cfg  Config
		r    Result
	}{{"piloted", cfg, piloted}, {"fixed-outside", cfg, fixed}, {"empty-start", emptyCfg, empty}, {"groups", groupsCfg, groups}} {
		var b bytes.Buffer
		if err := WriteText(&b, tc.cfg, tc.r); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", "report", tc.name+".txt")
		golden.Check(t, path, b.Bytes(), *update)
	}
}
