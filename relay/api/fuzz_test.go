package api

import (
	"bytes"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/relay/wire"
)

// FuzzRequestBody: a request body is refused with what is wrong, or is a
// request the cluster can take: a pod name, a known mode, 15 to 75
// minutes, a reason, process access only with a container.
func FuzzRequestBody(f *testing.F) {
	for _, seed := range []string{
		`{"pod":"web-1","mode":"live","duration":"30m","reason":"500s"}`,
		`{"pod":"web-1","container":"app","mode":"copy","processAccess":true,"duration":"1h15m","reason":"x","keepPod":true}`,
		`{"pod":"web-1","mode":"heldCopy","duration":"15m","reason":"x","glassBroken":true}`,
		`{"pod":"Web_1","mode":"shell","duration":"2h","reason":""}`, `{"pod":"web-1","mode":"live","duration":"30m","reason":"x","keepPOD":true}`,
		`{"pod":"web-1","mode":"live","duration":"1e3s","reason":"x"}`, `{"pod":"web-1","mode":"live","duration":"-30m","reason":"x"}`,
		`{} {}`, `null`, `[]`, `{"pod":1}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest("POST", "/api/v1/clusters/prod/namespaces/shop/sessions", bytes.NewReader(body))
		var q wire.Request
		err := Decode(r, &q)
		var d time.Duration
		if err == nil {
			d, err = CheckRequest(&q)
		}
		if err != nil {
			var ae *Error
			if !errors.As(err, &ae) || ae.Status != 400 || ae.Message == "" {
				t.Fatalf("a refusal that is not a 400 with a message: %v", err)
			}
			return
		}
		switch {
		case len(validation.IsDNS1123Subdomain(q.Pod)) > 0:
			t.Fatalf("pod %q accepted", q.Pod)
		case q.Mode != v1alpha1.ModeLive && q.Mode != v1alpha1.ModeCopy && q.Mode != v1alpha1.ModeHeldCopy:
			t.Fatalf("mode %q accepted", q.Mode)
		case d < MinDuration || d > MaxDuration:
			t.Fatalf("duration %s accepted", d)
		case strings.TrimSpace(q.Reason) == "" || len(q.Reason) > MaxReason:
			t.Fatalf("reason %q accepted", q.Reason)
		case q.ProcessAccess && q.Container == "":
			t.Fatal("process access without a container accepted")
		}
	})
}
