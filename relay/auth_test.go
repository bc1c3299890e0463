package relay

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/tower-dev/breakglass/relay/api"
)

// TestClaimsThatDifferOnlyByCaseAreRefused: Go's JSON decoding matches
// keys without regard to case, so a token carrying "SUB" (or "Email") as
// well as, or instead of, the claim could name one person to the
// verifier and another to the relay. Such a token is refused.
func TestClaimsThatDifferOnlyByCaseAreRefused(t *testing.T) {
	a, signer := testAuthenticator(t)
	sign := func(extra map[string]any) string {
		claims := map[string]any{"iss": testIssuer, "aud": "tower", "exp": time.Now().Add(time.Hour).Unix(),
			"sub": "alice-1", "email": "alice@example.com", "email_verified": true}
		for k, v := range extra {
			claims[k] = v
		}
		tok, err := jwt.Signed(signer).Claims(claims).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	if c, err := a.Verify(context.Background(), sign(nil)); err != nil || c.ID != api.IdentityOf(testIssuer, "alice-1") {
		t.Fatalf("a plain token: %+v %v", c, err)
	}
	for name, extra := range map[string]map[string]any{
		"SUB beside sub":       {"SUB": "bob-1"},
		"Email beside email":   {"Email": "bob@example.com"},
		"Groups beside groups": {"groups": []string{"shop-owners"}, "Groups": []string{"sre"}},
		"ISS beside iss":       {"ISS": "https://evil.example"},
	} {
		_, err := a.Verify(context.Background(), sign(extra))
		if err == nil || !strings.Contains(err.Error(), "only by case") {
			t.Errorf("%s: %v, want refused as ambiguous", name, err)
		}
	}
}

// testIssuer is the issuer testAuthenticator trusts.
const testIssuer = "https://idp.example.com"

// TestPortalsForwardThePersonsOwnIdentity: a token the issuer gave a person
// for a portal's client (Backstage) names the same person as one for the
// relay's own, so separation of duty holds across both; a token for any
// other client is refused.
func TestPortalsForwardThePersonsOwnIdentity(t *testing.T) {
	a, signer := testAuthenticator(t)
	sign := func(aud any) string {
		tok, err := jwt.Signed(signer).Claims(map[string]any{"iss": testIssuer, "aud": aud, "exp": time.Now().Add(time.Hour).Unix(),
			"sub": "alice-1", "email": "alice@example.com", "email_verified": true}).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	own, err := a.Verify(context.Background(), sign("tower"))
	if err != nil {
		t.Fatal(err)
	}
	portal, err := a.Verify(context.Background(), sign("backstage"))
	if err != nil || portal.ID != own.ID {
		t.Fatalf("the portal's token names %+v (%v), the relay's %+v: want the same person", portal, err, own)
	}
	// Several audiences: the party it was issued to decides.
	if _, err := a.Verify(context.Background(), signAzp(t, signer, []string{"backstage", "grafana"}, "backstage")); err != nil {
		t.Errorf("a token for backstage and grafana, issued to backstage: %v", err)
	}
	for _, azp := range []string{"grafana", ""} {
		if _, err := a.Verify(context.Background(), signAzp(t, signer, []string{"backstage", "grafana"}, azp)); err == nil || !strings.Contains(err.Error(), "issued to") {
			t.Errorf("a token for backstage and grafana, issued to %q: %v, want refused", azp, err)
		}
	}
	for _, aud := range []any{"grafana", []string{"grafana", "other"}, ""} {
		if _, err := a.Verify(context.Background(), sign(aud)); err == nil || !strings.Contains(err.Error(), "audience") {
			t.Errorf("a token for %v: %v, want refused", aud, err)
		}
	}
}

func signAzp(t *testing.T, signer jose.Signer, aud []string, azp string) string {
	t.Helper()
	claims := map[string]any{"iss": testIssuer, "aud": aud, "exp": time.Now().Add(time.Hour).Unix(),
		"sub": "alice-1", "email": "alice@example.com", "email_verified": true}
	if azp != "" {
		claims["azp"] = azp
	}
	tok, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// testAuthenticator is an Authenticator for client "tower" of testIssuer
// and its portal "backstage" (username from email, groups from groups) and
// the signer of its key.
func testAuthenticator(tb testing.TB) (*Authenticator, jose.Signer) {
	tb.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		tb.Fatal(err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return &Authenticator{usernameClaim: "email", groupsClaim: "groups", audiences: []string{"tower", "backstage"},
		verifier: oidc.NewVerifier(testIssuer, &oidc.StaticKeySet{PublicKeys: []crypto.PublicKey{&key.PublicKey}}, &oidc.Config{SkipClientIDCheck: true})}, signer
}
