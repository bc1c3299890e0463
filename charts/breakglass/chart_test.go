package chart_test

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"

	chart "github.com/tower-dev/breakglass/charts/breakglass"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const namespace = "breakglass-system"

var kube137 = &chartutil.KubeVersion{Version: "v1.37.2", Major: "1", Minor: "37"}

func valuesFile(t *testing.T, name string) map[string]any {
	t.Helper()
	v, err := chartutil.ReadValuesFile(filepath.Join("testdata", "values", name))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Render renders the chart as `helm template` would, in namespace ns.
func Render(values map[string]any, ns string) (string, error) {
	rel, err := install(values, ns)
	if err != nil {
		return "", err
	}
	return rel.Manifest, nil
}

// TestNotes: what helm prints after an install says what runs and what to
// do next, for every values file, with every value it names filled in.
func TestNotes(t *testing.T) {
	for _, f := range valueFiles {
		t.Run(f, func(t *testing.T) {
			rel, err := install(valuesFile(t, f), namespace)
			if err != nil {
				t.Fatal(err)
			}
			notes := rel.Info.Notes
			if !strings.Contains(notes, "Next:") || !strings.Contains(notes, "signature webhook") || strings.Contains(notes, "<no value>") {
				t.Fatalf("the notes:\n%s", notes)
			}
			if strings.Contains(notes, "held copy") {
				t.Fatalf("the notes on %s say held copies are refused:\n%s", kube137.Version, notes)
			}
		})
	}
	// The oldest version the chart claims has no image volumes: the notes
	// say the relay refuses held copies there.
	rel, err := installOn(valuesFile(t, valueFiles[0]), namespace, &chartutil.KubeVersion{Version: "v1.30.14", Major: "1", Minor: "30"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rel.Info.Notes, "a held copy mounts the debug image") || !strings.Contains(rel.Info.Notes, "1.35 or newer") {
		t.Fatalf("the notes on v1.30.14 do not say held copies need 1.35:\n%s", rel.Info.Notes)
	}
}

// install runs a client-only dry-run install on v1.37: the release, notes
// included.
func install(values map[string]any, ns string) (*release.Release, error) {
	return installOn(values, ns, kube137)
}

func installOn(values map[string]any, ns string, kube *chartutil.KubeVersion) (*release.Release, error) {
	return installWith(values, ns, kube, false)
}

// installWith is installOn, skipping the values schema when asked (helm
// install --skip-schema-validation).
func installWith(values map[string]any, ns string, kube *chartutil.KubeVersion, skipSchema bool) (*release.Release, error) {
	chrt, err := loader.Load(".")
	if err != nil {
		return nil, err
	}
	cfg := &action.Configuration{Releases: storage.Init(driver.NewMemory()), KubeClient: &kubefake.PrintingKubeClient{Out: io.Discard},
		Capabilities: chartutil.DefaultCapabilities, Log: func(string, ...any) {}}
	inst := action.NewInstall(cfg)
	inst.DryRun, inst.ClientOnly, inst.Replace = true, true, true
	inst.ReleaseName, inst.Namespace, inst.KubeVersion = "breakglass", ns, kube
	inst.IncludeCRDs, inst.SkipSchemaValidation = true, skipSchema
	return inst.Run(chrt, values)
}

var valueFiles = []string{"flight-defaults.yaml", "ground-cert-manager.yaml", "flight-with-relay.yaml"}

// TestLint: helm lint finds nothing to warn about, for every values file.
func TestLint(t *testing.T) {
	for _, f := range valueFiles {
		t.Run(f, func(t *testing.T) {
			linter := lint.AllWithKubeVersion(".", valuesFile(t, f), namespace, kube137)
			for _, m := range linter.Messages {
				if m.Severity >= support.WarningSev {
					t.Errorf("%s", m)
				}
			}
		})
	}
}

// TestGolden: the rendered chart for each values file is what was reviewed
// (go test ./charts/breakglass -update rewrites the golden files).
func TestGolden(t *testing.T) {
	for _, f := range valueFiles {
		t.Run(f, func(t *testing.T) {
			got, err := Render(valuesFile(t, f), namespace)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "golden", f)
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Fatalf("the chart renders differently from %s; run go test ./charts/breakglass -update and review the diff", golden)
			}
		})
	}
}

// TestHardenedPods: every workload the chart renders runs non-root, on a
// read-only root, without privilege escalation or capabilities, with
// requests and limits.
func TestHardenedPods(t *testing.T) {
	out, err := Render(valuesFile(t, "flight-with-relay.yaml"), namespace)
	if err != nil {
		t.Fatal(err)
	}
	workloads, err := chart.Workloads([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range workloads {
		ps := d.Spec.Template.Spec.SecurityContext
		if ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot || ps.SeccompProfile == nil {
			t.Errorf("%s: pod security context %+v", d.Metadata.Name, ps)
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			sc := c.SecurityContext
			if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil ||
				*sc.AllowPrivilegeEscalation || sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
				t.Errorf("%s/%s: container security context %+v", d.Metadata.Name, c.Name, sc)
			}
			if c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() || c.Resources.Limits.Cpu().IsZero() {
				t.Errorf("%s/%s: no requests and limits", d.Metadata.Name, c.Name)
			}
		}
	}
	if len(workloads) != 3 {
		t.Fatalf("%d workloads, want the webhook, the sweeper and the relay", len(workloads))
	}
}

// TestBadValues: a bad value fails the install with a message naming it.
func TestBadValues(t *testing.T) {
	for _, tc := range []struct {
		name, values, ns, want string
	}{
		{"no signature policy", "webhook: {policies: []}\n", namespace, "webhook.policies: at least one signature policy"},
		{"a bucket without the cluster's name", "evidence: {s3: {bucket: evidence}}\n", namespace, "evidence.cluster"},
		{"a log without a signing key", "evidence: {rekor: {url: 'https://rekor.example'}}\n", namespace, "evidence.rekor.keySecret"},
		{"unknown profile", "profile: prod\n", namespace, "profile"},
		{"misspelt key", "webhook:\n  replica: 3\n", namespace, "replica"},
		{"unpinned image", "params:\n  debugImages: [registry.example/debug:latest]\n", namespace, "debugImages"},
		{"bad certificates", "webhook:\n  certificates: vault\n", namespace, "certificates"},
		{"wrong namespace", "", "default", "install the chart into the namespace breakglass-system"},
		{"relay without a store", "relay:\n  enabled: true\n  config: {listen: ':8443'}\n", namespace, "no store, no session"},
		{"a relay certificate with no Secret to write", "relay:\n  enabled: true\n  recordingClaim: rec\n  certificate: {issuerRef: {name: ca}}\n", namespace, "set relay.tlsSecret too"},
		{"zero replicas", "sweeper:\n  replicas: 0\n", namespace, "replicas"},
		{"a node selector that is not a map of strings", "webhook:\n  nodeSelector: {zone: [a, b]}\n", namespace, "nodeSelector"},
		{"slow deadline", "webhook:\n  deadline: 7s\n", namespace, "deadline"},
		{"a deadline of exactly the webhook's timeout", "webhook:\n  deadline: 5s\n", namespace, "deadline"},
		{"a slow deadline in milliseconds", "webhook:\n  deadline: 5000ms\n", namespace, "deadline"},
		{"more extensions than the policies take", "params:\n  extensions: {max: 5, maxTotal: 2h}\n", namespace, "extensions"},
		{"a bound taken away", "params:\n  grantTTL: {max: null}\n", namespace, "max"},
		{"a setting taken away", "params:\n  sessionDuration: null\n", namespace, "sessionDuration"},
		{"a runtime class that is no name", "params:\n  runtimeClasses: [\"kata'\"]\n", namespace, "runtimeClasses"},
		{"a user id Kubernetes does not take", "params:\n  debugUserID: 2147483648\n", namespace, "debugUserID"},
		{"too many debug images", "params:\n  debugImages: [" + strings.TrimSuffix(strings.Repeat("'r.example/d@sha256:"+strings.Repeat("a", 64)+"', ", 33), ", ") + "]\n", namespace, "debugImages"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := chartutil.ReadValues([]byte(tc.values))
			if err != nil {
				t.Fatal(err)
			}
			// Everything else as a working install has it: a signature policy.
			base, err := chartutil.ReadValues([]byte("webhook: {policies: [{name: p, repository: r, key: /k}]}\n"))
			if err != nil {
				t.Fatal(err)
			}
			_, err = Render(chartutil.CoalesceTables(v, base), tc.ns)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want an error naming %q", err, tc.want)
			}
		})
	}
}
