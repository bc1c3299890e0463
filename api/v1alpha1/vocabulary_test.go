package v1alpha1

import (
	"regexp"
	"testing"
)

// TestVocabularyIsOneSpellingEach: no step or kind listed twice or spelled
// so that a route's pattern or a log reader could confuse it, and each says
// what it means (docs/api.md shows it).
func TestVocabularyIsOneSpellingEach(t *testing.T) {
	for _, c := range []struct {
		what  string
		words []Word
		shape *regexp.Regexp
	}{
		{"audit step", AuditSteps, regexp.MustCompile(`^[a-z]+(-[a-z]+)*$`)},
		{"notification kind", NotificationKinds, regexp.MustCompile(`^[a-z]+\.[a-z]+$`)},
	} {
		seen := map[string]bool{}
		for _, w := range c.words {
			if seen[w.Name] {
				t.Errorf("%s %q listed twice", c.what, w.Name)
			}
			seen[w.Name] = true
			if !c.shape.MatchString(w.Name) {
				t.Errorf("%s %q does not match %s", c.what, w.Name, c.shape)
			}
			if len(w.Means) < 10 {
				t.Errorf("%s %q says nothing of what it means", c.what, w.Name)
			}
		}
	}
}
