package recording

import (
	"bytes"
	"slices"
	"strings"
	"unicode"
)

// The escape sequences a terminal sends for keys (xterm's, which the
// console's xterm.js follows), and the alternate screen full-screen
// programs switch the terminal to.

var pasteEnd = []byte("\x1b[201~")

// maxEscape bounds the escape sequence of a key: anything longer is not
// one. maxAnswer bounds a terminal's answer to a query (a color).
const (
	maxEscape = 32
	maxAnswer = 512
)

// escape reads the key an ESC at p.i starts.
func (p *lineParser) escape() {
	rest := p.in.bytes[p.i:]
	if len(rest) < 2 {
		p.escaped(1)
		return
	}
	switch rest[1] {
	case '[':
		p.csi(rest)
		return
	case 'O': // SS3: the cursor keys in the keypad's application mode
		if len(rest) < 3 {
			p.escaped(2)
			return
		}
		p.i += 3
		p.keyed = true
		p.cursorKey(rest[2], "")
		return
	case ']', 'P', '_', '^', 'X':
		// A string: the terminal answering a program's query (a colour,
		// a capability), no key. Unended, it is Alt and that key.
		if n, ok := stringSequence(rest); ok {
			p.i += n
			return
		}
	}
	p.keyed = true
	switch c := rest[1]; {
	case c == 'b' || c == 'B':
		p.wordLeft()
	case c == 'f' || c == 'F':
		p.wordRight()
	case c == 0x7f || c == 0x08: // Alt-Backspace
		p.mark(whyWords, true)
		p.cutBack(isWordRune)
	case c == 'd' || c == 'D':
		p.mark(whyWords, true)
		from := p.cur
		p.wordRight()
		p.kill = slices.Clone(p.buf[from:p.cur])
		p.buf = slices.Delete(p.buf, from, p.cur)
		p.cur = from
	case c < 0x20 || c >= 0x7f:
		// Escape alone; the next byte is a key of its own (an Enter
		// after it still ends the line).
		p.escaped(1)
		return
	default: // Alt and a key the shell may bind
		p.mark(whyEscape, true)
	}
	p.i += 2
}

// escaped takes n bytes as an escape sequence not understood.
func (p *lineParser) escaped(n int) {
	p.i += n
	p.keyed = true
	p.mark(whyEscape, true)
}

func (p *lineParser) csi(rest []byte) {
	n, params, final, ok := parseCSI(rest)
	if !ok {
		p.escaped(n)
		return
	}
	p.i += n
	switch {
	case final == '~' && params == "200":
		p.pasting = true
		p.keyed = true
		p.mark(whyPaste, false)
		return
	case final == '~' && params == "201", terminalAnswer(params, final):
		return // a paste's end without its start; an answer, no key
	}
	p.keyed = true
	if final != '~' {
		p.cursorKey(final, params)
		return
	}
	switch params {
	case "1", "7":
		p.move(0)
	case "4", "8":
		p.move(len(p.buf))
	case "3":
		p.deleteAt()
	default: // Insert, Page Up/Down, the function keys: each shell's own
		p.mark(whyEscape, true)
	}
}

// parseCSI reads a control sequence (ESC [, parameter and intermediate
// bytes, a final byte). Not ok: n bytes that make no sequence, up to a
// byte none holds (a key of its own) or the bound.
func parseCSI(rest []byte) (n int, params string, final byte, ok bool) {
	j := 2
	for ; j < len(rest) && j < maxEscape; j++ {
		switch c := rest[j]; {
		case c >= 0x20 && c <= 0x3f:
		case c >= 0x40 && c <= 0x7e:
			return j + 1, string(rest[2:j]), c, true
		default:
			return j, "", 0, false
		}
	}
	return j, "", 0, false
}

// terminalAnswer: the terminal's own answer to a program that asked (a
// cursor position, a focus change, its attributes), sent as input.
func terminalAnswer(params string, final byte) bool {
	switch final {
	case 'R':
		return strings.Contains(params, ";")
	case 'I', 'O':
		return params == ""
	case 'c', 'u':
		return strings.HasPrefix(params, "?") || strings.HasPrefix(params, ">")
	case 'y':
		return strings.Contains(params, "$")
	case 'n':
		return params == "0" || params == "3"
	}
	return false
}

// stringSequence is the length of an OSC, DCS, APC, PM or SOS string ended
// by BEL or ST within the bound.
func stringSequence(rest []byte) (int, bool) {
	for j := 2; j < len(rest) && j < maxAnswer; j++ {
		switch rest[j] {
		case 0x07:
			return j + 1, true
		case 0x1b:
			if j+1 < len(rest) && rest[j+1] == '\\' {
				return j + 2, true
			}
			return 0, false
		}
	}
	return 0, false
}

// cursorKey applies a cursor key, CSI or SS3, with its modifier ("1;5":
// Ctrl).
func (p *lineParser) cursorKey(final byte, params string) {
	mod := ""
	if _, m, ok := strings.Cut(params, ";"); ok {
		mod = m
	} else if params != "" && params != "1" {
		p.mark(whyEscape, true)
		return
	}
	words := mod == "3" || mod == "5" || mod == "9" // Alt, Ctrl, Meta
	if mod != "" && mod != "1" && !words {
		p.mark(whyEscape, true) // Shift and the rest: each shell's own
		return
	}
	switch final {
	case 'A':
		p.history(true)
	case 'B':
		p.history(false)
	case 'C':
		if words {
			p.wordRight()
		} else {
			p.move(p.cur + 1)
		}
	case 'D':
		if words {
			p.wordLeft()
		} else {
			p.move(p.cur - 1)
		}
	case 'H':
		p.move(0)
	case 'F':
		p.move(len(p.buf))
	case 'Z': // Shift-Tab
		p.mark(whyTab, true)
	default:
		p.mark(whyEscape, true)
	}
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// wordLeft and wordRight move as readline does: to the start of the word
// before, to the end of the word after.
func (p *lineParser) wordLeft() {
	p.mark(whyWords, true)
	for p.cur > 0 && !isWordRune(p.buf[p.cur-1]) {
		p.cur--
	}
	for p.cur > 0 && isWordRune(p.buf[p.cur-1]) {
		p.cur--
	}
}

func (p *lineParser) wordRight() {
	p.mark(whyWords, true)
	for p.cur < len(p.buf) && !isWordRune(p.buf[p.cur]) {
		p.cur++
	}
	for p.cur < len(p.buf) && isWordRune(p.buf[p.cur]) {
		p.cur++
	}
}

// altScreen follows the output's switches to and from the alternate screen
// (CSI ? 1049 h, 1047, 47), however the writes split them.
type altScreen struct {
	on     bool
	state  int // 0 text, 1 after ESC, 2 after ESC [, 3 in ESC [ ? ...
	params []byte
}

func (a *altScreen) feed(p []byte) {
	for _, c := range p {
		switch {
		case c == 0x1b:
			a.state = 1
		case a.state == 1 && c == '[':
			a.state = 2
		case a.state == 2 && c == '?':
			a.state, a.params = 3, a.params[:0]
		case a.state == 3 && (c >= '0' && c <= '9' || c == ';') && len(a.params) < maxEscape:
			a.params = append(a.params, c)
		case a.state == 3 && (c == 'h' || c == 'l'):
			for _, mode := range bytes.Split(a.params, []byte(";")) {
				switch string(mode) {
				case "1049", "1047", "47":
					a.on = c == 'h'
				}
			}
			a.state = 0
		default:
			a.state = 0
		}
	}
}
