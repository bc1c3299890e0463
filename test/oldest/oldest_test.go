// Package oldest installs the chart's plane on the oldest Kubernetes the
// chart claims (kube-apiserver v1.30, built from module sources) and reads
// what that version's own type checker says of every policy: the status
// its controller manager writes, as a cluster admin would see it.
package oldest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tower-dev/breakglass/localplane/tools"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/relay/debugsession"
	"github.com/tower-dev/breakglass/test/harness/cluster"
	"github.com/tower-dev/breakglass/test/harness/prereq"
)

// clusters holds one v1.30 control plane per profile.
var clusters map[policies.Profile]*cluster.Cluster

func TestMain(m *testing.M) { os.Exit(prereq.Run(m, run, prereq.Oldest...)) }

func run(m *testing.M) int {
	log.SetLogger(logr.Discard())
	var mu sync.Mutex
	var managers []*statusController
	started, err := cluster.StartEach(context.Background(), func(p policies.Profile) cluster.Options {
		return cluster.Options{Profile: p, DebugImages: []string{cluster.DebugImage},
			APIServer: filepath.Join(tools.BinDir(), "kube-apiserver-1.30")}
	}, func(_ policies.Profile, c *cluster.Cluster) error {
		kcm, err := startStatusController(c)
		if err == nil {
			mu.Lock()
			managers = append(managers, kcm)
			mu.Unlock()
		}
		return err
	})
	clusters = started
	defer func() {
		for _, kcm := range managers {
			kcm.stop()
		}
		if err := cluster.StopEach(clusters); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// statusController is v1.30's controller manager running only the
// controller that type-checks policies into their status.
type statusController struct {
	cmd *exec.Cmd
	// done is closed when it has exited, with exit set.
	done chan struct{}
	exit error
	dir  string
}

func startStatusController(c *cluster.Cluster) (*statusController, error) {
	dir, err := os.MkdirTemp("", "breakglass-oldest")
	if err != nil {
		return nil, err
	}
	s := &statusController{dir: dir}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(c.KubeConfig("oldest", ""), kubeconfig); err != nil {
		s.stop()
		return nil, err
	}
	s.cmd = exec.Command(filepath.Join(tools.BinDir(), "kube-controller-manager-1.30"), "--kubeconfig="+kubeconfig,
		"--controllers=validatingadmissionpolicy-status-controller", "--leader-elect=false", "--secure-port=0")
	var logs cluster.SyncBuffer
	s.cmd.Stdout, s.cmd.Stderr = &logs, &logs
	if err := s.cmd.Start(); err != nil {
		s.cmd = nil
		s.stop()
		return nil, err
	}
	// It exits at once on a bad flag; a controller manager that stays up
	// is one the status test can wait on.
	s.done = make(chan struct{})
	go func() {
		s.exit = s.cmd.Wait()
		close(s.done)
	}()
	select {
	case <-s.done:
		s.cmd = nil
		s.stop()
		return nil, fmt.Errorf("kube-controller-manager v1.30 exited: %w\n%s", s.exit, logs.String())
	case <-time.After(2 * time.Second):
	}
	return s, nil
}

func (s *statusController) stop() {
	if s.cmd != nil {
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	_ = os.RemoveAll(s.dir)
}

// typeChecked waits for the status controller to have checked policy at
// its generation and returns its warnings. The deadline only catches a
// controller that never runs.
func typeChecked(t *testing.T, c *cluster.Cluster, name string) []admissionregistrationv1.ExpressionWarning {
	t.Helper()
	var got *admissionregistrationv1.ValidatingAdmissionPolicy
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := c.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = p
		return p.Status.ObservedGeneration == p.Generation && p.Status.TypeChecking != nil, nil
	})
	if err != nil {
		t.Fatalf("policy %s was not type-checked by v1.30's controller manager: %v", name, err)
	}
	return got.Status.TypeChecking.ExpressionWarnings
}

// asPods is policy matching pods where it matched their subresources
// (pods/ephemeralcontainers, pods/exec): the type checker skips
// subresources, and the object of an ephemeral-container update is a Pod.
// Unbound, it never enforces; ok is false when it matches nothing else.
func asPods(policy *admissionregistrationv1.ValidatingAdmissionPolicy) (_ *admissionregistrationv1.ValidatingAdmissionPolicy, ok bool) {
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: policy.Name + ".as-pods"}, Spec: *policy.Spec.DeepCopy()}
	for i, r := range p.Spec.MatchConstraints.ResourceRules {
		for j, res := range r.Resources {
			if res == "pods/ephemeralcontainers" {
				p.Spec.MatchConstraints.ResourceRules[i].Resources[j] = "pods"
				ok = true
			}
		}
	}
	return p, ok
}

// TestTypeCheckedOnOldest: every policy the chart installs type-checks
// without a warning on v1.30, as its own controller manager reports in the
// policy's status; the ephemeral-container rules are checked as pods.
func TestTypeCheckedOnOldest(t *testing.T) {
	for _, p := range policies.Profiles {
		t.Run(string(p), func(t *testing.T) {
			c := clusters[p]
			vaps := c.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicies()
			list, err := vaps.List(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Items) == 0 {
				t.Fatal("the chart installed no policy")
			}
			for _, policy := range list.Items {
				t.Run(policy.Name, func(t *testing.T) {
					name := policy.Name
					if copied, ok := asPods(&policy); ok {
						if _, err := vaps.Create(t.Context(), copied, metav1.CreateOptions{}); err != nil {
							t.Fatal(err)
						}
						t.Cleanup(func() { _ = vaps.Delete(context.Background(), copied.Name, metav1.DeleteOptions{}) })
						name = copied.Name
					}
					for _, w := range typeChecked(t, c, name) {
						t.Errorf("%s: %s", w.FieldRef, w.Warning)
					}
				})
			}
			// The controller must see the schemas: a misspelt field warns.
			canary := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "breakglass-oldest-canary"},
				Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
					MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
						RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{"CREATE"},
							Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}}},
					Validations: []admissionregistrationv1.Validation{{Expression: "object.spec.nodeNmae == 'x'"}},
				}}
			if _, err := vaps.Create(t.Context(), canary, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = vaps.Delete(context.Background(), canary.Name, metav1.DeleteOptions{}) })
			if len(typeChecked(t, c, canary.Name)) == 0 {
				t.Error("no warning for object.spec.nodeNmae: v1.30's type checker did not resolve the pods' schema")
			}
		})
	}
}

// TestHeldCopiesRefusedOnOldest: v1.30's API server has no image volumes,
// so the relay refuses a held copy on it, saying which version it needs.
func TestHeldCopiesRefusedOnOldest(t *testing.T) {
	err := debugsession.HeldCopies(clusters[policies.Ground].Kube.Discovery())
	if !errors.Is(err, debugsession.ErrNoHeldCopies) || !strings.Contains(err.Error(), "v1.30.14") || !strings.Contains(err.Error(), "1.35") {
		t.Fatalf("a held copy on v1.30: %v, want refused naming v1.30.14 and 1.35", err)
	}
}
