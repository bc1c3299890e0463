package live

import (
	"context"
	"fmt"
	"strings"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/relay/terminal"
	"github.com/tower-dev/breakglass/relay/wire"
)

// A moderated session (a cluster's moderated namespaces) lets the
// requester's keystrokes reach the shell only while a moderator watches:
// an approver with the terminal open, who is never the requester (a
// watcher's terminal is opened only by someone other than the requester,
// by identity, with approve). The requester's terminal is told when input
// is held and when it goes through again; the recording and the audit log
// mark when moderation started and stopped; a moderator may end the
// session at once, without the end permission.

// heldInput is a moderated session's terminal as the requester types in
// it: keystrokes go through only while a moderator watches.
type heldInput struct{ opened }

func (h heldInput) Write(p []byte) (int, error) {
	if h.out.moderators() == 0 {
		return 0, fmt.Errorf("%w: no moderator is watching this session; what you type reaches the shell once an approver watches", terminal.ErrHeld)
	}
	return h.Session.Write(p)
}

// moderate makes live, run's session, moderated: each time moderation
// starts (a first watcher) or stops (the last one leaves), the recording
// gets a marker, the audit log an event, and the requester's open terminal
// a notice.
func (s *Sessions) moderate(t *Cluster, live *Session, run *liveSession) {
	run.mu.Lock()
	run.moderated = true
	run.mu.Unlock()
	live.out.onChange(func(a wire.Attached) {
		if a.Typing {
			return
		}
		// Under hookMu: what was last shown is compared with the watchers
		// now, so two comings and goings at once are told in order.
		run.hookMu.Lock()
		defer run.hookMu.Unlock()
		who, watched := a.Name, live.out.moderators() > 0
		if watched == run.watchedShown || live.Ending() {
			return // no change, or the watchers of an ending session leaving
		}
		run.watchedShown = watched
		ctx := context.Background()
		note, notice := "moderation started: "+who+" watching; the requester's input reaches the shell",
			terminal.Control{Type: "moderated", Message: who + " is watching: what you type reaches the shell"}
		if !watched {
			note, notice = "moderation stopped: "+who+" left and nobody watches; the requester's input is held",
				terminal.Control{Type: "held", Message: "nobody is watching: what you type is held until an approver watches"}
		}
		if err := live.Mark(ctx, note); err != nil {
			s.log.Error(err, "marking moderation in the recording", "session", live.Session.Namespace+"/"+live.Session.Name)
		}
		if err := t.Lifecycle.Note(ctx, v1alpha1.StepModeration, who, live.Snapshot(), note); err != nil {
			s.log.Error(err, "auditing moderation", "session", live.Session.Namespace+"/"+live.Session.Name)
		}
		run.notice(notice)
	})
}

// notice tells the requester's open terminal, if any, without waiting.
func (l *liveSession) notice(c terminal.Control) {
	l.mu.Lock()
	ch := l.typingNotices
	l.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case ch <- c:
	default: // a terminal that does not read its notices misses one
	}
}

// typingTerminal opens the notices of the requester's terminal on live:
// on a moderated session, it is told at once whether its input is held.
func (l *liveSession) typingTerminal(live *Session) (notices <-chan terminal.Control, done func()) {
	ch := make(chan terminal.Control, 4)
	l.mu.Lock()
	l.typingNotices = ch
	moderated := l.moderated
	l.mu.Unlock()
	if moderated {
		if n := live.out.moderators(); n == 0 {
			ch <- terminal.Control{Type: "held", Message: "moderated session: nobody is watching yet, so what you type is held until an approver watches"}
		} else {
			ch <- terminal.Control{Type: "moderated", Message: fmt.Sprintf("moderated session: %s watching, so what you type reaches the shell", strings.Join(live.watcherNames(), ", "))}
		}
	}
	return ch, func() {
		l.mu.Lock()
		if l.typingNotices == ch {
			l.typingNotices = nil
		}
		l.mu.Unlock()
	}
}

// watcherNames are who watch here, by name.
func (l *Session) watcherNames() []string {
	var names []string
	for _, a := range l.out.people() {
		if !a.Typing {
			names = append(names, a.Name)
		}
	}
	return names
}
