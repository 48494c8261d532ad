package search

import (
	"fmt"
	"strings"
)

// Heuristics returns every heuristic with its default settings, in a fixed
// order: the methods the paper names (Nelder-Mead simplex, genetic
// algorithm, simulated annealing, particle swarm, orthogonal and random
// search) and Latin hypercube sampling.
func Heuristics() []Method {
	return []Method{NelderMead{}, Annealing{}, Genetic{}, Swarm{}, Orthogonal{}, Random{}, LatinHypercube{}}
}

// MethodByName returns the heuristic (or "exhaustive") of that name, with
// default settings.
func MethodByName(name string) (Method, error) {
	var names []string
	for _, m := range append(Heuristics(), Exhaustive{}) {
		if m.Name() == name {
			return m, nil
		}
		names = append(names, m.Name())
	}
	return nil, fmt.Errorf("search: unknown method %q (known: %s)", name, strings.Join(names, ", "))
}
