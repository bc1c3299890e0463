package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/tower-dev/breakglass/manifests"
	"github.com/tower-dev/breakglass/policies"
)

func runCLI(args ...string) (string, error) {
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestPolicyTestShippedCases(t *testing.T) {
	out, err := runCLI("policy", "test", "../../policies/testdata")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "RESULT") || !strings.Contains(out, " 0 failed") || strings.Contains(out, "FAIL ") {
		t.Fatalf("unexpected table:\n%s", out)
	}
}

func TestPolicyTestReportsAFailingCase(t *testing.T) {
	dir := t.TempDir()
	// A grant of 2h that the case wrongly expects to be allowed.
	file := `
cases:
- name: a 2h grant
  operation: CREATE
  apiGroup: rbac.authorization.k8s.io
  resource: rolebindings
  namespace: shop
  user: {name: "system:serviceaccount:breakglass-system:tower-breakglass"}
  object:
    apiVersion: rbac.authorization.k8s.io/v1
    kind: RoleBinding
    metadata: {name: g, namespace: shop, labels: {"breakglass.tower.dev/session": s1, "cleanup.kyverno.io/ttl": 2h}}
    roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "breakglass:debug"}
    subjects: [{kind: ServiceAccount, name: tower-breakglass, namespace: breakglass-system}]
  expect: allow
`
	if err := os.WriteFile(filepath.Join(dir, "wrong.yaml"), []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := runCLI("policy", "test", dir)
	if err == nil || !strings.Contains(err.Error(), "2 of 2 cases failed") {
		t.Fatalf("err = %v\n%s", err, out)
	}
	if !strings.Contains(out, "FAIL") || !strings.Contains(out, "[grant.ttl]") {
		t.Fatalf("the table does not show the failure and its reason:\n%s", out)
	}
}

func TestPolicyTestMalformedFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("cases:\n- name: x\n  operation: PATCH\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := runCLI("policy", "test", dir)
	if err == nil || !strings.Contains(err.Error(), "bad.yaml") || !strings.Contains(err.Error(), "cases[0] (x)") {
		t.Fatalf("err = %v, want the file and the case named", err)
	}
}

func TestPolicyRender(t *testing.T) {
	img := "registry.example/debug@sha256:" + strings.Repeat("a", 64)
	for _, profile := range []string{"ground", "flight"} {
		out, err := runCLI("policy", "render", "--profile", profile, "--debug-image", img)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := manifests.Decode([]byte(out))
		if err != nil {
			t.Fatal(err)
		}
		order := map[string]int{}
		for i, o := range objs {
			if _, seen := order[o.GetKind()]; !seen {
				order[o.GetKind()] = i
			}
		}
		if objs[0].GetKind() != "Namespace" || objs[0].GetName() != "breakglass-system" {
			t.Errorf("%s: the first object is %s %s, want the namespace", profile, objs[0].GetKind(), objs[0].GetName())
		}
		for _, before := range [][2]string{
			{"CustomResourceDefinition", "ValidatingAdmissionPolicy"},
			{"ServiceAccount", "ClusterRoleBinding"},
			{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"},
		} {
			a, okA := order[before[0]]
			b, okB := order[before[1]]
			if !okA || !okB || a > b {
				t.Errorf("%s: %s must come before %s", profile, before[0], before[1])
			}
		}
		// The allowlist is rendered into the debug-container policy, as the
		// chart renders it: a CEL list literal in the setting's variable.
		var allowlist string
		for _, o := range objs {
			if o.GetKind() != "ValidatingAdmissionPolicy" || o.GetName() != "breakglass-debug-container" {
				continue
			}
			vars, _, _ := unstructured.NestedSlice(o.Object, "spec", "variables")
			for _, v := range vars {
				if v := v.(map[string]any); v["name"] == policies.DebugImagesSetting.Variable {
					allowlist, _ = v["expression"].(string)
				}
			}
		}
		if want := `["` + img + `"]`; allowlist != want {
			t.Errorf("%s: the debug-container policy's allowlist is %q, want %q", profile, allowlist, want)
		}
		if strings.Contains(out, "@params.") {
			t.Errorf("%s: a setting's placeholder was left in the render", profile)
		}
		if got := strings.Contains(out, "name: breakglass-no-exec"); got != (profile == "flight") {
			t.Errorf("%s: no-exec rendered = %v", profile, got)
		}
	}
}

func TestPolicyRenderRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--profile", "prod"}, `--profile "prod": must be ground or flight`},
		{[]string{"--debug-image", "registry.example/debug:latest"}, "must be pinned by digest"},
		{[]string{"--kyverno"}, "--kyverno and --webhook-policies go together"},
		{[]string{"--kyverno", "--webhook-policies", "/nonexistent/policies.yaml"}, "no such file"},
		{[]string{"--kyverno", "--webhook-policies", writeFile(t, "policies:\n- {name: p, repository: r.example/x, key: \"k8s://ns/cosign\"}\n")}, "not a Kubernetes Secret"},
		{[]string{"--kyverno", "--webhook-policies", writeFile(t, "policies:\n- {name: p, repository: r.example/x, keyless: {issuer: https://i, subject: s, trustedRoot: t.json}}\n")}, "give roots and rekorPublicKey"},
		{[]string{"--kyverno", "--webhook-policies", writeFile(t, "policies:\n- {name: p, repository: \"index.docker.io/acme/*\", key: k.pub}\n")}, "is on Docker Hub"},
		{[]string{"--kyverno", "--webhook-policies", writeFile(t, "policies:\n- {name: p, repository: \"acme/debug\", key: k.pub}\n")}, "names no registry host"},
		{[]string{"--kyverno", "--webhook-policies", writeFile(t, "policies:\n- {name: p, repository: \"r.example/x') || true || ('\", key: k.pub}\n")}, "must be a repository"},
	} {
		_, err := runCLI(append([]string{"policy", "render"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.want)
		}
	}
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policies.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestKyvernoRenderChoosesLikeTheWebhook: each image is checked by the
// attestor of the policy the webhook would pick for its repository (exact
// first, then the longest prefix), and only by it.
func TestKyvernoRenderChoosesLikeTheWebhook(t *testing.T) {
	key := writeFile(t, "-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----\n")
	policies := writeFile(t, fmt.Sprintf(`policies:
- {name: all, repository: "r.example/*", key: %[1]s}
- {name: bg, repository: "r.example/bg/*", key: %[1]s}
- {name: exact, repository: r.example/bg/debug, key: "awskms:///alias/debug"}
`, key))
	out, err := runCLI("policy", "render", "--kyverno", "--webhook-policies", policies)
	if err != nil {
		t.Fatal(err)
	}
	// The expressions as Kyverno reads them, whatever the YAML's line breaks.
	var flat []string
	for _, doc := range strings.Split(strings.TrimPrefix(out, "---\n"), "\n---\n") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(m); err != nil {
			t.Fatal(err)
		}
		flat = append(flat, b.String())
	}
	joined := strings.Join(flat, "\n")
	for _, want := range []string{
		"(images.containers + images.initContainers + images.ephemeralContainers + images.hold).all(i, !(i.startsWith('r.example/') && !((i.startsWith('r.example/bg/debug@') || i.startsWith('r.example/bg/debug:')) || i.startsWith('r.example/bg/'))) || verifyAttestationSignatures(i, attestations.signature, [attestors.policy0]) > 0)",
		"(images.containers + images.initContainers + images.ephemeralContainers + images.hold).all(i, !(i.startsWith('r.example/bg/') && !((i.startsWith('r.example/bg/debug@') || i.startsWith('r.example/bg/debug:')))) || verifyAttestationSignatures(i, attestations.signature, [attestors.policy1]) > 0)",
		"(images.containers + images.initContainers + images.ephemeralContainers + images.hold).all(i, !((i.startsWith('r.example/bg/debug@') || i.startsWith('r.example/bg/debug:'))) || verifyAttestationSignatures(i, attestations.signature, [attestors.policy2]) > 0)",
		`"type":"https://sigstore.dev/cosign/sign/v1"`,
		"v.name == 'breakglass-hold' && has(v.image)).map(v, v.image.reference)",
		"!(oldObject != null && has(oldObject.spec.ephemeralContainers) && oldObject.spec.ephemeralContainers.exists(o, o.name == c.name))",
		`"kms":"awskms:///alias/debug"`,
		`"rbac.kyverno.io/aggregate-to-cleanup-controller":"true"`,
		`"failurePolicy":"Fail"`,
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("the render lacks %q:\n%s", want, out)
		}
	}
}
