package vap

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

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

func loadRepresentative(b *testing.B) (map[string]Request, map[string]*unstructured.Unstructured) {
	files, err := LoadCaseDir("../policies/testdata")
	if err != nil {
		b.Fatal(err)
	}
	reqs := map[string]Request{}
	params := map[string]*unstructured.Unstructured{}
	for _, cf := range files {
		p, err := paramsFor(cf.Params)
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range cf.Cases {
			for _, name := range representative {
				if c.Name == name {
					reqs[name] = c.request()
					params[name] = p
				}
			}
		}
	}
	if len(reqs) != len(representative) {
		b.Fatalf("found %d of %d representative cases", len(reqs), len(representative))
	}
	return reqs, params
}

// BenchmarkPolicy evaluates each Flight policy alone on each representative
// request it matches.
func BenchmarkPolicy(b *testing.B) {
	reqs, params := loadRepresentative(b)
	pairs, err := BuildAll(policies.Flight)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, pr := range pairs {
		ev := NewEvaluator([]Pair{pr})
		for _, name := range representative {
			if r := ev.Evaluate(ctx, reqs[name], params[name]); len(r.Matched) == 0 {
				continue
			}
			b.Run(pr.Policy.Name+"/"+name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if r := ev.Evaluate(ctx, reqs[name], params[name]); !r.Allowed() {
						b.Fatal(r.Denials)
					}
				}
			})
		}
	}
}

// BenchmarkWholeSet evaluates the whole Flight set on each representative
// request, matching included, as the API server would for that request.
func BenchmarkWholeSet(b *testing.B) {
	reqs, params := loadRepresentative(b)
	pairs, err := BuildAll(policies.Flight)
	if err != nil {
		b.Fatal(err)
	}
	ev := NewEvaluator(pairs)
	ctx := context.Background()
	for _, name := range representative {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if r := ev.Evaluate(ctx, reqs[name], params[name]); !r.Allowed() {
					b.Fatal(r.Denials)
				}
			}
		})
	}
	b.Run("a debug container on a very large pod", func(b *testing.B) {
		req := bigDebugRequest()
		p, _ := paramsFor(map[string]any{"debugImages": []any{testImage}})
		b.ReportAllocs()
		for b.Loop() {
			if r := ev.Evaluate(ctx, req, p); !r.Allowed() {
				b.Fatal(r.Denials)
			}
		}
	})
}
