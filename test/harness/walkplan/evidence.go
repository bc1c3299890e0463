package walkplan

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/tower-dev/breakglass/localplane"
	"github.com/tower-dev/breakglass/policies"
)

// ManifestOnDisk checks that the hash the page showed is the manifest's in the
// recording directory, and that manifest is this session's.
func ManifestOnDisk(t *testing.T, state, cluster, session, shown string) {
	t.Helper()
	found := false
	root := filepath.Join(state, "recordings")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "manifest.json" {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		if hex.EncodeToString(sum[:]) != shown {
			return nil
		}
		var m struct{ Cluster, Name string }
		if err := json.Unmarshal(data, &m); err != nil {
			return err
		}
		found = m.Cluster == cluster && m.Name == session
		return nil
	})
	if err != nil || !found {
		t.Errorf("no manifest of %s/%s with SHA-256 %s under %s (%v)", cluster, session, shown, root, err)
	}
}

// InRekor checks that the entry the page named is in the log, over the manifest's hash.
func InRekor(t *testing.T, rekorURL, shown, sha string) {
	t.Helper()
	m := regexp.MustCompile(`^entry ([0-9a-f]+) at index ([0-9]+)$`).FindStringSubmatch(shown)
	if m == nil {
		t.Fatalf("the page's Rekor entry: %q", shown)
	}
	resp, err := http.Get(rekorURL + "/api/v1/log/entries?logIndex=" + m[2])
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var entries map[string]struct{ Body string }
	if err := json.NewDecoder(resp.Body).Decode(&entries); err != nil {
		t.Fatal(err)
	}
	for uuid, e := range entries {
		body, _ := base64.StdEncoding.DecodeString(e.Body)
		if !strings.HasSuffix(m[1], uuid) && !strings.HasSuffix(uuid, m[1]) {
			t.Errorf("index %s holds %s, the page said %s", m[2], uuid, m[1])
		}
		if !strings.Contains(string(body), sha) {
			t.Errorf("the entry at index %s is not over %s: %s", m[2], sha, body)
		}
		return
	}
	t.Errorf("no entry at index %s", m[2])
}

// ExecRefused checks that exec through the Flight API server is refused, to a
// cluster admin too.
func ExecRefused(t *testing.T, info localplane.Info) {
	t.Helper()
	var flight localplane.ClusterInfo
	for _, c := range info.Clusters {
		if c.Profile == policies.Flight {
			flight = c
		}
	}
	rc, err := clientcmd.BuildConfigFromFlags("", flight.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	req := kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(info.Namespace).Name(flight.Pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "web", Command: []string{"id"}, Stdout: true}, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(rc, "POST", req.URL())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "[exec.never]") {
		t.Errorf("exec on Flight as a cluster admin: %v, want the no-exec policy's refusal", err)
	}
}
