package live

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// A replica among several says it is alive with one Lease per cluster,
// renewed every PresenceRenew, instead of leaving each session's heartbeat
// to go stale (three heartbeats, a minute) before another replica may take
// its sessions up: one cheap write a second for all of them.
//
// The others watch the Leases. One not renewed for PresenceLapse, as the
// watching replica counts it on its own clock (no two clocks compared) and
// only while its own renewals succeed (an API server that restarts takes
// nobody for gone), is deleted by it at the version it saw, so that a
// renewal racing it wins; its replica is then gone and its sessions are
// taken up at once (Resume says why).
//
// A replica whose own renewals have failed for PresenceFence lets go of
// its sessions itself, before any other can count its Lease lapsed: one
// shell per session, even when this replica is cut off from the API server
// while its attach streams still run. It lets go as well when it finds its
// Lease deleted by someone else. Either way it writes nothing (it may not
// reach the API server); its sessions are taken up by whichever replica
// gets there first, itself included once its Lease is written again
// (adoptOnce, holderGone).
const (
	PresenceRenew = time.Second
	PresenceLapse = 5 * time.Second
	PresenceFence = PresenceLapse - PresenceRenew
	// PresenceLabel names the replica whose presence a Lease is.
	PresenceLabel  = "breakglass.tower.dev/relay"
	presencePrefix = "breakglass-relay-"
	// presenceHint is how long a Lease deleted by someone else (not as
	// lapsed by this replica) must stay gone before its replica counts as
	// gone: long enough for the replica, which lets go of its sessions when
	// it finds its Lease deleted, to write it again.
	presenceHint = 2*PresenceRenew + time.Second
)

// presence is this replica's Lease in one cluster and what it sees of the
// others'.
type presence struct {
	kube kubernetes.Interface
	self string
	log  logr.Logger
	// changed is told when a replica is found gone; letGo lets go of every
	// session this replica runs in the cluster.
	changed func()
	letGo   func(why string)

	// own is this replica's Lease as last written (run's goroutine only);
	// lastOK is when the last renewal that succeeded was sent, fenced
	// whether this replica let go since.
	own    *coordinationv1.Lease
	lastOK time.Time
	fenced bool

	mu sync.Mutex
	// seen is, for each other replica's Lease, its version and when this
	// replica saw it change; deleted, when a Lease was deleted by someone
	// else; gone, the replicas that left without handing over.
	seen    map[string]sighting
	deleted map[string]time.Time
	gone    map[string]bool
	// renewing is since when this replica's own renewals have succeeded
	// without a break (zero while they fail).
	renewing time.Time
}

type sighting struct {
	version string
	at      time.Time
}

func newPresence(kube kubernetes.Interface, self string, log logr.Logger, changed func(), letGo func(string)) *presence {
	return &presence{kube: kube, self: self, log: log, changed: changed, letGo: letGo,
		seen: map[string]sighting{}, deleted: map[string]time.Time{}, gone: map[string]bool{}}
}

// isGone says whether replica left without handing its sessions over.
func (p *presence) isGone(replica string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gone[replica]
}

// present says whether this replica's own Lease has been written since it
// last let go of its sessions: only then may it take up the sessions that
// name it, for the others see it present and no longer count it gone.
func (p *presence) present() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.renewing.IsZero()
}

// leaseThere looks, now, for replica's Lease: a replica counted gone whose
// Lease is there again is back (it may be taking its sessions up itself).
// An answer other than "not found" counts as there. It asks with kube,
// not with the presence's own client, which renewals must not wait on.
func leaseThere(ctx context.Context, kube kubernetes.Interface, replica string) bool {
	_, err := kube.CoordinationV1().Leases(v1alpha1.Namespace).Get(ctx, presencePrefix+replica, metav1.GetOptions{})
	return !apierrors.IsNotFound(err)
}

// run renews this replica's Lease and watches the others' until ctx ends,
// then deletes its own: by then (Sessions.Close) every session it ran was
// handed over.
func (p *presence) run(ctx context.Context) {
	factory := informers.NewSharedInformerFactoryWithOptions(p.kube, 0, informers.WithNamespace(v1alpha1.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = labels.Set{"app.kubernetes.io/part-of": "breakglass"}.String() + "," + PresenceLabel
		}))
	informer := factory.Coordination().V1().Leases().Informer()
	_, _ = informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { p.saw(o) },
		UpdateFunc: func(_, o any) { p.saw(o) },
		DeleteFunc: func(o any) {
			if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			if replica, ok := p.replicaOf(o); ok {
				p.mu.Lock()
				if !p.gone[replica] {
					p.deleted[replica] = time.Now()
				}
				p.mu.Unlock()
			}
		},
	})
	watching, stop := context.WithCancel(context.Background())
	// The informer's goroutines end with watching; Shutdown waits for them.
	defer func() { stop(); factory.Shutdown() }()
	factory.Start(watching.Done())

	tick := time.NewTicker(PresenceRenew)
	defer tick.Stop()
	for {
		p.renew(ctx)
		if informer.HasSynced() {
			p.judge(ctx)
		}
		select {
		case <-ctx.Done():
			gone, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := p.kube.CoordinationV1().Leases(v1alpha1.Namespace).Delete(gone, presencePrefix+p.self, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				p.log.Error(err, "deleting this replica's presence Lease (the others take its sessions up once it lapses)")
			}
			return
		case <-tick.C:
		}
	}
}

// replicaOf is the replica whose presence o is, if it is another's.
func (p *presence) replicaOf(o any) (string, bool) {
	l, ok := o.(*coordinationv1.Lease)
	if !ok {
		return "", false
	}
	replica := l.Labels[PresenceLabel]
	return replica, replica != "" && replica != p.self && l.Name == presencePrefix+replica
}

// saw notes a Lease's version as this replica sees it change.
func (p *presence) saw(o any) {
	replica, ok := p.replicaOf(o)
	if !ok {
		return
	}
	version := o.(*coordinationv1.Lease).ResourceVersion
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seen[replica].version != version {
		p.seen[replica] = sighting{version: version, at: time.Now()}
	}
	delete(p.deleted, replica)
	delete(p.gone, replica) // back (a restarted replica of the same name)
}

// left marks replica gone and says so.
func (p *presence) left(replica string) {
	p.mu.Lock()
	delete(p.seen, replica)
	delete(p.deleted, replica)
	p.gone[replica] = true
	p.mu.Unlock()
	p.changed()
}

// judge deletes the Leases not renewed for PresenceLapse, each at the
// version seen (a replica that renewed meanwhile keeps its Lease), and
// counts a replica whose Lease someone else deleted gone once it has not
// written it again for presenceHint.
func (p *presence) judge(ctx context.Context) {
	p.mu.Lock()
	if p.renewing.IsZero() {
		p.mu.Unlock()
		return
	}
	due := map[string]string{}
	for replica, s := range p.seen {
		if lapsed(s.at, p.renewing, time.Now()) {
			due[replica] = s.version
		}
	}
	var deleted []string
	for replica, at := range p.deleted {
		if time.Since(at) >= presenceHint {
			deleted = append(deleted, replica)
		}
	}
	p.mu.Unlock()
	for _, replica := range deleted {
		p.log.Info("a replica's presence Lease was deleted and not written again: taking its sessions up", "replica", replica)
		p.left(replica)
	}
	for replica, v := range due {
		try, cancel := context.WithTimeout(ctx, PresenceRenew)
		err := p.kube.CoordinationV1().Leases(v1alpha1.Namespace).Delete(try, presencePrefix+replica,
			metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &v}})
		cancel()
		switch {
		case err == nil || apierrors.IsNotFound(err):
			p.log.Info("a replica stopped renewing its presence: taking its sessions up", "replica", replica, "after", PresenceLapse)
			p.left(replica)
		case apierrors.IsConflict(err):
			// Renewed after all; the watch brings the new version.
		default:
			p.log.Error(err, "deleting a lapsed presence Lease", "replica", replica)
		}
	}
}

// renew writes this replica's Lease, creating it if it is not there, and
// lets go of this replica's sessions when it has not been able to for
// PresenceFence, or finds it deleted by another.
func (p *presence) renew(ctx context.Context) {
	leases := p.kube.CoordinationV1().Leases(v1alpha1.Namespace)
	sent := time.Now()
	now := metav1.NewMicroTime(sent)
	try, cancel := context.WithTimeout(ctx, PresenceRenew)
	defer cancel()
	if p.own != nil {
		next := p.own.DeepCopy()
		next.Spec.RenewTime = &now
		got, err := leases.Update(try, next, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			// A renewal that timed out here but was written there: still
			// this replica's own Lease (the same object, the same holder).
			if cur, gerr := leases.Get(try, p.own.Name, metav1.GetOptions{}); gerr == nil && cur.UID == p.own.UID &&
				cur.Spec.HolderIdentity != nil && *cur.Spec.HolderIdentity == p.self {
				next.ResourceVersion = cur.ResourceVersion
				got, err = leases.Update(try, next, metav1.UpdateOptions{})
			}
		}
		switch {
		case err == nil:
			p.renewed(got, sent)
			return
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			p.own = nil
			p.fence("another replica took this one for gone (its presence Lease was deleted or rewritten)")
		default:
			p.failed(err)
			return
		}
	}
	seconds := int32(PresenceLapse / time.Second)
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: presencePrefix + p.self, Namespace: v1alpha1.Namespace,
			Labels: map[string]string{"app.kubernetes.io/part-of": "breakglass", PresenceLabel: p.self}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &p.self, LeaseDurationSeconds: &seconds, AcquireTime: &now, RenewTime: &now},
	}
	got, err := leases.Create(try, l, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// This replica's name, from a process before this one.
		if got, err = leases.Get(try, l.Name, metav1.GetOptions{}); err == nil {
			l.ResourceVersion = got.ResourceVersion
			got, err = leases.Update(try, l, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		p.failed(err)
		return
	}
	p.renewed(got, sent)
}

func (p *presence) renewed(l *coordinationv1.Lease, sent time.Time) {
	p.own, p.lastOK, p.fenced = l, sent, false
	p.mu.Lock()
	back := p.renewing.IsZero()
	if back {
		p.renewing = time.Now()
	}
	p.mu.Unlock()
	if back {
		// Present (again): its sessions may be taken up now, not at the
		// next look.
		p.changed()
	}
}

func (p *presence) failed(err error) {
	if !errors.Is(err, context.Canceled) {
		p.log.Error(err, "writing this replica's presence Lease")
	}
	p.mu.Lock()
	p.renewing = time.Time{}
	p.mu.Unlock()
	if mustFence(p.lastOK, time.Now()) {
		p.fence("this replica could not renew its presence for " + PresenceFence.String() + ": another may take its sessions up")
	}
}

// fence lets go of this replica's sessions, once until it renews again.
func (p *presence) fence(why string) {
	if p.fenced {
		return
	}
	p.fenced = true
	p.mu.Lock()
	p.renewing = time.Time{}
	p.mu.Unlock()
	p.log.Info("letting go of this replica's sessions", "why", why)
	p.letGo(why)
}

// lapsed says whether another replica's Lease, last seen to change at
// seen, has lapsed by now, counting only since this replica's own renewals
// have succeeded without a break (renewing; zero while they fail).
func lapsed(seen, renewing, now time.Time) bool {
	return !renewing.IsZero() && now.Sub(later(seen, renewing)) >= PresenceLapse
}

// mustFence says whether this replica, whose last renewal that succeeded
// was sent at lastOK, must let go of its sessions by now: before any
// other can count its Lease lapsed.
func mustFence(lastOK, now time.Time) bool {
	return !lastOK.IsZero() && now.Sub(lastOK) >= PresenceFence
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
