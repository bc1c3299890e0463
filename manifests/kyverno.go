package manifests

import (
	"fmt"
	"os"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/webhook"
)

// KyvernoImagePolicyName is the ImageValidatingPolicy Kyverno renders.
const KyvernoImagePolicyName = "breakglass-debug-image-signatures"

// Kyverno is what a site that already runs Kyverno installs to have it do
// the two jobs the spec leaves to a slim Kyverno, equivalent to the plane's
// own sweeper and signature webhook:
//   - the grants' TTL: grants already carry Kyverno's cleanup.kyverno.io/ttl
//     label; its cleanup controller gets the right to delete RoleBindings
//     (an aggregated ClusterRole: RBAC cannot narrow it to labelled ones);
//   - the debug image's signature: an ImageValidatingPolicy that looks only
//     at breakglass- containers (and a held copy's hold volume), failing
//     closed, with one attestor per webhook policy and the webhook's choice
//     of policy for each repository (an exact repository first, then the
//     longest prefix). It takes cosign v3's Sigstore bundles only: it asks
//     for cosign's signature predicate, which Kyverno needs to tell a
//     signature from any other attestation by the key, and which the older
//     .sig layout does not carry.
func Kyverno(cfg webhook.Config) ([]runtime.Object, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	policy, err := kyvernoImagePolicy(cfg)
	if err != nil {
		return nil, err
	}
	cleanup := clusterRole("breakglass:kyverno-cleanup-grants", []rbacv1.PolicyRule{{APIGroups: []string{"rbac.authorization.k8s.io"},
		Resources: []string{"rolebindings"}, Verbs: []string{"get", "list", "watch", "delete"}}})
	cleanup.Labels["rbac.kyverno.io/aggregate-to-cleanup-controller"] = "true"
	return []runtime.Object{cleanup, policy}, nil
}

func kyvernoImagePolicy(cfg webhook.Config) (*unstructured.Unstructured, error) {
	var attestors []any
	for i, p := range cfg.Policies {
		if onDockerHub(p.Repository) {
			// Image references name Docker Hub in several spellings; Kyverno
			// compares the pod's as written, the webhook as normalized.
			return nil, fmt.Errorf("policy %s: repository %q is on Docker Hub, whose images a pod names in several spellings: host the debug image in a registry named by its host", p.Name, p.Repository)
		}
		a, err := kyvernoAttestor(p, attestorName(i))
		if err != nil {
			return nil, fmt.Errorf("policy %s: %w", p.Name, err)
		}
		attestors = append(attestors, a)
	}
	covered := make([]string, 0, len(cfg.Policies))
	for _, p := range cfg.Policies {
		covered = append(covered, repositoryMatch(p.Repository))
	}
	validations := []any{
		map[string]any{"expression": debugList + `.all(i, i.matches('^[^@]+@sha256:[a-f0-9]{64}$'))`,
			"message": "[kyverno.signature] a debug image must be pinned by digest: REPOSITORY@sha256:<digest>"},
		map[string]any{"expression": fmt.Sprintf("%s.all(i, %s)", debugList, strings.Join(covered, " || ")),
			"message": "[kyverno.signature] no signature policy covers the debug image's repository"},
	}
	for i, p := range cfg.Policies {
		validations = append(validations, map[string]any{
			"expression": fmt.Sprintf("%s.all(i, !(%s) || verifyAttestationSignatures(i, attestations.signature, [attestors.%s]) > 0)", debugList, chosen(cfg, i), attestorName(i)),
			"message":    fmt.Sprintf("[kyverno.signature] the debug image must be signed as policy %s says", p.Name),
		})
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "policies.kyverno.io/v1",
		"kind":       "ImageValidatingPolicy",
		"metadata":   map[string]any{"name": KyvernoImagePolicyName, "labels": stringMap(partOf)},
		"spec": map[string]any{
			// Fail closed: with Kyverno down, no debug container starts.
			"failurePolicy":     "Fail",
			"validationActions": []any{"Deny"},
			"matchConstraints": map[string]any{"resourceRules": []any{
				map[string]any{"apiGroups": []any{""}, "apiVersions": []any{"v1"}, "operations": []any{"CREATE"}, "resources": []any{"pods"}},
				map[string]any{"apiGroups": []any{""}, "apiVersions": []any{"v1"}, "operations": []any{"UPDATE"}, "resources": []any{"pods/ephemeralcontainers"}},
			}},
			"matchConditions": []any{map[string]any{"name": "carries-a-debug-container", "expression": carriesDebugContainer}},
			// Every image is in reach of the verification functions; which
			// ones are checked, and how, is the validations' choice.
			"matchImageReferences":     []any{map[string]any{"glob": "*"}},
			"validationConfigurations": map[string]any{"mutateDigest": false, "verifyDigest": false, "required": false},
			"images":                   debugImageExtractors(),
			"attestors":                attestors,
			// What `cosign sign` makes: a statement with cosign's signature
			// predicate. Kyverno reads any attestation by the key as a
			// signature once an image has Sigstore bundles; asking for this
			// predicate keeps an SBOM or a scan result from passing for one.
			"attestations": []any{map[string]any{"name": "signature", "intoto": map[string]any{"type": "https://sigstore.dev/cosign/sign/v1"}}},
			"validations":  validations,
		},
	}}
	return u, nil
}

// debugList is every image the webhook would check, as the policy's
// extractors list them.
const debugList = "(images.containers + images.initContainers + images.ephemeralContainers + images.hold)"

// debugImageExtractors list the images the webhook checks, as it does:
// breakglass- containers on a create, the ephemeral ones an update adds,
// and a held copy's hold volume (it runs the debug image's sleep in every
// app container). They take the names of Kyverno's own pod extractors,
// which they replace, so Kyverno never fetches the app's images (from
// registries it may not reach), and an image is listed once where it can
// be: Kyverno 1.19.1's image loader leaks a read lock on an image it has
// already loaded, and deadlocks when a new one follows.
func debugImageExtractors() []any {
	debug := func(list string) string {
		return fmt.Sprintf("has(object.spec.%[1]s) ? object.spec.%[1]s.filter(c, c.name.startsWith('%[2]s')).map(c, c.image) : []",
			list, v1alpha1.DebugContainerPrefix)
	}
	added := fmt.Sprintf(`has(object.spec.ephemeralContainers) ? object.spec.ephemeralContainers.filter(c, c.name.startsWith('%s') &&
  !(oldObject != null && has(oldObject.spec.ephemeralContainers) && oldObject.spec.ephemeralContainers.exists(o, o.name == c.name))).map(c, c.image) : []`,
		v1alpha1.DebugContainerPrefix)
	hold := fmt.Sprintf("has(object.spec.volumes) ? object.spec.volumes.filter(v, v.name == '%s' && has(v.image)).map(v, v.image.reference) : []", v1alpha1.HoldVolume)
	return []any{
		map[string]any{"name": "containers", "expression": debug("containers")},
		map[string]any{"name": "initContainers", "expression": debug("initContainers")},
		map[string]any{"name": "ephemeralContainers", "expression": added},
		map[string]any{"name": "hold", "expression": hold},
	}
}

// kyvernoAttestor is a webhook policy's key or identity as a cosign
// attestor. Kyverno takes keys inline or from a KMS, and keyless roots and
// the log's key inline: the files are read now.
func kyvernoAttestor(p webhook.ImagePolicy, name string) (map[string]any, error) {
	cosign := map[string]any{}
	switch {
	case p.Key != "" && strings.Contains(p.Key, "://") && !strings.HasPrefix(p.Key, "k8s://"):
		cosign["key"] = map[string]any{"kms": p.Key}
		cosign["ctlog"] = map[string]any{"insecureIgnoreTlog": true, "insecureIgnoreSCT": true}
	case strings.HasPrefix(p.Key, "k8s://"):
		return nil, fmt.Errorf("key %s: Kyverno takes a PEM file or a KMS URI here, not a Kubernetes Secret", p.Key)
	case p.Key != "":
		pem, err := os.ReadFile(p.Key)
		if err != nil {
			return nil, fmt.Errorf("key: %w", err)
		}
		cosign["key"] = map[string]any{"data": string(pem)}
		// The key is the trust, as in the webhook: no log is required.
		cosign["ctlog"] = map[string]any{"insecureIgnoreTlog": true, "insecureIgnoreSCT": true}
	case p.Keyless.TrustedRoot != "":
		return nil, fmt.Errorf("keyless.trustedRoot: give roots and rekorPublicKey for Kyverno")
	default:
		roots, err := os.ReadFile(p.Keyless.Roots)
		if err != nil {
			return nil, fmt.Errorf("keyless.roots: %w", err)
		}
		rekor, err := os.ReadFile(p.Keyless.RekorPublicKey)
		if err != nil {
			return nil, fmt.Errorf("keyless.rekorPublicKey: %w", err)
		}
		identity := map[string]any{"issuer": p.Keyless.Issuer}
		if p.Keyless.Subject != "" {
			identity["subject"] = p.Keyless.Subject
		} else {
			identity["subjectRegExp"] = p.Keyless.SubjectRegExp
		}
		cosign["keyless"] = map[string]any{"identities": []any{identity}, "roots": string(roots)}
		// A private CA logs no certificate in a CT log: no SCT to require.
		cosign["ctlog"] = map[string]any{"rekorPubKey": string(rekor), "insecureIgnoreSCT": true}
	}
	return map[string]any{"name": name, "cosign": cosign}, nil
}

// onDockerHub: the repository is Docker Hub's (Config.Check has made sure
// it names a host, and spells Docker Hub index.docker.io).
func onDockerHub(repository string) bool {
	return strings.HasPrefix(repository, "index.docker.io/")
}

// attestorName names the attestor of the i-th policy (its place, not its
// name, which need not be a CEL identifier).
func attestorName(i int) string { return fmt.Sprintf("policy%d", i) }

// repositoryMatch is CEL true when the image i is in the repository, or
// under the prefix, a policy names: REPOSITORY@digest, or
// REPOSITORY:tag@digest. (Config.Check holds repositories to the
// characters of image references: no quote reaches the CEL.)
func repositoryMatch(repository string) string {
	if prefix, ok := strings.CutSuffix(repository, "*"); ok {
		return fmt.Sprintf("i.startsWith('%s')", prefix)
	}
	return fmt.Sprintf("(i.startsWith('%[1]s@') || i.startsWith('%[1]s:'))", repository)
}

// chosen is CEL true when the webhook would check image i with policy n:
// it matches n, and no policy the webhook prefers (an exact repository over
// a prefix, a longer prefix over a shorter one, the first of equals).
func chosen(cfg webhook.Config, n int) string {
	p := cfg.Policies[n]
	exact := !strings.HasSuffix(p.Repository, "*")
	var better []string
	for i, q := range cfg.Policies {
		qExact := !strings.HasSuffix(q.Repository, "*")
		switch {
		case i == n:
		case qExact && !exact, qExact == exact && !exact && len(q.Repository) > len(p.Repository),
			qExact == exact && q.Repository == p.Repository && i < n:
			better = append(better, repositoryMatch(q.Repository))
		}
	}
	sort.Strings(better)
	if len(better) == 0 {
		return repositoryMatch(p.Repository)
	}
	return fmt.Sprintf("%s && !(%s)", repositoryMatch(p.Repository), strings.Join(better, " || "))
}

func stringMap(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}
