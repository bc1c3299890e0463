package oidcissuer

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

const callback = "http://127.0.0.1:1/callback"

func flowIssuer(t *testing.T) (*Issuer, oauth2.Config) {
	t.Helper()
	iss, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = iss.Close() })
	iss.AddClient("tower", callback)
	iss.AddPerson("alice", Person{Email: "alice@example.com", Groups: []string{"shop-owners"}})
	return iss, oauth2.Config{ClientID: "tower", RedirectURL: callback, Scopes: []string{oidc.ScopeOpenID, "email", "groups"},
		Endpoint: oauth2.Endpoint{AuthURL: iss.URL + "/auth", TokenURL: iss.URL + "/token", AuthStyle: oauth2.AuthStyleInParams}}
}

// signIn is SignIn in a test.
func signIn(t *testing.T, authURL, username string) *url.URL {
	t.Helper()
	back, err := SignIn(authURL, username)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

// TestCodeFlowWithPKCE: as the console and the CLI will use it, through
// golang.org/x/oauth2 and go-oidc: a code for alice, exchanged with the
// verifier for an ID token the issuer's keys verify (with the nonce), then
// refreshed; a used code, a wrong verifier and a used refresh token are
// refused.
func TestCodeFlowWithPKCE(t *testing.T) {
	ctx := context.Background()
	iss, conf := flowIssuer(t)
	verifier := oauth2.GenerateVerifier()
	back := signIn(t, conf.AuthCodeURL("state-1", oauth2.S256ChallengeOption(verifier), oidc.Nonce("nonce-1")), "alice")
	if back.Query().Get("state") != "state-1" || !strings.HasPrefix(back.String(), callback+"?") {
		t.Fatalf("sent back to %s", back)
	}
	code := back.Query().Get("code")
	if _, err := conf.Exchange(ctx, code, oauth2.VerifierOption(oauth2.GenerateVerifier())); !isGrantError(err) {
		t.Fatalf("a wrong verifier: %v", err)
	}
	// The failed exchange used the code up: a code is tried once.
	if _, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier)); !isGrantError(err) {
		t.Fatalf("a used code: %v", err)
	}

	back = signIn(t, conf.AuthCodeURL("state-2", oauth2.S256ChallengeOption(verifier), oidc.Nonce("nonce-2")), "alice")
	tok, err := conf.Exchange(ctx, back.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	provider, err := oidc.NewProvider(ctx, iss.URL)
	if err != nil {
		t.Fatal(err)
	}
	verify := provider.Verifier(&oidc.Config{ClientID: "tower"})
	raw, _ := tok.Extra("id_token").(string)
	idt, err := verify.Verify(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	// The userinfo endpoint (Backstage's OIDC provider reads the profile
	// there) answers for the access token, and for no made-up one.
	info, err := provider.UserInfo(ctx, oauth2.StaticTokenSource(tok))
	if err != nil || info.Email != "alice@example.com" || info.Subject != "alice@example.com" {
		t.Fatalf("userinfo: %+v %v", info, err)
	}
	if _, err := provider.UserInfo(ctx, oauth2.StaticTokenSource(&oauth2.Token{AccessToken: raw + "x"})); err == nil {
		t.Fatal("userinfo answered a token whose signature is wrong")
	}
	var claims struct {
		Email  string   `json:"email"`
		Groups []string `json:"groups"`
	}
	if err := idt.Claims(&claims); err != nil || claims.Email != "alice@example.com" || idt.Nonce != "nonce-2" || len(claims.Groups) != 1 {
		t.Fatalf("the ID token: %+v nonce %q %v", claims, idt.Nonce, err)
	}

	refreshed, err := conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if err != nil {
		t.Fatal(err)
	}
	if raw, _ := refreshed.Extra("id_token").(string); raw == "" || refreshed.RefreshToken == tok.RefreshToken {
		t.Fatalf("the refresh gave no new ID token or kept the refresh token")
	} else if _, err := verify.Verify(ctx, raw); err != nil {
		t.Fatal(err)
	}
	if _, err := conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token(); !isGrantError(err) {
		t.Fatalf("a used refresh token: %v", err)
	}
}

// TestAuthRequestRefusals: what the sign-in page refuses, answering the
// browser itself rather than redirecting to an address it cannot trust.
func TestAuthRequestRefusals(t *testing.T) {
	_, conf := flowIssuer(t)
	verifier := oauth2.GenerateVerifier()
	other := conf
	other.RedirectURL = "http://evil.example/callback"
	unknown := conf
	unknown.ClientID = "mallory"
	for name, tc := range map[string]struct{ url, want string }{
		"no PKCE":           {conf.AuthCodeURL("s"), "PKCE is required"},
		"plain PKCE":        {conf.AuthCodeURL("s", oauth2.SetAuthURLParam("code_challenge", strings.Repeat("a", 43)), oauth2.SetAuthURLParam("code_challenge_method", "plain")), "PKCE is required"},
		"another redirect":  {other.AuthCodeURL("s", oauth2.S256ChallengeOption(verifier)), "redirect_uri is not registered"},
		"an unknown client": {unknown.AuthCodeURL("s", oauth2.S256ChallengeOption(verifier)), "unknown client_id"},
	} {
		resp, err := noRedirects.Get(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), tc.want) || resp.Header.Get("Location") != "" {
			t.Errorf("%s: %s %q, want 400 saying %q", name, resp.Status, body, tc.want)
		}
	}
}

func isGrantError(err error) bool {
	var re *oauth2.RetrieveError
	return errors.As(err, &re) && re.ErrorCode == "invalid_grant"
}
