package cluster

import "testing"

func TestIsLineReadsPastAPrompt(t *testing.T) {
	for _, tc := range []struct {
		line string
		want bool
	}{
		{"session-42\r", true},
		{"$ session-42", true}, // the first prompt printed after the echo
		{"$ $ session-42\r", true},
		{"# session-42", true},
		{"echo session-$((6*7))", false},
		{"session-421", false},
		{"x session-42", false},
		{"", false},
	} {
		if got := IsLine(tc.line, "session-42"); got != tc.want {
			t.Errorf("IsLine(%q) = %t, want %t", tc.line, got, tc.want)
		}
	}
}
