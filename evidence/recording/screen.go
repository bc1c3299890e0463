package recording

import (
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// screen follows the output one line at a time as a terminal draws it:
// characters written at the cursor, carriage returns and backspaces moving
// it back, erases; escape sequences that only colour or set modes are
// dropped. Enough of a terminal to find what a person saw, not to say where
// on the screen: a cursor move to another row starts another line.
//
// emit gets each line when it ends, and its state before anything on it is
// erased or overwritten (continued: the same line goes on), so that what
// was shown and then rubbed out is found too. Returning false stops it.
type screen struct {
	emit    func(line []rune, times []time.Duration, continued bool) bool
	stopped bool

	line  []rune
	times []time.Duration // when each character was written
	col   int
	dirty bool // written to since it was last emitted

	state   int
	params  []byte        // of the control sequence being read
	n       int           // bytes of the string sequence being read
	partial []byte        // a UTF-8 character cut at the end of a write
	partAt  time.Duration // when it came
}

const (
	stText = iota
	stEsc
	stCSI
	stString    // OSC, DCS, APC, PM, SOS: a title or an answer, never shown
	stStringEsc // an ESC inside one: ST, or the start of the next sequence
	stCharset   // ESC ( and the like: one more byte
)

// maxScreenLine bounds a line; the rest goes on as a line of its own.
// maxString bounds a string sequence: one never ended hides no more.
const (
	maxScreenLine = 4096
	maxString     = 4096
)

func (s *screen) feed(p []byte, at time.Duration) {
	b := p
	if len(s.partial) > 0 {
		b = append(append([]byte(nil), s.partial...), p...)
		s.partial = nil
	}
	for i := 0; i < len(b) && !s.stopped; {
		c := b[i]
		switch s.state {
		case stText:
			if c >= 0x20 && c != 0x7f {
				r, size := utf8.DecodeRune(b[i:])
				if r == utf8.RuneError && size <= 1 {
					if !utf8.FullRune(b[i:]) {
						s.partial, s.partAt = slices.Clone(b[i:]), at // completed by the next write
						return
					}
					size = 1
				}
				if r < 0x80 || r >= 0xa0 { // C1 controls show nothing
					s.put(r, at)
				}
				i += size
				continue
			}
			s.control(c)
		case stEsc:
			s.escape(c)
		case stCSI:
			switch {
			case c >= 0x20 && c <= 0x3f:
				if len(s.params) < maxEscape {
					s.params = append(s.params, c)
				}
			case c >= 0x40 && c <= 0x7e:
				s.state = stText
				s.csi(string(s.params), c)
			case c == 0x1b:
				s.state = stEsc
			default:
				s.state = stText
			}
		case stString:
			s.n++
			switch {
			case c == 0x07, c == 0x18, c == 0x1a, s.n > maxString:
				s.state = stText
			case c == 0x1b:
				s.state = stStringEsc
			}
		case stStringEsc:
			if c != '\\' {
				s.state = stEsc
				continue // the ESC starts a sequence of its own: c is read again
			}
			s.state = stText
		case stCharset:
			s.state = stText
		}
		i++
	}
}

// finish ends the output: a character still cut is shown as U+FFFD.
func (s *screen) finish() {
	if len(s.partial) > 0 && s.state == stText {
		s.put(utf8.RuneError, s.partAt)
	}
	s.partial = nil
	s.newline()
}

func (s *screen) control(c byte) {
	switch c {
	case 0x1b:
		s.state = stEsc
	case '\n', 0x0b, 0x0c:
		s.newline()
	case '\r':
		s.col = 0
	case '\b':
		s.col = max(0, s.col-1)
	case '\t':
		s.col = min((s.col/8+1)*8, maxScreenLine)
	}
}

func (s *screen) escape(c byte) {
	s.state = stText
	switch c {
	case '[':
		s.state, s.params = stCSI, s.params[:0]
	case ']', 'P', '_', '^', 'X':
		s.state, s.n = stString, 0
	case '(', ')', '*', '+', '-', '.', '/', '#', '%', ' ':
		s.state = stCharset
	case 0x1b:
		s.state = stEsc
	case 'D', 'E', 'M', 'c': // index, next line, reverse index, reset
		s.newline()
	}
}

// csi applies the control sequences that change what a line shows.
func (s *screen) csi(params string, final byte) {
	args := strings.Split(strings.TrimLeft(params, "?>=<"), ";")
	arg := func(i, def int) int {
		if i >= len(args) {
			return def
		}
		n, err := strconv.Atoi(args[i])
		if err != nil || n <= 0 {
			return def
		}
		return min(n, maxScreenLine)
	}
	switch final {
	case 'K', 'J': // erase in line, in display
		switch arg(0, 0) {
		case 0:
			if s.col < len(s.line) {
				s.erasing()
				s.line, s.times = s.line[:s.col], s.times[:s.col]
			}
		case 1:
			s.erasing()
			for i := 0; i < min(s.col+1, len(s.line)); i++ {
				s.line[i] = ' '
			}
		default:
			s.erasing()
			s.line, s.times = s.line[:0], s.times[:0]
		}
	case 'P', 'X': // delete, erase characters
		if to := min(s.col+arg(0, 1), len(s.line)); s.col < to {
			s.erasing()
			if final == 'P' {
				s.line, s.times = slices.Delete(s.line, s.col, to), slices.Delete(s.times, s.col, to)
			} else {
				for i := s.col; i < to; i++ {
					s.line[i] = ' '
				}
			}
		}
	case '@': // insert blanks
		if s.col < len(s.line) {
			n := min(arg(0, 1), maxScreenLine-len(s.line))
			s.line = slices.Insert(s.line, s.col, make([]rune, n)...)
			s.times = slices.Insert(s.times, s.col, make([]time.Duration, n)...)
			for i := s.col; i < s.col+n; i++ {
				s.line[i], s.times[i] = ' ', s.times[s.col+n]
			}
		}
	case 'C':
		s.col = min(s.col+arg(0, 1), maxScreenLine)
	case 'D':
		s.col = max(0, s.col-arg(0, 1))
	case 'G', '`':
		s.col = arg(0, 1) - 1
	case 'H', 'f':
		s.newline()
		s.col = arg(1, 1) - 1
	case 'A', 'B', 'd', 'S', 'T', 'L', 'M':
		col := s.col
		s.newline()
		s.col = col
	case 'E', 'F':
		s.newline()
	}
}

// put writes r at the cursor.
func (s *screen) put(r rune, at time.Duration) {
	if s.col >= maxScreenLine {
		s.newline()
	}
	for len(s.line) < s.col {
		s.line, s.times = append(s.line, ' '), append(s.times, at)
	}
	if s.col < len(s.line) {
		if old := s.line[s.col]; old != r && old != ' ' {
			s.erasing()
		}
		s.line[s.col], s.times[s.col] = r, at
	} else {
		s.line, s.times = append(s.line, r), append(s.times, at)
	}
	s.col++
	s.dirty = true
}

// erasing shows the line as it is, before something on it goes.
func (s *screen) erasing() {
	if s.dirty && !s.stopped {
		s.stopped = !s.emit(s.line, s.times, true)
	}
	s.dirty = false
}

// newline ends the line (emitted even empty: it ends what an earlier
// state of it began); the next starts empty at the left.
func (s *screen) newline() {
	if !s.stopped {
		s.stopped = !s.emit(s.line, s.times, false)
	}
	s.line, s.times, s.col, s.dirty = s.line[:0], s.times[:0], 0, false
}
