// Package debugsession runs a debug session on the cluster: it grants the portal
// a RoleBinding with a TTL, adds the debug container, attaches to it through
// the API server, records every byte, and at the end detaches, recycles the
// pod, revokes the grant and writes the end to the Session. The cluster
// holds the truth: every step is in the Session's status.
package debugsession

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/util/retry"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/audit"
	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/evidence/tlog"
	"github.com/tower-dev/breakglass/lifecycle"
	"github.com/tower-dev/breakglass/manifests/sessionobjects"
)

// Runner starts and ends sessions on one cluster, as the portal.
type Runner struct {
	// Cluster is the name the relay knows this cluster by: part of every
	// recording's key and manifest.
	Cluster string
	// Client, Kube and Config act as the portal's ServiceAccount.
	Client client.Client
	Kube   kubernetes.Interface
	Config *rest.Config
	Store  recording.Store
	Audit  *audit.Log
	Clock  clock.Clock
	// DebugImage is the pinned debug image.
	DebugImage string
	// Grace is added to the duration for the grant's TTL (within the 75m bound).
	Grace     time.Duration
	Retention time.Duration
	// MaxTTL is the largest TTL the policies allow.
	MaxTTL time.Duration
	// Anchorer, when set, anchors each recording's manifest in Rekor after
	// the session ends, off its critical path.
	Anchorer *tlog.Anchorer
	// Log tells of anchors pending and failing.
	Log logr.Logger
	// Replica names this relay among its replicas, written to the sessions
	// it runs (status.relay); empty for a relay that runs alone.
	Replica string
	// Extensions bound the more time a session may be given.
	Extensions ExtensionLimits
}

// Live is a running session: its terminal and its recording.
type Live struct {
	Session *v1alpha1.Session
	r       *Runner
	rec     *recording.Recorder
	stdin   *io.PipeWriter
	out     *fanout
	// ctx lives as long as the terminal stream; cancel ends it.
	ctx    context.Context
	cancel context.CancelFunc
	// exit is how the session leaves this relay (an exit; stillRunning
	// until someone asks), moved from stillRunning once, by leave.
	exit atomic.Int32
	// mu guards Session's status between the heartbeat and the end.
	mu sync.Mutex
	// lastInput is when the person last typed (unix nanoseconds on the runner's clock).
	lastInput atomic.Int64
	sizes     *sizeQueue
	// ended is closed once the session has left: ended, released or lost.
	ended chan struct{}
	// streamEnded is closed when the terminal stream ends, whoever or
	// whatever ended it, with streamErr (written before the close) saying
	// how.
	streamEnded chan struct{}
	streamErr   error
	// recordingFailed is set when the stream ended because what it carried
	// could not be recorded: then the session ends rather than going on.
	recordingFailed atomic.Pointer[error]
	// beatEvery is Enforce's heartbeat interval, kept up during an end.
	beatEvery atomic.Int64
	// stopAt is when the session stops (unix nanoseconds; 0: nothing
	// set): its hard stop or its grant's expiry, whichever comes first. An
	// extension moves it, with grantTimer (under mu).
	stopAt     atomic.Int64
	grantTimer *time.Timer
}

// Start starts an approved session. A session that cannot be recorded is
// refused before any grant exists; a failure after the grant takes the
// grant back.
func (r *Runner) Start(ctx context.Context, s *v1alpha1.Session) (_ *Live, err error) {
	if s.Status.Phase != v1alpha1.PhaseApproved {
		return nil, fmt.Errorf("session %s is %s, not Approved", s.Name, s.Status.Phase)
	}
	// The cluster admits only the portal's approvals; this is the same
	// check again, for a Session read from a cluster whose policies are gone.
	if a := s.Status.Approval; a == nil || s.IsRequester(a.By, a.ByID) || a.Mode != s.Spec.Mode || (a.ProcessAccess && !s.Spec.ProcessAccess) {
		return nil, fmt.Errorf("session %s's approval does not match its request: it does not start", s.Name)
	}
	switch s.Spec.Mode {
	case v1alpha1.ModeLive, v1alpha1.ModeCopy, v1alpha1.ModeHeldCopy:
	default:
		return nil, fmt.Errorf("mode %q is not one of live, copy, heldCopy", s.Spec.Mode)
	}
	now := r.Clock.Now()
	rec, err := recording.New(ctx, r.Store, recording.RefOf(r.Cluster, s), recording.Options{
		RetainUntil: now.Add(r.Retention), Clock: r.Clock})
	if err != nil {
		_ = r.note(ctx, v1alpha1.StepRefusal, s, "no recording store: "+err.Error())
		return nil, fmt.Errorf("the session cannot be recorded, so it does not start: %w", err)
	}
	processAccess := s.Status.Approval != nil && s.Status.Approval.ProcessAccess
	role := v1alpha1.DebugRole
	if processAccess {
		role = v1alpha1.DebugProcessRole
	}
	ttl := r.StartTTL(s)
	grant := sessionobjects.Grant(s.Namespace, v1alpha1.GrantName(s.Name), s.Name, role, ttl.String())
	if err := r.Client.Create(ctx, grant); err != nil {
		return nil, fmt.Errorf("granting the debug role: %w", err)
	}
	takenBack := false
	defer func() {
		if err != nil && !takenBack {
			r.takeBack(s, grant, err)
		}
	}()
	if err := r.note(ctx, v1alpha1.StepGrant, s, role+" for "+ttl.String()); err != nil {
		return nil, fmt.Errorf("auditing the grant: %w", err)
	}
	if err := WaitGranted(ctx, r.Kube, s.Namespace, role); err != nil {
		return nil, err
	}
	container := v1alpha1.DebugContainerName(s.Name, 0)
	pod := s.Spec.TargetPod
	// touched is set once the target pod carries the debug container or the
	// Session is Active: a start that fails from there leaves neither a pod
	// with a debug container nor a Session that could start again.
	touched := false
	defer func() {
		if err != nil && touched {
			err = errors.Join(err, r.failedStart(s, pod, container, err))
		}
	}()
	if s.Spec.Mode == v1alpha1.ModeLive {
		err = r.addDebugContainerTo(ctx, s, s.Spec.TargetPod, container)
		// A write whose answer was lost may have added it all the same.
		touched = err == nil || r.carries(s.Namespace, pod, container)
	} else {
		// The copy is named after its debug container: one per session.
		pod = container
		err = r.createCopy(ctx, s, container, processAccess, ttl)
		defer func() {
			if err != nil {
				_ = r.Kube.CoreV1().Pods(s.Namespace).Delete(context.Background(), pod, metav1.DeleteOptions{})
			}
		}()
	}
	var refused refusedStart
	if errors.As(err, &refused) && !touched {
		// It would fail the same way at every try: the grant goes, then
		// the session ends, saying why, rather than stay Approved.
		r.takeBack(s, grant, err)
		takenBack = true
		return nil, errors.Join(err, r.endFailedStart(s, "the start was refused: "+err.Error()))
	}
	if err != nil {
		return nil, err
	}
	if err := r.waitRunning(ctx, s.Namespace, pod, container); err != nil {
		return nil, err
	}
	deadline := metav1.NewTime(now.Add(s.Spec.Duration.Duration))
	start := metav1.NewTime(now)
	if err := r.Lifecycle().Make(ctx, s, lifecycle.Move{Step: v1alpha1.StepStart, To: v1alpha1.PhaseActive, Actor: v1alpha1.PortalUsername,
		Reason: fmt.Sprintf("debug container %s in pod %s, grant %s", container, pod, grant.Name),
		Status: func(st *v1alpha1.SessionStatus) {
			st.Grant = &v1alpha1.Grant{RoleBinding: grant.Name, Role: role, ExpiresAt: metav1.NewTime(now.Add(ttl))}
			st.DebugContainer = &v1alpha1.DebugContainer{Pod: pod, Name: container, Image: r.DebugImage}
			st.StartedAt, st.Deadline, st.Heartbeat = &start, &deadline, &start
			st.Relay = r.Replica
		}}); err != nil {
		return nil, fmt.Errorf("recording the start: %w", err)
	}
	touched = true
	live, err := r.attach(s, pod, container, rec)
	if err != nil {
		return nil, err
	}
	live.endAtGrantExpiry(s.Status.Grant.ExpiresAt.Time)
	if err := r.note(ctx, v1alpha1.StepAttach, s, container); err != nil {
		// The session's own end cleans up: detach, recycle, revoke, and the
		// Session ended as a failed start.
		touched = false
		detail := fmt.Sprintf("the start failed: the attach could not be audited: %v", err)
		return nil, errors.Join(fmt.Errorf("auditing the attach: %w", err), live.finish(context.Background(), relayEnding(v1alpha1.EndFailedStart, detail, true)))
	}
	return live, nil
}

// WaitGranted waits until the client's user holds what role grants in ns,
// once the new grant has reached the API server's RBAC cache: the debug
// container, and for the process role process access too. Another grant in
// the namespace may already allow the first, while the admission policies'
// check for process access must see this one.
func WaitGranted(ctx context.Context, kube kubernetes.Interface, ns, role string) error {
	attrs := []authorizationv1.ResourceAttributes{{Namespace: ns, Verb: "patch", Resource: "pods", Subresource: "ephemeralcontainers"}}
	if role == v1alpha1.DebugProcessRole {
		attrs = append(attrs, authorizationv1.ResourceAttributes{Namespace: ns, Group: v1alpha1.GroupVersion.Group,
			Resource: v1alpha1.ProcessAccessResource, Verb: v1alpha1.ProcessAccessVerb})
	}
	for _, a := range attrs {
		if err := WaitAllowed(ctx, kube, a, 30*time.Second); err != nil {
			return fmt.Errorf("the grant did not take effect: %w", err)
		}
	}
	return nil
}

// WaitAllowed waits until the authorizer lets the client's user do what
// attrs say. A new RoleBinding reaches the API server's RBAC cache a moment
// after it is created; a request made before then is refused.
func WaitAllowed(ctx context.Context, kube kubernetes.Interface, attrs authorizationv1.ResourceAttributes, timeout time.Duration) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		got, err := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}, metav1.CreateOptions{})
		last = err
		return err == nil && got.Status.Allowed, nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("%w (last error: %w)", err, last)
	}
	return err
}

// addDebugContainerTo adds the debug container name to podName: the target
// pod, or (resuming a copy) the copy.
func (r *Runner) addDebugContainerTo(ctx context.Context, s *v1alpha1.Session, podName, name string) error {
	ec := sessionobjects.DebugContainer(name, r.DebugImage)
	if s.Status.Approval != nil && s.Status.Approval.ProcessAccess {
		ec.TargetContainerName = s.Spec.TargetContainer
	}
	// The pod is read again, and judged again, when the kubelet wrote its
	// status between the read and the write (the API server refuses a
	// write at an older version): a pod just started is written often.
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pod, err := r.Kube.CoreV1().Pods(s.Namespace).Get(ctx, podName, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("the target pod: %w", err)
		}
		if pod.DeletionTimestamp != nil {
			return fmt.Errorf("the target pod %s is terminating: pick a running pod", pod.Name)
		}
		// What the pod would hand the container and the policies refuse:
		// said here in the relay's words, or set on the container against
		// the pod.
		if err := sessionobjects.LiveDebuggable(pod); err != nil {
			if pod.Spec.NodeName == "" {
				return err // not scheduled yet: it may be soon
			}
			return refusedStart{err}
		}
		c := ec.DeepCopy()
		sessionobjects.ConfinedIn(c.SecurityContext, pod, name)
		pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, *c)
		if _, err := r.Kube.CoreV1().Pods(s.Namespace).UpdateEphemeralContainers(ctx, pod.Name, pod, metav1.UpdateOptions{}); err != nil {
			return refusedIfAdmission(fmt.Errorf("adding the debug container: %w", err))
		}
		return nil
	})
}

// waitRunning waits for the debug container to run. A container the node
// cannot run (its image cannot be pulled or created, or it exited) fails at
// once with the node's reason, instead of at the timeout.
func (r *Runner) waitRunning(ctx context.Context, ns, pod, container string) error {
	// Read often at first (a container usually runs within a few hundred
	// milliseconds), then less, up to once a second: a replica taking up a
	// hundred sessions at once must not spend its API budget on reading
	// pods.
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for every := 25 * time.Millisecond; ; every = min(every*3/2, time.Second) {
		running, why := r.containerRunning(ctx, ns, pod, container)
		switch {
		case why != nil:
			return fmt.Errorf("the debug container cannot start: %w", why)
		case running:
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the debug container did not start: %w", ctx.Err())
		case <-time.After(every):
		}
	}
}

// containerRunning reads whether container runs in pod, or why it cannot
// (a read that fails is tried again).
func (r *Runner) containerRunning(ctx context.Context, ns, pod, container string) (bool, error) {
	p, err := r.Kube.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return false, nil
	}
	for _, st := range append(p.Status.EphemeralContainerStatuses, p.Status.ContainerStatuses...) {
		switch {
		case st.Name != container:
		case st.State.Running != nil:
			return true, nil
		case st.State.Terminated != nil:
			return false, fmt.Errorf("it exited: %s (code %d) %s", st.State.Terminated.Reason, st.State.Terminated.ExitCode, st.State.Terminated.Message)
		case st.State.Waiting != nil && cannotStart[st.State.Waiting.Reason]:
			return false, fmt.Errorf("%s: %s", st.State.Waiting.Reason, st.State.Waiting.Message)
		}
	}
	return false, nil
}

// cannotStart are the waiting reasons a kubelet gives for a container that
// will not run without someone changing something.
var cannotStart = map[string]bool{"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true,
	"ErrImageNeverPull": true, "CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true}

// failedStart cleans up after a start that failed once the debug container
// was in the pod or the Session was Active: a live session's pod is recycled
// (unless the approver chose to keep it; a copy is deleted by Start), and
// the Session ends, saying why, so it cannot be started again on a pod that
// is gone. The grant is taken back by Start itself.
func (r *Runner) failedStart(s *v1alpha1.Session, pod, container string, cause error) error {
	ctx := context.Background()
	var errs []error
	recycle := s.Spec.Mode == v1alpha1.ModeLive && !s.KeepsPod()
	if recycle {
		err := r.Kube.CoreV1().Pods(s.Namespace).Delete(ctx, pod, metav1.DeleteOptions{})
		if !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	detail := fmt.Sprintf("the start failed after %s was added to %s, pod recycled: %t: %s", container, pod, recycle, cause.Error())
	return errors.Join(append(errs, r.endFailedStart(s, detail))...)
}

// endFailedStart ends a session whose start failed, as a failed start,
// saying why.
func (r *Runner) endFailedStart(s *v1alpha1.Session, detail string) error {
	return r.Lifecycle().Make(context.Background(), s, lifecycle.Move{Step: v1alpha1.StepEnd, To: v1alpha1.PhaseEnded, Actor: v1alpha1.PortalUsername,
		Reason: EndReasonText(v1alpha1.EndFailedStart, detail), Merge: true, Status: func(st *v1alpha1.SessionStatus) {
			st.End = &v1alpha1.End{By: v1alpha1.PortalUsername, Reason: v1alpha1.EndFailedStart, Detail: v1alpha1.EndDetail(detail),
				At: metav1.NewTime(r.Clock.Now()), Abnormal: true}
		}})
}

// takeBack deletes the grant of a start that failed and audits the revoke,
// so the log shows the grant's end as it shows its making. A grant that
// cannot be deleted now is the grant sweeper's at its TTL.
func (r *Runner) takeBack(s *v1alpha1.Session, grant *rbacv1.RoleBinding, cause error) {
	ctx := context.Background()
	if err := r.Client.Delete(ctx, grant); err != nil && !apierrors.IsNotFound(err) {
		r.Log.Error(err, "taking back the grant of a failed start: the grant sweeper deletes it at its TTL", "grant", grant.Name)
		return
	}
	_ = r.note(ctx, v1alpha1.StepRevoke, s, grant.Name+": the start failed: "+cause.Error())
}

// refusedStart is a start this pod never allows, whoever tries again: the
// relay's own judgement of the pod, or the cluster's refusal of the debug
// container or the copy.
type refusedStart struct{ error }

func (e refusedStart) Unwrap() error { return e.error }

// refusedIfAdmission marks a write the API server will refuse at every
// try as a refused start: invalid (422), or forbidden (403) by an
// admission policy or webhook or Pod Security. Another 403 may pass: a
// quota that frees up, or an API server whose authorizer has not yet seen
// the grant.
func refusedIfAdmission(err error) error {
	msg := err.Error()
	admission := strings.Contains(msg, "ValidatingAdmissionPolicy") || strings.Contains(msg, "admission webhook") ||
		strings.Contains(msg, "violates PodSecurity")
	if apierrors.IsInvalid(err) || (apierrors.IsForbidden(err) && admission) {
		return refusedStart{err}
	}
	return err
}

// carries reports whether pod has the debug container, read again.
func (r *Runner) carries(ns, pod, container string) bool {
	p, err := r.Kube.CoreV1().Pods(ns).Get(context.Background(), pod, metav1.GetOptions{})
	return err == nil && slices.ContainsFunc(p.Spec.EphemeralContainers, func(c corev1.EphemeralContainer) bool { return c.Name == container })
}

// attach opens the debug container's terminal through the API server,
// WebSocket first with SPDY as the fallback, and tees both directions into
// the recording.
func (r *Runner) attach(s *v1alpha1.Session, pod, container string, rec *recording.Recorder) (*Live, error) {
	req := r.Kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(s.Namespace).Name(pod).SubResource("attach").
		VersionedParams(&corev1.PodAttachOptions{Container: container, Stdin: true, Stdout: true, TTY: true}, scheme.ParameterCodec)
	ws := newWSAttach(r.Config, req.URL().String())
	spdy, err := remotecommand.NewSPDYExecutor(r.Config, "POST", req.URL())
	if err != nil {
		return nil, err
	}
	// SPDY only when the WebSocket upgrade itself fails, as kubectl decides.
	exec, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return nil, err
	}
	l, stdin, stdout := r.newLive(s, rec)
	go func() {
		err := exec.StreamWithContext(l.ctx, remotecommand.StreamOptions{
			Stdin: stdin, Stdout: stdout, Tty: true, TerminalSizeQueue: l.sizes})
		l.streamErr = err
		close(l.streamEnded)
		// A stream that ended by itself is streamOver's to tell the
		// terminals about: ended, or to reconnect.
		if l.Ending() {
			l.out.close()
		}
	}()
	return l, nil
}

// newLive wires a session's terminal: what the person types and what the
// terminal shows are recorded before they go anywhere, and a byte that
// cannot be recorded goes nowhere (the stream ends).
func (r *Runner) newLive(s *v1alpha1.Session, rec *recording.Recorder) (l *Live, stdin io.Reader, stdout io.Writer) {
	inR, inW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	l = &Live{Session: s, r: r, rec: rec, stdin: inW, out: newFanout(r.Clock.Now()), ctx: ctx, cancel: cancel,
		sizes: newSizeQueue(), ended: make(chan struct{}), streamEnded: make(chan struct{})}
	l.lastInput.Store(r.Clock.Now().UnixNano())
	l.stopAt.Store(stopOf(s.Status))
	stdin = &teeReader{r: inR, record: func(p []byte) error { return rec.Input(ctx, p) }}
	stdout = writerFunc(func(p []byte) (int, error) {
		if err := rec.Output(ctx, p); err != nil {
			l.recordingFailed.Store(&err)
			return 0, err
		}
		l.out.write(p)
		return len(p), nil
	})
	return l, stdin, stdout
}

// endAtGrantExpiry is the backstop that ends the session when its grant
// expires, on the wall clock, whatever else ends it or fails to: the API
// server checked the grant when the attach stream opened, not since, so the
// relay itself closes the stream (and with it the shell's input) at the
// grant's TTL. Enforce ends the session at its hard stop, or at the grant's
// expiry if that comes first, long before; this holds when Enforce does not
// run.
func (l *Live) endAtGrantExpiry(expires time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.grantTimer = time.AfterFunc(time.Until(expires), func() {
		if err := l.finish(context.Background(), relayEnding(v1alpha1.EndHardStop, "its grant expired", false)); err != nil {
			l.r.Log.Error(err, "ending a session at its grant's expiry", "session", l.Session.Namespace+"/"+l.Session.Name)
		}
	})
	timer := l.grantTimer
	go func() {
		<-l.ended
		timer.Stop()
	}()
}

// moveStopLocked follows an extension: the hard stop and the backstop at
// the new grant's expiry move to what the Session now says. Call under mu.
func (l *Live) moveStopLocked() {
	l.stopAt.Store(stopOf(l.Session.Status))
	if g := l.Session.Status.Grant; g != nil && l.grantTimer != nil {
		l.grantTimer.Reset(time.Until(g.ExpiresAt.Time))
	}
}

// stopOf is when a session with status st stops, in unix nanoseconds (0:
// nothing set): its hard stop, or its grant's expiry if that comes first.
// Whatever the Session says, the stream never outlives the grant: the API
// server checked the grant only when the stream opened.
func stopOf(st v1alpha1.SessionStatus) int64 {
	var stop time.Time
	if st.Deadline != nil {
		stop = st.Deadline.Time
	}
	if g := st.Grant; g != nil && (stop.IsZero() || g.ExpiresAt.Time.Before(stop)) {
		stop = g.ExpiresAt.Time
	}
	if stop.IsZero() {
		return 0
	}
	return stop.UnixNano()
}

// Write sends the person's keystrokes to the terminal.
func (l *Live) Write(p []byte) (int, error) {
	l.lastInput.Store(l.r.Clock.Now().UnixNano())
	return l.stdin.Write(p)
}

// Ending says someone or something is ending the session, or has, or it
// is leaving this relay another way.
func (l *Live) Ending() bool { return exit(l.exit.Load()) != stillRunning }

// Mark records a marker in the session's recording: a moment a reviewer
// is to find.
func (l *Live) Mark(ctx context.Context, note string) error { return l.rec.Mark(ctx, note) }

// Resize sets the terminal's size and records it.
func (l *Live) Resize(ctx context.Context, cols, rows uint16) error {
	if cols == 0 || rows == 0 {
		return fmt.Errorf("a terminal is at least 1x1, not %dx%d", cols, rows)
	}
	if err := l.rec.Resize(ctx, int(cols), int(rows)); err != nil {
		return err
	}
	// A resize is not typing: it never holds off the idle limit.
	l.sizes.push(remotecommand.TerminalSize{Width: cols, Height: rows})
	return nil
}

// Ended is closed once the session has left this relay: ended, whoever
// ended it, released to another, or lost to one.
func (l *Live) Ended() <-chan struct{} { return l.ended }

// Output returns a viewer of the terminal's output from now on; closing it
// is the viewer leaving.
func (l *Live) Output() io.ReadCloser { return l.out.subscribe(l.r.Clock.Now, true) }

// OutputFromNow returns a viewer of the output from now on only: no replay
// of the recent screen.
func (l *Live) OutputFromNow() io.ReadCloser { return l.out.subscribe(l.r.Clock.Now, false) }

// End ends the session for a person: detach, finalize the recording,
// recycle the pod unless the approver chose to keep it, revoke the grant,
// and write who ended it and why; note is what they wrote ("" for none).
func (l *Live) End(ctx context.Context, by string, reason v1alpha1.EndReason, note string) error {
	return l.finish(ctx, ending{by: by, reason: reason, note: note})
}

// Stop ends the session as End does, in the relay's own name: a limit
// reached, or the relay shutting down; detail is what it saw ("" when the
// reason says it all).
func (l *Live) Stop(ctx context.Context, reason v1alpha1.EndReason, detail string) error {
	return l.finish(ctx, relayEnding(reason, detail, false))
}

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
func (l *Live) leave(how exit, do func() error) (bool, error) {
	if !l.exit.CompareAndSwap(int32(stillRunning), int32(how)) {
		<-l.ended
		return false, nil
	}
	defer close(l.ended)
	return true, do()
}

// finish ends the session once, whoever asks first.
func (l *Live) finish(ctx context.Context, e ending) error {
	_, err := l.endFor(ctx, e)
	return err
}

// endFor ends the session as finish does and returns e's reason, or ""
// when another exit came first: what Enforce reports is the end that was
// made, not one that lost the race to a person's, say.
func (l *Live) endFor(ctx context.Context, e ending) (v1alpha1.EndReason, error) {
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
func (l *Live) Lose() {
	_, _ = l.leave(losing, func() error { l.letGo(); return nil })
}

func (l *Live) letGo() {
	l.rec.Abandon()
	l.out.closeWith(ErrMoved)
	_ = l.stdin.Close()
	l.sizes.close()
	l.cancel()
	select {
	case <-l.streamEnded:
	case <-time.After(10 * time.Second):
	}
	l.mu.Lock()
	name := l.Session.Namespace + "/" + l.Session.Name
	l.mu.Unlock()
	l.r.Log.Info("another relay took the session up: let go", "session", name)
}

// takenUp reports whether another relay resumed the session since this one
// took it (or started it): then this one must not end it.
func (l *Live) takenUp(ctx context.Context) bool {
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
func (l *Live) detach() {
	_ = l.stdin.Close()
	l.sizes.close()
	select {
	case <-l.streamEnded:
	case <-time.After(10 * time.Second):
		l.cancel()
		<-l.streamEnded
	}
}

// apiServerAnswers reports whether the cluster's API server answers now.
func (l *Live) apiServerAnswers(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	return l.r.Kube.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error() == nil
}

// streamOver ends the session whose terminal stream ended by itself: the
// shell exited (the requester ended it) or the stream failed (abnormally).
// Either way nobody can type any more, so the pod is recycled and the grant
// revoked now, not at the idle limit. It reports false when someone was
// already ending the session (closing stdin ends the stream too), or got
// there first while it looked at the API server.
func (l *Live) streamOver(ctx context.Context) (reason v1alpha1.EndReason, ended bool, err error) {
	if l.Ending() {
		return "", false, nil
	}
	// A stream ends without an error both when the shell exits and when
	// the connection under it drops (the API server killed, say): the API
	// server not answering now tells the second.
	if l.streamErr == nil && l.apiServerAnswers(ctx) {
		reason, err = l.endFor(ctx, ending{by: l.Session.Spec.Requester, reason: v1alpha1.EndUser})
		return reason, reason != "", err
	}
	if l.streamErr == nil {
		l.streamErr = errors.New("the API server stopped answering")
	}
	why := l.streamErr.Error()
	if len(why) > 160 {
		why = why[:160] + "..."
	}
	if l.recordingFailed.Load() == nil {
		// The stream broke, not the recording: an API server restarting, a
		// connection dropped. The shell ended with it (its input came from
		// that stream), so the session goes on in a new one: released, for
		// a relay (this one, at its next look) to take up, as after a
		// relay that died, but at once.
		var left bool
		left, err = l.leave(releasing, func() error {
			return l.release(ctx, "the terminal stream to the pod broke ("+why+"): the session goes on in a new debug container", ErrReattaching)
		})
		return "", left, err
	}
	reason, err = l.endFor(ctx, relayEnding(v1alpha1.EndDisconnect, "the terminal stream failed: "+why, true))
	return reason, reason != "", err
}

func (l *Live) end(ctx context.Context, e ending) error {
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
	streamErr := l.streamErr
	var errs []error
	if streamErr != nil && !errors.Is(streamErr, context.Canceled) {
		// Reported after the clean-up below, which happens regardless.
		errs = append(errs, fmt.Errorf("the terminal stream: %w", streamErr))
	}
	done, err := l.rec.Close(ctx)
	errs = append(errs, err)
	// A live session's pod carries the debug container: recycled unless the
	// approver chose to keep it. A copy is always deleted; its original was
	// never touched.
	if !s.KeepsPod() {
		err := r.Kube.CoreV1().Pods(s.Namespace).Delete(ctx, s.Status.DebugContainer.Pod, metav1.DeleteOptions{})
		if !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	// Under mu: an extension being approved replaces the grant under it,
	// and the grant revoked is the one standing after it.
	l.mu.Lock()
	defer l.mu.Unlock()
	grant := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: s.Status.Grant.RoleBinding, Namespace: s.Namespace}}
	if err := r.Client.Delete(ctx, grant); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, err)
	}
	// A merge patch: the heartbeat may have moved the resource version.
	errs = append(errs, r.Lifecycle().Make(ctx, s, lifecycle.Move{Step: v1alpha1.StepEnd, To: v1alpha1.PhaseEnded, Actor: e.by,
		Reason: EndReasonText(e.reason, e.words()), Merge: true, Status: func(st *v1alpha1.SessionStatus) {
			// Without its evidence (the store away past HoldFor) an end is
			// abnormal whatever ended it: the sweeper finalizes what was streamed.
			st.End = &v1alpha1.End{By: e.by, Reason: e.reason, Note: e.note, Detail: v1alpha1.EndDetail(e.detail), At: metav1.NewTime(r.Clock.Now()), Abnormal: e.abnormal || done.Body == nil}
			if done.Body != nil {
				st.Evidence = recording.EvidenceOf(recording.RefOf(r.Cluster, s), done, "", r.Anchorer != nil)
			}
		}}))
	l.cancel()
	if done.Body != nil && r.Anchorer != nil {
		go r.anchor(s.DeepCopy(), done.Body)
	}
	return errors.Join(errs...)
}

// EndReasonText is an end's reason as the audit log records it: the
// reason, then the words that came with it (a person's note or, in full,
// what the relay saw), if any.
func EndReasonText(reason v1alpha1.EndReason, words string) string {
	if words == "" {
		return string(reason)
	}
	return string(reason) + ": " + words
}

// note audits a step the relay took as the portal (see Lifecycle).
func (r *Runner) note(ctx context.Context, kind string, s *v1alpha1.Session, reason string) error {
	return r.Lifecycle().Note(ctx, kind, v1alpha1.PortalUsername, s, reason)
}

// Lifecycle is the Session state machine as the portal: every status write
// and every step the relay audits goes through it.
func (r *Runner) Lifecycle() *lifecycle.Machine {
	return lifecycle.AsPortal(r.Cluster, r.Client, r.Kube, r.Audit, r.Clock)
}
