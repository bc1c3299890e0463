package policies

import (
	"slices"
	"testing"
)

// Every rule a verdict cites is a rule some policy has: a verdict that
// names a rule nobody wrote holds nothing.
func TestVerdictsCiteRealRules(t *testing.T) {
	var names []string
	for _, p := range All() {
		for _, v := range p.Validations {
			names = append(names, v.Name)
		}
	}
	for schema, byField := range Verdicts() {
		for field, byPlace := range byField {
			for place, v := range byPlace {
				if v.How == "" {
					t.Errorf("%s.%s in a %s: no word on how", schema, field, place)
				}
				// A field another rule refuses in its own words is bounded
				// to none: refused, the generated rule would speak first.
				if v.Judgement == Refused && len(v.Rules) > 0 && !slices.Equal(v.Rules, []string{GeneratedRule(schema, place)}) {
					t.Errorf("%s.%s in a %s is refused and cites %v: only the generated rule %s holds a refused field; bound it to none instead",
						schema, field, place, v.Rules, GeneratedRule(schema, place))
				}
				for _, r := range v.Rules {
					if !slices.Contains(names, r) {
						t.Errorf("%s.%s in a %s cites rule %s, which no policy has", schema, field, place, r)
					}
				}
			}
		}
	}
}

// Every schema is judged in the places Schemas says, and in no other, and
// a generated rule holds its fields there.
func TestSchemasJudgedWhereTheySay(t *testing.T) {
	var names []string
	for _, p := range All() {
		for _, v := range p.Validations {
			names = append(names, v.Name)
		}
	}
	for _, s := range Schemas {
		byField, ok := Verdicts()[s.Name]
		if !ok || len(byField) == 0 {
			t.Errorf("%s: no verdicts", s.Name)
		}
		for field, byPlace := range byField {
			for place := range byPlace {
				if !slices.Contains(s.Places, place) {
					t.Errorf("%s.%s is judged in a %s, where Schemas does not judge %s", s.Name, field, place, s.Name)
				}
			}
			for _, place := range s.Places {
				if _, ok := byPlace[place]; !ok {
					t.Errorf("%s.%s has no verdict in a %s", s.Name, field, place)
				}
			}
		}
		for _, place := range s.Places {
			if r := GeneratedRule(s.Name, place); !slices.Contains(names, r) {
				t.Errorf("%s in a %s: its generated rule %q is not a rule of any policy", s.Name, place, r)
			}
		}
	}
}
