package notify

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

func TestReviewOverdue(t *testing.T) {
	got := make(chan Event, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var e Event
		if err := json.NewDecoder(r.Body).Decode(&e); err != nil || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		got <- e
	}))
	defer srv.Close()
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	w := &Webhook{URL: srv.URL, PortalURL: "https://tower.example", Cluster: "flight-1", FallbackReviewer: "security-oncall", Now: func() time.Time { return at }}
	s := &v1alpha1.Session{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "s 1"}, Spec: v1alpha1.SessionSpec{Requester: "alice", Reason: "500s"}}
	if err := w.ReviewOverdue(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	e := <-got
	want := Event{Kind: "review.overdue", Cluster: "flight-1", Namespace: "shop", Session: "s 1", Requester: "alice", Reason: "500s",
		Link: "https://tower.example/sessions/flight-1/shop/s%201/review", At: at, To: "security-oncall"}
	if e != want {
		t.Fatalf("got %+v\nwant %+v", e, want)
	}
}

func TestRefusedIsAnError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	w := &Webhook{URL: srv.URL, PortalURL: "https://tower.example"}
	err := w.ReviewOverdue(context.Background(), &v1alpha1.Session{})
	if err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("err = %v, want the 503 named", err)
	}
}
