package lifecycle

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/audit"
)

// TestNotesCarryTheSameDetails: a step of a Session's lifecycle and a step
// of the plane are audited with the same details: the cluster, the actor
// id of the request, the session's uid where there is one; what the caller
// gives is kept, and the cluster it names wins.
func TestNotesCarryTheSameDetails(t *testing.T) {
	var out bytes.Buffer
	m := &Machine{Cluster: "prod", Audit: audit.NewLog(audit.Event{}, nil, &audit.Writer{W: &out})}
	ctx := WithActorID(context.Background(), "subject-1")
	s := &v1alpha1.Session{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "s1", UID: "u1"}}
	if err := m.Note(ctx, v1alpha1.StepApprove, "bob", s, "ok"); err != nil {
		t.Fatal(err)
	}
	if err := m.NotePlane(ctx, v1alpha1.StepRefusal, "mallory", "shop/s1", "no", map[string]string{"request": "GET /x"}); err != nil {
		t.Fatal(err)
	}
	if err := m.NotePlane(context.Background(), v1alpha1.StepSearch, "bob", "", "q", map[string]string{"cluster": "staging"}); err != nil {
		t.Fatal(err)
	}
	var got []map[string]string
	for _, line := range bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n")) {
		var e audit.Event
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		got = append(got, e.Details)
	}
	want := []map[string]string{
		{"cluster": "prod", "actorID": "subject-1", "uid": "u1"},
		{"cluster": "prod", "actorID": "subject-1", "request": "GET /x"},
		{"cluster": "staging"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("details (-want +got):\n%s", diff)
	}
}
