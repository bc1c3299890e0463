package console_test

import (
	"context"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tower-dev/breakglass/internal/oidcissuer"
	"github.com/tower-dev/breakglass/relay"
	"github.com/tower-dev/breakglass/relay/console"
	"github.com/tower-dev/breakglass/test/harness/prereq"
)

// site is a relay serving only the console, signing in at a local issuer.
type site struct {
	url     string
	issuer  *oidcissuer.Issuer
	console *console.Console
	// setCookies are the Set-Cookie headers of every redirect followed.
	setCookies []string
	client     *http.Client
}

func start(t *testing.T) *site {
	t.Helper()
	return startWith(t, oidcissuer.Person{Email: "alice@example.com", Groups: []string{"shop-owners"}})
}

// startWith signs alice in as p.
func startWith(t *testing.T, alice oidcissuer.Person) *site {
	t.Helper()
	prereq.Need(t, prereq.Console)
	issuer, err := oidcissuer.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = issuer.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &site{url: "http://" + ln.Addr().String()}
	issuer.AddClient("tower", s.url+"/auth/callback")
	issuer.AddPerson("alice", alice)
	s.issuer = issuer
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	auth, err := relay.NewAuthenticator(ctx, relay.OIDC{Issuer: issuer.URL, Audience: "tower", UsernameClaim: "email", GroupsClaim: "groups"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.console, err = console.New(ctx, console.Options{Issuer: issuer.URL, ClientID: "tower", URL: s.url,
		Verify: func(ctx context.Context, raw string) error { _, err := auth.Verify(ctx, raw); return err }})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	for pattern, h := range s.console.Routes() {
		mux.Handle(pattern, h)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}}
	srv.Start()
	t.Cleanup(srv.Close)
	jar, _ := cookiejar.New(nil)
	s.client = &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		s.setCookies = append(s.setCookies, req.Response.Header.Values("Set-Cookie")...)
		return nil
	}}
	return s
}

// landing is where a sign-in ended.
type landing struct {
	URL        *url.URL
	StatusCode int
	Header     http.Header
}

// signIn visits path signed out and picks alice on the issuer's page.
func (s *site) signIn(t *testing.T, path string) landing {
	t.Helper()
	resp, err := s.client.Get(s.url + path)
	if err != nil {
		t.Fatal(err)
	}
	drain(resp)
	page := resp.Request.URL
	if !strings.HasSuffix(page.Path, "/auth") || strings.HasPrefix(page.String(), s.url) {
		t.Fatalf("a signed-out visit to %s ended at %s, not the issuer's sign-in page", path, page)
	}
	form := page.Query()
	form.Set("username", "alice")
	resp, err = s.client.PostForm((&url.URL{Scheme: page.Scheme, Host: page.Host, Path: page.Path}).String(), form)
	if err != nil {
		t.Fatal(err)
	}
	drain(resp)
	return landing{resp.Request.URL, resp.StatusCode, resp.Header}
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

func cookie(headers []string, name string) string {
	for _, h := range headers {
		if strings.HasPrefix(h, name+"=") && !strings.HasPrefix(h, name+"=;") {
			return h
		}
	}
	return ""
}

// TestSignInLandsOnTheDeepLink: a signed-out person opening a deep link goes
// through the issuer and lands on the same page, with the token in an
// HttpOnly cookie the page's scripts cannot read, and the page served with
// a strict policy.
func TestSignInLandsOnTheDeepLink(t *testing.T) {
	s := start(t)
	const deep = "/console/sessions/flight/shop/s-abcde/approve"
	resp := s.signIn(t, deep)
	if resp.StatusCode != http.StatusOK || resp.URL.String() != s.url+deep {
		t.Fatalf("landed on %s (%d), want %s", resp.URL, resp.StatusCode, deep)
	}
	session := cookie(s.setCookies, "breakglass-session")
	for _, want := range []string{"Path=/", "HttpOnly", "SameSite=Lax", "Max-Age="} {
		if !strings.Contains(session, want) {
			t.Errorf("the session cookie %q lacks %s", session, want)
		}
	}
	if refresh := cookie(s.setCookies, "breakglass-refresh"); !strings.Contains(refresh, "HttpOnly") || !strings.Contains(refresh, "Max-Age=4319") {
		t.Errorf("the refresh cookie %q is not HttpOnly for the sign-in's 12 hours", refresh)
	}
	csp := resp.Header.Get("Content-Security-Policy")
	script := ""
	for _, d := range strings.Split(csp, ";") {
		if d = strings.TrimSpace(d); strings.HasPrefix(d, "script-src ") {
			script = d
		}
	}
	if script == "" || strings.Contains(script, "unsafe-inline") || strings.Contains(script, "'unsafe-eval'") ||
		!strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
	if resp.Header.Get("X-Frame-Options") != "DENY" || resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("X-Frame-Options %q, Cache-Control %q", resp.Header.Get("X-Frame-Options"), resp.Header.Get("Cache-Control"))
	}
}

// TestSignInNeverLeavesTheConsole: where a sign-in returns is a console
// path, whatever the link says: no open redirect lending the relay's name.
func TestSignInNeverLeavesTheConsole(t *testing.T) {
	for _, next := range []string{"https://evil.example/console/", "//evil.example/console/", "/console//evil.example", "/api/v1/sessions", `/console/\evil`} {
		s := start(t)
		resp := s.signIn(t, "/auth/login?next="+url.QueryEscape(next))
		if resp.URL.String() != s.url+"/console/" {
			t.Errorf("next=%s: landed on %s", next, resp.URL)
		}
	}
}

// TestCallbackRefusesAForeignAnswer: an issuer answer this browser did not
// ask for (login CSRF, or a code stolen from someone else's sign-in) sets
// no cookie.
func TestCallbackRefusesAForeignAnswer(t *testing.T) {
	s := start(t)
	resp, err := http.Get(s.url + "/auth/callback?code=stolen&state=whatever")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "not started here") || cookie(resp.Header.Values("Set-Cookie"), "breakglass-session") != "" {
		t.Fatalf("no sign-in started: %d %s", resp.StatusCode, body)
	}
	// A sign-in started here, answered with another state.
	noFollow := &http.Client{Jar: s.client.Jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err = noFollow.Get(s.url + "/auth/login?next=/console/")
	if err != nil {
		t.Fatal(err)
	}
	drain(resp)
	resp, err = noFollow.Get(s.url + "/auth/callback?code=stolen&state=not-the-one")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "does not belong to this sign-in") || cookie(resp.Header.Values("Set-Cookie"), "breakglass-session") != "" {
		t.Fatalf("a foreign state: %d %s %q", resp.StatusCode, body, resp.Header.Values("Set-Cookie"))
	}
}

// TestSameOrigin: the cookie stands for a token only on requests the
// console's own page makes.
func TestSameOrigin(t *testing.T) {
	s := start(t)
	for _, c := range []struct {
		origin, site string
		ok           bool
	}{
		{s.url, "", true},
		{"", "same-origin", true},
		{"https://evil.example", "same-origin", false},
		{s.url + ".evil.example", "", false},
		{"null", "", false},
		// The console's sign-out form, under its no-referrer policy.
		{"null", "same-origin", true},
		{"null", "cross-site", false},
		{"null", "same-site", false},
		{"", "same-site", false},
		{"", "cross-site", false},
		{"", "", false},
	} {
		r := httptest.NewRequest("POST", s.url+"/api/v1/x", nil)
		if c.origin != "" {
			r.Header.Set("Origin", c.origin)
		}
		if c.site != "" {
			r.Header.Set("Sec-Fetch-Site", c.site)
		}
		if err := s.console.SameOrigin(r); (err == nil) != c.ok {
			t.Errorf("Origin %q, Sec-Fetch-Site %q: %v, want ok %v", c.origin, c.site, err, c.ok)
		}
	}
}

// TestRefreshAndSignOut: the page renews its cookie through the refresh
// cookie; signing out clears both, and the console asks for a sign-in again.
func TestRefreshAndSignOut(t *testing.T) {
	s := start(t)
	s.signIn(t, "/console/")
	post := func(path, origin string) landing {
		req, _ := http.NewRequest("POST", s.url+path, nil)
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		noFollow := &http.Client{Jar: s.client.Jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		drain(resp)
		return landing{resp.Request.URL, resp.StatusCode, resp.Header}
	}
	if resp := post("/auth/refresh", "https://evil.example"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a refresh from another site: %d", resp.StatusCode)
	}
	renewed := post("/auth/refresh", s.url)
	if renewed.StatusCode != http.StatusNoContent || cookie(renewed.Header.Values("Set-Cookie"), "breakglass-session") == "" {
		t.Fatalf("refresh: %d %q", renewed.StatusCode, renewed.Header.Values("Set-Cookie"))
	}
	if resp := post("/auth/logout", "https://evil.example"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a sign-out from another site: %d", resp.StatusCode)
	}
	out := post("/auth/logout", s.url)
	if out.StatusCode != http.StatusSeeOther || out.Header.Get("Location") != "/auth/signed-out" {
		t.Fatalf("sign out: %d %s", out.StatusCode, out.Header.Get("Location"))
	}
	u, _ := url.Parse(s.url)
	if left := s.client.Jar.Cookies(u); len(left) != 0 {
		t.Errorf("cookies left after signing out: %v", left)
	}
	if resp := post("/auth/refresh", s.url); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a refresh after signing out: %d", resp.StatusCode)
	}
	noFollow := &http.Client{Jar: s.client.Jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(s.url + "/console/recordings")
	if err != nil {
		t.Fatal(err)
	}
	drain(resp)
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/auth/login?next=%2Fconsole%2Frecordings" {
		t.Errorf("the console after signing out: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
}

func (s *site) refreshCookie(t *testing.T) string {
	t.Helper()
	u, _ := url.Parse(s.url)
	for _, c := range s.client.Jar.Cookies(u) {
		if c.Name == "breakglass-refresh" {
			return c.Value
		}
	}
	return ""
}

// TestSignOutRevokes: signing out revokes the refresh token at the issuer,
// so a copy of the cookie taken before is of no use; renewals keep the
// sign-in's end where it was.
func TestSignOutRevokes(t *testing.T) {
	s := start(t)
	s.signIn(t, "/console/")
	before := s.refreshCookie(t)
	until, _, _ := strings.Cut(before, ".")
	req, _ := http.NewRequest("POST", s.url+"/auth/refresh", nil)
	req.Header.Set("Origin", s.url)
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	drain(resp)
	after := s.refreshCookie(t)
	if resp.StatusCode != http.StatusNoContent || after == before || !strings.HasPrefix(after, until+".") {
		t.Fatalf("a renewal: %d, refresh cookie %q then %q: the token rotates, the end stays", resp.StatusCode, before, after)
	}
	_, token, _ := strings.Cut(after, ".")
	req, _ = http.NewRequest("POST", s.url+"/auth/logout", nil)
	req.Header.Set("Origin", s.url)
	resp, err = s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	drain(resp)
	resp, err = http.PostForm(s.issuer.URL+"/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {token}, "client_id": {"tower"}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "invalid_grant") {
		t.Fatalf("the refresh token after sign-out: %d %s, want it revoked", resp.StatusCode, body)
	}
}

// TestOversizedTokenIsRefused: a token too big for a cookie is refused
// with what to do, instead of a cookie the browser drops (and a sign-in
// loop).
func TestOversizedTokenIsRefused(t *testing.T) {
	groups := make([]string, 200)
	for i := range groups {
		groups[i] = "team-with-a-long-name-" + strings.Repeat("x", 10)
	}
	s := startWith(t, oidcissuer.Person{Email: "alice@example.com", Groups: groups})
	resp := s.signIn(t, "/console/")
	if resp.StatusCode != http.StatusUnauthorized || cookie(s.setCookies, "breakglass-session") != "" {
		t.Fatalf("an oversized token: %d at %s", resp.StatusCode, resp.URL)
	}
}

// TestPlantedSignInIsRefused: a sign-in cookie without its verifier and
// nonce (planted, not made here) is refused.
func TestPlantedSignInIsRefused(t *testing.T) {
	s := start(t)
	u, _ := url.Parse(s.url)
	planted := base64.RawURLEncoding.EncodeToString([]byte(`{"State":"s","Verifier":"","Nonce":"","Next":"/console/"}`))
	s.client.Jar.SetCookies(u, []*http.Cookie{{Name: "breakglass-login", Value: planted, Path: "/"}})
	resp, err := s.client.Get(s.url + "/auth/callback?code=c&state=s")
	if err != nil {
		t.Fatal(err)
	}
	drain(resp)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a planted sign-in: %d", resp.StatusCode)
	}
}

func TestConsoleURL(t *testing.T) {
	for raw, ok := range map[string]bool{
		"https://breakglass.example.com": true, "https://breakglass.example.com/": true, "http://127.0.0.1:8443": true,
		"http://localhost:8443": true, "http://[::1]:8443": true, "http://breakglass.example.com": false,
		"https://breakglass.example.com/console": false, "ftp://breakglass.example.com": false, "breakglass.example.com": false,
		"https://breakglass.example.com/?a=b": false,
	} {
		if err := console.CheckURL(raw); (err == nil) != ok {
			t.Errorf("%s: %v, want ok %v", raw, err, ok)
		}
	}
}
