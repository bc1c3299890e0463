package recording

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/tower-dev/breakglass/evidence/transcript"
)

// typed makes a transcript of keys, one record a second from 1s: kinds
// other than input are given as "o:" (output) prefixes.
func typed(keys ...string) []Record {
	var out []Record
	for i, k := range keys {
		r := Record{Kind: KindInput, At: time.Duration(i+1) * time.Second, Data: []byte(k)}
		if rest, ok := strings.CutPrefix(k, "o:"); ok {
			r.Kind, r.Data = KindOutput, []byte(rest)
		}
		out = append(out, r)
	}
	return out
}

type line struct {
	Line      string
	Ended     transcript.LineEnd
	Uncertain bool
	Why       string
}

func lines(cs []transcript.Command) []line {
	var out []line
	for _, c := range cs {
		out = append(out, line{c.Line, c.Ended, c.Uncertain, c.Why})
	}
	return out
}

func TestCommands(t *testing.T) {
	for name, tc := range map[string]struct {
		keys []string
		want []line
	}{
		"a line":                     {[]string{"ls -la\r"}, []line{{"ls -la", transcript.EndEnter, false, ""}}},
		"CR LF and LF end lines":     {[]string{"a\r\n", "b\n"}, []line{{"a", transcript.EndEnter, false, ""}, {"b", transcript.EndEnter, false, ""}}},
		"an Enter alone is no line":  {[]string{"\r", "\r", "id\r"}, []line{{"id", transcript.EndEnter, false, ""}}},
		"backspace":                  {[]string{"lss", "\x7f", " -l\r"}, []line{{"ls -l", transcript.EndEnter, false, ""}}},
		"backspace deletes a rune":   {[]string{"café", "\x08", "e\r"}, []line{{"cafe", transcript.EndEnter, false, ""}}},
		"a rune cut across records":  {[]string{"caf\xc3", "\xa9\r"}, []line{{"café", transcript.EndEnter, false, ""}}},
		"bytes that are not UTF-8":   {[]string{"a\xffb\r"}, []line{{"a\uFFFDb", transcript.EndEnter, true, whyNotUTF8}}},
		"Ctrl-U kills the line":      {[]string{"rm -rf /", "\x15", "ls\r"}, []line{{"ls", transcript.EndEnter, false, ""}}},
		"Ctrl-U kills to the cursor": {[]string{"abcdef", "\x1b[D\x1b[D", "\x15", "\r"}, []line{{"ef", transcript.EndEnter, false, whyCursor}}},
		"Ctrl-W deletes a word":      {[]string{"cat /etc/passwd", "\x17", "hosts\r"}, []line{{"cat hosts", transcript.EndEnter, false, ""}}},
		"Ctrl-K cuts to the end":     {[]string{"echo hi # note", "\x01\x06\x06\x06\x06\x06\x06\x06", "\x0b", "\r"}, []line{{"echo hi", transcript.EndEnter, false, whyCursor}}},
		"Ctrl-C abandons":            {[]string{"rm -rf /", "\x03"}, []line{{"rm -rf /", transcript.EndInterrupt, false, whyInterrupt}}},
		"Ctrl-C alone is no line":    {[]string{"\x03", "\r"}, nil},
		"Ctrl-D on an empty line":    {[]string{"\x04"}, []line{{"", transcript.EndEOF, false, whyEOF}}},
		"Ctrl-D deletes in a line":   {[]string{"xls", "\x01", "\x04", "\r"}, []line{{"ls", transcript.EndEnter, false, whyCursor}}},
		"insert at the cursor":       {[]string{"echo wrld", "\x1b[D\x1b[D\x1b[D", "o", "\r"}, []line{{"echo world", transcript.EndEnter, false, whyCursor}}},
		"Home and End, every form": {[]string{"bc", "\x1bOH", "a", "\x1b[4~", "d", "\x1b[1~", ">", "\x1b[F", "!", "\x1b[7~", "<\r"},
			[]line{{"<>abcd!", transcript.EndEnter, false, whyCursor}}},
		"Delete":                       {[]string{"abc", "\x1b[H", "\x1b[3~", "\r"}, []line{{"bc", transcript.EndEnter, false, whyCursor}}},
		"the up arrow recalls history": {[]string{"\x1b[A", "\r"}, []line{{"", transcript.EndEnter, true, whyHistory}}},
		"typing after a recall":        {[]string{"\x1bOA", " | grep x\r"}, []line{{" | grep x", transcript.EndEnter, true, whyHistory}}},
		"down back to the line typed":  {[]string{"ls", "\x1b[A\x1b[A", "\x1b[B\x1b[B", "\r"}, []line{{"ls", transcript.EndEnter, true, whyHistory}}},
		"tab completion":               {[]string{"cat /etc/pas", "\t", "\r"}, []line{{"cat /etc/pas", transcript.EndEnter, true, whyTab}}},
		"a history search":             {[]string{"\x12", "kubectl", "\r"}, []line{{"kubectl", transcript.EndEnter, true, whySearch}}},
		"a paste of two lines": {[]string{"\x1b[200~echo a\recho b\x1b[201~", "\r"},
			[]line{{"echo a", transcript.EndEnter, false, whyPaste}, {"echo b", transcript.EndEnter, false, whyPaste}}},
		"a paste is literal":    {[]string{"\x1b[200~a\tb\x7fc\x1b[201~\r"}, []line{{"a\tb\x7fc", transcript.EndEnter, false, whyPaste}}},
		"a paste never ended":   {[]string{"\x1b[200~abc"}, []line{{"abc", transcript.EndUnfinished, true, whyPaste + "; " + whyPasteUnended + "; " + whyUnfinished}}},
		"an unknown key":        {[]string{"ls", "\x1b[24~", "\r"}, []line{{"ls", transcript.EndEnter, true, whyEscape}}},
		"Escape, then Enter":    {[]string{"ls", "\x1b", "\r"}, []line{{"ls", transcript.EndEnter, true, whyEscape}}},
		"Alt-b moves by a word": {[]string{"git push", "\x1bb", "-f ", "\r"}, []line{{"git -f push", transcript.EndEnter, true, whyWords}}},
		"Ctrl-Left, Alt-Backspace": {[]string{"a bb cc", "\x1b[1;5D", "\x1b\x7f", "\r"},
			[]line{{"a cc", transcript.EndEnter, true, whyWords}}},
		"Ctrl-Y pastes back": {[]string{"secret", "\x15", "\x19", "\r"}, []line{{"secret", transcript.EndEnter, true, whyYank}}},
		"a control key":      {[]string{"sleep 9", "\x1a", "\r"}, []line{{"sleep 9", transcript.EndEnter, true, whyControl}}},
		"the terminal's answers are no keys": {[]string{"\x1b[12;40R", "\x1b]11;rgb:0000/0000/0000\x07", "\x1b[I", "ls\r"},
			[]line{{"ls", transcript.EndEnter, false, ""}}},
		"keys to a full-screen program": {[]string{"vim x\r", "o:\x1b[?1049h", ":wq\r", "o:\x1b[?10", "o:49l", "ls\r"},
			[]line{{"vim x", transcript.EndEnter, false, ""}, {":wq", transcript.EndEnter, true, whyFullScreen}, {"ls", transcript.EndEnter, false, ""}}},
		"never entered": {[]string{"ls -l"}, []line{{"ls -l", transcript.EndUnfinished, false, whyUnfinished}}},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, lines(Commands(typed(tc.keys...)))); diff != "" {
				t.Errorf("-want +got:\n%s", diff)
			}
		})
	}
}

// TestCommandsTimesAndRanges: each command names when its first and last
// keys came and the input bytes it was made of.
func TestCommandsTimesAndRanges(t *testing.T) {
	records := typed("l", "s\r", "\r", "pwd\r", "\x1b[200~a\rb\x1b[201~\r")
	input := InputStream(records)
	if string(input) != "ls\r\rpwd\r\x1b[200~a\rb\x1b[201~\r" {
		t.Fatalf("the input stream: %q", input)
	}
	got := Commands(records)
	want := []struct {
		at, endAt  time.Duration
		start, end int
		raw        string
	}{
		{time.Second, 2 * time.Second, 0, 3, "ls\r"},
		{4 * time.Second, 4 * time.Second, 4, 8, "pwd\r"},
		{5 * time.Second, 5 * time.Second, 8, 16, "\x1b[200~a\r"},
		{5 * time.Second, 5 * time.Second, 16, 24, "b\x1b[201~\r"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d commands, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		c := got[i]
		if c.At != w.at || c.EndAt != w.endAt || c.InputStart != w.start || c.InputEnd != w.end || string(input[c.InputStart:c.InputEnd]) != w.raw {
			t.Errorf("command %d (%q): at %s-%s bytes [%d,%d), want %s-%s [%d,%d) %q", i, c.Line, c.At, c.EndAt, c.InputStart, c.InputEnd, w.at, w.endAt, w.start, w.end, w.raw)
		}
	}
	// The JSON a portal reads: times in seconds, and back.
	raw, err := json.Marshal(got[0])
	if err != nil || string(raw) != `{"line":"ls","at":1,"endAt":2,"inputStart":0,"inputEnd":3,"ended":"enter"}` {
		t.Fatalf("JSON %s, %v", raw, err)
	}
	var back transcript.Command
	if err := json.Unmarshal(raw, &back); err != nil || back != got[0] {
		t.Fatalf("back from JSON: %+v, %v", back, err)
	}
}

// FuzzCommands: whatever was typed, however the records split it, the
// commands never lose a byte: their input ranges are ordered, apart and
// within the input, and with the bytes between them make the input again;
// every line is UTF-8, and a U+FFFD not typed as such is marked.
func FuzzCommands(f *testing.F) {
	for _, seed := range []string{
		"ls -la\r", "rm -rf /\x03", "\x1b[A\r", "cat /etc/pas\t\r", "\x1b[200~echo a\recho b\x1b[201~\r", "a\xffb\r\n",
		"\x1b[12;40R\x1b]11;rgb:0/0/0\x07ls\r", "abc\x1b[D\x1b[D\x15\x19\x17\x0b\r", "\x1b[1;5D\x1b\x7f\x1bb\x1bf\x1bd\x04", "\x1b[200~never", "\x1b", "\x1b[",
	} {
		f.Add([]byte(seed), uint8(3), false)
	}
	f.Fuzz(func(t *testing.T, input []byte, split uint8, fullScreen bool) {
		// Split the input into records of 1 to 8 bytes, a full-screen
		// program coming and going in between if asked.
		var records []Record
		for i, k := 0, 0; i < len(input); k++ {
			n := min(int(split>>(k%8))%8+1, len(input)-i)
			records = append(records, Record{Kind: KindInput, At: time.Duration(i) * time.Millisecond, Data: input[i : i+n]})
			if fullScreen {
				records = append(records, Record{Kind: KindOutput, At: time.Duration(i) * time.Millisecond, Data: []byte("\x1b[?1049" + string("hl"[k%2]))})
			}
			i += n
		}
		if in := InputStream(records); !bytes.Equal(in, input) {
			t.Fatalf("the input stream %q is not what was typed, %q", in, input)
		}
		cmds := Commands(records)
		var again []byte
		end := 0
		for i, c := range cmds {
			if c.InputStart < end || c.InputEnd <= c.InputStart || c.InputEnd > len(input) {
				t.Fatalf("command %d: range [%d,%d) after %d, in %d bytes", i, c.InputStart, c.InputEnd, end, len(input))
			}
			again = append(append(again, input[end:c.InputStart]...), input[c.InputStart:c.InputEnd]...)
			end = c.InputEnd
			if !utf8.ValidString(c.Line) {
				t.Fatalf("command %d: %q is not UTF-8", i, c.Line)
			}
			if strings.ContainsRune(c.Line, utf8.RuneError) && !bytes.Contains(input[c.InputStart:c.InputEnd], []byte("\uFFFD")) && !c.Uncertain {
				t.Fatalf("command %d: %q shows U+FFFD, unmarked", i, c.Line)
			}
			if c.At > c.EndAt || (c.Uncertain && c.Why == "") {
				t.Fatalf("command %d: %+v", i, c)
			}
		}
		if again = append(again, input[end:]...); !bytes.Equal(again, input) {
			t.Fatalf("the commands and the bytes between make %q, not %q", again, input)
		}
		// However the keys were split, the same lines.
		if !fullScreen {
			whole := Commands([]Record{{Kind: KindInput, Data: input}})
			if diff := cmp.Diff(lines(whole), lines(cmds)); diff != "" {
				t.Fatalf("split records make other lines (-whole +split):\n%s", diff)
			}
		}
	})
}
