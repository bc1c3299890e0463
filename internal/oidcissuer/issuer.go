// Package oidcissuer is a small OpenID Connect issuer on loopback for tests
// and the local demo: discovery, a key set, and signed ID tokens for demo
// users. It never runs in production: the relay trusts the portal's issuer.
package oidcissuer

import (
	"cmp"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Issuer serves discovery and keys at URL and signs tokens.
type Issuer struct {
	URL string
	// TokenTTL is how long the ID tokens its sign-ins issue last (default
	// 10 minutes): a test shortens it to see a page renew its sign-in.
	TokenTTL time.Duration
	key      *rsa.PrivateKey
	keyID    string
	signer   jose.Signer
	srv      *http.Server
	// The authorization code flow's state: flow.go.
	flows flows
}

// Start listens on a free loopback port.
func Start() (*Issuer, error) { return StartOn("127.0.0.1:0") }

// StartOn listens on addr (host:port): pods on a test node reach it at an
// address on their bridge.
func StartOn(addr string) (*Issuer, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	i := &Issuer{URL: "http://" + ln.Addr().String(), key: key, keyID: "demo-1"}
	i.signer, err = jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: i.keyID}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{
			"issuer": i.URL, "jwks_uri": i.URL + "/keys",
			"authorization_endpoint": i.URL + "/auth", "token_endpoint": i.URL + "/token", "revocation_endpoint": i.URL + "/revoke",
			"userinfo_endpoint":             i.URL + "/userinfo",
			"device_authorization_endpoint": i.URL + "/device/code",
			"response_types_supported":      []string{"code"}, "subject_types_supported": []string{"public"},
			"id_token_signing_alg_values_supported": []string{"RS256"},
			"grant_types_supported":                 []string{"authorization_code", "refresh_token", deviceGrantType},
			"code_challenge_methods_supported":      []string{"S256"},
			"token_endpoint_auth_methods_supported": []string{"none"},
			"scopes_supported":                      []string{"openid", "email", "groups", "offline_access"},
		})
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: i.keyID, Algorithm: "RS256", Use: "sig"}}})
	})
	mux.HandleFunc("GET /userinfo", i.userinfo)
	i.flows.routes(i, mux)
	i.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = i.srv.Serve(ln) }()
	return i, nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// Person is a demo user.
type Person struct {
	Email  string
	Groups []string
	// Subject is the person's stable identity at the issuer (default: Email).
	Subject string
}

// Token signs an ID token for p, issued for audience, valid for ttl.
func (i *Issuer) Token(p Person, audience string, ttl time.Duration) (string, error) {
	return i.Sign(i.claims(p, audience, ttl))
}

func (i *Issuer) claims(p Person, audience string, ttl time.Duration) map[string]any {
	now := time.Now()
	return map[string]any{
		"iss": i.URL, "sub": cmp.Or(p.Subject, p.Email), "aud": audience, "email": p.Email, "email_verified": true,
		"groups": p.Groups, "iat": now.Unix(), "exp": now.Add(ttl).Unix(),
	}
}

// Sign signs any claims, for tests of malformed tokens.
func (i *Issuer) Sign(claims map[string]any) (string, error) {
	tok, err := jwt.Signed(i.signer).Claims(claims).Serialize()
	if err != nil {
		return "", fmt.Errorf("signing a token: %w", err)
	}
	return tok, nil
}

// userinfo answers the claims of the access token it was sent (one this
// issuer signed and that has not expired): what a client such as
// Backstage's OIDC provider reads the person's profile from.
func (i *Issuer) userinfo(w http.ResponseWriter, r *http.Request) {
	raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.RS256})
	claims := map[string]any{}
	var std jwt.Claims
	if ok && err == nil {
		err = tok.Claims(&i.key.PublicKey, &claims, &std)
	}
	if !ok || err != nil || std.Expiry == nil || time.Now().After(std.Expiry.Time()) {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		http.Error(w, "the access token is missing, not this issuer's, or expired", http.StatusUnauthorized)
		return
	}
	info := map[string]any{"sub": claims["sub"], "email": claims["email"], "email_verified": claims["email_verified"], "groups": claims["groups"]}
	if email, _ := claims["email"].(string); email != "" {
		info["name"], _, _ = strings.Cut(email, "@")
	}
	writeJSON(w, info)
}

// Close stops serving.
func (i *Issuer) Close() error { return i.srv.Close() }
