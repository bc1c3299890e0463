package recording

import (
	"bytes"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tower-dev/breakglass/evidence/transcript"
)

// What was typed. The transcript holds keys, not commands: the shell's
// line editor turned them into lines, and some of its work (history,
// completion) the keys do not show. Commands replays the common
// line-editing keys and marks every line it cannot be sure of, saying why.
// Each line keeps the exact input bytes it came from, so that the
// reconstruction never stands between a reviewer and what was sent.

// Why a line is marked. The uncertain ones say what the shell may have done
// that the input does not show.
const (
	whyTab          = "tab completion: the shell completed what was typed"
	whyHistory      = "history recall (up/down arrow): the shell put in a line the input does not show"
	whySearch       = "history search (Ctrl-R): the shell found a line the input does not show"
	whyYank         = "Ctrl-Y: the shell pasted back text cut earlier"
	whyWords        = "moved or deleted by words: word boundaries differ between shells"
	whyEscape       = "an escape sequence the shell may act on"
	whyControl      = "a control key the shell may act on"
	whyNotUTF8      = "bytes that are not UTF-8, shown as U+FFFD"
	whyFullScreen   = "a full-screen program was running: the keys went to it, not to a shell"
	whyTooLong      = "longer than 16384 characters: the rest is left out"
	whyPasteUnended = "a paste that never ended: the rest of the input is taken as pasted"
	whyCursor       = "cursor moved with arrow keys"
	whyPaste        = "paste"
	whyInterrupt    = "Ctrl-C: abandoned"
	whyEOF          = "Ctrl-D: end of input"
	whyUnfinished   = "the recording ended before Enter"
)

// maxLine bounds a line: a paste of a whole file makes no readable command,
// and inserting into a long line costs its length at every key.
const maxLine = 16 << 10

// InputStream is every byte typed, in order: what the input ranges of
// Commands index.
func InputStream(records []Record) []byte {
	return inputOf(records).bytes
}

// Commands reconstructs the lines entered from the recorded input. It
// replays the line editing of readline and busybox's shell (Backspace,
// Ctrl-U, Ctrl-W, Ctrl-K, the cursor keys, Delete, bracketed paste) and
// marks, rather than guesses, what it cannot see: history, completion,
// other escape sequences, keys sent while a full-screen program held the
// terminal. A line with no key but its Enter (or Ctrl-C) is no command.
func Commands(records []Record) []transcript.Command {
	p := lineParser{in: inputOf(records)}
	for p.i < len(p.in.bytes) {
		p.fullScreenCheck()
		if p.pasting {
			p.pasteKey()
		} else {
			p.key()
		}
	}
	if p.pasting && p.keyed {
		p.mark(whyPasteUnended, true)
	}
	if p.keyed {
		p.end(transcript.EndUnfinished)
	}
	return p.out
}

// inputStream is the input records end to end (a key's bytes may be split
// across records), with where each record starts.
type inputStream struct {
	bytes  []byte
	chunks []inputChunk
}

type inputChunk struct {
	start int
	at    time.Duration
	// fullScreen: the output had switched to the alternate screen (vim,
	// less, top): these keys went to that program, not to a line editor.
	fullScreen bool
}

func inputOf(records []Record) inputStream {
	var in inputStream
	var alt altScreen
	for _, r := range records {
		switch {
		case r.Kind == KindOutput:
			alt.feed(r.Data)
		case r.Kind == KindInput && len(r.Data) > 0:
			in.chunks = append(in.chunks, inputChunk{start: len(in.bytes), at: r.At, fullScreen: alt.on})
			in.bytes = append(in.bytes, r.Data...)
		}
	}
	return in
}

// at is when the byte at off came.
func (in inputStream) at(off int) time.Duration {
	i := sort.Search(len(in.chunks), func(i int) bool { return in.chunks[i].start > off })
	if i == 0 {
		return 0
	}
	return in.chunks[i-1].at
}

// lineParser is the line editor as the keys drive it.
type lineParser struct {
	in    inputStream
	i     int // the next byte
	chunk int // the chunk holding byte i
	out   []transcript.Command

	// The line being typed.
	buf       []rune
	cur       int
	start     int  // where its input range starts
	keyed     bool // a key besides its end was pressed: it is a command
	uncertain bool
	why       []string
	pasting   bool
	// depth is how far back in history the line is (up arrows less down
	// arrows); saved is the line typed before the first up arrow, which a
	// shell gives back when the down arrows return to it.
	depth int
	saved []rune
	// kill is the text Ctrl-U, Ctrl-W or Ctrl-K cut last, for Ctrl-Y.
	kill []rune
}

func (p *lineParser) fullScreenCheck() {
	for p.chunk+1 < len(p.in.chunks) && p.in.chunks[p.chunk+1].start <= p.i {
		p.chunk++
	}
	if len(p.in.chunks) > 0 && p.in.chunks[p.chunk].fullScreen {
		p.mark(whyFullScreen, true)
	}
}

func (p *lineParser) mark(why string, uncertain bool) {
	p.uncertain = p.uncertain || uncertain
	if !slices.Contains(p.why, why) {
		p.why = append(p.why, why)
	}
}

// end closes the line at p.i (its end consumed) and starts the next.
func (p *lineParser) end(how transcript.LineEnd) {
	if p.keyed || how == transcript.EndEOF {
		switch how {
		case transcript.EndInterrupt:
			p.mark(whyInterrupt, false)
		case transcript.EndEOF:
			p.mark(whyEOF, false)
		case transcript.EndUnfinished:
			p.mark(whyUnfinished, false)
		}
		p.out = append(p.out, transcript.Command{Line: string(p.buf), At: p.in.at(p.start), EndAt: p.in.at(p.i - 1),
			InputStart: p.start, InputEnd: p.i, Ended: how, Uncertain: p.uncertain, Why: strings.Join(p.why, "; ")})
	}
	p.buf, p.cur, p.start, p.keyed, p.uncertain, p.why, p.depth, p.saved = nil, 0, p.i, false, false, nil, 0, nil
}

// enter consumes a line end: \r, \n or \r\n.
func (p *lineParser) enter() {
	if p.in.bytes[p.i] == '\r' && p.i+1 < len(p.in.bytes) && p.in.bytes[p.i+1] == '\n' {
		p.i++
	}
	p.i++
	p.end(transcript.EndEnter)
}

// key reads one key at p.i and applies it.
func (p *lineParser) key() {
	c := p.in.bytes[p.i]
	switch c {
	case '\r', '\n':
		p.enter()
		return
	case 0x1b:
		p.escape()
		return
	case 0x03: // Ctrl-C
		p.i++
		p.end(transcript.EndInterrupt)
		return
	case 0x04: // Ctrl-D: the end of input on an empty line, else Delete
		p.i++
		if len(p.buf) == 0 {
			p.keyed = true
			p.end(transcript.EndEOF)
			return
		}
		p.deleteAt()
	default:
		if c >= 0x20 && c != 0x7f {
			p.insert(p.character())
		} else {
			p.i++
			p.control(c)
		}
	}
	p.keyed = true
}

// control applies a control key.
func (p *lineParser) control(c byte) {
	switch c {
	case 0x7f, 0x08: // Backspace
		if p.cur > 0 {
			p.buf = slices.Delete(p.buf, p.cur-1, p.cur)
			p.cur--
		}
	case 0x15: // Ctrl-U: cut back to the start
		p.kill = slices.Clone(p.buf[:p.cur])
		p.buf = slices.Delete(p.buf, 0, p.cur)
		p.cur = 0
	case 0x0b: // Ctrl-K: cut to the end
		p.kill = slices.Clone(p.buf[p.cur:])
		p.buf = p.buf[:p.cur]
	case 0x17: // Ctrl-W: cut the word before the cursor, up to a space
		p.cutBack(func(r rune) bool { return r != ' ' && r != '\t' })
	case 0x19: // Ctrl-Y
		p.mark(whyYank, true)
		for _, r := range p.kill {
			p.insert(r)
		}
	case 0x01: // Ctrl-A
		p.move(0)
	case 0x05: // Ctrl-E
		p.move(len(p.buf))
	case 0x02: // Ctrl-B
		p.move(p.cur - 1)
	case 0x06: // Ctrl-F
		p.move(p.cur + 1)
	case 0x10, 0x0e: // Ctrl-P, Ctrl-N: history, as the arrows
		p.history(c == 0x10)
	case 0x09:
		p.mark(whyTab, true)
	case 0x12, 0x13: // Ctrl-R, Ctrl-S
		p.mark(whySearch, true)
	case 0x0c: // Ctrl-L clears the screen, not the line
	default:
		p.mark(whyControl, true)
	}
}

// character decodes the character at p.i; a byte that is not UTF-8 is
// U+FFFD, marked.
func (p *lineParser) character() rune {
	r, size := utf8.DecodeRune(p.in.bytes[p.i:])
	if r == utf8.RuneError && size <= 1 {
		p.mark(whyNotUTF8, true)
		size = 1
	}
	p.i += size
	return r
}

func (p *lineParser) insert(r rune) {
	if len(p.buf) >= maxLine {
		p.mark(whyTooLong, true)
		return
	}
	p.buf = slices.Insert(p.buf, p.cur, r)
	p.cur++
}

func (p *lineParser) move(to int) {
	to = max(0, min(to, len(p.buf)))
	if to != p.cur {
		p.mark(whyCursor, false)
		p.cur = to
	}
}

func (p *lineParser) deleteAt() {
	if p.cur < len(p.buf) {
		p.buf = slices.Delete(p.buf, p.cur, p.cur+1)
	}
}

// cutBack cuts from the cursor back over what is not part of a word, then
// over the word.
func (p *lineParser) cutBack(inWord func(rune) bool) {
	from := p.cur
	for from > 0 && !inWord(p.buf[from-1]) {
		from--
	}
	for from > 0 && inWord(p.buf[from-1]) {
		from--
	}
	p.kill = slices.Clone(p.buf[from:p.cur])
	p.buf = slices.Delete(p.buf, from, p.cur)
	p.cur = from
}

// history: the shell shows an earlier (up) or later (down) line, which the
// input does not hold; only back at the line first typed is it known again.
func (p *lineParser) history(up bool) {
	p.mark(whyHistory, true)
	switch {
	case up:
		if p.depth == 0 {
			p.saved = slices.Clone(p.buf)
		}
		p.depth++
		p.buf, p.cur = nil, 0
	case p.depth > 1:
		p.depth--
		p.buf, p.cur = nil, 0
	case p.depth == 1:
		p.depth = 0
		p.buf, p.cur = p.saved, len(p.saved)
	}
}

// pasteKey takes one character of a bracketed paste literally; a line end
// in it ends the line, as the shell takes it.
func (p *lineParser) pasteKey() {
	rest := p.in.bytes[p.i:]
	switch {
	case bytes.HasPrefix(rest, pasteEnd):
		p.i += len(pasteEnd)
		p.pasting = false
	case rest[0] == '\r' || rest[0] == '\n':
		p.mark(whyPaste, false)
		p.enter()
	default:
		p.mark(whyPaste, false)
		p.insert(p.character())
		p.keyed = true
	}
}
