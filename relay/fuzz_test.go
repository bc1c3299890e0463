package relay

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/tower-dev/breakglass/relay/api"
)

// FuzzTokenClaims: whatever claims a correctly signed token carries, the
// relay names a person from its issuer and subject, or refuses it saying
// why; never a caller without an identity or a name.
func FuzzTokenClaims(f *testing.F) {
	for _, seed := range []string{
		`{"sub":"alice","email":"alice@example.com","email_verified":true,"groups":["sre"]}`,
		`{"sub":"alice","email":"alice@example.com","email_verified":"true","groups":"sre"}`,
		`{"sub":"","email":"alice@example.com","email_verified":true}`, `{"sub":"alice","email":"alice@example.com"}`,
		`{"sub":"alice","email":"ALICE@example.com","email_verified":true,"groups":[1,2]}`, `{"sub":"alice","email":7,"email_verified":true}`,
		`{"sub":"alice","email":"a@example.com","email_verified":true,"groups":null,"aud":["other"]}`,
	} {
		f.Add([]byte(seed))
	}
	a, signer := testAuthenticator(f)
	const issuer = testIssuer
	f.Fuzz(func(t *testing.T, raw []byte) {
		claims := map[string]any{}
		// JSON null leaves no map to add the token's own claims to.
		if json.Unmarshal(raw, &claims) != nil || claims == nil {
			return
		}
		// The fuzzer picks the claims that name the person; the token is
		// otherwise valid, unless it overrides these too.
		for k, v := range map[string]any{"iss": issuer, "aud": "tower", "exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix()} {
			if _, ok := claims[k]; !ok {
				claims[k] = v
			}
		}
		tok, err := jwt.Signed(signer).Claims(claims).Serialize()
		if err != nil {
			return
		}
		c, err := a.Verify(context.Background(), tok)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "unauthenticated: ") {
				t.Fatalf("a refusal that does not say unauthenticated: %v", err)
			}
			return
		}
		sub, _ := claims["sub"].(string)
		email, _ := claims["email"].(string)
		if sub == "" || c.ID != api.IdentityOf(issuer, sub) || c.Name == "" || c.Name != email {
			t.Fatalf("claims %s made caller %+v", raw, c)
		}
		if v := claims["email_verified"]; v != true && v != "true" {
			t.Fatalf("an unverified email was accepted: %s", raw)
		}
	})
}

// FuzzConfig: a relay config is refused with what is wrong, or is one the
// relay can run safely (a Flight cluster always needs approval, every
// cluster has a pinned image, there is a store).
func FuzzConfig(f *testing.F) {
	f.Add([]byte(goodConfig))
	f.Add([]byte(goodConfig + "console: {url: \"http://relay.example.com\"}\n"))
	f.Add([]byte(strings.Replace(goodConfig, "tier: flight", "tier: flight, requireApproval: false", 1)))
	f.Add([]byte("listen: 1\n"))
	f.Add([]byte("clusters: [{name: a, tier: ground}]\nlimits: {idle: -1s}\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := ParseConfig(raw)
		if err != nil {
			return
		}
		if len(c.Clusters) == 0 || (c.Recording.Dir == "") == (c.Recording.S3 == nil) || c.OIDC.Audience == "" {
			t.Fatalf("accepted a config that cannot run: %s", raw)
		}
		for _, cl := range c.Clusters {
			if cl.DebugImage == "" || (cl.Tier == Flight && !cl.NeedsApproval()) {
				t.Fatalf("accepted an unsafe cluster %+v", cl)
			}
		}
		if c.Limits.Heartbeat.Duration >= c.Limits.Disconnect.Duration {
			t.Fatalf("accepted limits %+v", c.Limits)
		}
	})
}
