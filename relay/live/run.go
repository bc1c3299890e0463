package live

import (
	"slices"
	"strings"
	"sync"

	"github.com/tower-dev/breakglass/relay/terminal"
	"github.com/tower-dev/breakglass/relay/wire"
)

// liveSession is a session whose terminal this replica runs, or is starting
// or taking up.
type liveSession struct {
	// live is nil while the session is starting; read it under Sessions.mu,
	// or once ready is closed.
	live *Session
	// ready is closed once the start or take-up has settled: live is set,
	// or the entry is gone from Sessions.live.
	ready chan struct{}
	// lost (under Sessions.mu): this replica let go of its sessions while
	// this one was starting or being taken up; it is let go of as it
	// settles, for another replica may be taking it up meanwhile.
	lost bool
	// typing holds the requester's one terminal: one at a time.
	// moveTyping (under mu) closes to move it to another tab or window.
	typing     chan struct{}
	moveTyping chan struct{}
	// attached counts the terminals each person has open here, so that a
	// session's page can say who is typing and who is watching.
	mu       sync.Mutex
	attached map[wire.Attached]int
	// moderated sessions tell onModerators when the count of watchers
	// changes, and the requester's open terminal through typingNotices
	// (moderation.go).
	moderated     bool
	onModerators  func(who string)
	typingNotices chan terminal.Control
	// hookMu runs onModerators one at a time, so the markers and notices
	// follow the watchers' comings and goings in order; watchedShown is
	// whether the last one said someone watches.
	hookMu       sync.Mutex
	watchedShown bool
}

// typingHere marks the terminal that now holds the typing slot: moved closes
// when another of the requester's terminals takes it (takeTyping).
func (l *liveSession) typingHere() (moved <-chan struct{}, done func()) {
	ch := make(chan struct{})
	l.mu.Lock()
	l.moveTyping = ch
	l.mu.Unlock()
	return ch, func() {
		l.mu.Lock()
		if l.moveTyping == ch {
			l.moveTyping = nil
		}
		l.mu.Unlock()
	}
}

// typingElsewhere says whether a terminal of the requester's holds the
// typing slot now.
func (l *liveSession) typingElsewhere() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.moveTyping != nil
}

// takeTyping tells the terminal holding the typing slot that it moved:
// it closes, and the slot comes free for the one taking it.
func (l *liveSession) takeTyping() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.moveTyping != nil {
		close(l.moveTyping)
		l.moveTyping = nil
	}
}

func newLiveSession() *liveSession {
	return &liveSession{ready: make(chan struct{}), typing: make(chan struct{}, 1), attached: map[wire.Attached]int{}}
}

// attach counts a's terminal until the returned func is called.
func (l *liveSession) attach(a wire.Attached) (detach func()) {
	l.count(a, +1)
	return func() { l.count(a, -1) }
}

// count adds n to a's terminals, telling a moderated session when its
// watchers change.
func (l *liveSession) count(a wire.Attached, n int) {
	l.mu.Lock()
	if l.attached[a] += n; l.attached[a] <= 0 {
		delete(l.attached, a)
	}
	hook := l.onModerators
	l.mu.Unlock()
	if hook != nil && !a.Typing {
		l.hookMu.Lock()
		defer l.hookMu.Unlock()
		hook(a.Name)
	}
}

// watching says whether name has a watcher's terminal open here.
func (l *liveSession) watching(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.attached[wire.Attached{Name: name}] > 0
}

// people is who has a terminal open: the requester typing first, then the
// watchers by name.
func (l *liveSession) people() []wire.Attached {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]wire.Attached, 0, len(l.attached))
	for a := range l.attached {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b wire.Attached) int {
		if a.Typing != b.Typing {
			if a.Typing {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}
