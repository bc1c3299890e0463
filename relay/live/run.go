package live

import (
	"sync"

	"github.com/tower-dev/breakglass/relay/terminal"
)

// liveSession is this replica's entry for a session it runs, or is
// starting or taking up: the Session once it runs, and what the terminals
// of people share beside it (the requester's one keyboard, the notices of
// moderation). Who has a terminal open is the Session's viewers.
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
	// mu guards moveTyping, moderated and typingNotices.
	mu sync.Mutex
	// moderated sessions tell the requester's open terminal through
	// typingNotices when moderation starts and stops (moderation.go).
	moderated     bool
	typingNotices chan terminal.Control
	// hookMu tells of the watchers' comings and goings one at a time, so
	// the markers and notices follow them in order; watchedShown is
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
	return &liveSession{ready: make(chan struct{}), typing: make(chan struct{}, 1)}
}
