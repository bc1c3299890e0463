package oidcissuer

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// TestLoopbackRedirectAnyPort: a CLI registered with a loopback redirect
// without a port may come back on any port of that address and path (RFC
// 8252), and on nothing else.
func TestLoopbackRedirectAnyPort(t *testing.T) {
	registered := []string{"http://127.0.0.1/callback", "https://tower.example/callback"}
	for uri, want := range map[string]bool{
		"http://127.0.0.1:41234/callback":        true,
		"https://tower.example/callback":         true,
		"http://127.0.0.1:41234/other":           false,
		"http://127.0.0.2:41234/callback":        false,
		"http://localhost:41234/callback":        false,
		"https://127.0.0.1:41234/callback":       false,
		"http://127.0.0.1:41234/callback?x=1":    false,
		"http://u@127.0.0.1:41234/callback":      false,
		"https://tower.example:8443/callback":    false,
		"http://127.0.0.1.evil.example/callback": false,
	} {
		if got := redirectAllowed(registered, uri); got != want {
			t.Errorf("%s: allowed %t, want %t", uri, got, want)
		}
	}
}

// TestDeviceFlow: as the CLI uses it through golang.org/x/oauth2: pending
// until alice enters the code, then an ID token for her; a refusal and a
// code for another client are errors the CLI can name.
func TestDeviceFlow(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	iss, conf := flowIssuer(t)
	provider, err := oidc.NewProvider(ctx, iss.URL)
	if err != nil {
		t.Fatal(err)
	}
	conf.Endpoint = provider.Endpoint()
	if conf.Endpoint.DeviceAuthURL == "" {
		t.Fatal("discovery names no device_authorization_endpoint")
	}
	da, err := conf.DeviceAuth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(da.UserCode) != 9 || da.VerificationURI != iss.URL+"/device" || !strings.Contains(da.VerificationURIComplete, da.UserCode) {
		t.Fatalf("the device authorization: %+v", da)
	}
	if err := SignInDevice(da.VerificationURI, "WRONG-CODE", "alice"); err == nil {
		t.Fatal("a wrong user code signed a device in")
	}
	go func() {
		time.Sleep(1500 * time.Millisecond) // the CLI polls at least once while pending
		if err := SignInDevice(da.VerificationURI, strings.ToLower(da.UserCode), "alice"); err != nil {
			t.Error(err)
		}
	}()
	tok, err := conf.DeviceAccessToken(ctx, da)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, err := provider.Verifier(&oidc.Config{ClientID: "tower"}).Verify(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	var claims struct{ Email string }
	if err := idt.Claims(&claims); err != nil || claims.Email != "alice@example.com" || tok.RefreshToken == "" {
		t.Fatalf("the ID token: %+v %v, refresh token %q", claims, err, tok.RefreshToken)
	}
	// The code is used up.
	if _, err := conf.DeviceAccessToken(ctx, da); !isGrantError(err) {
		t.Fatalf("a used device code: %v", err)
	}

	refused, err := conf.DeviceAuth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := SignInDevice(refused.VerificationURI, refused.UserCode, ""); err != nil {
		t.Fatal(err)
	}
	var re *oauth2.RetrieveError
	if _, err := conf.DeviceAccessToken(ctx, refused); !errors.As(err, &re) || re.ErrorCode != "access_denied" {
		t.Fatalf("a refused device: %v", err)
	}

	unknown := conf
	unknown.ClientID = "mallory"
	if _, err := unknown.DeviceAuth(ctx); err == nil {
		t.Fatal("an unknown client started a device flow")
	}
}
