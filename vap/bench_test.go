package vap

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tower-dev/breakglass/policies"
)

// representative are compliant requests of each kind the policies see,
// taken from the shipped cases: what the portal sends in a session.
var representative = []string{
	"the portal's well-formed grant",
	"the portal adds a compliant debug container",
	"the portal's copy pod",
	"the portal attaches to its debug container",
	"a well-formed request",
}

// benchCase is a representative request and the params its case file
// renders into the policies.
type benchCase struct {
	req    Request
	params policies.Params
}

func loadRepresentative(b *testing.B) map[string]benchCase {
	files, err := LoadCaseDir("../policies/testdata")
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]benchCase{}
	for _, cf := range files {
		p, err := paramsFor(cf.Params)
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range cf.Cases {
			for _, name := range representative {
				if c.Name == name {
					out[name] = benchCase{req: c.request(), params: p}
				}
			}
		}
	}
	if len(out) != len(representative) {
		b.Fatalf("found %d of %d representative cases", len(out), len(representative))
	}
	return out
}

// evaluator is how a benchmark evaluates the policies: as the chart renders
// them, or as they were before, reading a params object.
type evaluator struct {
	name string
	// build makes the policies for params and the object they read (nil
	// for none).
	build func(b *testing.B, pairs []Pair, params policies.Params) ([]Pair, runtime.Object)
}

var evaluators = []evaluator{
	{"rendered", func(_ *testing.B, pairs []Pair, _ policies.Params) ([]Pair, runtime.Object) { return pairs, nil }},
	{"params-object", paramsObjectBaseline},
}

func paramsObjectBaseline(b *testing.B, pairs []Pair, params policies.Params) ([]Pair, runtime.Object) {
	out, obj, err := ParamsObjectBaseline(pairs, params)
	if err != nil {
		b.Fatal(err)
	}
	return out, obj
}

// BenchmarkPolicy evaluates each Flight policy alone on each representative
// request it matches, rendered and as it read a params object before.
func BenchmarkPolicy(b *testing.B) {
	cases := loadRepresentative(b)
	runner, err := NewRunner()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, name := range representative {
		bc := cases[name]
		built, err := runner.pairs(bc.params)
		if err != nil {
			b.Fatal(err)
		}
		for _, pr := range built[policies.Flight] {
			if r := NewEvaluator([]Pair{pr}).Evaluate(ctx, bc.req); len(r.Matched) == 0 {
				continue
			}
			for _, e := range evaluators {
				pairs, obj := e.build(b, []Pair{pr}, bc.params)
				ev := NewEvaluator(pairs)
				b.Run(pr.Policy.Name+"/"+name+"/"+e.name, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						if r := ev.evaluate(ctx, bc.req, obj); !r.Allowed() {
							b.Fatal(r.Denials)
						}
					}
				})
			}
		}
	}
}

// BenchmarkWholeSet evaluates the whole Flight set on each representative
// request, matching included, as the API server would for that request:
// rendered, and reading a params object as before, taking turns in one
// loop, and reports each and their ratio.
func BenchmarkWholeSet(b *testing.B) {
	cases := loadRepresentative(b)
	cases["a debug container on a very large pod"] = benchCase{req: bigDebugRequest(), params: policies.DefaultParams(testImage)}
	runner, err := NewRunner()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, name := range append(representative, "a debug container on a very large pod") {
		bc := cases[name]
		built, err := runner.pairs(bc.params)
		if err != nil {
			b.Fatal(err)
		}
		type side struct {
			ev    *Evaluator
			obj   runtime.Object
			spent time.Duration
		}
		var sides []*side
		for _, e := range evaluators {
			pairs, obj := e.build(b, built[policies.Flight], bc.params)
			sides = append(sides, &side{ev: NewEvaluator(pairs), obj: obj})
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for _, sd := range sides {
				sd.spent = 0
			}
			turn := 0
			for b.Loop() {
				for i := range sides {
					sd := sides[(turn+i)%len(sides)]
					start := time.Now()
					if r := sd.ev.evaluate(ctx, bc.req, sd.obj); !r.Allowed() {
						b.Fatal(r.Denials)
					}
					sd.spent += time.Since(start)
				}
				turn++
			}
			for i, sd := range sides {
				b.ReportMetric(float64(sd.spent.Nanoseconds())/1e3/float64(b.N), "µs/"+evaluators[i].name)
			}
			b.ReportMetric(float64(sides[0].spent)/float64(sides[1].spent), "ratio-"+evaluators[0].name+"/"+evaluators[1].name)
		})
	}
}
