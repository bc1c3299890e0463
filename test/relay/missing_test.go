package relay_test

import (
	"net/http"
	"strings"
	"testing"

	"k8s.io/utils/clock"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/internal/oidcissuer"
	relayapi "github.com/tower-dev/breakglass/relay/api"
)

// TestMissingTarget: a request for a pod that is not there fails its start
// with what to do, takes nothing, and can still be withdrawn by its
// requester; an approver cancels another one before it starts.
func TestMissingTarget(t *testing.T) {
	ns := cl.Namespace(t, "relay-missing")
	cfg := config()
	cfg.Permissions = append(cfg.Permissions, relayapi.Permission{Groups: []string{"release-approvers"}, Namespaces: []string{"*"}, Actions: []relayapi.Action{relayapi.ActionApprove}})
	tr := startRelay(t, cfg, clock.RealClock{})
	s := tr.request(t, alice, ns, "nothere", "")
	path := sessionPath(ns, s.Name)
	tr.must(t, http.StatusOK, token(t, bob), "POST", path+"/approve", `{}`)
	if a := tr.must(t, http.StatusNotFound, token(t, alice), "POST", path+"/start", ""); !strings.Contains(string(a.body), `"TargetNotFound"`) ||
		!strings.Contains(string(a.body), "withdraw this request") {
		t.Fatalf("the start: %s", a.body)
	}
	if got := tr.must(t, http.StatusOK, token(t, alice), "GET", path, "").session(t); got.Status.Phase != v1alpha1.PhaseApproved || got.Status.Grant != nil {
		t.Fatalf("after the failed start: %+v", got.Status)
	}
	assertNothingLeft(t, ns, s.Name, "nothere", false) // no grant; the pod was never there
	withdrawn := tr.must(t, http.StatusOK, token(t, alice), "POST", path+"/end", `{"reason":"wrong pod"}`).session(t)
	if e := withdrawn.Status.End; withdrawn.Status.Phase != v1alpha1.PhaseEnded || e.By != alice.Email || e.Reason != v1alpha1.EndUser || e.Note != "wrong pod" {
		t.Fatalf("withdrawn: %+v", withdrawn.Status)
	}

	// paul may approve but not end sessions: he cancels a request before
	// it starts, never one that runs.
	approverOnly := oidcissuer.Person{Email: "paul@example.com", Groups: []string{"release-approvers"}}
	other := tr.request(t, alice, ns, "nothere", "")
	cancelled := tr.must(t, http.StatusOK, token(t, approverOnly), "POST", sessionPath(ns, other.Name)+"/end", "").session(t)
	if e := cancelled.Status.End; e == nil || e.By != approverOnly.Email || e.Reason != v1alpha1.EndApprover {
		t.Fatalf("cancelled: %+v", cancelled.Status)
	}
	// A broken glass needs nobody's approval: the approver role is no
	// veto over it.
	glass := tr.request(t, carol, ns, "nothere", `,"glassBroken":true`)
	tr.must(t, http.StatusForbidden, token(t, approverOnly), "POST", sessionPath(ns, glass.Name)+"/end", "")
	cl.RunningPod(t, ns, "web-1")
	running := sessionPath(ns, tr.started(t, ns, "web-1", "").Name)
	tr.must(t, http.StatusForbidden, token(t, approverOnly), "POST", running+"/end", "")
	tr.must(t, http.StatusOK, token(t, alice), "POST", running+"/end", "")
}
