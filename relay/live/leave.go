package live

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/lifecycle"
	"github.com/tower-dev/breakglass/relay/debugsession"
)

// End ends the session for a person: detach, finalize the recording,
// recycle the pod unless the approver chose to keep it, revoke the grant,
// and write who ended it and why; note is what they wrote ("" for none).
func (l *Session) End(ctx context.Context, by string, reason v1alpha1.EndReason, note string) error {
	return l.finish(ctx, ending{by: by, reason: reason, note: note})
}

// Stop ends the session as End does, in the relay's own name: a limit
// reached, or the relay shutting down; detail is what it saw ("" when the
// reason says it all).
func (l *Session) Stop(ctx context.Context, reason v1alpha1.EndReason, detail string) error {
	return l.finish(ctx, relayEnding(reason, detail, false))
}

// Ending says someone or something is ending the session, or has, or it
// is leaving this relay another way.
func (l *Session) Ending() bool { return exit(l.exit.Load()) != stillRunning }

// ending is who ends a session, why, and in what words.
type ending struct {
	by     string
	reason v1alpha1.EndReason
	// note is a person's words; detail, the relay's. An end has at most
	// one of them.
	note, detail string
	// abnormal says the relay did not end it by a person's word or a limit
	// (its terminal stream failed).
	abnormal bool
}

// words is what the audit log records after the reason.
func (e ending) words() string { return e.note + e.detail }

// relayEnding is an end in the relay's own name.
func relayEnding(reason v1alpha1.EndReason, detail string, abnormal bool) ending {
	return ending{by: v1alpha1.PortalUsername, reason: reason, detail: detail, abnormal: abnormal}
}

// exit is how a session leaves the relay that runs it. It starts
// stillRunning and moves once, to whichever exit is asked for first;
// whatever asks after that finds the session gone. (An end that finds the
// session taken up by another relay marks it losing instead: what it did.)
type exit int32

const (
	// stillRunning: the terminal is up and nobody has asked it to leave.
	stillRunning exit = iota
	// endingHere: it ends here, for good: detached, its recording closed, the
	// pod recycled, the grant revoked and the Session Ended (end).
	endingHere
	// releasing: it is handed over to another relay, which takes it up in a
	// new debug container: the recording written out, the Session marked
	// released, nothing ended or revoked (release).
	releasing
	// losing: another relay has it, or may have; this one lets go and writes
	// nothing (letGo).
	losing
)

// leave moves the session from stillRunning to how and does what that
// exit takes, once: it reports whether this call did. A later caller waits
// until the first one is done, so the session has left when any call
// returns. Ended is closed when do returns, or panics.
func (l *Session) leave(how exit, do func() error) (bool, error) {
	if !l.exit.CompareAndSwap(int32(stillRunning), int32(how)) {
		<-l.ended
		return false, nil
	}
	defer close(l.ended)
	return true, do()
}

// finish ends the session once, whoever asks first.
func (l *Session) finish(ctx context.Context, e ending) error {
	_, err := l.endFor(ctx, e)
	return err
}

// endFor ends the session as finish does and returns e's reason, or ""
// when another exit came first: what Enforce reports is the end that was
// made, not one that lost the race to a person's, say.
func (l *Session) endFor(ctx context.Context, e ending) (v1alpha1.EndReason, error) {
	ended, err := l.leave(endingHere, func() error { return l.end(ctx, e) })
	if !ended {
		return "", err
	}
	return e.reason, err
}

// ErrMoved ends the terminals of a session another relay took up: they
// reconnect and find it there.
var ErrMoved = errors.New("another relay took the session up: reconnect")

// Lose lets go of a session another relay took up, or may be taking up
// (this relay was cut off from the API server, or taken for gone), writing
// nothing: no end, no recycle, no revoke (the session goes on there), no
// more of the recording (it continues there). The attach stream closes, so
// the old debug container's shell ends, and the terminals are sent to
// reconnect.
func (l *Session) Lose() {
	_, _ = l.leave(losing, func() error { l.letGo(); return nil })
}

func (l *Session) letGo() {
	l.rec.Abandon()
	l.out.closeWith(ErrMoved)
	l.stream.CloseInput()
	l.stream.Cut()
	select {
	case <-l.stream.Ended():
	case <-time.After(10 * time.Second):
	}
	l.mu.Lock()
	name := l.Session.Namespace + "/" + l.Session.Name
	l.mu.Unlock()
	l.r.Log.Info("another relay took the session up: let go", "session", name)
}

// takenUp reports whether another relay resumed the session since this one
// took it (or started it): then this one must not end it.
func (l *Session) takenUp(ctx context.Context) bool {
	// The heartbeat writes l.Session under l.mu.
	l.mu.Lock()
	key, resumes := client.ObjectKeyFromObject(l.Session), l.Session.Status.Resumes
	l.mu.Unlock()
	fresh := &v1alpha1.Session{}
	if err := l.r.Client.Get(ctx, key, fresh); err != nil {
		return false
	}
	return fresh.Status.Resumes != resumes
}

// detach closes the shell's input (stdin EOF is the detach) and waits for
// the terminal stream to end, everything it carried read and recorded;
// one that does not end by itself within 10 s is cut.
func (l *Session) detach() {
	l.stream.CloseInput()
	select {
	case <-l.stream.Ended():
	case <-time.After(10 * time.Second):
		l.stream.Cut()
		<-l.stream.Ended()
	}
}

// end ends the session here, for good: the terminal detached and its
// viewers told, the recording closed, then the runner takes back the pod
// and the grant, and the Session says who ended it and why.
func (l *Session) end(ctx context.Context, e ending) error {
	r, s := l.r, l.Session
	if l.takenUp(ctx) {
		// Whatever ends it here (its recording refused, its stream
		// failed, a limit this relay counted), the session runs elsewhere.
		l.exit.Store(int32(losing))
		l.letGo()
		return nil
	}
	defer l.keepBeating()()
	l.detach()
	l.out.close()
	streamErr := l.stream.Err()
	if broke := l.brokeWith.Load(); streamErr == nil && broke != nil {
		streamErr = *broke
	}
	var errs []error
	if streamErr != nil && !errors.Is(streamErr, context.Canceled) {
		// Reported after the clean-up below, which happens regardless.
		errs = append(errs, fmt.Errorf("the terminal stream: %w", streamErr))
	}
	done, err := l.rec.Close(ctx)
	errs = append(errs, err, r.Recycle(ctx, s))
	// Under mu: an extension being approved replaces the grant under it,
	// and the grant revoked is the one standing after it.
	l.mu.Lock()
	defer l.mu.Unlock()
	errs = append(errs, r.Revoke(ctx, s.Namespace, s.Status.Grant.RoleBinding))
	// A merge patch: the heartbeat may have moved the resource version.
	errs = append(errs, r.Lifecycle().Make(ctx, s, lifecycle.Move{Step: v1alpha1.StepEnd, To: v1alpha1.PhaseEnded, Actor: e.by,
		Reason: debugsession.EndReasonText(e.reason, e.words()), Merge: true, Status: func(st *v1alpha1.SessionStatus) {
			// Without its evidence (the store away past HoldFor) an end is
			// abnormal whatever ended it: the sweeper finalizes what was streamed.
			st.End = &v1alpha1.End{By: e.by, Reason: e.reason, Note: e.note, Detail: v1alpha1.EndDetail(e.detail), At: metav1.NewTime(r.Clock.Now()), Abnormal: e.abnormal || done.Body == nil}
			if done.Body != nil {
				st.Evidence = recording.EvidenceOf(recording.RefOf(r.Cluster, s), done, "", r.Anchorer != nil)
			}
		}}))
	l.stream.Cut()
	if done.Body != nil && r.Anchorer != nil {
		go r.Anchor(s.DeepCopy(), done.Body)
	}
	return errors.Join(errs...)
}
