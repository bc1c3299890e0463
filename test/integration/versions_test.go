package integration

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tower-dev/breakglass/localplane/tools"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/test/harness/prereq"
)

// TestTypeCheckedOnEveryVersion type-checks every policy as TestTypeChecked
// does, against the OpenAPI documents of each Kubernetes version the chart
// claims (make fetches them from each version's module into bin/openapi):
// the fields of a pod differ by version, and a rule that reaches one a
// version lacks carries a warning in that version's policy status. Only
// the built-in kinds are the version's; the Session's schema and the
// resources are this server's, and the CEL library is not at stake here
// (vap.Check compiles every expression in v1.30's, the smallest).
func TestTypeCheckedOnEveryVersion(t *testing.T) {
	prereq.Need(t, prereq.OpenAPISpecs)
	specs := claimedSpecs(t)
	for _, p := range policies.Profiles {
		live, err := discovery.NewDiscoveryClientForConfig(clusters[p].Config)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range specs {
			t.Run(fmt.Sprintf("%s/%s", p, v), func(t *testing.T) {
				typeCheckAll(t, typeChecker(versionDiscovery{live, filepath.Join(tools.OpenAPIDir(), v)}), p)
			})
		}
	}

	// The documents are each version's own: image volumes came in 1.31, so
	// a rule reaching v.image without dyn() warns on 1.30 alone.
	live, err := discovery.NewDiscoveryClientForConfig(clusters[policies.Flight].Config)
	if err != nil {
		t.Fatal(err)
	}
	probe := checkable(t, policies.Flight)
	i := slices.IndexFunc(probe, func(p *admissionregistrationv1.ValidatingAdmissionPolicy) bool {
		return p.Name == policies.CopyPodShape().Name
	})
	if i < 0 {
		t.Fatalf("no %s to probe with", policies.CopyPodShape().Name)
	}
	policy := probe[i].DeepCopy()
	policy.Spec.Validations = []admissionregistrationv1.Validation{{Expression: "object.spec.volumes.all(v, !has(v.image))"}}
	for _, v := range specs {
		warned := len(typeChecker(versionDiscovery{live, filepath.Join(tools.OpenAPIDir(), v)}).Check(policy)) > 0
		if want := minor(v) < 31; warned != want {
			t.Errorf("Kubernetes %s: a rule reaching a volume's image warned: %t, want %t", v, warned, want)
		}
	}
}

// claimedSpecs is the versions in bin/openapi, oldest first, once each
// has been checked to be there: one for every minor version from v1.30 on,
// with no gap, up to the newest.
func claimedSpecs(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(tools.OpenAPIDir())
	if err != nil {
		t.Fatal(err)
	}
	var versions []string
	for _, e := range entries {
		if _, err := version.ParseSemantic(e.Name()); err == nil && e.IsDir() {
			versions = append(versions, e.Name())
		}
	}
	slices.SortFunc(versions, func(a, b string) int { return cmp.Compare(minor(a), minor(b)) })
	if len(versions) == 0 || minor(versions[0]) != 30 {
		t.Fatalf("the OpenAPI documents in %s do not start at v1.30, the oldest the chart claims: %v", tools.OpenAPIDir(), versions)
	}
	for i := 1; i < len(versions); i++ {
		if minor(versions[i]) != minor(versions[i-1])+1 {
			t.Fatalf("the OpenAPI documents in %s skip a version between %s and %s", tools.OpenAPIDir(), versions[i-1], versions[i])
		}
	}
	return versions
}

func minor(v string) uint { return version.MustParseSemantic(v).Minor() }

// versionDiscovery is a discovery client whose OpenAPI v3 documents are
// one Kubernetes version's for the built-in groups (the files in dir), and
// the live server's for the plane's own group.
type versionDiscovery struct {
	discovery.DiscoveryInterface
	dir string
}

func (d versionDiscovery) OpenAPIV3() openapi.Client {
	return versionDocs{live: d.DiscoveryInterface.OpenAPIV3(), dir: d.dir}
}

type versionDocs struct {
	live openapi.Client
	dir  string
}

func (d versionDocs) Paths() (map[string]openapi.GroupVersion, error) {
	live, err := d.live.Paths()
	if err != nil {
		return nil, err
	}
	own := "apis/" + v1alpha1.GroupVersion.String()
	paths := map[string]openapi.GroupVersion{own: live[own]}
	if paths[own] == nil {
		return nil, fmt.Errorf("the live server serves no OpenAPI document for %s", own)
	}
	files, err := filepath.Glob(filepath.Join(d.dir, "*_openapi.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no OpenAPI documents in %s: make openapi-specs", d.dir)
	}
	for _, f := range files {
		// apis__rbac.authorization.k8s.io__v1_openapi.json serves apis/rbac.authorization.k8s.io/v1.
		path := strings.ReplaceAll(strings.TrimSuffix(filepath.Base(f), "_openapi.json"), "__", "/")
		paths[path] = document(f)
	}
	return paths, nil
}

// document is one group version's OpenAPI v3 document, in a file.
type document string

func (f document) Schema(contentType string) ([]byte, error) {
	if contentType != "application/json" {
		return nil, fmt.Errorf("%s is JSON, not %s", f, contentType)
	}
	return os.ReadFile(string(f))
}

func (f document) ServerRelativeURL() string { return "/openapi/v3/" + filepath.Base(string(f)) }
