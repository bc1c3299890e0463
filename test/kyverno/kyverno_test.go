// Package kyverno_test runs what `kubectl-breakglass policy render
// --kyverno` emits through Kyverno's own CLI (bin/kubectl-kyverno, built
// from its module), against a real OCI registry on loopback with images
// signed at test time in both of cosign's layouts, and unsigned.
package kyverno_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tower-dev/breakglass/localplane/tools"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/tower-dev/breakglass/localplane/registry"
	"github.com/tower-dev/breakglass/test/harness/prereq"
)

// podWith is a copy pod, as the relay makes one, whose breakglass-
// container runs image (none when it is empty); app is the app
// container's image.
func podWith(name, image, app string) string {
	pod := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: shop}
spec:
  containers:
  - {name: web, image: %q}
`, name, app)
	if image != "" {
		pod += fmt.Sprintf("  - {name: breakglass-s1, image: %q}\n", image)
	}
	return pod
}

// TestKyvernoRenderWithKyvernosCLI: the rendered ImageValidatingPolicy
// admits debug containers whose images are signed by the policy's key in
// cosign v3's bundle layout, and refuses unsigned ones, ones signed by
// another key, ones with only another attestation by the key, ones in the
// older layout, ones no policy covers and ones not pinned, and an unsigned
// hold volume; it never looks at the app's containers.
func TestKyvernoRenderWithKyvernosCLI(t *testing.T) {
	prereq.Need(t, prereq.Kyverno, prereq.Cosign)
	kyverno := filepath.Join(tools.BinDir(), "kubectl-kyverno")
	ctx := context.Background()
	reg := registry.Start()
	t.Cleanup(reg.Close)
	dir := t.TempDir()
	good, err := registry.NewSigner()
	if err != nil {
		t.Fatal(err)
	}
	bad, err := registry.NewSigner()
	if err != nil {
		t.Fatal(err)
	}
	keyFile, err := good.WritePublicKey(dir, "cosign.pub")
	if err != nil {
		t.Fatal(err)
	}
	push := func(repo, tag string, sign func(name.Digest) error) string {
		t.Helper()
		ref, err := reg.Push(repo, tag)
		if err != nil {
			t.Fatal(err)
		}
		if sign != nil {
			if err := sign(ref); err != nil {
				t.Fatalf("signing %s: %v", ref, err)
			}
		}
		return ref.String()
	}
	images := map[string]string{
		"bundle":     push("breakglass/debug", "bundle", func(r name.Digest) error { return good.SignBundle(ctx, r, registry.BundleOptions{}) }),
		"legacy":     push("breakglass/debug", "legacy", func(r name.Digest) error { return good.Sign(r) }),
		"unsigned":   push("breakglass/debug", "unsigned", nil),
		"wrong-key":  push("breakglass/debug", "wrong-key", func(r name.Digest) error { return bad.SignBundle(ctx, r, registry.BundleOptions{}) }),
		"other-repo": push("elsewhere/tools", "signed", func(r name.Digest) error { return good.SignBundle(ctx, r, registry.BundleOptions{}) }),
		"sbom-only": push("breakglass/debug", "sbom-only", func(r name.Digest) error {
			return good.SignBundle(ctx, r, registry.BundleOptions{PredicateType: "https://spdx.dev/Document"})
		}),
		"unsigned-app": push("shop/web", "v1", nil),
	}
	images["tag"] = reg.Host + "/breakglass/debug:bundle"
	images["tag-and-digest"] = strings.Replace(images["bundle"], "@", ":bundle@", 1)
	policies := filepath.Join(dir, "policies.yaml")
	if err := os.WriteFile(policies, []byte(fmt.Sprintf("policies:\n- {name: debug-images, repository: %q, key: %s}\n",
		reg.Host+"/breakglass/*", keyFile)), 0o600); err != nil {
		t.Fatal(err)
	}
	rendered, err := render("policy", "render", "--kyverno", "--webhook-policies", policies)
	if err != nil {
		t.Fatalf("policy render --kyverno: %v\n%s", err, rendered)
	}
	policyFile := filepath.Join(dir, "kyverno.yaml")
	if err := os.WriteFile(policyFile, []byte(rendered), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		image string
		pass  bool
		want  string
	}{
		{"bundle", true, ""},
		{"tag-and-digest", true, ""},
		// Kyverno reads the older layout's signatures and a bundle
		// image's attestations alike: the policy asks for cosign's
		// signature predicate, which only bundles carry.
		{"legacy", false, "signed as policy debug-images says"},
		{"sbom-only", false, "signed as policy debug-images says"},
		{"unsigned", false, "signed as policy debug-images says"},
		{"wrong-key", false, "signed as policy debug-images says"},
		{"other-repo", false, "no signature policy covers"},
		{"tag", false, "must be pinned by digest"},
		// No debug container: the policy does not look at the pod at all.
		{"none", true, "pass: 0, fail: 0"},
		// A held copy's hold volume runs the debug image's sleep: checked too.
		{"hold-unsigned", false, "signed as policy debug-images says"},
	} {
		t.Run(tc.image, func(t *testing.T) {
			pod := filepath.Join(t.TempDir(), "pod.yaml")
			manifest := podWith("web-1-copy", images[tc.image], images["unsigned-app"])
			if tc.image == "hold-unsigned" {
				manifest = podWith("web-1-copy", images["bundle"], images["unsigned-app"]) +
					fmt.Sprintf("  volumes:\n  - {name: breakglass-hold, image: {reference: %q}}\n", images["unsigned"])
			}
			if err := os.WriteFile(pod, []byte(manifest), 0o600); err != nil {
				t.Fatal(err)
			}
			// Bounded: a CLI that hangs fails this case, saying so, instead of the package.
			actx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(actx, kyverno, "apply", policyFile, "--resource", pod, "--remove-color", "--detailed-results")
			cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
			out, err := cmd.CombinedOutput()
			if actx.Err() != nil {
				t.Fatalf("kyverno apply did not finish in 2 minutes:\n%s", out)
			}
			summary := string(out)
			passed := err == nil && strings.Contains(summary, "fail: 0") && (tc.image == "none" || strings.Contains(summary, "pass: 1"))
			if passed != tc.pass || (tc.want != "" && !strings.Contains(summary, tc.want)) {
				t.Fatalf("kyverno apply on a debug container of %s image: exit %v, want it to pass: %v, saying %q\n%s", tc.image, err, tc.pass, tc.want, summary)
			}
		})
	}
}

// render runs `kubectl-breakglass ARGS` from source.
func render(args ...string) (string, error) {
	_, here, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(here), "..", "..")
	cmd := exec.Command("go", append([]string{"run", "./cmd/kubectl-breakglass"}, args...)...)
	cmd.Dir = root
	out, err := cmd.Output()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		return string(out) + string(ee.Stderr), err
	}
	return string(out), err
}
