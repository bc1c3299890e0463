package relay_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/internal/oidcissuer"
	relayapi "github.com/tower-dev/breakglass/relay/api"
)

// TestExtension: the requester asks for more time on a running session;
// neither she nor a second spelling of her approves it, through the relay
// or by writing the Session as the portal; an ask that no grant can cover
// is refused in words; another person approves. A new grant replaces the
// old (which is gone, and whose TTL cannot be stretched in place), the hard
// stop moves by exactly what was asked, the terminal goes on, and the one
// recording holds both halves. A second extension is past the limit.
func TestExtension(t *testing.T) {
	ns := cl.Namespace(t, "relay-extension")
	cl.RunningPod(t, ns, "web-1")
	tr := startRelay(t, config(), clock.RealClock{})
	ctx := context.Background()
	frank := oidcissuer.Person{Email: "frank@example.com", Subject: "u-frank", Groups: []string{"shop-owners", "sre"}}
	frankAgain := oidcissuer.Person{Email: "frank.smith@example.com", Subject: "u-frank", Groups: []string{"sre"}}

	s := tr.request(t, frank, ns, "web-1", "")
	path := sessionPath(ns, s.Name)
	tr.must(t, http.StatusOK, token(t, bob), "POST", path+"/approve", `{}`)
	if a := tr.must(t, http.StatusConflict, token(t, frank), "POST", path+"/extensions", `{"duration":"20m","reason":"more"}`); !strings.Contains(string(a.body), "not Active") {
		t.Fatalf("an extension before the start: %s", a.body)
	}
	started := tr.must(t, http.StatusOK, token(t, frank), "POST", path+"/start", "").session(t)
	oldGrant, oldDeadline := started.Status.Grant.RoleBinding, started.Status.Deadline.Time
	term, _, err := tr.dial(t, frank, ns, s.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	term.send(t, "echo before-$((20+1))\n")
	term.waitFor(t, "before-21")

	// Bad asks: refused with what is wrong, nothing written.
	for body, want := range map[string]string{
		`{"duration":"soon","reason":"more"}`: "not a duration",
		`{"duration":"20m","reason":""}`:      "say why",
		`{"duration":"2m","reason":"more"}`:   "at least 5m0s",
		`{"duration":"45m","reason":"more"}`:  "more than the 1h15m0s a grant may last",
	} {
		status := http.StatusConflict
		if want == "not a duration" || want == "say why" {
			status = http.StatusBadRequest
		}
		if a := tr.must(t, status, token(t, frank), "POST", path+"/extensions", body); !strings.Contains(string(a.body), want) {
			t.Errorf("asking %s: %s, want %q", body, a.body, want)
		}
	}
	if a := tr.must(t, http.StatusForbidden, token(t, bob), "POST", path+"/extensions", `{"duration":"20m","reason":"more"}`); !strings.Contains(string(a.body), "only the requester") {
		t.Fatalf("bob asking for frank: %s", a.body)
	}
	asked := tr.must(t, http.StatusOK, token(t, frank), "POST", path+"/extensions", `{"duration":"20m","reason":"the fix needs a second look"}`).session(t)
	if q := asked.Status.ExtensionRequest; q == nil || q.Duration.Duration != 20*time.Minute || q.ByID != relayapi.IdentityOf(issuer.URL, "u-frank") {
		t.Fatalf("the ask: %+v", q)
	}
	if a := tr.must(t, http.StatusConflict, token(t, frank), "POST", path+"/extensions", `{"duration":"10m","reason":"again"}`); !strings.Contains(string(a.body), "waits for a decision") {
		t.Fatalf("a second ask: %s", a.body)
	}

	// Never the requester, under any name.
	for _, p := range []oidcissuer.Person{frank, frankAgain} {
		if a := tr.must(t, http.StatusForbidden, token(t, p), "POST", path+"/extensions/approve", `{}`); !strings.Contains(string(a.body), "another person decides") {
			t.Fatalf("%s approving his own extension: %s", p.Email, a.body)
		}
	}
	// The portal's identity writing frank's approval of his own extension
	// straight to the Session, and stretching the grant in place: the
	// cluster's policies refuse both.
	portal, err := cl.Portal()
	if err != nil {
		t.Fatal(err)
	}
	direct := &v1alpha1.Session{}
	if err := portal.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: s.Name}, direct); err != nil {
		t.Fatal(err)
	}
	deadline := metav1.NewTime(oldDeadline.Add(20 * time.Minute))
	direct.Status.Extensions = []v1alpha1.Extension{{ExtensionRequest: *direct.Status.ExtensionRequest, Decision: v1alpha1.ExtensionApproved,
		DecidedBy: frankAgain.Email, DecidedByID: relayapi.IdentityOf(issuer.URL, "u-frank"), DecidedAt: metav1.Now(), Grant: oldGrant + "-x1", Deadline: &deadline}}
	direct.Status.ExtensionRequest, direct.Status.Deadline = nil, &deadline
	direct.Status.Grant = &v1alpha1.Grant{RoleBinding: oldGrant + "-x1", Role: started.Status.Grant.Role, ExpiresAt: deadline}
	if err := portal.Client.Status().Update(ctx, direct); err == nil || !strings.Contains(err.Error(), "session.extensions") {
		t.Fatalf("a self-approved extension written to the Session: %v", err)
	}
	rb := &rbacv1.RoleBinding{}
	if err := portal.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: oldGrant}, rb); err != nil {
		t.Fatal(err)
	}
	rb.Labels[v1alpha1.TTLLabel] = "75m"
	// The portal may not update a binding at all; an admin may, but not
	// its TTL.
	if err := portal.Client.Update(ctx, rb.DeepCopy()); !apierrors.IsForbidden(err) {
		t.Fatalf("the portal stretching its grant's TTL in place: %v", err)
	}
	if err := cl.Client.Update(ctx, rb); err == nil || !strings.Contains(err.Error(), "grant.ttl-immutable") {
		t.Fatalf("an admin stretching the grant's TTL in place: %v", err)
	}

	extended := tr.must(t, http.StatusOK, token(t, bob), "POST", path+"/extensions/approve", `{"comment":"take it"}`).session(t)
	st := extended.Status
	if st.ExtensionRequest != nil || len(st.Extensions) != 1 || st.Extensions[0].Decision != v1alpha1.ExtensionApproved || st.Extensions[0].DecidedBy != bob.Email {
		t.Fatalf("the approval: %+v", st.Extensions)
	}
	if !st.Deadline.Time.Equal(oldDeadline.Add(20*time.Minute)) || st.Grant.RoleBinding != v1alpha1.ExtensionGrantName(s.Name, 1) || st.Grant.Role != started.Status.Grant.Role {
		t.Fatalf("the hard stop %s (was %s) and grant %+v", st.Deadline, oldDeadline, st.Grant)
	}
	if err := cl.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: oldGrant}, &rbacv1.RoleBinding{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the replaced grant: %v", err)
	}
	next := &rbacv1.RoleBinding{}
	if err := cl.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: st.Grant.RoleBinding}, next); err != nil {
		t.Fatal(err)
	}
	ttl, err := time.ParseDuration(next.Labels[v1alpha1.TTLLabel])
	if covers := next.CreationTimestamp.Add(ttl); err != nil || covers.Before(st.Deadline.Time) || ttl > 75*time.Minute {
		t.Fatalf("the new grant's TTL %q covers until %s, the hard stop is %s", next.Labels[v1alpha1.TTLLabel], covers, st.Deadline)
	}
	term.send(t, "echo after-$((20+2))\n")
	term.waitFor(t, "after-22")

	if a := tr.must(t, http.StatusConflict, token(t, frank), "POST", path+"/extensions", `{"duration":"10m","reason":"again"}`); !strings.Contains(string(a.body), "extended 1 time") {
		t.Fatalf("a second extension: %s", a.body)
	}
	tr.must(t, http.StatusOK, token(t, frank), "POST", path+"/end", "")
	assertNothingLeft(t, ns, s.Name, "web-1", false)
	ended := &v1alpha1.Session{}
	if err := cl.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: s.Name}, ended); err != nil {
		t.Fatal(err)
	}
	out, _ := recordedOutput(t, tr.store, ended)
	if b, a := strings.Index(out, "before-21"), strings.Index(out, "after-22"); b < 0 || a < b || strings.Contains(out, "<MARKER") {
		t.Fatalf("the recording does not hold both halves in one piece: %q", out)
	}
	for _, step := range []string{`"kind":"extend-request","actor":"frank@`, `"kind":"extend","actor":"bob@`, `replacing ` + oldGrant} {
		if !strings.Contains(tr.audit.String(), step) {
			t.Errorf("no audit event %s", step)
		}
	}
	notes := tr.notes.kinds(s.Name)
	for _, want := range []string{"extension.requested approvers", "extension.approved " + frank.Email} {
		if !slices.Contains(notes, want) {
			t.Errorf("no notification %q in %v", want, notes)
		}
	}
}

// TestExtensionDenied: a denied extension moves nothing and leaves the
// session to end at its hard stop; the requester may ask again.
func TestExtensionDenied(t *testing.T) {
	ns := cl.Namespace(t, "relay-extension-denied")
	cl.RunningPod(t, ns, "web-1")
	tr := startRelay(t, config(), clock.RealClock{})
	s := tr.started(t, ns, "web-1", "")
	path := sessionPath(ns, s.Name)
	tr.must(t, http.StatusOK, token(t, alice), "POST", path+"/extensions", `{"duration":"15m","reason":"one more look"}`)
	denied := tr.must(t, http.StatusOK, token(t, bob), "POST", path+"/extensions/deny", `{"reason":"hand it to the day shift"}`).session(t)
	st := denied.Status
	if len(st.Extensions) != 1 || st.Extensions[0].Decision != v1alpha1.ExtensionDenied || st.Extensions[0].Comment != "hand it to the day shift" ||
		!st.Deadline.Equal(s.Status.Deadline) || st.Grant.RoleBinding != s.Status.Grant.RoleBinding || st.ExtensionRequest != nil {
		t.Fatalf("the denial moved something: %+v", st)
	}
	if a := tr.must(t, http.StatusConflict, token(t, bob), "POST", path+"/extensions/approve", `{}`); !strings.Contains(string(a.body), "no extension is asked for") {
		t.Fatalf("approving after the denial: %s", a.body)
	}
	tr.must(t, http.StatusOK, token(t, alice), "POST", path+"/extensions", `{"duration":"15m","reason":"asking again"}`)
	tr.must(t, http.StatusOK, token(t, alice), "POST", path+"/end", "")
	assertNothingLeft(t, ns, s.Name, "web-1", false)
}
