package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// checkBlockKit holds a message to Block Kit's published shape and limits
// (api.slack.com/reference/block-kit/blocks, .../block-elements,
// .../composition-objects): what Slack refuses a message for.
func checkBlockKit(t *testing.T, msg map[string]any) {
	t.Helper()
	if s, ok := msg["text"].(string); !ok || s == "" || utf8.RuneCountInString(s) > slackTextMax {
		t.Errorf("text: %v: a fallback text is required, at most %d", msg["text"], slackTextMax)
	}
	blocks, ok := msg["blocks"].([]any)
	if !ok || len(blocks) == 0 || len(blocks) > 50 {
		t.Fatalf("blocks: %d, want 1 to 50", len(blocks))
	}
	textObject := func(where string, v any, types []string, max int) {
		o, ok := v.(map[string]any)
		typ, _ := o["type"].(string)
		text, isString := o["text"].(string)
		if !ok || !isString || text == "" || !contains(types, typ) {
			t.Errorf("%s: %v is not a text object of type %v", where, v, types)
			return
		}
		if n := utf8.RuneCountInString(text); n > max {
			t.Errorf("%s: %d characters, at most %d", where, n, max)
		}
	}
	button := func(where string, v any) {
		b, _ := v.(map[string]any)
		if b["type"] != "button" {
			t.Errorf("%s: %v is not a button", where, v)
		}
		textObject(where+".text", b["text"], []string{"plain_text"}, 75)
		if u, _ := b["url"].(string); u == "" || len(u) > 3000 || !strings.HasPrefix(u, "https://") {
			t.Errorf("%s.url: %q", where, u)
		}
		// A URL button only: no action for the app to handle.
		for _, k := range []string{"action_id", "value", "confirm"} {
			if _, ok := b[k]; ok {
				t.Errorf("%s: has %s: a button must only be a link", where, k)
			}
		}
	}
	for i, v := range blocks {
		b, _ := v.(map[string]any)
		where := fmt.Sprintf("blocks[%d]", i)
		switch b["type"] {
		case "header":
			textObject(where+".text", b["text"], []string{"plain_text"}, 150)
		case "section":
			if b["text"] == nil && b["fields"] == nil {
				t.Errorf("%s: a section has text or fields", where)
			}
			if b["text"] != nil {
				textObject(where+".text", b["text"], []string{"plain_text", "mrkdwn"}, 3000)
			}
			fields, _ := b["fields"].([]any)
			if len(fields) > 10 {
				t.Errorf("%s.fields: %d, at most 10", where, len(fields))
			}
			for j, f := range fields {
				textObject(fmt.Sprintf("%s.fields[%d]", where, j), f, []string{"plain_text", "mrkdwn"}, 2000)
			}
			if a := b["accessory"]; a != nil {
				button(where+".accessory", a)
			}
		case "context":
			els, _ := b["elements"].([]any)
			if len(els) == 0 || len(els) > 10 {
				t.Errorf("%s.elements: %d, want 1 to 10", where, len(els))
			}
			for j, e := range els {
				textObject(fmt.Sprintf("%s.elements[%d]", where, j), e, []string{"plain_text", "mrkdwn"}, 3000)
			}
		case "actions":
			els, _ := b["elements"].([]any)
			if len(els) == 0 || len(els) > 25 {
				t.Errorf("%s.elements: %d, want 1 to 25", where, len(els))
			}
			for j, e := range els {
				button(fmt.Sprintf("%s.elements[%d]", where, j), e)
			}
		default:
			t.Errorf("%s: type %v is not header, section, context or actions", where, b["type"])
		}
	}
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

func slackJSON(t *testing.T, m Message) (map[string]any, string) {
	t.Helper()
	raw, err := json.Marshal(slackPayload(m))
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, raw), string(raw)
}

func TestSlackPayloadFollowsBlockKit(t *testing.T) {
	long := func(s *v1alpha1.Session) { s.Spec.Reason = strings.Repeat("<&>", 700) }
	many := make([]Notice, 25)
	for i := range many {
		many[i] = makeNotice("request.new", fmt.Sprintf("s-%d", i), long)
	}
	for name, m := range map[string]Message{
		"request":            {Notices: []Notice{makeNotice("request.new", "s-1")}},
		"glass broken":       {Notices: []Notice{makeNotice("glass.broken", "s-1", func(s *v1alpha1.Session) { s.Spec.GlassBroken = true })}},
		"long reason":        {Notices: []Notice{makeNotice("request.new", "s-1", long)}},
		"digest of 25":       {Notices: many},
		"no approvers named": {Notices: []Notice{{Event: Event{Kind: "session.ended", Link: "https://tower.example/x"}}}},
	} {
		t.Run(name, func(t *testing.T) {
			msg, _ := slackJSON(t, m)
			checkBlockKit(t, msg)
		})
	}
}

func TestSlackSaysWhoWhatWhyUntilAndWhoDecides(t *testing.T) {
	_, raw := slackJSON(t, Message{Notices: []Notice{makeNotice("request.new", "s-1", func(s *v1alpha1.Session) {
		s.Spec.ProcessAccess, s.Spec.TargetContainer = true, "app"
	})}})
	for _, want := range []string{"alice@example.com", "pod web-1 (container app) in shop on flight-1", "session s-1", v1alpha1.DebugProcessRole,
		"checkout returns 500s", "30m from its start", "shop-oncall", "https://tower.example/sessions/flight-1/shop/s-1/approve", "after signing in"} {
		if !strings.Contains(raw, want) {
			t.Errorf("the message does not say %q:\n%s", want, raw)
		}
	}
}

func TestSlackEscapesUserText(t *testing.T) {
	n := makeNotice("request.new", "s-1", func(s *v1alpha1.Session) {
		s.Spec.Reason, s.Spec.Requester = "<!channel> & <https://evil.example|click>", "<@U123>"
	})
	var raw bytes.Buffer
	enc := json.NewEncoder(&raw)
	enc.SetEscapeHTML(false) // as Slack reads it, not \u003c
	if err := enc.Encode(slackPayload(Message{Notices: []Notice{n}})); err != nil {
		t.Fatal(err)
	}
	text := raw.String()
	for _, bad := range []string{"<!channel>", "<https://evil", "<@U123>"} {
		if strings.Contains(text, bad) {
			t.Errorf("%q went through unescaped", bad)
		}
	}
	if !strings.Contains(text, "&lt;!channel&gt; &amp; &lt;https://evil.example|click&gt;") {
		t.Errorf("the reason is not escaped as Slack asks: %s", text)
	}
}

func TestSlackCutsLongTextWithoutBreakingAnEscape(t *testing.T) {
	n := makeNotice("request.new", "s-1", func(s *v1alpha1.Session) { s.Spec.Reason = strings.Repeat("&", 2048) })
	why := slackPayload(Message{Notices: []Notice{n}}).Blocks[2].Text.Text
	if utf8.RuneCountInString(why) > slackSectionMax || !strings.HasSuffix(why, "…") {
		t.Fatalf("the reason is %d characters, not cut to %d with an ellipsis", utf8.RuneCountInString(why), slackSectionMax)
	}
	if rest := strings.ReplaceAll(strings.TrimPrefix(strings.TrimSuffix(why, "…"), "*Why*\n"), "&amp;", ""); rest != "" {
		t.Fatalf("the cut broke an escape: %q is left", rest)
	}
}

func TestSlackWebAPI(t *testing.T) {
	tokenFile := writeFile(t, "token", "xoxb-test-token\n")
	for name, tc := range map[string]struct {
		answer        string
		wantErr       bool
		wantPermanent bool
	}{
		"ok":                 {answer: `{"ok":true,"ts":"1.2"}`},
		"refused: permanent": {answer: `{"ok":false,"error":"channel_not_found"}`, wantErr: true, wantPermanent: true},
		"rate limited":       {answer: `{"ok":false,"error":"ratelimited"}`, wantErr: true},
	} {
		t.Run(name, func(t *testing.T) {
			srv, got := recorder(t, func(_ int, w http.ResponseWriter) { _, _ = w.Write([]byte(tc.answer)) })
			s := &Slack{TokenFile: tokenFile, Channel: "C0SHOP", APIURL: srv.URL + "/api"}
			err := s.Deliver(context.Background(), Message{Notices: []Notice{makeNotice("request.new", "s-1")}})
			if (err != nil) != tc.wantErr || IsPermanent(err) != tc.wantPermanent {
				t.Fatalf("err = %v, want error %v, permanent %v", err, tc.wantErr, tc.wantPermanent)
			}
			r := receive(t, got)
			if r.path != "/api/chat.postMessage" || r.header.Get("Authorization") != "Bearer xoxb-test-token" ||
				!strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
				t.Fatalf("posted to %s with %v", r.path, r.header)
			}
			if msg := decode(t, r.body); msg["channel"] != "C0SHOP" {
				t.Fatalf("channel = %v", msg["channel"])
			} else {
				checkBlockKit(t, msg)
			}
			if err != nil && strings.Contains(err.Error(), "xoxb") {
				t.Fatalf("the error shows the token: %v", err)
			}
		})
	}
}

func TestSlackIncomingWebhookURLStaysSecret(t *testing.T) {
	srv, got := recorder(t, func(_ int, w http.ResponseWriter) { http.Error(w, "no_service", http.StatusNotFound) })
	file := writeFile(t, "webhook", srv.URL+"/services/T0/B0/secret-part\n")
	err := (&Slack{WebhookURLFile: file}).Deliver(context.Background(), Message{Notices: []Notice{makeNotice("request.new", "s-1")}})
	if err == nil || !IsPermanent(err) || strings.Contains(err.Error(), "secret-part") {
		t.Fatalf("err = %v: want a permanent error that does not show the webhook's URL", err)
	}
	r := receive(t, got)
	if r.path != "/services/T0/B0/secret-part" {
		t.Fatalf("posted to %s", r.path)
	}
	if msg := decode(t, r.body); msg["channel"] != nil {
		t.Fatalf("an incoming webhook's channel is its own; the payload names %v", msg["channel"])
	}
}
