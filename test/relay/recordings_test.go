package relay_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/relay"
	"github.com/tower-dev/breakglass/test/harness/cluster"
)

// TestRecordingsKeyedBySession: a recording is kept under its cluster,
// namespace, name and the Session's UID, and served only when its manifest
// names the Session asked about. Two clusters with a Session of the same
// name in one bucket (here the relay knows the test cluster by two names,
// so both see the same Session) never read each other's recording; a
// Session deleted and re-created under the same name does not get the old
// one; and bytes written over the store's copy are refused.
func TestRecordingsKeyedBySession(t *testing.T) {
	ns := cl.Namespace(t, "relay-keys")
	cl.RunningPod(t, ns, "web-1")
	cfg := config()
	cfg.Clusters = append(cfg.Clusters, relay.Cluster{Name: "prod-eu", Tier: relay.Flight, DebugImage: cluster.DebugImage})
	tr := startRelay(t, cfg, clock.RealClock{})
	s := tr.started(t, ns, "web-1", "")
	path := sessionPath(ns, s.Name)
	tm, _, err := tr.dial(t, alice, ns, s.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	tm.send(t, "echo prod-only-$((6*7))\n")
	tm.waitFor(t, "prod-only-42")
	ended := tr.must(t, http.StatusOK, token(t, alice), "POST", path+"/end", "").session(t)
	if ev := ended.Status.Evidence; ev == nil || ev.Cluster != "prod" {
		t.Fatalf("the evidence does not name its cluster: %+v", ev)
	}
	prefix := prefixOf(t, ns, s.Name)
	if !strings.HasPrefix(prefix, "sessions/prod/"+ns+"/"+s.Name+"/") || strings.Count(prefix, "/") != 5 {
		t.Fatalf("the recording's key %q is not cluster/namespace/name/UID", prefix)
	}
	cast := tr.must(t, http.StatusOK, token(t, bob), "GET", path+"/recording", "")
	if !strings.Contains(string(cast.body), "prod-only-42") {
		t.Fatal("the recording does not hold the session")
	}
	// The pod's output, served on the console's origin, is never a page.
	if h := cast.header; h.Get("X-Content-Type-Options") != "nosniff" || !strings.HasPrefix(h.Get("Content-Security-Policy"), "sandbox") ||
		!strings.HasPrefix(h.Get("Content-Disposition"), "attachment") {
		t.Errorf("the recording is served with %v", h)
	}

	euPath := strings.Replace(path, "/clusters/prod/", "/clusters/prod-eu/", 1)
	if a := tr.must(t, http.StatusNotFound, token(t, bob), "GET", euPath+"/recording", ""); strings.Contains(string(a.body), "prod-only") {
		t.Fatal("another cluster's Session of the same name served this recording")
	}

	// Someone with the store's keys copies the recording under the other
	// cluster's key: the manifest says whose it is.
	eu := &v1alpha1.Session{}
	if err := cl.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: s.Name}, eu); err != nil {
		t.Fatal(err)
	}
	euPrefix := recording.RefOf("prod-eu", eu).Prefix()
	for _, name := range []string{recording.ManifestFile, recording.CastFile, recording.TranscriptFile} {
		data, err := tr.store.Get(context.Background(), prefix+name, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tr.store.Put(context.Background(), euPrefix+name, data, eu.CreationTimestamp.Add(1e12)); err != nil {
			t.Fatal(err)
		}
	}
	a := tr.must(t, http.StatusConflict, token(t, bob), "GET", euPath+"/recording", "")
	if !strings.Contains(string(a.body), "not of prod-eu/") || strings.Contains(string(a.body), "prod-only") {
		t.Fatalf("a recording copied under another cluster's key: %s", a.body)
	}
	if !strings.Contains(tr.audit.String(), `"kind":"tampered"`) {
		t.Fatal("the mismatch is not in the audit log")
	}
}
