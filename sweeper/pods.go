package sweeper

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/audit"
)

// MaxGrantTTL is the longest a session grant stands, whatever its TTL label
// says: the largest TTL the policies admit by default (the chart's
// params.grantTTL.max).
const MaxGrantTTL = 75 * time.Minute

// MaxExtended is the most time extensions add to a session as the sweeper
// counts them, whatever its status claims: the CRD's four extensions, each
// a new grant of at most MaxGrantTTL.
const MaxExtended = 4 * MaxGrantTTL

// podSessionIndex indexes cached pods by the Sessions they belong to, so a
// change to a Session or its grant finds the pods to look at again.
const podSessionIndex = "breakglass.tower.dev/pod-sessions"

// PodSweeper makes sure no pod the plane debugged outlives the session
// grant it was debugged under, whatever its Session says: copies (labelled
// with their Session) are deleted, and pods that carry a debug container
// are recycled, once no grant of their session stands.
type PodSweeper struct {
	// Client reads pods, Sessions and grants from the cache, and deletes.
	Client client.Client
	// Reader reads straight from the API server: a delete is confirmed on
	// what the server holds, not on a cache that may lag a new grant.
	Reader client.Reader
	Clock  clock.PassiveClock
	// Grace lets the relay end a session at its hard stop before the sweeper
	// recycles its pod (as SessionSweeper.Grace).
	Grace time.Duration
	// NewPodGrace is how long a new pod is given for its Session and grant
	// to show, before their absence counts.
	NewPodGrace time.Duration
	// Audit and Identity: every recycle is audited (see takeAway).
	Audit    *audit.Log
	Identity string
}

// claim is one session a pod belongs to: as its copy (the session label),
// or by a debug container named after the session.
type claim struct {
	session string
	// container is the debug container's name; empty for a copy.
	container string
}

// podClaims lists the sessions a pod belongs to. Ephemeral containers
// cannot be removed, so every debug container a pod ever received counts.
func podClaims(pod *corev1.Pod) []claim {
	var out []claim
	if name, ok := pod.Labels[v1alpha1.SessionLabel]; ok {
		out = append(out, claim{session: name})
	}
	for _, ec := range pod.Spec.EphemeralContainers {
		if session, ok := v1alpha1.SessionOfDebugContainer(ec.Name); ok {
			out = append(out, claim{session: session, container: ec.Name})
		}
	}
	return out
}

// isDebugged says whether the pod sweeper has any business with a pod.
func isDebugged(obj client.Object) bool {
	pod, ok := obj.(*corev1.Pod)
	return ok && len(podClaims(pod)) > 0
}

// slimPod is the pod cache's transform. The sweeper must see every pod (an
// ephemeral container can be added to any, and no selector matches on one),
// so it keeps of each only what podClaims and a delete read. It is
// idempotent, as informers may apply it twice.
func slimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	slim := &corev1.Pod{
		TypeMeta: pod.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID, ResourceVersion: pod.ResourceVersion,
			CreationTimestamp: pod.CreationTimestamp, DeletionTimestamp: pod.DeletionTimestamp},
	}
	if name, ok := pod.Labels[v1alpha1.SessionLabel]; ok {
		slim.Labels = map[string]string{v1alpha1.SessionLabel: name}
	}
	for _, ec := range pod.Spec.EphemeralContainers {
		if strings.HasPrefix(ec.Name, v1alpha1.DebugContainerPrefix) {
			slim.Spec.EphemeralContainers = append(slim.Spec.EphemeralContainers,
				corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: ec.Name}})
		}
	}
	return slim, nil
}

// indexPodSessions is podSessionIndex's extractor.
func indexPodSessions(obj client.Object) []string {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil
	}
	var names []string
	for _, c := range podClaims(pod) {
		names = append(names, c.session)
	}
	return names
}

// sessionFacts is what the cluster holds about one session.
type sessionFacts struct {
	// session is nil when there is no such Session.
	session *v1alpha1.Session
	// grants are the RoleBindings labelled with the session.
	grants []rbacv1.RoleBinding
}

// podVerdict is what the sweeper does about a pod now.
type podVerdict struct {
	delete bool
	why    string
	// requeueIn is when to look again; zero when nothing bounds the pod.
	requeueIn time.Duration
}

// decide is the pod sweeper's whole judgement on a pod, without I/O: the
// pod goes as soon as any session it belongs to no longer stands.
func (p *PodSweeper) decide(pod *corev1.Pod, facts map[string]sessionFacts, now time.Time) podVerdict {
	var v podVerdict
	var soonest time.Time
	for _, c := range podClaims(pod) {
		until, forever, why := p.standsUntil(pod, c, facts[c.session])
		if forever {
			continue
		}
		if !now.Before(until) {
			v.delete, v.why = true, why
			break
		}
		if soonest.IsZero() || until.Before(soonest) {
			soonest = until
		}
	}
	if v.delete {
		// A pod created a moment ago may belong to a Session or grant the
		// cache has not shown yet.
		if young := pod.CreationTimestamp.Add(p.NewPodGrace); now.Before(young) {
			return podVerdict{requeueIn: young.Sub(now)}
		}
		return v
	}
	if !soonest.IsZero() {
		v.requeueIn = soonest.Sub(now)
	}
	return v
}

// standsUntil is until when a pod may go on belonging to one session, and
// why it goes then. Nothing the Session says extends the bound beyond its
// grant: its status may be stale (a crashed relay) or false (a stolen
// portal token), while the grant's TTL is the fence RBAC itself enforces.
func (p *PodSweeper) standsUntil(pod *corev1.Pod, c claim, f sessionFacts) (until time.Time, forever bool, why string) {
	s := f.session
	if s == nil {
		return time.Time{}, false, "its Session " + c.session + " does not exist"
	}
	if c.container != "" && keptPod(s, pod) {
		return time.Time{}, true, ""
	}
	if s.Status.Phase.Final() {
		return time.Time{}, false, fmt.Sprintf("its Session %s is %s", s.Name, s.Status.Phase)
	}
	// Of several grants the latest counts: the grant sweeper deletes each at
	// its own TTL, so the latest is the one still standing.
	var granted time.Time
	for i := range f.grants {
		rb := &f.grants[i]
		if !rb.DeletionTimestamp.IsZero() {
			continue
		}
		expiry, _ := GrantExpiry(rb)
		if expiry = earliest(expiry, rb.CreationTimestamp.Add(MaxGrantTTL)); expiry.After(granted) {
			granted = expiry
		}
	}
	// Approved extensions move the hard stop. The Session policy bounds
	// them, by the chart's params an operator may loosen: the sweeper
	// counts at most what the chart lets any session have, four grants'
	// worth.
	added, _ := s.Extended()
	added = min(added, MaxExtended)
	var stops time.Time
	if st := s.Status.StartedAt; st != nil {
		stops = st.Add(s.Spec.Duration.Duration + added + p.Grace)
	}
	if dl := s.Status.Deadline; dl != nil && (stops.IsZero() || dl.Add(p.Grace).Before(stops)) {
		stops = dl.Add(p.Grace)
	}
	switch {
	case !granted.IsZero():
		until, why = granted, "the grant of its Session "+s.Name+" ran out"
		if !stops.IsZero() && stops.Before(until) {
			until, why = stops, "its Session "+s.Name+" is past its hard stop"
		}
	case s.Status.Phase == v1alpha1.PhaseActive && c.container != "" && keepChosen(s, pod) && !stops.IsZero():
		// The relay revokes the grant of a session whose pod is kept a
		// moment before it records the end, and the end keeps the pod.
		until, why = stops, "its Session "+s.Name+" is past its hard stop"
	default:
		// Without a grant the pod goes, in any phase: the relay grants before
		// it creates a copy or adds a container, and revokes after it deleted
		// them; a grant gone while the session is Active was revoked or
		// swept at its TTL, which the Session's own times must not outlast.
		return time.Time{}, false, "its Session " + s.Name + " holds no grant"
	}
	// A copy is made under a grant that already stands, so it never
	// outlives the longest grant from its own creation, a time the API
	// server wrote, and the time extensions added since.
	if c.container == "" {
		if end := pod.CreationTimestamp.Add(MaxGrantTTL + added); end.Before(until) {
			until, why = end, "the copy is older than the longest grant"
		}
	}
	return until, false, why
}

// keepChosen says whether the approver chose to keep this pod, with its
// debug container, at the end of a live session.
func keepChosen(s *v1alpha1.Session, pod *corev1.Pod) bool {
	return s.KeepsPod() && s.Status.DebugContainer != nil && s.Status.DebugContainer.Pod == pod.Name
}

// keptPod says whether the pod is kept: the one case where a debug
// container outlives its session's grant.
func keptPod(s *v1alpha1.Session, pod *corev1.Pod) bool {
	return s.Status.Phase == v1alpha1.PhaseEnded && keepChosen(s, pod)
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// Reconcile handles one pod that carries a session label or a debug container.
func (p *PodSweeper) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pod := &corev1.Pod{}
	if err := p.Client.Get(ctx, req.NamespacedName, pod); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !pod.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	now := p.Clock.Now()
	facts, err := gatherSessions(ctx, p.Client, pod)
	if err != nil {
		return ctrl.Result{}, err
	}
	v := p.decide(pod, facts, now)
	if v.delete {
		// Recycling a serving pod cannot be undone: judge again on what the
		// API server holds.
		if facts, err = gatherSessions(ctx, p.Reader, pod); err != nil {
			return ctrl.Result{}, err
		}
		v = p.decide(pod, facts, now)
	}
	if !v.delete {
		return ctrl.Result{RequeueAfter: v.requeueIn}, nil
	}
	for _, c := range podClaims(pod) {
		takeAway(ctx, p.Audit, v1alpha1.StepRecycle, p.Identity, pod.Namespace, c.session, "pod "+pod.Name+": "+v.why)
	}
	// The UID precondition keeps a pod re-created under the same name (by
	// its controller, after a recycle) safe.
	uid := pod.UID
	if err := p.Client.Delete(ctx, pod, client.Preconditions{UID: &uid}); ignoreGone(err) != nil {
		return ctrl.Result{}, fmt.Errorf("deleting pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	log.FromContext(ctx).Info("deleted a debugged pod no session grant stands for", "pod", req.NamespacedName, "why", v.why)
	return ctrl.Result{}, nil
}

// gatherSessions reads the Session and grants of each session pod belongs to.
func gatherSessions(ctx context.Context, r client.Reader, pod *corev1.Pod) (map[string]sessionFacts, error) {
	facts := map[string]sessionFacts{}
	for _, c := range podClaims(pod) {
		if _, done := facts[c.session]; done {
			continue
		}
		var f sessionFacts
		s := &v1alpha1.Session{}
		err := r.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: c.session}, s)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("reading Session %s/%s: %w", pod.Namespace, c.session, err)
		default:
			f.session = s
		}
		grants := &rbacv1.RoleBindingList{}
		if err := r.List(ctx, grants, client.InNamespace(pod.Namespace), client.MatchingLabels{v1alpha1.SessionLabel: c.session}); err != nil {
			return nil, fmt.Errorf("listing the grants of %s/%s: %w", pod.Namespace, c.session, err)
		}
		f.grants = grants.Items
		facts[c.session] = f
	}
	return facts, nil
}

// podsOf maps a Session, or a grant by its session label, to the cached
// pods that belong to that session.
func (p *PodSweeper) podsOf(ctx context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetName()
	if _, isGrant := obj.(*rbacv1.RoleBinding); isGrant {
		name = obj.GetLabels()[v1alpha1.SessionLabel]
	}
	if name == "" {
		return nil
	}
	pods := &corev1.PodList{}
	if err := p.Client.List(ctx, pods, client.InNamespace(obj.GetNamespace()), client.MatchingFields{podSessionIndex: name}); err != nil {
		log.FromContext(ctx).Error(err, "finding the pods of a session", "session", name, "namespace", obj.GetNamespace())
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(pods.Items))
	for i := range pods.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pods.Items[i])})
	}
	return reqs
}
