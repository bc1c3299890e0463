package cluster

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// Eventually is cluster.Within for a test: it fails t, naming what it waited for.
func Eventually(t testing.TB, within time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	if err := Within(within, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// WaitFor waits until the buffer holds want, and fails t with what it
// holds if it does not within the given time.
func (s *SyncBuffer) WaitFor(t testing.TB, within time.Duration, want string) {
	t.Helper()
	if err := Within(within, func() (bool, error) { return strings.Contains(s.String(), want), nil }); err != nil {
		t.Fatalf("no %q: %v; got %q", want, err, s.String())
	}
}

// WaitMatch waits until the buffer matches re, and returns the match and
// its groups.
func (s *SyncBuffer) WaitMatch(t testing.TB, within time.Duration, re *regexp.Regexp) []string {
	t.Helper()
	var m []string
	if err := Within(within, func() (bool, error) { m = re.FindStringSubmatch(s.String()); return m != nil, nil }); err != nil {
		t.Fatalf("no %s: %v; got %q", re, err, s.String())
	}
	return m
}
