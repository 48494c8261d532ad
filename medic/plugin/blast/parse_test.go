package blast

import (
	"reflect"
	"strings"
	"testing"

	"github.com/pario/pario/medic"
)

func TestHitIDsTabular(t *testing.T) {
	out := "q1\tA1\t100\nq1\tB2\t90\n# comment\nq2\tA1\t80\n"
	got, err := HitIDs([]byte(out), "6")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"A1", "B2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
	got, err = HitIDs([]byte("1e-5,q,X9\n"), "10 evalue qseqid saccver")
	if err != nil || !reflect.DeepEqual(got, []string{"X9"}) {
		t.Fatalf("custom: %v %v", got, err)
	}
	if _, err := HitIDs(nil, "6 qseqid evalue"); err == nil {
		t.Fatal("format without subject column accepted")
	}
}

func TestHitIDsPairwise(t *testing.T) {
	out := `Query= q1

Length=57
                                                                      Score     E
Sequences producing significant alignments:                          (Bits)  Value

A7TBS3 Predicted protein (Fragment) OS=Nematostella vectensis GN=...  120     2e-38
ONLYDESC Something                                                    20      5


>A7TBS3 Predicted protein (Fragment) OS=Nematostella vectensis
Length=57

Lambda      K        H
Query= q2

Length=9


***** No hits found *****

`
	got, err := HitIDs([]byte(out), "0")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"A7TBS3", "ONLYDESC"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
}

func TestParams(t *testing.T) {
	base := map[string]string{"program": "blastp", "query": "q", "db": "d"}
	if _, err := parseParams(medic.Source{Params: base}); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"program": "psiblast", "options": "-dbsize 5", "outfmt": "5"} {
		p := map[string]string{}
		for a, b := range base {
			p[a] = b
		}
		p[k] = v
		if _, err := parseParams(medic.Source{Params: p}); err == nil {
			t.Errorf("%s=%s accepted", k, v)
		}
	}
	if _, err := parseParams(medic.Source{Params: map[string]string{"program": "blastp"}}); err == nil || !strings.Contains(err.Error(), "query") {
		t.Errorf("missing query: %v", err)
	}
}

func TestWithoutThreads(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"-seg no -num_threads 8 -mt_mode 1 -comp_based_stats 0", "-seg no -comp_based_stats 0"},
		{"-num_threads", ""},
		{"-word_size 3", "-word_size 3"},
		{"", ""},
	} {
		if got := strings.Join(withoutThreads(strings.Fields(tc.in)), " "); got != tc.want {
			t.Errorf("withoutThreads(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
