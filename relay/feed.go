package relay

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/relay/wire"
)

// feedBuffer is how many events may wait for one stream; a stream further
// behind is closed (its page reconnects and reads the list again), never
// allowed to hold up the others.
const feedBuffer = 64

// sessionFeed is one cluster's Session watch, shared by every event stream
// on this replica: one WATCH however many pages are open, running only
// while one is. It passes on what a page shows: a heartbeat, written every
// 15 s by each running session, changes nothing a list shows and is not
// passed on.
type sessionFeed struct {
	cluster string
	t       Portal

	mu   sync.Mutex
	subs map[*streamSub]func(namespace string) bool
	stop context.CancelFunc
	// seen is each Session's last state as passed on, so that a write
	// that changes none of it is not.
	seen map[string][sha256.Size]byte
}

func newSessionFeed(cluster string, t Portal) *sessionFeed {
	return &sessionFeed{cluster: cluster, t: t, subs: map[*streamSub]func(string) bool{}, seen: map[string][sha256.Size]byte{}}
}

// streamSub is one event stream's subscription to every cluster's feed.
type streamSub struct {
	events chan wire.SessionEvent
	// behind is closed once the stream fell feedBuffer events behind.
	behind chan struct{}
	once   sync.Once
}

func newStreamSub() *streamSub {
	return &streamSub{events: make(chan wire.SessionEvent, feedBuffer), behind: make(chan struct{})}
}

func (s *streamSub) fellBehind() { s.once.Do(func() { close(s.behind) }) }

// subscribe passes events of namespaces visible says yes to on to sub
// until stop is called, or until sub falls behind.
func (f *sessionFeed) subscribe(sub *streamSub, visible func(namespace string) bool) (stop func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subs[sub] = visible
	if f.stop == nil {
		ctx, cancel := context.WithCancel(context.Background())
		f.stop = cancel
		go f.run(ctx)
	}
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.subs, sub)
		if len(f.subs) == 0 && f.stop != nil {
			f.stop()
			f.stop = nil
			clear(f.seen)
		}
	}
}

// run watches until ctx ends, starting again after a watch ends (its
// resource version too old, the API server restarted); every stream is
// then told to read again, as changes may have been missed.
func (f *sessionFeed) run(ctx context.Context) {
	for ctx.Err() == nil {
		wi, err := f.open(ctx)
		if err == nil {
			f.forward(ctx, wi)
			wi.Stop()
		}
		f.send(wire.SessionEvent{Cluster: f.cluster}, "")
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// open watches the cluster's Sessions from now on: from a one-item list's
// resource version, so that the watch does not begin by replaying every
// Session. Its client shares the relay's client's configuration (and so
// its rate limit's settings, not its budget: one watch per cluster).
func (f *sessionFeed) open(ctx context.Context) (watch.Interface, error) {
	wc, err := client.NewWithWatch(f.t.Config, client.Options{Scheme: f.t.Client.Scheme(), Mapper: f.t.Client.RESTMapper()})
	if err != nil {
		return nil, err
	}
	now := &v1alpha1.SessionList{}
	if err := wc.List(ctx, now, client.Limit(1)); err != nil {
		return nil, err
	}
	return wc.Watch(ctx, &v1alpha1.SessionList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: now.ResourceVersion}})
}

func (f *sessionFeed) forward(ctx context.Context, wi watch.Interface) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-wi.ResultChan():
			if !ok || ev.Type == watch.Error {
				return
			}
			sess, isSession := ev.Object.(*v1alpha1.Session)
			if !isSession {
				continue
			}
			key := sess.Namespace + "/" + sess.Name
			f.mu.Lock()
			if ev.Type == watch.Deleted {
				delete(f.seen, key)
			} else {
				shown := shownState(sess)
				if f.seen[key] == shown {
					f.mu.Unlock()
					continue
				}
				f.seen[key] = shown
			}
			f.mu.Unlock()
			f.send(wire.SessionEvent{Cluster: f.cluster, Namespace: sess.Namespace, Name: sess.Name, Phase: sess.Status.Phase,
				Deleted: ev.Type == watch.Deleted}, sess.Namespace)
		}
	}
}

// send hands e to every stream that may see namespace ("": all of them),
// closing one too far behind rather than waiting for it.
func (f *sessionFeed) send(e wire.SessionEvent, namespace string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for sub, visible := range f.subs {
		if namespace != "" && !visible(namespace) {
			continue
		}
		select {
		case sub.events <- e:
		default:
			delete(f.subs, sub)
			sub.fellBehind()
		}
	}
}

// shownState is a Session as a list or page shows it: its spec and its
// status without the heartbeat (the relay's liveness, shown nowhere).
func shownState(s *v1alpha1.Session) [sha256.Size]byte {
	st := s.Status.DeepCopy()
	st.Heartbeat = nil
	b, _ := json.Marshal(struct {
		Spec   v1alpha1.SessionSpec
		Status *v1alpha1.SessionStatus
	}{s.Spec, st})
	return sha256.Sum256(b)
}
