package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// checkAdaptiveCard holds a Workflows message to the envelope Teams
// documents and the Adaptive Card schema's shape for what we use
// (adaptivecards.io/explorer): known element types, their required
// properties, and OpenUrl as the only action.
func checkAdaptiveCard(t *testing.T, msg map[string]any) {
	t.Helper()
	atts, _ := msg["attachments"].([]any)
	if msg["type"] != "message" || len(atts) != 1 {
		t.Fatalf("envelope: type %v with %d attachments, want a message with one", msg["type"], len(atts))
	}
	att, _ := atts[0].(map[string]any)
	if att["contentType"] != "application/vnd.microsoft.card.adaptive" {
		t.Errorf("contentType = %v", att["contentType"])
	}
	c, _ := att["content"].(map[string]any)
	if c["$schema"] != "http://adaptivecards.io/schemas/adaptive-card.json" || c["type"] != "AdaptiveCard" || c["version"] != "1.4" {
		t.Errorf("card: $schema %v, type %v, version %v", c["$schema"], c["type"], c["version"])
	}
	openURL := func(where string, v any) {
		a, _ := v.(map[string]any)
		if a["type"] != "Action.OpenUrl" {
			t.Errorf("%s: type %v: the only action a card has opens the page", where, a["type"])
		}
		if u, _ := a["url"].(string); !strings.HasPrefix(u, "https://") {
			t.Errorf("%s.url: %q", where, u)
		}
		if s, _ := a["title"].(string); s == "" {
			t.Errorf("%s: no title", where)
		}
	}
	body, _ := c["body"].([]any)
	if len(body) == 0 {
		t.Fatal("the card has no body")
	}
	for i, v := range body {
		e, _ := v.(map[string]any)
		where := fmt.Sprintf("body[%d]", i)
		switch e["type"] {
		case "TextBlock":
			if s, ok := e["text"].(string); !ok || s == "" {
				t.Errorf("%s: a TextBlock needs text", where)
			}
		case "FactSet":
			facts, _ := e["facts"].([]any)
			if len(facts) == 0 {
				t.Errorf("%s: a FactSet needs facts", where)
			}
			for j, f := range facts {
				f, _ := f.(map[string]any)
				if _, ok := f["title"].(string); !ok {
					t.Errorf("%s.facts[%d]: no title", where, j)
				}
				if _, ok := f["value"].(string); !ok {
					t.Errorf("%s.facts[%d]: no value", where, j)
				}
			}
		case "ActionSet":
			actions, _ := e["actions"].([]any)
			for j, a := range actions {
				openURL(fmt.Sprintf("%s.actions[%d]", where, j), a)
			}
		default:
			t.Errorf("%s: type %v is not TextBlock, FactSet or ActionSet", where, e["type"])
		}
	}
	actions, _ := c["actions"].([]any)
	for j, a := range actions {
		openURL(fmt.Sprintf("actions[%d]", j), a)
	}
}

func teamsJSON(t *testing.T, m Message) (map[string]any, string) {
	t.Helper()
	raw, err := json.Marshal(teamsPayload(m))
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, raw), string(raw)
}

func TestTeamsCardFollowsSchema(t *testing.T) {
	many := make([]Notice, 25)
	for i := range many {
		many[i] = makeNotice("request.new", fmt.Sprintf("s-%d", i))
	}
	for name, m := range map[string]Message{
		"request":      {Notices: []Notice{makeNotice("request.new", "s-1")}},
		"review":       {Notices: []Notice{makeNotice("review.overdue", "s-1")}},
		"digest of 25": {Notices: many},
	} {
		t.Run(name, func(t *testing.T) {
			msg, _ := teamsJSON(t, m)
			checkAdaptiveCard(t, msg)
		})
	}
}

func TestTeamsFactsSayWhoWhatWhyUntil(t *testing.T) {
	n := makeNotice("request.new", "s-1")
	facts := map[string]string{}
	for _, f := range teamsPayload(Message{Notices: []Notice{n}}).Attachments[0].Content.Body[1].(factSet).Facts {
		facts[f.Title] = f.Value
	}
	want := map[string]string{"Who": "alice@example.com", "Why": "checkout returns 500s", "Until": "30m from its start", "Approvers": "shop-oncall"}
	for k, v := range want {
		if facts[k] != v {
			t.Errorf("fact %s = %q, want %q", k, facts[k], v)
		}
	}
	if !strings.Contains(facts["What"], "pod web-1 in shop on flight") {
		t.Errorf("fact What = %q", facts["What"])
	}
}

func TestTeamsEscapesMarkdown(t *testing.T) {
	n := makeNotice("request.new", "s-1", func(s *v1alpha1.Session) {
		s.Spec.Reason = "**urgent** [sign in here](https://evil.example) <b>\n- not a list\n1. nor this"
	})
	why := ""
	for _, f := range teamsPayload(Message{Notices: []Notice{n}}).Attachments[0].Content.Body[1].(factSet).Facts {
		if f.Title == "Why" {
			why = f.Value
		}
	}
	want := `\*\*urgent\*\* \[sign in here\](https://evil.example) \<b\>` + "\n" + `\- not a list` + "\n" + `1\. nor this`
	if why != want {
		t.Fatalf("Why = %q\nwant  %q", why, want)
	}
}

func TestTeamsDeliver(t *testing.T) {
	srv, got := recorder(t, func(_ int, w http.ResponseWriter) { w.WriteHeader(http.StatusAccepted) })
	file := writeFile(t, "teams", srv.URL+"/workflows/secret\n")
	if err := (&Teams{WebhookURLFile: file}).Deliver(context.Background(), Message{Notices: []Notice{makeNotice("glass.broken", "s-1")}}); err != nil {
		t.Fatal(err)
	}
	r := receive(t, got)
	if r.path != "/workflows/secret" || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("posted to %s as %s", r.path, r.header.Get("Content-Type"))
	}
	checkAdaptiveCard(t, decode(t, r.body))
}
