package relay_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/internal/oidcissuer"
	relayapi "github.com/tower-dev/breakglass/relay/api"
)

// TestOnePersonUnderAnyName: a person is their issuer and subject. The
// requester signing in again under a second spelling of their address, a
// case change or a re-issued email (the same subject, in an approvers'
// group) can neither approve nor review their own session; another person
// who holds the requester's old email can.
func TestOnePersonUnderAnyName(t *testing.T) {
	ns := cl.Namespace(t, "relay-identity")
	cl.RunningPod(t, ns, "web-1")
	tr := startRelay(t, config(), clock.RealClock{})
	requester := oidcissuer.Person{Email: "frank@example.com", Subject: "u-frank", Groups: []string{"shop-owners", "on-call"}}
	sameSubject := []oidcissuer.Person{
		{Email: "Frank@Example.com", Subject: "u-frank", Groups: []string{"sre"}},
		{Email: "frank.smith@example.com", Subject: "u-frank", Groups: []string{"sre"}},
	}
	s := tr.request(t, requester, ns, "web-1", "")
	path := sessionPath(ns, s.Name)
	stored := &v1alpha1.Session{}
	if err := cl.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: s.Name}, stored); err != nil {
		t.Fatal(err)
	}
	if want := relayapi.IdentityOf(issuer.URL, "u-frank"); stored.Spec.RequesterID != want {
		t.Fatalf("the Session names the requester as %q, want %q", stored.Spec.RequesterID, want)
	}
	for _, p := range sameSubject {
		a := tr.must(t, http.StatusForbidden, token(t, p), "POST", path+"/approve", `{}`)
		if !strings.Contains(string(a.body), "another person decides") {
			t.Fatalf("%s approving: %s", p.Email, a.body)
		}
	}
	// Another person, even one later given the requester's old address.
	heir := oidcissuer.Person{Email: "frank@example.com", Subject: "u-heir", Groups: []string{"sre"}}
	approved := tr.must(t, http.StatusOK, token(t, heir), "POST", path+"/approve", `{}`).session(t)
	if approved.Status.Approval.ByID != relayapi.IdentityOf(issuer.URL, "u-heir") {
		t.Fatalf("the approval names %q", approved.Status.Approval.ByID)
	}

	// The audit log names each person by identity as well as by name, and
	// each Session by cluster and UID: the refusals of the second spellings
	// and the heir's approval are told apart.
	log := tr.audit.String()
	for _, want := range []string{
		`"kind":"approve","actor":"frank@example.com"`,
		`"actorID":"` + relayapi.IdentityOf(issuer.URL, "u-heir") + `"`,
		`"actorID":"` + relayapi.IdentityOf(issuer.URL, "u-frank") + `"`,
		`"cluster":"prod"`,
		`"uid":"` + string(stored.UID) + `"`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("no %s in the audit log", want)
		}
	}

	// Self-review under another spelling, on a glass-broken session.
	broken := tr.request(t, requester, ns, "web-1", `,"glassBroken":true`)
	bpath := sessionPath(ns, broken.Name)
	tr.must(t, http.StatusOK, token(t, requester), "POST", bpath+"/end", "")
	for _, p := range sameSubject {
		tr.must(t, http.StatusForbidden, token(t, p), "POST", bpath+"/review", `{"comment":"looks fine to me"}`)
	}
	reviewed := tr.must(t, http.StatusOK, token(t, bob), "POST", bpath+"/review", `{"comment":"justified"}`).session(t)
	if reviewed.Status.Review.ByID != relayapi.IdentityOf(issuer.URL, bob.Email) {
		t.Fatalf("the review names %q", reviewed.Status.Review.ByID)
	}
}
