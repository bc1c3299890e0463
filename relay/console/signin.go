package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// The sign-in is the authorization code flow with PKCE (S256), run by the
// relay for the page (the "backend for frontend" that the OAuth guidance
// for browser apps prefers): the relay exchanges the code and keeps the ID
// token in an HttpOnly cookie, so no script on the page can read a token,
// and every replica can check the cookie the way it checks a bearer token,
// with no session store. The token is short-lived; the refresh token, in
// its own HttpOnly cookie scoped to /auth/, renews it.

// Options configure the sign-in.
type Options struct {
	// Issuer and ClientID are the OIDC provider and the client the relay
	// signs in as: the audience the API accepts tokens for.
	Issuer, ClientID string
	// ClientSecret makes the relay a confidential client (empty: a public
	// one, PKCE alone): a refresh token stolen from a browser is then of no
	// use without it.
	ClientSecret string
	// URL is the relay's address as browsers reach it, e.g.
	// https://breakglass.example.com: the redirect URI is URL/auth/callback,
	// and only this origin may use the cookie.
	URL string
	// Verify checks a token as the API does; a token it refuses never
	// becomes a cookie.
	Verify func(ctx context.Context, raw string) error
	// HTTPClient reaches the issuer (nil: the default).
	HTTPClient *http.Client
}

// Console serves the page and its sign-in.
type Console struct {
	opts     Options
	origin   string
	secure   bool
	oauth    oauth2.Config
	verifier *oidc.IDTokenVerifier
	// revocation is the issuer's RFC 7009 endpoint, if it has one: sign-out
	// revokes the refresh token there.
	revocation string
}

// The cookies, all on Path=/ so that on HTTPS each takes the __Host- prefix:
// only this host sets them (no sibling subdomain can plant a sign-in or a
// refresh token), always Secure.
const (
	sessionCookie = "breakglass-session"
	refreshCookie = "breakglass-refresh"
	loginCookie   = "breakglass-login"
	// refreshLife bounds how long a browser stays signed in without the
	// issuer, from the sign-in (renewals do not extend it): the issuer's own
	// refresh lifetime applies within it.
	refreshLife = 12 * time.Hour
	// maxCookieToken is the largest ID token kept: browsers drop cookies
	// over about 4 KB, and a dropped one would send the page round the
	// sign-in for ever.
	maxCookieToken = 3800
	loginLife      = 10 * time.Minute
)

// New discovers the issuer; ctx lives as long as the console.
func New(ctx context.Context, o Options) (*Console, error) {
	if err := CheckURL(o.URL); err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	u, _ := url.Parse(o.URL)
	if o.Verify == nil || o.ClientID == "" {
		return nil, errors.New("console: a client ID and a token check are required")
	}
	if o.HTTPClient != nil {
		ctx = oidc.ClientContext(ctx, o.HTTPClient)
	}
	provider, err := oidc.NewProvider(ctx, o.Issuer)
	if err != nil {
		return nil, fmt.Errorf("console: oidc issuer %s: %w", o.Issuer, err)
	}
	var endpoints struct {
		Revocation string `json:"revocation_endpoint"`
	}
	if err := provider.Claims(&endpoints); err != nil {
		return nil, fmt.Errorf("console: oidc issuer %s: %w", o.Issuer, err)
	}
	origin := u.Scheme + "://" + u.Host
	// A public client (no secret) names itself in the form: the default
	// would first try HTTP basic auth, spending the single-use code.
	endpoint := provider.Endpoint()
	endpoint.AuthStyle = oauth2.AuthStyleInParams
	return &Console{opts: o, origin: origin, secure: u.Scheme == "https", revocation: endpoints.Revocation,
		oauth: oauth2.Config{ClientID: o.ClientID, ClientSecret: o.ClientSecret, Endpoint: endpoint, RedirectURL: origin + "/auth/callback",
			Scopes: []string{oidc.ScopeOpenID, "email", "groups", oidc.ScopeOfflineAccess}},
		verifier: provider.Verifier(&oidc.Config{ClientID: o.ClientID}),
	}, nil
}

// Origin is the console's origin, the only one its cookie is good for.
func (c *Console) Origin() string { return c.origin }

// Routes are the console's endpoints, beside the API.
func (c *Console) Routes() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{
		"GET /console/":      c.pages,
		"GET /{$}":           func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, Prefix, http.StatusFound) },
		"GET /auth/login":    c.login,
		"GET /auth/callback": c.callback,
		"POST /auth/refresh": c.refresh,
		"POST /auth/logout":  c.logout,
		"GET /auth/signed-out": func(w http.ResponseWriter, _ *http.Request) {
			c.message(w, http.StatusOK, "Signed out", "You are signed out of the breakglass console.")
		},
	}
}

func (c *Console) cookieName(name string) string {
	if c.secure {
		return "__Host-" + name
	}
	return name
}

func (c *Console) setCookie(w http.ResponseWriter, name, value string, maxAge time.Duration) {
	http.SetCookie(w, &http.Cookie{Name: c.cookieName(name), Value: value, Path: "/", MaxAge: int(maxAge.Seconds()),
		HttpOnly: true, Secure: c.secure, SameSite: http.SameSiteLaxMode})
}

func (c *Console) clearCookie(w http.ResponseWriter, name string) {
	http.SetCookie(w, &http.Cookie{Name: c.cookieName(name), Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: c.secure, SameSite: http.SameSiteLaxMode})
}

// refreshToken is the refresh cookie's token and when the sign-in it
// belongs to runs out ("unix-seconds.token").
func (c *Console) refreshToken(r *http.Request) (string, time.Time) {
	exp, tok, ok := strings.Cut(c.cookie(r, refreshCookie), ".")
	secs, err := strconv.ParseInt(exp, 10, 64)
	if !ok || err != nil || tok == "" || time.Now().Unix() >= secs {
		return "", time.Time{}
	}
	return tok, time.Unix(secs, 0)
}

func (c *Console) cookie(r *http.Request, name string) string {
	k, err := r.Cookie(c.cookieName(name))
	if err != nil {
		return ""
	}
	return k.Value
}

// Token is the ID token a browser's session cookie carries, unverified:
// the API verifies it as it verifies a bearer token.
func (c *Console) Token(r *http.Request) (string, bool) {
	tok := c.cookie(r, sessionCookie)
	return tok, tok != ""
}

// SameOrigin refuses a cookie-authenticated request that the console's own
// page did not send: another site's form, script or WebSocket, which the
// browser would send with the cookie (CSRF and cross-site WebSocket
// hijacking). Browsers say where a request comes from in Origin or
// Sec-Fetch-Site; a request with neither is not a browser's, and such
// clients use bearer tokens.
//
// "Origin: null" alone says nothing: a browser sends it for a form the
// console's own page posts (its Referrer-Policy is no-referrer, and the
// Fetch standard serializes such a navigation's origin as null), as it does
// for a sandboxed frame or a data: page elsewhere. Sec-Fetch-Site, which no
// page can set, tells them apart, as it does when Origin is missing.
func (c *Console) SameOrigin(r *http.Request) error {
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		if o != c.origin {
			return fmt.Errorf("the console's cookie is good on %s only, not from %s", c.origin, o)
		}
		return nil
	}
	if r.Header.Get("Sec-Fetch-Site") == "same-origin" {
		return nil
	}
	return errors.New("a request with the console's cookie must come from the console's page (its Origin, or Sec-Fetch-Site: same-origin)")
}

func (c *Console) signedIn(r *http.Request) (string, bool) {
	tok, ok := c.Token(r)
	if !ok || c.opts.Verify(r.Context(), tok) != nil {
		return "", false
	}
	return tok, true
}

// next is where a sign-in returns: a path of the console, never another
// site (an open redirect would lend the relay's name to phishing).
func next(raw string) string {
	if !strings.HasPrefix(raw, Prefix) || strings.ContainsAny(raw, "\\\r\n") || strings.Contains(raw, "//") {
		return Prefix
	}
	return raw
}

// pending is a sign-in on its way through the issuer.
type pending struct {
	State, Verifier, Nonce, Next string
}

func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	c.headers(w.Header())
	back := next(r.URL.Query().Get("next"))
	if rt, until := c.refreshToken(r); rt != "" {
		if err := c.renew(w, r, rt, until); err == nil {
			http.Redirect(w, r, back, http.StatusFound)
			return
		}
	}
	p := pending{State: random(), Verifier: oauth2.GenerateVerifier(), Nonce: random(), Next: back}
	data, _ := json.Marshal(p)
	c.setCookie(w, loginCookie, base64.RawURLEncoding.EncodeToString(data), loginLife)
	http.Redirect(w, r, c.oauth.AuthCodeURL(p.State, oauth2.S256ChallengeOption(p.Verifier), oidc.Nonce(p.Nonce)), http.StatusFound)
}

func (c *Console) callback(w http.ResponseWriter, r *http.Request) {
	c.headers(w.Header())
	q := r.URL.Query()
	var p pending
	raw, err := base64.RawURLEncoding.DecodeString(c.cookie(r, loginCookie))
	if err != nil || json.Unmarshal(raw, &p) != nil || p.State == "" || p.Verifier == "" || p.Nonce == "" {
		c.message(w, http.StatusBadRequest, "Sign-in expired", "This sign-in was not started here or took too long.")
		return
	}
	c.clearCookie(w, loginCookie)
	switch {
	case subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(p.State)) != 1:
		c.message(w, http.StatusBadRequest, "Sign-in refused", "The answer from the identity provider does not belong to this sign-in.")
		return
	case q.Get("error") != "":
		c.message(w, http.StatusUnauthorized, "Sign-in refused", "The identity provider said: "+q.Get("error")+" "+q.Get("error_description"))
		return
	}
	ctx := r.Context()
	if c.opts.HTTPClient != nil {
		ctx = oidc.ClientContext(ctx, c.opts.HTTPClient)
	}
	tok, err := c.oauth.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(p.Verifier))
	if err != nil {
		c.message(w, http.StatusUnauthorized, "Sign-in refused", "The identity provider did not exchange the code: "+err.Error())
		return
	}
	if err := c.keep(w, r, tok, p.Nonce, time.Now().Add(refreshLife)); err != nil {
		c.message(w, http.StatusUnauthorized, "Sign-in refused", err.Error())
		return
	}
	http.Redirect(w, r, next(p.Next), http.StatusFound)
}

// keep checks a token answer and turns it into cookies. nonce is the
// sign-in's (empty on a refresh, whose ID token need not carry one);
// refreshUntil is when the sign-in runs out.
func (c *Console) keep(w http.ResponseWriter, r *http.Request, tok *oauth2.Token, nonce string, refreshUntil time.Time) error {
	raw, _ := tok.Extra("id_token").(string)
	switch {
	case raw == "":
		return errors.New("the identity provider sent no ID token")
	case len(raw) > maxCookieToken:
		return fmt.Errorf("the ID token is %d bytes, more than a browser keeps in a cookie (%d): have the identity provider send fewer claims (groups) for this client", len(raw), maxCookieToken)
	}
	ctx := r.Context()
	if c.opts.HTTPClient != nil {
		ctx = oidc.ClientContext(ctx, c.opts.HTTPClient)
	}
	id, err := c.verifier.Verify(ctx, raw)
	if err != nil {
		return fmt.Errorf("the ID token: %w", err)
	}
	if nonce != "" && subtle.ConstantTimeCompare([]byte(id.Nonce), []byte(nonce)) != 1 {
		return errors.New("the ID token was not issued for this sign-in (nonce)")
	}
	if err := c.opts.Verify(ctx, raw); err != nil {
		return err
	}
	c.setCookie(w, sessionCookie, raw, time.Until(id.Expiry))
	if tok.RefreshToken != "" {
		c.setCookie(w, refreshCookie, strconv.FormatInt(refreshUntil.Unix(), 10)+"."+tok.RefreshToken, time.Until(refreshUntil))
	}
	return nil
}

// renew trades the refresh cookie for a fresh ID token, within the
// sign-in's lifetime.
func (c *Console) renew(w http.ResponseWriter, r *http.Request, refreshToken string, until time.Time) error {
	ctx := r.Context()
	if c.opts.HTTPClient != nil {
		ctx = oidc.ClientContext(ctx, c.opts.HTTPClient)
	}
	tok, err := c.oauth.TokenSource(ctx, &oauth2.Token{RefreshToken: refreshToken}).Token()
	if err == nil {
		err = c.keep(w, r, tok, "", until)
	}
	if err != nil {
		c.clearCookie(w, refreshCookie)
	}
	return err
}

// refresh renews the session cookie for the page, before its token expires.
func (c *Console) refresh(w http.ResponseWriter, r *http.Request) {
	if err := c.SameOrigin(r); err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	rt, until := c.refreshToken(r)
	if rt == "" || c.renew(w, r, rt, until) != nil {
		http.Error(w, "sign in again", http.StatusUnauthorized)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	if err := c.SameOrigin(r); err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	if rt, _ := c.refreshToken(r); rt != "" {
		c.revoke(r.Context(), rt)
	}
	c.clearCookie(w, sessionCookie)
	c.clearCookie(w, refreshCookie)
	http.Redirect(w, r, "/auth/signed-out", http.StatusSeeOther)
}

// revoke asks the issuer to forget a refresh token (RFC 7009), so that a
// copy of the cookie taken before the sign-out is of no use. Best effort:
// the cookie is cleared either way, and the token expires on its own.
func (c *Console) revoke(ctx context.Context, refreshToken string) {
	if c.revocation == "" {
		return
	}
	form := url.Values{"token": {refreshToken}, "token_type_hint": {"refresh_token"}, "client_id": {c.oauth.ClientID}}
	if c.oauth.ClientSecret != "" {
		form.Set("client_secret", c.oauth.ClientSecret)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.revocation, strings.NewReader(form.Encode()))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	hc := c.opts.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	if resp, err := hc.Do(req); err == nil {
		_ = resp.Body.Close()
	}
}

// CheckURL says whether raw is a console address: https, or http on a
// loopback host only (a demo), with no path.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("url %q is not the relay's address such as https://breakglass.example.com", raw)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if ip := net.ParseIP(u.Hostname()); u.Hostname() == "localhost" || (ip != nil && ip.IsLoopback()) {
			return nil
		}
	}
	return fmt.Errorf("url %q: the console serves sign-in cookies, so only over https (http only on a loopback address)", raw)
}

var messagePage = template.Must(template.New("message").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<link rel="icon" href="data:,"><title>{{.Title}}: breakglass</title></head>
<body><main><h1>{{.Title}}</h1><p>{{.Text}}</p><p><a href="/auth/login?next=/console/">Sign in</a></p></main></body></html>
`))

// message is a page for people, without script.
func (c *Console) message(w http.ResponseWriter, status int, title, text string) {
	c.headers(w.Header())
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = messagePage.Execute(w, map[string]string{"Title": title, "Text": text})
}

func random() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
