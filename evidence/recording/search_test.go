package recording

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/tower-dev/breakglass/evidence/transcript"
)

func TestSearch(t *testing.T) {
	sec := func(n int) time.Duration { return time.Duration(n) * time.Second }
	for name, tc := range map[string]struct {
		records []string // as typed() takes them: "o:" is output
		query   string
		opts    SearchOptions
		want    []transcript.Match
	}{
		"colours do not split words": {[]string{"o:\x1b[1;31mPass\x1b[0mword: \x1b[Khunter2\r\n"}, "password", SearchOptions{},
			[]transcript.Match{found(sec(1), transcript.StreamOutput, "Password: hunter2")}},
		"sequences and characters cut across writes": {[]string{"o:\x1b[3", "o:1mcaf\xc3", "o:\xa9 au lait\r\n"}, "CAFÉ", SearchOptions{},
			[]transcript.Match{found(sec(2), transcript.StreamOutput, "café au lait")}},
		"shown, then rubbed out": {[]string{"o:$ cat sec", "o:\b\b\b\x1b[K", "o:public\r\n"}, "sec", SearchOptions{},
			[]transcript.Match{found(sec(1), transcript.StreamOutput, "$ cat sec")}},
		"still shown after a redraw: once, when first shown": {[]string{"o:$ ls", "o:\r\x1b[K$ ls -la\r\n"}, "ls", SearchOptions{},
			[]transcript.Match{found(sec(1), transcript.StreamOutput, "$ ls")}},
		"overwritten in place": {[]string{"o:10% secret\r", "o:20%       \r\n"}, "secret", SearchOptions{},
			[]transcript.Match{found(sec(1), transcript.StreamOutput, "10% secret")}},
		"a title is not shown": {[]string{"o:\x1b]0;secret title\x07hello\r\n"}, "secret", SearchOptions{}, nil},
		"what was typed, as the line it made": {[]string{"cat /etc/shax", "\x7f", "d", "\t", "\r", "o:cat /etc/shadow\r\n"}, "/etc/SHAD", SearchOptions{Input: true},
			[]transcript.Match{found(sec(1), transcript.StreamInput, "cat /etc/shad")}},
		"both streams, in time order": {[]string{"echo kubeconfig\r", "o:kubeconfig\r\n"}, "kubeconfig", SearchOptions{},
			[]transcript.Match{found(sec(1), transcript.StreamInput, "echo kubeconfig"), found(sec(2), transcript.StreamOutput, "kubeconfig")}},
		"the output only": {[]string{"echo kubeconfig\r", "o:kubeconfig\r\n"}, "kubeconfig", SearchOptions{Output: true},
			[]transcript.Match{found(sec(2), transcript.StreamOutput, "kubeconfig")}},
		"at most Max, the first": {[]string{"o:x1\r\n", "o:x2\r\n", "o:x3\r\n"}, "x", SearchOptions{Max: 2},
			[]transcript.Match{found(sec(1), transcript.StreamOutput, "x1"), found(sec(2), transcript.StreamOutput, "x2")}},
		"a row of its own after a cursor move": {[]string{"o:top\x1b[2;1Hsecond row"}, "top", SearchOptions{},
			[]transcript.Match{found(sec(1), transcript.StreamOutput, "top")}},
		"nothing to find":    {[]string{"o:hello\r\n"}, "", SearchOptions{}, nil},
		"control characters": {[]string{"o:a\x07b\x1b[2Cc\r\n"}, "ab", SearchOptions{}, []transcript.Match{found(sec(1), transcript.StreamOutput, "ab  c")}},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Search(typed(tc.records...), tc.query, tc.opts)); diff != "" {
				t.Errorf("-want +got:\n%s", diff)
			}
		})
	}
}

func TestSearchBounds(t *testing.T) {
	long := strings.Repeat("a", 500) + "needle" + strings.Repeat("b", 500)
	m := Search(typed("o:"+long+"\r\n"), "NEEDLE", SearchOptions{})
	if len(m) != 1 || m[0].Context != "…"+strings.Repeat("a", contextRunes)+"needle"+strings.Repeat("b", contextRunes)+"…" {
		t.Fatalf("a long line: %+v", m)
	}
	var many []string
	for i := range 300 {
		many = append(many, fmt.Sprintf("o:match %d\r\n", i))
	}
	if m := Search(typed(many...), "match", SearchOptions{}); len(m) != DefaultSearchMax || m[0].Context != "match 0" {
		t.Fatalf("%d matches, want the first %d", len(m), DefaultSearchMax)
	}
}

// FuzzSearch: whatever the output, a search ends with at most Max
// matches, each within the recording's time, its context UTF-8 text
// holding what was asked.
func FuzzSearch(f *testing.F) {
	f.Add([]byte("\x1b[31mpass\x1b[0mword\r\n"), "pass", uint8(2))
	f.Add([]byte("\x1b]0;title"), "title", uint8(1))
	f.Add([]byte("abc\b\b\x1b[P\x1b[5@x\x1b[2K\x1b[1K\x1b[10G\x1b[Jy"), "x", uint8(0))
	f.Fuzz(func(t *testing.T, output []byte, query string, most uint8) {
		records := []Record{{Kind: KindOutput, At: time.Second, Data: output[:len(output)/2]}, {Kind: KindOutput, At: 2 * time.Second, Data: output[len(output)/2:]}}
		limit := int(most % 8)
		ms := Search(records, query, SearchOptions{Output: true, Max: limit})
		if limit == 0 {
			limit = DefaultSearchMax
		}
		if len(ms) > limit {
			t.Fatalf("%d matches, at most %d asked", len(ms), limit)
		}
		plain := utf8.ValidString(query) && strings.TrimSpace(query) == query &&
			strings.IndexFunc(query, func(r rune) bool { return unicode.IsControl(r) || r >= 0x80 }) < 0
		for _, m := range ms {
			if m.At < time.Second || m.At > 2*time.Second || !utf8.ValidString(m.Context) {
				t.Fatalf("%+v", m)
			}
			if plain && !strings.Contains(strings.ToLower(m.Context), strings.ToLower(query)) {
				t.Fatalf("context %q does not hold %q", m.Context, query)
			}
		}
	})
}

// found is a Match as Search gives it.
func found(at time.Duration, stream, context string) transcript.Match {
	return transcript.Match{At: at, Stream: stream, Context: context}
}
