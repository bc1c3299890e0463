package relay

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/tower-dev/breakglass/relay/api"
	"github.com/tower-dev/breakglass/relay/wire"
)

// Authenticator verifies OIDC bearer tokens against the issuer's key set.
type Authenticator struct {
	verifier *oidc.IDTokenVerifier
	// audiences are the client IDs a token may be issued for: the relay's
	// own and its portals'.
	audiences     []string
	usernameClaim string
	groupsClaim   string
}

// NewAuthenticator discovers the issuer. ctx lives as long as the
// authenticator: the key set is refreshed with it when keys rotate.
func NewAuthenticator(ctx context.Context, c OIDC, hc *http.Client) (*Authenticator, error) {
	if hc != nil {
		ctx = oidc.ClientContext(ctx, hc)
	}
	provider, err := oidc.NewProvider(ctx, c.Issuer)
	if err != nil {
		return nil, fmt.Errorf("oidc issuer %s: %w", c.Issuer, err)
	}
	return &Authenticator{
		// The audience is checked below, against the relay's client ID and
		// its portals': go-oidc checks only one.
		verifier:      provider.Verifier(&oidc.Config{SkipClientIDCheck: true}),
		audiences:     append([]string{c.Audience}, c.PortalAudiences...),
		usernameClaim: c.UsernameClaim,
		groupsClaim:   c.GroupsClaim,
	}, nil
}

// errUnauthenticated wraps every token failure; the message says what was
// wrong with the token, never the token.
var errUnauthenticated = errors.New("unauthenticated")

// Verify checks a raw token: signature, issuer, audience, expiry, and the
// claims that name the person.
func (a *Authenticator) Verify(ctx context.Context, raw string) (api.Caller, error) {
	tok, err := a.verifier.Verify(ctx, raw)
	if err != nil {
		return api.Caller{}, fmt.Errorf("%w: %w", errUnauthenticated, err)
	}
	if !slices.ContainsFunc(tok.Audience, func(aud string) bool { return slices.Contains(a.audiences, aud) }) {
		return api.Caller{}, fmt.Errorf("%w: the token's audience is %q, not this relay or one of its portals (%s)",
			errUnauthenticated, tok.Audience, strings.Join(a.audiences, ", "))
	}
	claims := map[string]any{}
	if err := tok.Claims(&claims); err != nil {
		return api.Caller{}, fmt.Errorf("%w: the token's claims: %w", errUnauthenticated, err)
	}
	// Go's JSON decoding matches keys without regard to case, so "SUB"
	// beside or instead of "sub" could name one person to the verifier
	// and another here (an IdP that lets someone shape a claim's name):
	// a token whose claims differ from one the relay reads only by case is
	// refused, and the subject is the exact "sub" (found by FuzzTokenClaims).
	// A token for several audiences is the relay's only if the party it
	// was issued to (azp) is one the relay accepts: an IdP may add other
	// audiences to a token it gives a third party.
	if len(tok.Audience) > 1 {
		if azp, _ := claims["azp"].(string); !slices.Contains(a.audiences, azp) {
			return api.Caller{}, fmt.Errorf("%w: the token is for several audiences and was issued to %q, not to this relay or one of its portals", errUnauthenticated, azp)
		}
	}
	for k := range claims {
		for _, want := range []string{"iss", "sub", "aud", "azp", "exp", "nbf", "iat", "nonce", "email", "email_verified", a.usernameClaim, a.groupsClaim} {
			if k != want && strings.EqualFold(k, want) {
				return api.Caller{}, fmt.Errorf("%w: the token has a claim %q that differs from %q only by case: refused as ambiguous", errUnauthenticated, k, want)
			}
		}
	}
	if sub, _ := claims["sub"].(string); sub == "" || sub != tok.Subject {
		return api.Caller{}, fmt.Errorf("%w: the token has no subject: nothing says who the person is", errUnauthenticated)
	}
	name, _ := claims[a.usernameClaim].(string)
	if name == "" {
		return api.Caller{}, fmt.Errorf("%w: the token has no %q claim naming the person", errUnauthenticated, a.usernameClaim)
	}
	// An address shown to people and sent notifications must be the
	// person's: the issuer must say it verified it.
	if a.usernameClaim == "email" {
		// Some providers send the boolean as a string.
		if v := claims["email_verified"]; v != true && v != "true" {
			return api.Caller{}, fmt.Errorf("%w: the token's email is not verified (email_verified is not true)", errUnauthenticated)
		}
	}
	c := api.Caller{ID: api.IdentityOf(tok.Issuer, tok.Subject), Name: name, Expires: tok.Expiry}
	switch groups := claims[a.groupsClaim].(type) {
	case nil:
	case []any:
		for _, g := range groups {
			s, ok := g.(string)
			if !ok {
				return api.Caller{}, fmt.Errorf("%w: the %q claim is not a list of strings", errUnauthenticated, a.groupsClaim)
			}
			c.Groups = append(c.Groups, s)
		}
	default:
		return api.Caller{}, fmt.Errorf("%w: the %q claim is not a list of strings", errUnauthenticated, a.groupsClaim)
	}
	return c, nil
}

// bearer takes the token from the Authorization header or, for a
// WebSocket, from its subprotocols.
func bearer(r *http.Request) (string, error) {
	if h := r.Header.Get("Authorization"); h != "" {
		tok, ok := strings.CutPrefix(h, "Bearer ")
		if !ok || tok == "" {
			return "", fmt.Errorf("%w: the Authorization header is not \"Bearer <token>\"", errUnauthenticated)
		}
		return tok, nil
	}
	for _, p := range websocketProtocols(r) {
		if tok, ok := strings.CutPrefix(p, wire.BearerProtocolPrefix); ok && tok != "" {
			return tok, nil
		}
	}
	return "", errNoBearer
}

var errNoBearer = fmt.Errorf("%w: no bearer token", errUnauthenticated)

func websocketProtocols(r *http.Request) []string {
	var out []string
	for _, h := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(h, ",") {
			out = append(out, strings.TrimSpace(p))
		}
	}
	return out
}
