package recording

import (
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tower-dev/breakglass/evidence/transcript"
)

// SearchOptions say what Search looks through.
type SearchOptions struct {
	// Output and Input choose the streams: what the terminal showed, and
	// what was typed (the lines of Commands). Neither means both.
	Output, Input bool
	// Max bounds the matches: DefaultSearchMax when 0 or less.
	Max int
}

// DefaultSearchMax is how many matches Search returns unless told.
const DefaultSearchMax = 100

// Search finds query, ignoring case, in what a person saw and typed: the
// output with its escape sequences (colours, cursor moves) applied or
// removed, and the reconstructed command lines, not the raw bytes, in
// which a colour code or a corrected typo would split the words. Text
// shown and then erased or overwritten is found too, at the moment it was
// shown. One match per line, in time order, at most opts.Max.
func Search(records []Record, query string, opts SearchOptions) []transcript.Match {
	q := lower([]rune(query))
	if q == "" {
		return nil
	}
	limit := opts.Max
	if limit <= 0 {
		limit = DefaultSearchMax
	}
	both := opts.Output == opts.Input
	var out []transcript.Match
	if both || opts.Output {
		out = searchOutput(records, q, limit)
	}
	if both || opts.Input {
		found := 0
		for _, c := range Commands(records) {
			line := []rune(c.Line)
			if col := find(line, q); col >= 0 && found < limit {
				out = append(out, transcript.Match{At: c.At, Stream: transcript.StreamInput, Context: contextOf(line, col, utf8.RuneCountInString(q))})
				found++
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out[:min(len(out), limit)]
}

// searchOutput finds q in the lines of the output. An earlier state of a
// line (before an erase or an overwrite) that still shows q in its later
// state is one match, at the time it first showed.
func searchOutput(records []Record, q string, limit int) []transcript.Match {
	var out []transcript.Match
	var pending *transcript.Match // in a line's earlier state, until its later one is seen
	n := utf8.RuneCountInString(q)
	sc := screen{emit: func(line []rune, times []time.Duration, continued bool) bool {
		col := find(line, q)
		if pending != nil {
			if col >= 0 {
				if !continued {
					out, pending = append(out, *pending), nil
				}
				return len(out) < limit
			}
			out, pending = append(out, *pending), nil
		}
		if col >= 0 {
			m := transcript.Match{At: times[col], Stream: transcript.StreamOutput, Context: contextOf(line, col, n)}
			if continued {
				pending = &m
			} else {
				out = append(out, m)
			}
		}
		return len(out) < limit
	}}
	for _, r := range records {
		if r.Kind == KindOutput && !sc.stopped {
			sc.feed(r.Data, r.At)
		}
	}
	sc.finish()
	if pending != nil {
		out = append(out, *pending)
	}
	return out[:min(len(out), limit)]
}

func lower(rs []rune) string {
	var b strings.Builder
	b.Grow(len(rs))
	for _, r := range rs {
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// find is the rune index of the first q (lower case) in line, or -1.
func find(line []rune, q string) int {
	s := lower(line)
	i := strings.Index(s, q)
	if i < 0 {
		return -1
	}
	return utf8.RuneCountInString(s[:i])
}

// contextRunes is how much of a line a Match shows each side of its text.
const contextRunes = 80

func contextOf(line []rune, col, n int) string {
	from, to := max(0, col-contextRunes), min(len(line), col+n+contextRunes)
	var b strings.Builder
	if from > 0 {
		b.WriteString("…")
	}
	for _, r := range line[from:to] {
		if r < 0x20 || (r >= 0x7f && r < 0xa0) {
			r = ' '
		}
		b.WriteRune(r)
	}
	if to < len(line) {
		b.WriteString("…")
	}
	return strings.TrimSpace(b.String())
}
