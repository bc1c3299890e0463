package oidcissuer

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"html/template"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"
)

// The authorization code flow with PKCE (RFC 7636, S256 only), for public
// clients (a browser page or a CLI on a loopback port): a sign-in page
// where a demo person is picked (no password: this issuer is for tests and
// the demo), single-use codes bound to the client, its redirect URI and the
// code challenge, and refresh tokens.

const (
	codeTTL    = time.Minute
	idTokenTTL = 10 * time.Minute
	refreshTTL = 12 * time.Hour
)

type flows struct {
	mu      sync.Mutex
	clients map[string][]string // client ID -> redirect URIs
	people  map[string]Person   // username -> person
	codes   map[string]*grant
	refresh map[string]*grant
	// devices are the device flow's authorizations by device code: device.go.
	devices map[string]*deviceAuth
}

// grant is what a code or a refresh token stands for.
type grant struct {
	client, redirectURI, challenge, nonce string
	person                                Person
	expires                               time.Time
}

// AddClient registers a public client and the redirect URIs it may use
// (exact match, as OAuth 2.1 asks).
func (i *Issuer) AddClient(id string, redirectURIs ...string) {
	i.flows.mu.Lock()
	defer i.flows.mu.Unlock()
	if i.flows.clients == nil {
		i.flows.clients = map[string][]string{}
	}
	i.flows.clients[id] = append(i.flows.clients[id], redirectURIs...)
}

// AddPerson offers p on the sign-in page as username.
func (i *Issuer) AddPerson(username string, p Person) {
	i.flows.mu.Lock()
	defer i.flows.mu.Unlock()
	if i.flows.people == nil {
		i.flows.people = map[string]Person{}
	}
	i.flows.people[username] = p
}

func (f *flows) routes(i *Issuer, mux *http.ServeMux) {
	mux.HandleFunc("GET /auth", func(w http.ResponseWriter, r *http.Request) { f.signInPage(w, r) })
	mux.HandleFunc("POST /auth", func(w http.ResponseWriter, r *http.Request) { f.signIn(w, r) })
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) { f.token(i, w, r) })
	mux.HandleFunc("POST /revoke", f.revoke)
	mux.HandleFunc("POST /device/code", f.deviceCode)
	mux.HandleFunc("GET /device", f.devicePage)
	mux.HandleFunc("POST /device", f.deviceDecide)
}

// redirectAllowed: a registered URI exactly, or, for a registered loopback
// IP literal without a port (http://127.0.0.1/callback), the same URI on
// any port, as RFC 8252 (7.3) asks for a native app's loopback listener.
func redirectAllowed(registered []string, uri string) bool {
	if slices.Contains(registered, uri) {
		return true
	}
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "http" || u.Port() == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return false
	}
	for _, r := range registered {
		ru, err := url.Parse(r)
		if err == nil && ru.Scheme == "http" && ru.Port() == "" && isLoopbackIP(ru.Hostname()) &&
			ru.Hostname() == u.Hostname() && ru.Path == u.Path {
			return true
		}
	}
	return false
}

func isLoopbackIP(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// revoke forgets a refresh token of the client that names it (RFC 7009:
// an unknown token is not an error).
func (f *flows) revoke(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "a malformed form", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if g := f.refresh[r.PostForm.Get("token")]; g != nil && g.client == r.PostForm.Get("client_id") {
		delete(f.refresh, r.PostForm.Get("token"))
	}
	w.WriteHeader(http.StatusOK)
}

// authRequest checks an authorization request's client, redirect URI and
// PKCE challenge. An unknown client or redirect URI is answered here, never
// redirected (RFC 6749 4.1.2.1).
func (f *flows) authRequest(w http.ResponseWriter, q url.Values) bool {
	f.mu.Lock()
	uris, ok := f.clients[q.Get("client_id")]
	f.mu.Unlock()
	switch {
	case !ok:
		http.Error(w, "unknown client_id", http.StatusBadRequest)
	case !redirectAllowed(uris, q.Get("redirect_uri")):
		http.Error(w, "redirect_uri is not registered for this client", http.StatusBadRequest)
	case q.Get("response_type") != "code":
		http.Error(w, "response_type must be code", http.StatusBadRequest)
	case q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) != 43:
		http.Error(w, "PKCE is required: code_challenge (43 characters) with code_challenge_method S256", http.StatusBadRequest)
	default:
		return true
	}
	return false
}

var signInPage = template.Must(template.New("signin").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign in: breakglass demo issuer</title></head>
<body><main><h1>Sign in (demo issuer)</h1>
<form method="post" action="auth">
{{range $k, $v := .Params}}<input type="hidden" name="{{$k}}" value="{{index $v 0}}">
{{end}}{{range $name, $p := .People}}<button type="submit" name="username" value="{{$name}}">{{$name}} ({{$p.Email}})</button>
{{end}}</form></main></body></html>
`))

func (f *flows) signInPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if !f.authRequest(w, q) {
		return
	}
	f.mu.Lock()
	people := make(map[string]Person, len(f.people))
	for k, v := range f.people {
		people[k] = v
	}
	f.mu.Unlock()
	// The form posts here and is redirected to the client: Chrome applies
	// form-action to that redirect too, so the client's origin is allowed
	// (it is registered, checked above).
	back, _ := url.Parse(q.Get("redirect_uri"))
	w.Header().Set("Content-Security-Policy", "default-src 'none'; form-action 'self' "+back.Scheme+"://"+back.Host+"; frame-ancestors 'none'")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = signInPage.Execute(w, map[string]any{"Params": q, "People": people})
}

func (f *flows) signIn(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "a malformed form", http.StatusBadRequest)
		return
	}
	q := r.PostForm
	if !f.authRequest(w, q) {
		return
	}
	f.mu.Lock()
	p, ok := f.people[q.Get("username")]
	f.mu.Unlock()
	if !ok {
		http.Error(w, "no such person", http.StatusBadRequest)
		return
	}
	code := randomToken()
	f.mu.Lock()
	if f.codes == nil {
		f.codes = map[string]*grant{}
	}
	f.codes[code] = &grant{client: q.Get("client_id"), redirectURI: q.Get("redirect_uri"), challenge: q.Get("code_challenge"),
		nonce: q.Get("nonce"), person: p, expires: time.Now().Add(codeTTL)}
	f.mu.Unlock()
	back, _ := url.Parse(q.Get("redirect_uri"))
	v := back.Query()
	v.Set("code", code)
	if s := q.Get("state"); s != "" {
		v.Set("state", s)
	}
	back.RawQuery = v.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

// token answers the code and refresh grants with an ID token for the client.
func (f *flows) token(i *Issuer, w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		tokenError(w, "invalid_request", "a malformed form")
		return
	}
	q := r.PostForm
	var g *grant
	f.mu.Lock()
	switch q.Get("grant_type") {
	case "authorization_code":
		g = f.codes[q.Get("code")]
		delete(f.codes, q.Get("code")) // single use, whatever follows
		if g != nil && (g.client != q.Get("client_id") || g.redirectURI != q.Get("redirect_uri") || !verifierMatches(q.Get("code_verifier"), g.challenge)) {
			g = nil
		}
	case "refresh_token":
		g = f.refresh[q.Get("refresh_token")]
		delete(f.refresh, q.Get("refresh_token")) // rotated
		if g != nil && g.client != q.Get("client_id") {
			g = nil
		}
	case deviceGrantType:
		var errCode string
		if g, errCode = f.deviceGrant(q.Get("device_code"), q.Get("client_id")); errCode != "" {
			f.mu.Unlock()
			tokenError(w, errCode, deviceErrors[errCode])
			return
		}
	default:
		f.mu.Unlock()
		tokenError(w, "unsupported_grant_type", "grant_type must be authorization_code, refresh_token or "+deviceGrantType)
		return
	}
	if g == nil || time.Now().After(g.expires) {
		f.mu.Unlock()
		tokenError(w, "invalid_grant", "the code or refresh token is unknown, used, expired, or not for this client, redirect URI and verifier")
		return
	}
	refresh := randomToken()
	if f.refresh == nil {
		f.refresh = map[string]*grant{}
	}
	f.refresh[refresh] = &grant{client: g.client, person: g.person, expires: time.Now().Add(refreshTTL)}
	f.mu.Unlock()
	ttl := i.TokenTTL
	if ttl <= 0 {
		ttl = idTokenTTL
	}
	claims := i.claims(g.person, g.client, ttl)
	if g.nonce != "" {
		claims["nonce"] = g.nonce
	}
	idToken, err := i.Sign(claims)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, map[string]any{"id_token": idToken, "access_token": idToken, "token_type": "Bearer",
		"expires_in": int(ttl.Seconds()), "refresh_token": refresh})
}

func tokenError(w http.ResponseWriter, code, description string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	writeJSON(w, map[string]string{"error": code, "error_description": description})
}

// verifierMatches: BASE64URL(SHA256(verifier)) == challenge, in constant time.
func verifierMatches(verifier, challenge string) bool {
	if len(verifier) < 43 || len(verifier) > 128 {
		return false
	}
	sum := sha256.Sum256([]byte(verifier))
	return subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(challenge)) == 1
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
