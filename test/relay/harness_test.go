// Package relay_test drives whole sessions through the relay's HTTP API and
// terminal WebSocket as two people (alice requests, bob approves), on the
// real API server with the Flight policies and the virtual node, with tokens
// from a real OIDC issuer on loopback.
package relay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/gorilla/websocket"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tower-dev/breakglass/evidence/audit"
	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/internal/oidcissuer"
	"github.com/tower-dev/breakglass/notify"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/relay"
	relayapi "github.com/tower-dev/breakglass/relay/api"
	"github.com/tower-dev/breakglass/relay/live"
	"github.com/tower-dev/breakglass/relay/wire"
	"github.com/tower-dev/breakglass/test/harness/cluster"
	"github.com/tower-dev/breakglass/test/harness/prereq"
)

const audience = "tower"

var (
	cl     *cluster.Cluster
	issuer *oidcissuer.Issuer

	alice = oidcissuer.Person{Email: "alice@example.com", Groups: []string{"shop-owners"}}
	bob   = oidcissuer.Person{Email: "bob@example.com", Groups: []string{"sre"}}
	carol = oidcissuer.Person{Email: "carol@example.com", Groups: []string{"shop-owners", "on-call"}}
	eve   = oidcissuer.Person{Email: "eve@example.com", Groups: []string{"interns"}}
	dana  = oidcissuer.Person{Email: "dana@example.com", Groups: []string{"security"}}
)

func TestMain(m *testing.M) { os.Exit(prereq.Run(m, run, prereq.ControlPlane...)) }

func run(m *testing.M) int {
	log.SetLogger(logr.Discard())
	var err error
	if issuer, err = oidcissuer.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer issuer.Close()
	// kubectl breakglass login signs people in as the relay's client on a
	// loopback port (cli_test.go).
	issuer.AddClient(audience, "http://127.0.0.1/callback")
	issuer.AddPerson("alice", alice)
	issuer.AddPerson("bob", bob)
	// The hardened target's SELinux type is its own, which Flight allows
	// only where node agents run (hardened_test.go).
	return cluster.RunSuite(m, cluster.Options{Profile: policies.Flight, DebugImages: []string{cluster.DebugImage}, VirtualNode: true,
		NodeAccessNamespaces: []string{hardenedNamespace}}, &cl)
}

// testRelay is a relay serving on loopback, with what it wrote.
type testRelay struct {
	url   string
	store *recording.Dir
	audit *cluster.SyncBuffer
	// gate stands between the audit log and audit: a test holds the relay
	// at one audited step.
	gate   *auditGate
	notes  *notes
	server *relay.Server
}

func config() *relay.Config {
	return &relay.Config{
		Listen:         "127.0.0.1:0",
		PortalURL:      "https://tower.example.com",
		AllowedOrigins: []string{"https://tower.example.com"},
		OIDC:           relay.OIDC{Issuer: issuer.URL, Audience: audience},
		Clusters:       []relay.Cluster{{Name: "prod", Tier: relay.Flight, DebugImage: cluster.DebugImage}},
		Permissions: []relayapi.Permission{
			{Groups: []string{"shop-owners"}, Namespaces: []string{"*"}, Actions: []relayapi.Action{relayapi.ActionRequest}},
			{Groups: []string{"on-call"}, Namespaces: []string{"*"}, Actions: []relayapi.Action{relayapi.ActionBreakGlass}},
			{Groups: []string{"sre"}, Namespaces: []string{"*"}, Actions: []relayapi.Action{relayapi.ActionApprove, relayapi.ActionEnd, relayapi.ActionReview}},
			{Groups: []string{"security"}, Namespaces: []string{"*"}, Actions: []relayapi.Action{relayapi.ActionReview, relayapi.ActionViewSensitive}},
		},
		Recording: relay.Recording{Dir: "set-by-the-test"},
	}
}

// startRelay serves a relay over the test cluster with clk as its clock.
func startRelay(t testing.TB, cfg *relay.Config, clk clock.Clock) *testRelay {
	t.Helper()
	return startReplica(t, cfg, clk, nil, nil)
}

// startReplica is startRelay for one of several replicas: peers says how it
// reaches the others, and it serves on ln (nil: a port of its own).
func startReplica(t testing.TB, cfg *relay.Config, clk clock.Clock, peers *live.Peers, ln net.Listener) *testRelay {
	t.Helper()
	portal, err := cl.Portal()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	// A recording directory of the test's own, unless two relays share one.
	store := &recording.Dir{Root: t.TempDir()}
	if cfg.Recording.Dir != "set-by-the-test" {
		store.Root = cfg.Recording.Dir
	}
	tr := &testRelay{store: store, audit: &cluster.SyncBuffer{}, notes: &notes{}}
	tr.gate = &auditGate{w: tr.audit}
	// Every cluster of the config is the test cluster, reached as the portal.
	portals := map[string]relay.Portal{}
	for _, c := range cfg.Clusters {
		portals[c.Name] = relay.Portal{Client: portal.Client, Kube: portal.Kube, Config: portal.Config}
	}
	hook := httptest.NewServer(tr.notes)
	t.Cleanup(hook.Close)
	srv, err := relay.New(ctx, relay.Options{
		Config: cfg, Store: tr.store, Clock: clk,
		Portals:  portals,
		Audit:    audit.NewLog(audit.Event{}, nil, &audit.Writer{W: tr.gate}),
		Notifier: &notify.Webhook{URL: hook.URL, PortalURL: cfg.PortalURL},
		Peers:    peers,
	})
	if err != nil {
		t.Fatal(err)
	}
	tr.server = srv
	api := httptest.NewUnstartedServer(srv.Handler())
	if ln != nil {
		_ = api.Listener.Close()
		api.Listener = ln
	}
	api.Start()
	tr.url = api.URL
	t.Cleanup(func() {
		srv.Close(context.Background())
		api.Close()
	})
	return tr
}

func token(t testing.TB, p oidcissuer.Person) string {
	t.Helper()
	tok, err := issuer.Token(p, audience, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// answer is an API response.
type answer struct {
	status int
	body   []byte
	header http.Header
}

func (a answer) session(t testing.TB) wire.SessionView {
	t.Helper()
	var v wire.SessionView
	if err := json.Unmarshal(a.body, &v); err != nil {
		t.Fatalf("not a session (%d): %s", a.status, a.body)
	}
	return v
}

// errorReason is the reason of a refusal's {"error": {...}}.
func (a answer) errorReason() string { r, _ := a.refusal(); return r }

// refusal is the reason and message of {"error": {...}}.
func (a answer) refusal() (string, string) {
	var e struct {
		Error struct{ Reason, Message string }
	}
	_ = json.Unmarshal(a.body, &e)
	return e.Error.Reason, e.Error.Message
}

func (tr *testRelay) call(t testing.TB, tok, method, path, body string) answer {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, tr.url+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, b, resp.Header}
}

func sessionPath(ns, name string) string {
	return fmt.Sprintf("/api/v1/clusters/prod/namespaces/%s/sessions/%s", ns, name)
}

// must calls and fails the test unless the answer has status want.
func (tr *testRelay) must(t testing.TB, want int, tok, method, path, body string) answer {
	t.Helper()
	a := tr.call(t, tok, method, path, body)
	if a.status != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, a.status, a.body, want)
	}
	return a
}

// request asks for a live session on pod and returns its name.
func (tr *testRelay) request(t testing.TB, p oidcissuer.Person, ns, pod, extra string) wire.SessionView {
	t.Helper()
	body := fmt.Sprintf(`{"pod":%q,"duration":"30m","reason":"checkout returns 500s"%s}`, pod, extra)
	if !strings.Contains(extra, `"mode"`) {
		body = strings.Replace(body, `{`, `{"mode":"live",`, 1)
	}
	return tr.must(t, http.StatusCreated, token(t, p), "POST", "/api/v1/clusters/prod/namespaces/"+ns+"/sessions", body).session(t)
}

// started is alice's request for pod in ns (extra: more of the request's
// fields), approved by bob and started by alice: the Session as the start
// answered it.
func (tr *testRelay) started(t testing.TB, ns, pod, extra string) wire.SessionView {
	t.Helper()
	return tr.startedApproving(t, ns, pod, extra, `{}`)
}

// startedApproving is started with bob's decision (approval) as its body.
func (tr *testRelay) startedApproving(t testing.TB, ns, pod, extra, approval string) wire.SessionView {
	t.Helper()
	path := sessionPath(ns, tr.request(t, alice, ns, pod, extra).Name)
	tr.must(t, http.StatusOK, token(t, bob), "POST", path+"/approve", approval)
	return tr.must(t, http.StatusOK, token(t, alice), "POST", path+"/start", "").session(t)
}

// term is a browser's terminal connection.
type term struct {
	conn     *websocket.Conn
	out      cluster.SyncBuffer
	controls chan string
	closed   chan error
}

// handshake is the HTTP side of a terminal's opening.
type handshake struct {
	status   int
	protocol string
}

func (tr *testRelay) dial(t testing.TB, p oidcissuer.Person, ns, name string, header http.Header) (*term, handshake, error) {
	t.Helper()
	return tr.dialQuery(t, p, ns, name, "", header)
}

// dialQuery opens the terminal with a query ("take=1"), as dial does.
func (tr *testRelay) dialQuery(t testing.TB, p oidcissuer.Person, ns, name, query string, header http.Header) (*term, handshake, error) {
	t.Helper()
	d := websocket.Dialer{Subprotocols: []string{wire.TerminalProtocol, wire.BearerProtocolPrefix + token(t, p)}}
	u := "ws" + strings.TrimPrefix(tr.url, "http") + sessionPath(ns, name) + "/terminal"
	if query != "" {
		u += "?" + query
	}
	conn, resp, err := d.Dial(u, header)
	var hs handshake
	if resp != nil {
		hs = handshake{resp.StatusCode, resp.Header.Get("Sec-WebSocket-Protocol")}
		_ = resp.Body.Close()
	}
	if err != nil {
		return nil, hs, err
	}
	tm := &term{conn: conn, controls: make(chan string, 16), closed: make(chan error, 1)}
	go func() {
		for {
			kind, b, err := conn.ReadMessage()
			if err != nil {
				tm.closed <- err
				return
			}
			if kind == websocket.TextMessage {
				tm.controls <- string(b)
				continue
			}
			_, _ = tm.out.Write(b)
		}
	}()
	t.Cleanup(func() { _ = conn.Close() })
	return tm, hs, nil
}

func (tm *term) send(t testing.TB, s string) {
	t.Helper()
	if err := tm.conn.WriteMessage(websocket.BinaryMessage, []byte(s)); err != nil {
		t.Fatal(err)
	}
}

func (tm *term) control(t testing.TB, s string) {
	t.Helper()
	if err := tm.conn.WriteMessage(websocket.TextMessage, []byte(s)); err != nil {
		t.Fatal(err)
	}
}

// waitFor waits until the output holds want.
func (tm *term) waitFor(t testing.TB, want string) {
	t.Helper()
	tm.out.WaitFor(t, 20*time.Second, want)
}

func (tm *term) output() string { return tm.out.String() }

// auditGate writes the audit log's lines to w. Told to hold, it keeps the
// first write holding a given text until released, so that whatever
// audited it waits there: the relay stopped between two steps.
type auditGate struct {
	w  io.Writer
	mu sync.Mutex
	// match, reached and release are the hold asked for, if any.
	match   string
	reached chan struct{}
	release chan struct{}
}

// hold holds the next write that contains match: reached is closed when it
// arrives; release lets it (and everything after it) through.
func (g *auditGate) hold(match string) (reached <-chan struct{}, release func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.match, g.reached, g.release = match, make(chan struct{}), make(chan struct{})
	var once sync.Once
	rel := g.release
	return g.reached, func() { once.Do(func() { close(rel) }) }
}

func (g *auditGate) Write(p []byte) (int, error) {
	g.mu.Lock()
	var wait chan struct{}
	if g.match != "" && strings.Contains(string(p), g.match) {
		close(g.reached)
		wait, g.match = g.release, ""
	}
	g.mu.Unlock()
	if wait != nil {
		<-wait
	}
	return g.w.Write(p)
}

// notes collects the notification webhook's events.
type notes struct {
	mu     sync.Mutex
	events []notify.Event
}

func (n *notes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var e notify.Event
	if err := json.NewDecoder(r.Body).Decode(&e); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	n.mu.Lock()
	n.events = append(n.events, e)
	n.mu.Unlock()
}

// kinds lists the notifications about session name: "kind to".
func (n *notes) kinds(name string) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for _, e := range n.events {
		if e.Session == name {
			out = append(out, e.Kind+" "+e.To)
		}
	}
	return out
}
