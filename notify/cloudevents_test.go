package notify

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// checkCloudEvent holds a structured-mode event to the CloudEvents 1.0
// spec: the required attributes (id, source, specversion, type) present
// and well formed, the optional ones we set well formed, attribute names
// lower-case letters and digits of at most 20 characters.
func checkCloudEvent(t *testing.T, ev map[string]any) {
	t.Helper()
	name := regexp.MustCompile(`^[a-z0-9]{1,20}$`)
	for k := range ev {
		if !name.MatchString(k) {
			t.Errorf("attribute %q: names are lower-case letters and digits, at most 20", k)
		}
	}
	str := func(k string) string {
		s, ok := ev[k].(string)
		if !ok || s == "" {
			t.Errorf("%s: %v, want a non-empty string", k, ev[k])
		}
		return s
	}
	if str("specversion") != "1.0" {
		t.Errorf("specversion = %v", ev["specversion"])
	}
	str("id")
	if _, err := url.Parse(str("source")); err != nil {
		t.Errorf("source: not a URI-reference: %v", err)
	}
	str("type")
	if _, err := time.Parse(time.RFC3339, str("time")); err != nil {
		t.Errorf("time: %v", err)
	}
	if str("datacontenttype") != "application/json" {
		t.Errorf("datacontenttype = %v", ev["datacontenttype"])
	}
	str("subject")
}

func TestCloudEventsWebhook(t *testing.T) {
	srv, got := recorder(t, func(int, http.ResponseWriter) {})
	w := &Webhook{URL: srv.URL, Format: FormatCloudEvents, Source: "breakglass/relay"}
	n := makeNotice("request.new", "s-1")
	if err := w.Deliver(context.Background(), Message{Notices: []Notice{n, makeNotice("request.new", "s-2")}}); err != nil {
		t.Fatal(err)
	}
	r := receive(t, got)
	if ct := r.header.Get("Content-Type"); ct != "application/cloudevents+json" {
		t.Fatalf("Content-Type = %q", ct)
	}
	ev := decode(t, r.body)
	checkCloudEvent(t, ev)
	for k, want := range map[string]string{"source": "breakglass/relay/flight-1", "type": "dev.tower.breakglass.request.new",
		"subject": "shop/s-1", "time": "2026-11-30T10:00:00Z", "id": n.ID} {
		if ev[k] != want {
			t.Errorf("%s = %v, want %s", k, ev[k], want)
		}
	}
	var data struct{ Data Event }
	if err := json.Unmarshal(r.body, &data); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(n.Event, data.Data); diff != "" {
		t.Errorf("data is not the Event (-want +got):\n%s", diff)
	}
	if second := decode(t, receive(t, got).body); second["id"] == ev["id"] {
		t.Errorf("two events share the id %v", ev["id"])
	}
}

func TestWebhookKeepsPlainJSON(t *testing.T) {
	srv, got := recorder(t, func(int, http.ResponseWriter) {})
	n := makeNotice("request.denied", "s-1")
	if err := (&Webhook{URL: srv.URL}).Deliver(context.Background(), Message{Notices: []Notice{n}}); err != nil {
		t.Fatal(err)
	}
	r := receive(t, got)
	var e Event
	if err := json.Unmarshal(r.body, &e); err != nil || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("%v, %s", err, r.header.Get("Content-Type"))
	}
	if diff := cmp.Diff(n.Event, e); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, ok := decode(t, r.body)["specversion"]; ok {
		t.Error("the plain format grew a CloudEvents envelope")
	}
}
