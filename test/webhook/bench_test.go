package webhook_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tower-dev/breakglass/test/harness/measure"
	"github.com/tower-dev/breakglass/webhook"
)

func benchVerifier(b *testing.B, ttl time.Duration) *webhook.Verifier {
	v, err := webhook.NewVerifier(context.Background(), webhook.Config{Policies: []webhook.ImagePolicy{
		{Name: "debug-images", Repository: reg.Host + "/breakglass/*", Key: keyFile},
	}}, webhook.VerifierOptions{Deadline: 3 * time.Second, CacheTTL: ttl, NameOptions: []name.Option{name.Insecure}})
	if err != nil {
		b.Fatal(err)
	}
	return v
}

// reportQuantiles reports p50 and p99 of the durations, in milliseconds.
func reportQuantiles(b *testing.B, d []time.Duration) {
	b.ReportMetric(measure.Ms(measure.Quantile(d, 0.5)), "p50-ms")
	b.ReportMetric(measure.Ms(measure.Quantile(d, 0.99)), "p99-ms")
}

// BenchmarkVerify checks a signed image with the cache warm (a success
// remembered) and cold (every check goes to the local registry), signed
// in the older .sig layout (found after looking for bundles) and as a
// Sigstore bundle referrer (cosign v3's default, with its Rekor entry).
func BenchmarkVerify(b *testing.B) {
	for _, tc := range []struct {
		name  string
		ttl   time.Duration
		image name.Digest
	}{{"warm", time.Hour, signed}, {"cold", time.Nanosecond, signed}, {"cold-bundle", time.Nanosecond, bundleSigned}} {
		b.Run(tc.name, func(b *testing.B) {
			v := benchVerifier(b, tc.ttl)
			ctx := context.Background()
			if err := v.Verify(ctx, tc.image.String()); err != nil {
				b.Fatal(err)
			}
			var d []time.Duration
			for b.Loop() {
				start := time.Now()
				if err := v.Verify(ctx, tc.image.String()); err != nil {
					b.Fatal(err)
				}
				d = append(d, time.Since(start))
			}
			reportQuantiles(b, d)
		})
	}
}

// BenchmarkWebhookRequests sends AdmissionReviews over TLS to the webhook
// server with a warm cache, from parallel clients: requests per second on
// this machine's cores.
func BenchmarkWebhookRequests(b *testing.B) {
	startWebhook(b, 3*time.Second)
	certDir := webhookCertDir
	ca, err := os.ReadFile(filepath.Join(certDir, webhook.CAFile))
	if err != nil {
		b.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, MaxIdleConnsPerHost: 64}}
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "breakglass-s1", Image: signed.String()}}}}
	raw, _ := json.Marshal(pod)
	review, _ := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  &admissionv1.AdmissionRequest{UID: "1", Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw}},
	})
	url := fmt.Sprintf("https://127.0.0.1:%d%s", webhookPort, webhook.Path)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Post(url, "application/json", bytes.NewReader(review))
			if err != nil {
				b.Error(err)
				return
			}
			var out admissionv1.AdmissionReview
			err = json.NewDecoder(resp.Body).Decode(&out)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil || out.Response == nil || !out.Response.Allowed {
				b.Errorf("not allowed: %v %+v", err, out.Response)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "requests/s")
}
