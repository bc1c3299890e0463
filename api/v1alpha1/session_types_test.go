package v1alpha1

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestEndDetailFits: what the plane saw is cut by characters, as the API
// server counts End.Detail's maxLength, never inside one; what fits is
// left as it is.
func TestEndDetailFits(t *testing.T) {
	for _, tc := range []struct {
		name, saw string
		cut       bool
	}{
		{"short", "its grant expired", false},
		{"exactly the most", strings.Repeat("a", EndDetailMax), false},
		{"one too many", strings.Repeat("a", EndDetailMax+1), true},
		{"many-byte characters that fit", strings.Repeat("ü", EndDetailMax), false},
		{"many-byte characters past the most", strings.Repeat("é", 3*EndDetailMax), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := EndDetail(tc.saw)
			if n := utf8.RuneCountInString(got); n > EndDetailMax || !utf8.ValidString(got) {
				t.Fatalf("%d characters, valid UTF-8 %t", n, utf8.ValidString(got))
			}
			if cut := got != tc.saw; cut != tc.cut {
				t.Fatalf("cut %t, want %t", cut, tc.cut)
			}
			if tc.cut && (!strings.HasSuffix(got, "...") || !strings.HasPrefix(tc.saw, strings.TrimSuffix(got, "..."))) {
				t.Fatalf("not the start of what was seen, marked as cut: %q", got[len(got)-10:])
			}
		})
	}
}
