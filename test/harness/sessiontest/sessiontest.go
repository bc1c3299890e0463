// Package sessiontest builds Sessions for tests, in the spirit of Kueue's
// test wrappers: Make gives alice's 30-minute live request on pod web-1,
// and each method sets one part of it, as the relay or the sweeper would
// write it, so that a test names only what it is about:
//
//	s := sessiontest.Make("shop", "s-1").Approved("bob", "", at).Started(at).Obj()
package sessiontest

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// Wrapper is a Session being built.
type Wrapper struct{ s v1alpha1.Session }

// Make is alice's request (no phase yet): a 30-minute live session on pod
// web-1 of namespace, for "checkout returns 500s".
func Make(namespace, name string) *Wrapper {
	return &Wrapper{v1alpha1.Session{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Session"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1alpha1.SessionSpec{TargetPod: "web-1", Mode: v1alpha1.ModeLive, Duration: metav1.Duration{Duration: 30 * time.Minute},
			Reason: "checkout returns 500s", Requester: "alice"},
	}}
}

// Obj is the Session built.
func (w *Wrapper) Obj() *v1alpha1.Session { return w.s.DeepCopy() }

// With changes the Session as edit does: what no method says.
func (w *Wrapper) With(edit ...func(*v1alpha1.Session)) *Wrapper {
	for _, e := range edit {
		if e != nil {
			e(&w.s)
		}
	}
	return w
}

// Pod is the target pod.
func (w *Wrapper) Pod(pod string) *Wrapper { w.s.Spec.TargetPod = pod; return w }

// Mode is how the session debugs: live, copy or heldCopy.
func (w *Wrapper) Mode(m v1alpha1.SessionMode) *Wrapper { w.s.Spec.Mode = m; return w }

// Duration is how long it asks to run.
func (w *Wrapper) Duration(d time.Duration) *Wrapper {
	w.s.Spec.Duration = metav1.Duration{Duration: d}
	return w
}

// Reason is the requester's reason.
func (w *Wrapper) Reason(r string) *Wrapper { w.s.Spec.Reason = r; return w }

// Requester is who asked, by name and identity ("" for none recorded).
func (w *Wrapper) Requester(name, id string) *Wrapper {
	w.s.Spec.Requester, w.s.Spec.RequesterID = name, id
	return w
}

// ProcessAccess asks to see the processes of the target's container.
func (w *Wrapper) ProcessAccess(container string) *Wrapper {
	w.s.Spec.TargetContainer, w.s.Spec.ProcessAccess = container, true
	return w
}

// KeepPod asks to keep the pod afterwards.
func (w *Wrapper) KeepPod(keep bool) *Wrapper { w.s.Spec.KeepPod = keep; return w }

// GlassBroken marks the request as breaking the glass.
func (w *Wrapper) GlassBroken() *Wrapper { w.s.Spec.GlassBroken = true; return w }

// Created is when the Session was created.
func (w *Wrapper) Created(at time.Time) *Wrapper {
	w.s.CreationTimestamp = metav1.NewTime(at)
	return w
}

// Phase sets the phase alone.
func (w *Wrapper) Phase(p v1alpha1.SessionPhase) *Wrapper { w.s.Status.Phase = p; return w }

// Pending is a request waiting for a decision.
func (w *Wrapper) Pending() *Wrapper { return w.Phase(v1alpha1.PhasePending) }

// Approved is by's approval at at, of the mode and keep-the-pod asked for.
func (w *Wrapper) Approved(by, byID string, at time.Time) *Wrapper {
	w.s.Status.Phase = v1alpha1.PhaseApproved
	w.s.Status.Approval = &v1alpha1.Approval{Kind: v1alpha1.ApprovalPerson, By: by, ByID: byID, At: metav1.NewTime(at),
		Mode: w.s.Spec.Mode, KeepPod: w.s.Spec.KeepPod}
	return w
}

// Started is the relay's start at at: Active, its hard stop its duration
// later, its heartbeat then, its debug container in the target pod (a
// live session's) or in its copy.
func (w *Wrapper) Started(at time.Time) *Wrapper {
	start, deadline := metav1.NewTime(at), metav1.NewTime(at.Add(w.s.Spec.Duration.Duration))
	pod := w.s.Spec.TargetPod
	if w.s.Spec.Mode != v1alpha1.ModeLive {
		pod = v1alpha1.DebugContainerName(w.s.Name, 0)
	}
	st := &w.s.Status
	st.Phase, st.StartedAt, st.Deadline, st.Heartbeat = v1alpha1.PhaseActive, &start, &deadline, &start
	st.DebugContainer = &v1alpha1.DebugContainer{Pod: pod, Name: v1alpha1.DebugContainerName(w.s.Name, 0)}
	return w
}

// Deadline moves the hard stop.
func (w *Wrapper) Deadline(at time.Time) *Wrapper {
	d := metav1.NewTime(at)
	w.s.Status.Deadline = &d
	return w
}

// Heartbeat is the relay's last sign of life (zero: none).
func (w *Wrapper) Heartbeat(at time.Time) *Wrapper {
	w.s.Status.Heartbeat = nil
	if !at.IsZero() {
		b := metav1.NewTime(at)
		w.s.Status.Heartbeat = &b
	}
	return w
}

// Grant is the session's grant: its RoleBinding, role and recorded expiry.
func (w *Wrapper) Grant(roleBinding, role string, expires time.Time) *Wrapper {
	w.s.Status.Grant = &v1alpha1.Grant{RoleBinding: roleBinding, Role: role, ExpiresAt: metav1.NewTime(expires)}
	return w
}

// Ended is the end by by at at, for reason.
func (w *Wrapper) Ended(by string, reason v1alpha1.EndReason, at time.Time) *Wrapper {
	w.s.Status.Phase = v1alpha1.PhaseEnded
	w.s.Status.End = &v1alpha1.End{By: by, Reason: reason, At: metav1.NewTime(at)}
	return w
}
