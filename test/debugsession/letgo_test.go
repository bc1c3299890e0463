package debugsession_test

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/relay/debugsession"
)

// TestFaultHeartbeatRefusedLetsGo: a relay whose heartbeat cannot be
// written (its Session writes refused, the rest of the API server
// reachable) lets go of the session one interval before its heartbeat
// counts as stale, when another relay may take it up: it writes nothing
// and ends nothing, so no two relays run the session at once
// (relay/live/relays_model_test.go finds the two without it).
func TestFaultHeartbeatRefusedLetsGo(t *testing.T) {
	f := startOnFakeClock(t, cl.Namespace(t, "heartbeat-refused"), false)
	s, r, fake := f.s, f.r, f.clock
	ctx := context.Background()
	f.watchOutput()
	refused := 0
	direct, err := client.NewWithWatch(r.Config, client.Options{Scheme: r.Client.Scheme(), Mapper: r.Client.RESTMapper()})
	if err != nil {
		t.Fatal(err)
	}
	r.Client = interceptor.NewClient(direct, interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if _, ok := obj.(*v1alpha1.Session); ok {
				refused++
				return apierrors.NewForbidden(schema.GroupResource{Group: v1alpha1.GroupVersion.Group, Resource: "sessions"}, obj.GetName(), errRefusedForTheTest)
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
	every := 20 * time.Second
	ended := f.watch(t, debugsession.Limits{Idle: time.Hour, Disconnect: time.Hour, Heartbeat: every, Flush: time.Hour})
	step := f.step
	letGoAt := debugsession.StaleAfter(every) - every
	step(letGoAt - time.Second)
	step(0) // the loop has looked at +39s and waits again
	select {
	case got := <-ended:
		t.Fatalf("let go (%q) before its heartbeat had been refused for %s", got, letGoAt)
	default:
	}
	step(time.Second)
	select {
	case got := <-ended:
		if got != "" {
			t.Fatalf("Enforce ended the session (%s) instead of letting go", got)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the relay held on to a session whose heartbeat was refused for %s", letGoAt)
	}
	if refused == 0 {
		t.Fatal("no heartbeat was tried")
	}
	cur := &v1alpha1.Session{}
	if err := cl.Client.Get(ctx, client.ObjectKeyFromObject(s), cur); err != nil {
		t.Fatal(err)
	}
	if cur.Status.Phase != v1alpha1.PhaseActive || cur.Status.End != nil || cur.Status.Resumes != 0 {
		t.Fatalf("a relay that let go wrote to the Session: %+v", cur.Status)
	}
	if debugsession.Resumable(cur, fake.Now().Add(every), debugsession.StaleAfter(every), false) != nil {
		t.Fatalf("one interval later another relay may not take it up: %+v", cur.Status)
	}
}

var errRefusedForTheTest = errors.New("the Session's writes are refused for the test")
