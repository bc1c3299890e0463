package backstage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/localplane"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/relay/client"
	"github.com/tower-dev/breakglass/relay/wire"
	"github.com/tower-dev/breakglass/test/harness/backstageuser"
	"github.com/tower-dev/breakglass/test/harness/cluster"
	"github.com/tower-dev/breakglass/test/harness/prereq"
)

const shop = "component:default/shop"

// plane is the local plane of o with Backstage's backend (a real one,
// started with @backstage/backend-defaults, on PostgreSQL) in front of its
// relay, the demo people signed in to it, and the plane's log so far.
func plane(t testing.TB, o localplane.Options) (localplane.Info, map[string]backstageuser.Person, func() string) {
	t.Helper()
	prereq.Need(t, append(append(prereq.ControlPlane, prereq.Postgres), prereq.Backstage...)...)
	var logs cluster.SyncBuffer
	o.RelayAddr, o.Backstage = "127.0.0.1:0", true
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	r, err := localplane.Background(context.Background(), o, &logs)
	if err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	t.Cleanup(func() {
		if t.Failed() {
			// Read before the stop removes the plane's folder.
			bs, _ := os.ReadFile(r.BackstageLog)
			t.Logf("the plane's log:\n%s\nBackstage's log, its end:\n%s", logs.String(), tail(string(bs), 200))
		}
		if err := r.Stop(); err != nil {
			t.Errorf("stopping the plane: %v", err)
		}
	})
	t.Log(r.Report())
	people := map[string]backstageuser.Person{}
	for _, name := range []string{"alice", "bob", "carol", "dave"} {
		// The catalog takes in the demo people a moment after the backend
		// is ready; until then Backstage's sign-in finds no such user.
		p, err := backstageuser.SignIn(r.BackstageURL, name)
		for deadline := time.Now().Add(time.Minute); err != nil && time.Now().Before(deadline); time.Sleep(time.Second) {
			p, err = backstageuser.SignIn(r.BackstageURL, name)
		}
		if err != nil {
			t.Fatal(err)
		}
		if p.UserEntityRef != "user:default/"+name {
			t.Fatalf("%s signed in as %s", name, p.UserEntityRef)
		}
		people[name] = p
	}
	return r.Info, people, logs.String
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// refused asserts err is a refusal with status and a message naming what.
func refused(t *testing.T, what string, err error, status int, message string) {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) || e.Status != status || !strings.Contains(e.Message, message) {
		t.Fatalf("%s: %v, want %d with %q", what, err, status, message)
	}
}

// TestBackstageDrivesASession: the whole flow through Backstage's backend
// plugin on a real relay and API server. Backstage's permissions refuse
// first (a non-owner's request, an approval by someone outside the
// approvers, a watcher who may not watch); two identities that disagree
// are refused; an approved session's terminal runs through the backend's
// WebSocket, both as a program (headers) and as a browser (subprotocols);
// the approver hears of the request in Backstage's notifications, linking
// to the approval page.
func TestBackstageDrivesASession(t *testing.T) {
	ctx := context.Background()
	info, people, logs := plane(t, localplane.Options{Profile: policies.Flight})
	bs := info.BackstageURL
	// make dev's terminal shows the plane's log: Backstage's own (its
	// access log alone is thousands of lines) goes to a file of its own.
	defer func() {
		if strings.Contains(logs(), "rootHttpRouter") {
			t.Errorf("Backstage's log reached the plane's:\n%s", tail(logs(), 20))
		}
	}()
	alice, bob, carol := people["alice"].Client(bs, shop), people["bob"].Client(bs, ""), people["carol"].Client(bs, shop)
	target := client.Target{Cluster: info.Cluster, Namespace: info.Namespace}
	ask := wire.Request{Pod: info.Pod, Mode: v1alpha1.ModeLive, Duration: "20m", Reason: "checkout returns 500s"}

	_, err := carol.Request(ctx, target, ask)
	refused(t, "carol, who owns nothing, asks", err, http.StatusForbidden, "Backstage's permissions do not let user:default/carol ask")
	_, err = people["alice"].Client(bs, "component:default/billing").Request(ctx, target, ask)
	refused(t, "alice asks in shop naming billing", err, http.StatusForbidden, "runs in namespace billing, not shop")
	mixed := people["alice"].Client(bs, shop)
	mixed.Header.Set(backstageuser.IdentityHeader, people["bob"].IDToken)
	_, err = mixed.Request(ctx, target, ask)
	refused(t, "alice's Backstage token with bob's ID token", err, http.StatusForbidden, "names bob@example.com, but user:default/alice")
	_, err = (&client.Client{BaseURL: bs + "/api/breakglass", Token: people["alice"].BackstageToken}).Request(ctx, target, ask)
	refused(t, "no ID token", err, http.StatusUnauthorized, "x-breakglass-identity")
	// Go's JSON takes "GlassBroken" for glassBroken: the first layer must
	// not judge a request the relay reads differently.
	status, body := post(t, bs+"/api/breakglass/api/v1/clusters/"+info.Cluster+"/namespaces/shop/sessions", people["alice"],
		`{"pod":"`+info.Pod+`","mode":"live","duration":"20m","reason":"r","GlassBroken":true}`)
	if status != http.StatusBadRequest || !strings.Contains(body, `no field \"GlassBroken\"`) {
		t.Fatalf("a request spelling glassBroken otherwise: %d %s", status, body)
	}
	if status, body := post(t, bs+"/api/breakglass/api/v1/clusters/"+info.Cluster+"/namespaces/shop/sessions/../../../me/approve", people["bob"], `{}`); status != http.StatusNotFound && status != http.StatusBadRequest {
		t.Fatalf("a path that climbs: %d %s", status, body)
	}

	// Backstage's Kubernetes plugin lists pods with its own account; its
	// proxy (how its pod terminal would exec) is refused by the policy.
	req, _ := http.NewRequest(http.MethodGet, bs+"/api/kubernetes/proxy/api/v1/namespaces/shop/pods", nil)
	req.Header.Set("Authorization", "Bearer "+people["alice"].BackstageToken)
	req.Header.Set("Backstage-Kubernetes-Cluster", info.Cluster)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("the Kubernetes plugin's proxy: %v %v, want 403", resp, err)
	} else {
		_ = resp.Body.Close()
	}

	// Backstage reads the component's pods: one that is not there is
	// refused now, not found at the start after someone approved it.
	gone := ask
	gone.Pod = "gone-since"
	_, err = alice.Request(ctx, target, gone)
	refused(t, "alice asks for a pod that is not there", err, http.StatusNotFound, "no pod gone-since of shop runs on "+info.Cluster+" now: pick one that does ("+info.Pod)

	s, err := alice.Request(ctx, target, ask)
	if err != nil {
		t.Fatal(err)
	}
	target.Name = s.Name
	if s.Spec.RequesterID == "" || !strings.HasPrefix(s.Spec.RequesterID, info.IssuerURL+"#") {
		t.Fatalf("the relay names the requester %q: want the issuer's identity, not Backstage's", s.Spec.RequesterID)
	}
	_, err = alice.Approve(ctx, target, wire.Decision{})
	refused(t, "alice approves her own", err, http.StatusForbidden, "Backstage's permissions do not let user:default/alice approve")
	requireNotified(t, bs, people["bob"], "Debug access requested: alice@example.com, live on shop/"+info.Pod, "Why: checkout returns 500s",
		fmt.Sprintf("/break-glass/sessions/%s/%s/%s?view=approve", info.Cluster, info.Namespace, s.Name))

	if _, err := bob.Approve(ctx, target, wire.Decision{Comment: "go ahead"}); err != nil {
		t.Fatal(err)
	}
	requireNotified(t, bs, people["alice"], "Debug request approved: bob@example.com approved", "“go ahead”",
		fmt.Sprintf("/break-glass/sessions/%s/%s/%s", info.Cluster, info.Namespace, s.Name))
	if _, err := alice.Start(ctx, target); err != nil {
		t.Fatal(err)
	}

	in, typed := io.Pipe()
	var screen cluster.SyncBuffer
	attached := make(chan error, 1)
	go func() { attached <- alice.Attach(ctx, target, in, &screen, io.Discard, nil) }()
	if _, err := typed.Write([]byte("echo demo-$((40+2)) as $(id -u)\n")); err != nil {
		t.Fatal(err)
	}
	screen.WaitFor(t, 20*time.Second, "demo-42 as 65532")

	// Bob watches as the plugin's page does: both tokens as subprotocols.
	watch := watcher(t, bs, people["bob"], target)
	var watched cluster.SyncBuffer
	go func() {
		for {
			_, data, err := watch.ReadMessage()
			if err != nil {
				return
			}
			_, _ = watched.Write(data)
		}
	}()
	if _, err := typed.Write([]byte("echo seen-$((6*7))\n")); err != nil {
		t.Fatal(err)
	}
	watched.WaitFor(t, 20*time.Second, "seen-42")
	if conn, err := dialTerminal(bs, people["carol"], target); err == nil || !strings.Contains(err.Error(), "403") {
		if conn != nil {
			_ = conn.Close()
		}
		t.Fatalf("carol, who may not watch, opened the terminal: %v", err)
	}

	ended, err := alice.End(ctx, target, "")
	if err != nil || ended.Status.Phase != v1alpha1.PhaseEnded {
		t.Fatalf("end: %v %+v", err, ended.Status)
	}
	var closed *client.Ended
	if err := <-attached; !errors.As(err, &closed) || closed.Code != 1000 {
		t.Fatalf("alice's terminal through Backstage: %v", err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		got, err := bob.Get(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Evidence != nil && got.Status.Evidence.ManifestSHA256 != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no evidence within 30s: %+v", got.Status)
		}
	}
	cast, err := bob.Recording(ctx, target, "cast")
	if err != nil || !strings.Contains(string(cast), "seen-42") {
		t.Fatalf("the recording through Backstage: %v %.200q", err, cast)
	}
}

// TestBackstageMisconfiguredStillMeetsTheRelay: with a Backstage policy that
// allows everything, the relay's own checks still refuse: a request by
// someone the relay does not let ask, and an approval of one's own.
func TestBackstageMisconfiguredStillMeetsTheRelay(t *testing.T) {
	ctx := context.Background()
	info, people, _ := plane(t, localplane.Options{Profile: policies.Flight, BackstageAllowAll: true})
	bs := info.BackstageURL
	target := client.Target{Cluster: info.Cluster, Namespace: info.Namespace}
	ask := wire.Request{Pod: info.Pod, Mode: v1alpha1.ModeLive, Duration: "20m", Reason: "checkout returns 500s"}

	_, err := people["carol"].Client(bs, shop).Request(ctx, target, ask)
	refused(t, "carol asks, Backstage allowing", err, http.StatusForbidden, "carol@example.com may not")
	dave := people["dave"].Client(bs, shop)
	s, err := dave.Request(ctx, target, ask)
	if err != nil {
		t.Fatal(err)
	}
	target.Name = s.Name
	_, err = dave.Approve(ctx, target, wire.Decision{})
	refused(t, "dave approves his own, Backstage allowing", err, http.StatusForbidden, "another person decides on it")
}

// post sends body to url as p, through the backend plugin as a page would
// (asking about the shop component), and answers the status and body.
func post(t *testing.T, url string, p backstageuser.Person, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+p.BackstageToken)
	req.Header.Set(backstageuser.IdentityHeader, p.IDToken)
	req.Header.Set(backstageuser.EntityHeader, shop)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The plugins' terminal subprotocols (breakglass-common's wire.ts).
const (
	backstageTokenPrefix = "backstage.breakglass.tower.dev."
	identityTokenPrefix  = "identity.breakglass.tower.dev."
)

// dialTerminal opens t's terminal as the plugin's page does; an error says
// the refusal's status and body.
func dialTerminal(bs string, p backstageuser.Person, t client.Target) (*websocket.Conn, error) {
	d := websocket.Dialer{Subprotocols: []string{wire.TerminalProtocol, backstageTokenPrefix + p.BackstageToken, identityTokenPrefix + p.IDToken}}
	u := fmt.Sprintf("ws%s/api/breakglass/api/v1/clusters/%s/namespaces/%s/sessions/%s/terminal", strings.TrimPrefix(bs, "http"), t.Cluster, t.Namespace, t.Name)
	conn, resp, err := d.Dial(u, http.Header{"Origin": {bs}})
	if resp != nil {
		defer resp.Body.Close()
	}
	if err != nil && resp != nil {
		body, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("%s: %w: %s", resp.Status, err, body)
	}
	if err == nil && conn.Subprotocol() != wire.TerminalProtocol {
		_ = conn.Close()
		return nil, fmt.Errorf("the answer's subprotocol is %q: the tokens must never be echoed", conn.Subprotocol())
	}
	return conn, err
}

func watcher(t *testing.T, bs string, p backstageuser.Person, target client.Target) *websocket.Conn {
	t.Helper()
	conn, err := dialTerminal(bs, p, target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// requireNotified: p's Backstage notifications include one whose title has
// title, whose words have words, and whose link is link.
func requireNotified(t *testing.T, bs string, p backstageuser.Person, title, words, link string) {
	t.Helper()
	var seen []string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		req, _ := http.NewRequest(http.MethodGet, bs+"/api/notifications/notifications", nil)
		req.Header.Set("Authorization", "Bearer "+p.BackstageToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Notifications []struct {
				Payload struct{ Title, Description, Link string } `json:"payload"`
			} `json:"notifications"`
		}
		err = json.NewDecoder(resp.Body).Decode(&got)
		_ = resp.Body.Close()
		if err != nil {
			t.Fatalf("notifications: %s %v", resp.Status, err)
		}
		seen = seen[:0]
		for _, n := range got.Notifications {
			if strings.Contains(n.Payload.Title, title) && strings.Contains(n.Payload.Description, words) && n.Payload.Link == link {
				return
			}
			seen = append(seen, n.Payload.Title+" ("+n.Payload.Description+") -> "+n.Payload.Link)
		}
	}
	t.Fatalf("%s was not notified %q linking to %s; saw %q", p.UserEntityRef, title, link, seen)
}
