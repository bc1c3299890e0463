package webhook

import (
	"strings"
	"testing"
)

// FuzzConfig: a policy file is refused with the field that is wrong, or
// every policy in it names one way to verify, and each repository it names
// is covered by a policy that verifies it (an exact one before a prefix).
func FuzzConfig(f *testing.F) {
	for _, seed := range []string{
		"policies:\n- {name: debug, repository: registry.example/breakglass/debug, key: /etc/keys/cosign.pub}\n",
		"policies:\n- {name: all, repository: \"registry.example/breakglass/*\", keyless: {issuer: https://token.actions.githubusercontent.com, subject: x, roots: r.pem, rekorPublicKey: k.pem}}\n",
		"policies:\n- {name: a, repository: \"r.example/*\", key: k}\n- {name: b, repository: r.example/x, key: k2}\n",
		"policies: []\n", "policies:\n- {name: a, repository: \"r.example/x:tag\", key: k}\n", "policies:\n- {name: a, repository: \"*\", key: k}\n",
		"policies:\n- {name: a, repository: r.example/x, key: k, keyless: {issuer: i}}\n", "policies: {a: 1}\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data)
		if err != nil {
			return
		}
		for _, p := range c.Policies {
			if (p.Key == "") == (p.Keyless == nil) {
				t.Fatalf("policy %q verifies with neither or both", p.Name)
			}
			repo := strings.TrimSuffix(p.Repository, "*") + "debug"
			if !strings.HasSuffix(p.Repository, "*") {
				repo = p.Repository
			}
			got, ok := c.For(repo)
			if !ok {
				t.Fatalf("no policy covers %q, which %q names", repo, p.Name)
			}
			if got.Repository != repo && !strings.HasSuffix(got.Repository, "*") {
				t.Fatalf("%q is covered by %q", repo, got.Repository)
			}
		}
	})
}
