package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// SessionEvent says that a Session the caller may see changed. It names
// the Session and its phase only: a page reads what it shows through the
// API, as before, so an event tells nobody more than they could read.
type SessionEvent struct {
	Cluster   string                `json:"cluster"`
	Namespace string                `json:"namespace"`
	Name      string                `json:"name"`
	Phase     v1alpha1.SessionPhase `json:"phase"`
	// Deleted: the Session is gone (its record kept elsewhere).
	Deleted bool `json:"deleted,omitempty"`
}

// eventStreamFor bounds one event stream: the browser reconnects on its
// own (EventSource), and each connection checks the caller's token again.
const eventStreamFor = 5 * time.Minute

// keepAliveEvery is how often an idle stream says it is there, so that
// proxies between the browser and the relay keep it open.
const keepAliveEvery = 20 * time.Second

// events streams SessionEvents as Server-Sent Events while the caller's
// page is open: queues and lists stay current without polling every
// Session. It watches Sessions on each cluster from now on (the page reads
// the list when the stream opens); a watch that ends ends the stream, and
// the browser reconnects.
func (s *Server) events(w http.ResponseWriter, r *http.Request, c Caller) error {
	flusher, ok := w.(http.Flusher)
	if !ok {
		return errors.New("this server cannot stream events")
	}
	ctx, cancel := context.WithTimeout(r.Context(), eventStreamFor)
	defer cancel()
	changes := make(chan SessionEvent, 64)
	var watches sync.WaitGroup
	defer watches.Wait()
	defer cancel() // runs first: the watches stop, then Wait returns
	for name, t := range s.clusters {
		wi, err := watchSessions(ctx, t)
		if err != nil {
			return fmt.Errorf("watching sessions on %s: %w", name, err)
		}
		watches.Add(1)
		go func() {
			defer watches.Done()
			defer wi.Stop()
			forwardSessions(ctx, cancel, wi, func(sess *v1alpha1.Session, deleted bool) {
				if !s.cfg.sees(c, name, sess.Namespace) {
					return
				}
				select {
				case changes <- SessionEvent{Cluster: name, Namespace: sess.Namespace, Name: sess.Name, Phase: sess.Status.Phase, Deleted: deleted}:
				case <-ctx.Done():
				}
			})
		}()
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: pass each event on at once
	w.WriteHeader(http.StatusOK)
	_, _ = fmt.Fprint(w, "retry: 2000\n\n")
	flusher.Flush()
	keepAlive := time.NewTicker(keepAliveEvery)
	defer keepAlive.Stop()
	for {
		var err error
		select {
		case <-ctx.Done():
			return nil
		case <-s.closing:
			return nil
		case e := <-changes:
			b, _ := json.Marshal(e)
			_, err = fmt.Fprintf(w, "event: session\ndata: %s\n\n", b)
		case <-keepAlive.C:
			_, err = fmt.Fprint(w, ": still here\n\n")
		}
		if err != nil {
			return nil // the browser left
		}
		flusher.Flush()
	}
}

// watchSessions watches t's Sessions from now on: from a list's resource
// version, so that the watch does not begin by replaying every Session.
func watchSessions(ctx context.Context, t *target) (watch.Interface, error) {
	wc, err := client.NewWithWatch(t.Config, client.Options{Scheme: t.Client.Scheme(), Mapper: t.Client.RESTMapper()})
	if err != nil {
		return nil, err
	}
	now := &v1alpha1.SessionList{}
	if err := wc.List(ctx, now, client.Limit(1)); err != nil {
		return nil, err
	}
	return wc.Watch(ctx, &v1alpha1.SessionList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: now.ResourceVersion}})
}

// forwardSessions hands each Session the watch reports to send, until ctx
// ends or the watch does (then it cancels the stream).
func forwardSessions(ctx context.Context, cancel context.CancelFunc, wi watch.Interface, send func(*v1alpha1.Session, bool)) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-wi.ResultChan():
			if !ok || ev.Type == watch.Error {
				cancel()
				return
			}
			if sess, isSession := ev.Object.(*v1alpha1.Session); isSession {
				send(sess, ev.Type == watch.Deleted)
			}
		}
	}
}
