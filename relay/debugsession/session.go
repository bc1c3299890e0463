// Package debugsession is the debug runner: it grants the portal a
// RoleBinding with a TTL, adds the debug container (or makes a copy of the
// pod), and attaches to it through the API server, recording every byte;
// at a session's end it recycles the pod and revokes the grant. It starts
// and stops containers: the running session (its viewers, limits,
// heartbeat, extensions and end) is relay/live's. The cluster holds the
// truth: every step is in the Session's status.
package debugsession

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
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

// Start starts an approved session: its recording, its grant, its debug
// container (or copy), and its terminal, attached and shown on screen.
// The caller audits the attach and runs the session from there
// (relay/live). A session that cannot be recorded is refused before any
// grant exists; a failure after the grant takes the grant back.
func (r *Runner) Start(ctx context.Context, s *v1alpha1.Session, screen Screen) (_ *Stream, err error) {
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
		_ = r.Note(ctx, v1alpha1.StepRefusal, s, "no recording store: "+err.Error())
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
	if err := r.Note(ctx, v1alpha1.StepGrant, s, role+" for "+ttl.String()); err != nil {
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
	return r.attach(s, pod, container, rec, screen)
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
	if err := r.Revoke(ctx, grant.Namespace, grant.Name); err != nil {
		r.Log.Error(err, "taking back the grant of a failed start: the grant sweeper deletes it at its TTL", "grant", grant.Name)
		return
	}
	_ = r.Note(ctx, v1alpha1.StepRevoke, s, grant.Name+": the start failed: "+cause.Error())
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

// EndReasonText is an end's reason as the audit log records it: the
// reason, then the words that came with it (a person's note or, in full,
// what the relay saw), if any.
func EndReasonText(reason v1alpha1.EndReason, words string) string {
	if words == "" {
		return string(reason)
	}
	return string(reason) + ": " + words
}

// Note audits a step the relay took as the portal (see Lifecycle).
func (r *Runner) Note(ctx context.Context, kind string, s *v1alpha1.Session, reason string) error {
	return r.Lifecycle().Note(ctx, kind, v1alpha1.PortalUsername, s, reason)
}

// Lifecycle is the Session state machine as the portal: every status write
// and every step the relay audits goes through it.
func (r *Runner) Lifecycle() *lifecycle.Machine {
	return lifecycle.AsPortal(r.Cluster, r.Client, r.Kube, r.Audit, r.Clock)
}
