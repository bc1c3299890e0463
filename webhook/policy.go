// Package webhook is the narrow admission webhook that adds what CEL cannot
// do: it checks the cosign signature of every break-glass debug image. The
// API server calls it only for requests that carry a breakglass- debug
// container (match conditions), so ordinary workloads never wait on it.
package webhook

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// ImagePolicy says how images of a repository are verified.
type ImagePolicy struct {
	// Name identifies the policy in messages and in the cache key.
	Name string `json:"name"`
	// Repository is a repository ("registry.example/breakglass/debug") or a
	// prefix ending in "/*" ("registry.example/breakglass/*").
	Repository string `json:"repository"`
	// Key is a cosign key reference: a PEM file, k8s://namespace/secret, or a
	// KMS URI (awskms://, gcpkms://, azurekms://, hashivault://).
	Key string `json:"key,omitempty"`
	// Keyless, instead of Key, accepts a signature by a short-lived
	// certificate (Fulcio's) for one OIDC identity, logged in Rekor.
	Keyless *Keyless `json:"keyless,omitempty"`
	// A signature is found in either layout cosign writes: a Sigstore bundle
	// attached as an OCI referrer (cosign v3's default) or the older
	// sha256-<digest>.sig tag. Either is enough.
}

// Keyless names who may sign, and what to trust to know it was them.
type Keyless struct {
	// Issuer is the OIDC issuer of the signer's identity, e.g.
	// https://token.actions.githubusercontent.com.
	Issuer string `json:"issuer"`
	// Subject is the identity (an email or a URI); SubjectRegExp matches one.
	Subject       string `json:"subject,omitempty"`
	SubjectRegExp string `json:"subjectRegExp,omitempty"`
	// TrustedRoot is a Sigstore trusted root file (trusted_root.json, as
	// `cosign trusted-root create` writes it or the public-good instance's
	// TUF repository serves it): the certificate authorities, the
	// transparency logs (Rekor v1 and v2), the timestamp authorities and the
	// certificate-transparency logs. When it names a CT log, the
	// certificate's SCT is required.
	TrustedRoot string `json:"trustedRoot,omitempty"`
	// Roots and RekorPublicKey are the older way to say the same, instead of
	// TrustedRoot: a PEM file of the certificate authority's root and
	// intermediates, and a PEM file of the transparency log's key.
	Roots          string `json:"roots,omitempty"`
	RekorPublicKey string `json:"rekorPublicKey,omitempty"`
}

// Config is the webhook's policy file.
type Config struct {
	Policies []ImagePolicy `json:"policies"`
}

// LoadConfig reads and checks a policy file.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, err
	}
	c, err := ParseConfig(data)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// ParseConfig is LoadConfig on the file's bytes.
func ParseConfig(data []byte) (Config, error) {
	var c Config
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return Config{}, err
	}
	if err := c.Check(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// repositoryChars are the characters of an image repository (registry host,
// port, path), and a trailing /* for a prefix.
var repositoryChars = regexp.MustCompile(`^[A-Za-z0-9._:/-]+(/\*)?$`)

// Check refuses a config that would verify nothing or be ambiguous.
func (c Config) Check() error {
	if len(c.Policies) == 0 {
		return fmt.Errorf("policies: none: every debug image would be refused")
	}
	names := map[string]bool{}
	for i, p := range c.Policies {
		switch {
		case p.Name == "":
			return fmt.Errorf("policies[%d].name: required", i)
		case names[p.Name]:
			return fmt.Errorf("policies[%d].name: %q used twice", i, p.Name)
		case !repositoryChars.MatchString(p.Repository) || strings.Contains(strings.TrimSuffix(p.Repository, "/*"), "*"):
			return fmt.Errorf("policies[%d].repository: %q must be a repository or a prefix ending in /*", i, p.Repository)
		case registryHost(p.Repository) == "docker.io":
			return fmt.Errorf("policies[%d].repository: %q: write Docker Hub as index.docker.io/..., as image references name it once parsed", i, p.Repository)
		case !strings.Contains(p.Repository, "/") || !strings.ContainsAny(registryHost(p.Repository), ".:") && registryHost(p.Repository) != "localhost":
			return fmt.Errorf("policies[%d].repository: %q names no registry host: write it as HOST/PATH (index.docker.io/... for Docker Hub)", i, p.Repository)
		case strings.ContainsAny(p.Repository, "@:") && !strings.Contains(strings.SplitN(p.Repository, "/", 2)[0], ":"):
			return fmt.Errorf("policies[%d].repository: %q names a tag or digest; name the repository only", i, p.Repository)
		case (p.Key == "") == (p.Keyless == nil):
			return fmt.Errorf("policies[%d]: exactly one of key (a key file, k8s://namespace/secret or a KMS URI) and keyless", i)
		case p.Keyless != nil && (p.Keyless.Issuer == "" || (p.Keyless.Subject == "") == (p.Keyless.SubjectRegExp == "")):
			return fmt.Errorf("policies[%d].keyless: an issuer and exactly one of subject and subjectRegExp", i)
		case p.Keyless != nil && (p.Keyless.TrustedRoot == "") == (p.Keyless.Roots == "" || p.Keyless.RekorPublicKey == ""):
			return fmt.Errorf("policies[%d].keyless: either trustedRoot (a Sigstore trusted root file) or roots and rekorPublicKey (PEM files) say whom to trust", i)
		case p.Keyless != nil && p.Keyless.TrustedRoot != "" && (p.Keyless.Roots != "" || p.Keyless.RekorPublicKey != ""):
			return fmt.Errorf("policies[%d].keyless: trustedRoot already names the roots and logs; drop roots and rekorPublicKey", i)
		}
		names[p.Name] = true
	}
	return nil
}

// registryHost is the first part of a repository: its registry.
func registryHost(repository string) string {
	host, _, _ := strings.Cut(repository, "/")
	return host
}

// For returns the policy that covers repository: an exact match first, then
// the longest prefix.
func (c Config) For(repository string) (ImagePolicy, bool) {
	best, found := ImagePolicy{}, false
	for _, p := range c.Policies {
		if p.Repository == repository {
			return p, true
		}
		if prefix, ok := strings.CutSuffix(p.Repository, "*"); ok && strings.HasPrefix(repository, prefix) &&
			(!found || len(p.Repository) > len(best.Repository)) {
			best, found = p, true
		}
	}
	return best, found
}
