package sweeper

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// The two backstops, standing rights and plane drift, share how they look
// and how they warn: a look at once, on a schedule and at each change of
// what they watch; a Warning Event on the portal's ServiceAccount that
// repeats only when it says something new.

// lookOnChange calls look at once, then every tick and after each change
// of resources (watched through md, when set), until ctx ends. A burst of
// changes (an install, an upgrade) is mostly one look.
func lookOnChange(ctx context.Context, md metadata.Interface, resources []schema.GroupVersionResource,
	clk clock.WithTicker, every time.Duration, look func(context.Context)) error {
	changed := make(chan struct{}, 1)
	if md != nil {
		factory := metadatainformer.NewSharedInformerFactory(md, 0)
		poke := func(any) {
			select {
			case changed <- struct{}{}:
			default:
			}
		}
		for _, gvr := range resources {
			if _, err := factory.ForResource(gvr).Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
				AddFunc: poke, UpdateFunc: func(_, o any) { poke(o) }, DeleteFunc: poke}); err != nil {
				return err
			}
		}
		factory.Start(ctx.Done())
		defer factory.Shutdown()
		factory.WaitForCacheSync(ctx.Done())
	}
	tick := clk.NewTicker(every)
	defer tick.Stop()
	for {
		look(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C():
		case <-changed:
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Second):
			}
		}
	}
}

// eventEvery is how often an unchanged finding is recorded again as an Event.
const eventEvery = 10 * time.Minute

// portalWarning is a backstop's Warning Event on the portal's
// ServiceAccount, with the summary it last recorded.
type portalWarning struct {
	mu     sync.Mutex
	last   string
	lastAt time.Time
}

// due reports whether summary is to be recorded at now: it says something
// new, or eventEvery has passed since it was last recorded.
func (w *portalWarning) due(summary string, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if summary == w.last && now.Sub(w.lastAt) < eventEvery {
		return false
	}
	w.last, w.lastAt = summary, now
	return true
}

// warnPortal writes summary as a Warning Event of reason on the portal's
// ServiceAccount, named with tag.
func warnPortal(ctx context.Context, kube kubernetes.Interface, reason, tag, summary string, now time.Time) error {
	at := metav1.NewTime(now)
	event := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%s.%x", v1alpha1.PortalServiceAccount, tag, now.UnixNano()), Namespace: v1alpha1.Namespace},
		InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "ServiceAccount", Namespace: v1alpha1.Namespace,
			Name: v1alpha1.PortalServiceAccount},
		Reason: reason, Message: truncate(summary, 1024), Type: corev1.EventTypeWarning,
		Source: corev1.EventSource{Component: v1alpha1.SweeperUsername}, FirstTimestamp: at, LastTimestamp: at, Count: 1,
	}
	_, err := kube.CoreV1().Events(v1alpha1.Namespace).Create(ctx, event, metav1.CreateOptions{})
	return err
}

// someOf joins the first eight of items, and says how many more there are.
func someOf(items []string) string {
	s := strings.Join(first(items, 8), "; ")
	if len(items) > 8 {
		s += fmt.Sprintf(" (and %d more)", len(items)-8)
	}
	return s
}
