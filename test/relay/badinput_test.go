package relay_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/internal/oidcissuer"
	"github.com/tower-dev/breakglass/relay"
	"github.com/tower-dev/breakglass/relay/terminal"
	"github.com/tower-dev/breakglass/test/harness/cluster"
)

// TestBadTokens: every token the relay must not trust is refused with 401
// and a reason, and the refusal is audited.
func TestBadTokens(t *testing.T) {
	tr := startRelay(t, config(), clock.RealClock{})
	now := time.Now()
	sign := func(claims map[string]any) string {
		tok, err := issuer.Sign(claims)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	base := func() map[string]any {
		return map[string]any{"iss": issuer.URL, "aud": audience, "sub": "alice", "email": alice.Email, "email_verified": true, "groups": alice.Groups,
			"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	}
	with := func(k string, v any) string {
		c := base()
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return sign(c)
	}
	other, err := oidcissuer.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	forged, err := other.Token(alice, audience, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	good := sign(base())
	for _, tc := range []struct{ name, header, want string }{
		{"no token", "", "no bearer token"},
		{"not bearer", "Basic YWxpY2U6cHc=", "Bearer <token>"},
		{"garbage", "Bearer not.a.jwt", "malformed"},
		{"expired", "Bearer " + with("exp", now.Add(-time.Minute).Unix()), "expired"},
		{"wrong audience", "Bearer " + with("aud", "someone-else"), "audience"},
		{"wrong issuer claim", "Bearer " + with("iss", "https://evil.example"), "different provider"},
		{"another issuer's key", "Bearer " + forged, "signature"},
		{"no email", "Bearer " + with("email", nil), `no "email" claim`},
		{"unverified email", "Bearer " + with("email_verified", false), "not verified"},
		{"email never verified", "Bearer " + with("email_verified", nil), "not verified"},
		{"no subject", "Bearer " + with("sub", nil), "no subject"},
		{"groups not a list", "Bearer " + with("groups", "sre"), "not a list"},
		{"tampered", "Bearer " + good[:len(good)-4] + "AAAA", "signature"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", tr.url+"/api/v1/sessions", nil)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			a := answer{status: resp.StatusCode, body: body}
			reason, msg := a.refusal()
			if a.status != http.StatusUnauthorized || reason != "Unauthenticated" || !strings.Contains(msg, tc.want) {
				t.Fatalf("%d %s, want 401 saying %q", a.status, a.body, tc.want)
			}
		})
	}
	tr.must(t, http.StatusOK, good, "GET", "/api/v1/sessions", "")
	tr.must(t, http.StatusOK, with("email_verified", "true"), "GET", "/api/v1/sessions", "") // as some providers send it
	tr.must(t, http.StatusUnauthorized, with("email_verified", "yes"), "GET", "/api/v1/sessions", "")
	if !strings.Contains(tr.audit.String(), `"kind":"refusal","actor":"unauthenticated"`) {
		t.Fatal("the refusals were not audited")
	}
	if strings.Contains(tr.audit.String(), good[:40]) {
		t.Fatal("a token reached the audit log")
	}
}

// TestUnauthenticatedFloodIsNotAuditedOneByOne: anyone can send requests
// without a valid token; past a burst, their refusals are counted, not
// each audited, and the count goes with the next refusal audited.
func TestUnauthenticatedFloodIsNotAuditedOneByOne(t *testing.T) {
	tr := startRelay(t, config(), clock.RealClock{})
	const flood = 200
	for i := 0; i < flood; i++ {
		tr.must(t, http.StatusUnauthorized, "", "GET", "/api/v1/sessions", "")
	}
	audited := strings.Count(tr.audit.String(), `"actor":"unauthenticated"`)
	if audited < relay.UnauthenticatedAuditBurst || audited > relay.UnauthenticatedAuditBurst+5 {
		t.Fatalf("%d of %d unauthenticated refusals audited one by one, want about the burst of %d", audited, flood, relay.UnauthenticatedAuditBurst)
	}
	time.Sleep(1100 * time.Millisecond) // the limiter lets one more through
	tr.must(t, http.StatusUnauthorized, "", "GET", "/api/v1/sessions", "")
	if !strings.Contains(tr.audit.String(), `"unauditedBefore":"`) {
		t.Fatal("the refusals not audited one by one are not counted in the log")
	}
	// A person's refusals are never rate-limited.
	for i := 0; i < 30; i++ {
		tr.must(t, http.StatusNotFound, token(t, alice), "GET", sessionPath("nowhere", "s-none"), "")
	}
	if n := strings.Count(tr.audit.String(), `"actor":"alice@example.com"`); n != 30 {
		t.Fatalf("%d of alice's 30 refusals audited", n)
	}
}

// TestBadRequests: malformed and unknown requests get a clear 4xx and leave
// no Session behind.
func TestBadRequests(t *testing.T) {
	ns := cl.Namespace(t, "relay-bad")
	tr := startRelay(t, config(), clock.RealClock{})
	a := token(t, alice)
	create := "/api/v1/clusters/prod/namespaces/" + ns + "/sessions"
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		want                     string
	}{
		{"garbage JSON", "POST", create, `{"pod": web-1`, 400, "not the expected JSON"},
		{"unknown field", "POST", create, `{"pod":"web-1","mode":"live","duration":"30m","reason":"x","keepThePod":true}`, 400, "keepThePod"},
		{"two objects", "POST", create, `{"pod":"web-1","mode":"live","duration":"30m","reason":"x"}{}`, 400, "after its JSON"},
		{"oversized", "POST", create, `{"pod":"web-1","mode":"live","duration":"30m","reason":"` + strings.Repeat("x", 70<<10) + `"}`, 400, "larger than"},
		{"too long", "POST", create, `{"pod":"web-1","mode":"live","duration":"2h","reason":"x"}`, 400, "from 15m0s to 1h15m0s"},
		{"too short", "POST", create, `{"pod":"web-1","mode":"live","duration":"5m","reason":"x"}`, 400, "from 15m0s"},
		{"not a duration", "POST", create, `{"pod":"web-1","mode":"live","duration":"soon","reason":"x"}`, 400, "not a duration"},
		{"bad mode", "POST", create, `{"pod":"web-1","mode":"shell","duration":"30m","reason":"x"}`, 400, "not one of live"},
		{"no reason", "POST", create, `{"pod":"web-1","mode":"live","duration":"30m","reason":"  "}`, 400, "say why"},
		{"bad pod name", "POST", create, `{"pod":"../etc","mode":"live","duration":"30m","reason":"x"}`, 400, "not a pod name"},
		{"process access without container", "POST", create, `{"pod":"web-1","mode":"live","duration":"30m","reason":"x","processAccess":true}`, 400, "names the app container"},
		{"unknown cluster", "POST", "/api/v1/clusters/staging/namespaces/" + ns + "/sessions", `{}`, 404, "no cluster"},
		{"bad namespace", "GET", "/api/v1/clusters/prod/namespaces/Not_A_NS/sessions/s-1", "", 400, "not a namespace"},
		{"unknown session", "GET", sessionPath(ns, "s-nothere"), "", 404, "no session s-nothere"},
		{"unknown session start", "POST", sessionPath(ns, "s-nothere") + "/start", "", 404, "no session"},
		{"unknown endpoint", "POST", sessionPath(ns, "s-1") + "/explode", "", 404, "no such endpoint"},
		{"no permission", "POST", create, `{"pod":"web-1","mode":"live","duration":"30m","reason":"x"}`, 403, "has no permission"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := a
			if tc.name == "no permission" {
				tok = token(t, eve)
			}
			got := tr.call(t, tok, tc.method, tc.path, tc.body)
			reason, msg := got.refusal()
			if got.status != tc.status || !strings.Contains(msg, tc.want) || reason == "" {
				t.Fatalf("%d %s, want %d saying %q", got.status, got.body, tc.status, tc.want)
			}
		})
	}
	list := &v1alpha1.SessionList{}
	if err := cl.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil || len(list.Items) != 0 {
		t.Fatalf("bad requests left %d Sessions (%v)", len(list.Items), err)
	}
}

// TestBadTerminalInput: a disallowed origin, a stranger, garbage control
// messages and an oversized frame: each refused clearly, and the session
// and its recording go on.
func TestBadTerminalInput(t *testing.T) {
	ns := cl.Namespace(t, "relay-bad-terminal")
	cl.RunningPod(t, ns, "web-1")
	tr := startRelay(t, config(), clock.RealClock{})
	s := tr.request(t, alice, ns, "web-1", "")
	path := sessionPath(ns, s.Name)
	if _, hs, err := tr.dial(t, alice, ns, s.Name, nil); err == nil || hs.status != http.StatusConflict {
		t.Fatalf("a terminal before the start: %d %v", hs.status, err)
	}
	tr.must(t, http.StatusOK, token(t, bob), "POST", path+"/approve", `{}`)
	tr.must(t, http.StatusOK, token(t, alice), "POST", path+"/start", "")

	if _, hs, err := tr.dial(t, alice, ns, s.Name, http.Header{"Origin": {"https://evil.example"}}); err == nil || hs.status != http.StatusForbidden {
		t.Fatalf("a foreign origin: %d %v", hs.status, err)
	}
	if _, hs, err := tr.dial(t, eve, ns, s.Name, nil); err == nil || hs.status != http.StatusForbidden {
		t.Fatalf("a stranger's terminal: %d %v", hs.status, err)
	}
	tm, hs, err := tr.dial(t, alice, ns, s.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := hs.protocol; got != "breakglass.terminal.v1" {
		t.Fatalf("the relay answered the subprotocol %q (it must never echo the token)", got)
	}
	for _, bad := range []string{`{"type":"resize"`, `{"type":"paste","data":"rm -rf /"}`, `{"type":"resize","cols":0,"rows":0}`, `{"type":"resize","cols":99999,"rows":1}`} {
		tm.control(t, bad)
		select {
		case c := <-tm.controls:
			if !strings.Contains(c, `"type":"error"`) {
				t.Fatalf("%s: answered %s", bad, c)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no error", bad)
		}
	}
	tm.send(t, "echo still-$((1+1))\n")
	tm.waitFor(t, "still-2")
	if err := tm.conn.WriteMessage(websocket.BinaryMessage, make([]byte, terminal.MaxFrame+1)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-tm.closed:
		if !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
			t.Fatalf("an oversized frame closed the terminal with %v, want 1009", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("an oversized frame was taken")
	}
	// The session goes on: the browser reconnects and finds its shell.
	again, _, err := tr.dial(t, alice, ns, s.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	again.send(t, "echo back-$((2+2))\n")
	again.waitFor(t, "back-4")
	tr.must(t, http.StatusOK, token(t, alice), "POST", path+"/end", "")
	in, _, _ := cluster.Transcript(t, tr.store, prefixOf(t, ns, s.Name))
	if in != "echo still-$((1+1))\necho back-$((2+2))\n" {
		t.Fatalf("recorded input %q: the oversized frame must not be in it, the rest must", in)
	}
	assertNothingLeft(t, ns, s.Name, "web-1", false)
}
