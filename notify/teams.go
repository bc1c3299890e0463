package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

// Teams posts an Adaptive Card to a Workflows (Power Automate) webhook,
// whose URL, a secret, is in WebhookURLFile. Its only action opens the
// page (Action.OpenUrl): nothing on the card approves.
type Teams struct {
	WebhookURLFile string
	Client         *http.Client
}

// Kind is "teams".
func (t *Teams) Kind() string { return "teams" }

// Deliver posts m. Workflows answer 202 Accepted; anything but 2xx is an error.
func (t *Teams) Deliver(ctx context.Context, m Message) error {
	target, err := secretURL(t.WebhookURLFile)
	if err != nil {
		return err
	}
	body, err := json.Marshal(teamsPayload(m))
	if err != nil {
		return permanent(err)
	}
	_, err = post(ctx, t.Client, target, "application/json", body, nil)
	return err
}

// The envelope a Workflows "post to a channel when a webhook request is
// received" flow takes: a message with one Adaptive Card attachment.
type teamsMessage struct {
	Type        string            `json:"type"` // message
	Attachments []teamsAttachment `json:"attachments"`
}

type teamsAttachment struct {
	ContentType string       `json:"contentType"`
	ContentURL  *string      `json:"contentUrl"`
	Content     adaptiveCard `json:"content"`
}

type adaptiveCard struct {
	Schema  string `json:"$schema"`
	Type    string `json:"type"`    // AdaptiveCard
	Version string `json:"version"` // 1.4: what Teams renders
	Body    []any  `json:"body"`
	Actions []any  `json:"actions,omitempty"`
	// MSTeams widens the card to the channel's width.
	MSTeams map[string]string `json:"msteams,omitempty"`
}

type textBlock struct {
	Type     string `json:"type"` // TextBlock
	Text     string `json:"text"`
	Wrap     bool   `json:"wrap"`
	Weight   string `json:"weight,omitempty"`
	Size     string `json:"size,omitempty"`
	IsSubtle bool   `json:"isSubtle,omitempty"`
}

type fact struct {
	Title string `json:"title"`
	Value string `json:"value"`
}

type factSet struct {
	Type  string `json:"type"` // FactSet
	Facts []fact `json:"facts"`
}

type openURL struct {
	Type  string `json:"type"` // Action.OpenUrl
	Title string `json:"title"`
	URL   string `json:"url"`
}

type actionSet struct {
	Type    string    `json:"type"` // ActionSet
	Actions []openURL `json:"actions"`
}

const (
	adaptiveCardSchema  = "http://adaptivecards.io/schemas/adaptive-card.json"
	adaptiveCardType    = "application/vnd.microsoft.card.adaptive"
	adaptiveCardVersion = "1.4"
	// teamsReasonMax keeps a card well inside Teams' 28 KB message limit.
	teamsReasonMax = 1000
)

// cardEscape backslash-escapes what TextBlock and FactSet text would read
// as markdown inline (emphasis, code, links, HTML-ish brackets), so a name
// or reason shows as typed and never becomes a link; cardText also
// escapes what would start a list or a heading at a line's start.
func cardEscape(r rune) string {
	if strings.ContainsRune(`\*_~`+"`"+`[]<>`, r) {
		return `\` + string(r)
	}
	return string(r)
}

// bulletStart and numberStart begin lines that markdown reads as a list
// item or a heading.
var (
	bulletStart = regexp.MustCompile(`(?m)^(\s*)([#+-])`)
	numberStart = regexp.MustCompile(`(?m)^(\s*[0-9]+)([.)])`)
)

func cardText(s string, max int) string {
	t := bulletStart.ReplaceAllString(fit(plain(s), max, cardEscape), `$1\$2`)
	return numberStart.ReplaceAllString(t, `$1\$2`)
}

func card(body, actions []any) teamsMessage {
	return teamsMessage{Type: "message", Attachments: []teamsAttachment{{ContentType: adaptiveCardType,
		Content: adaptiveCard{Schema: adaptiveCardSchema, Type: "AdaptiveCard", Version: adaptiveCardVersion,
			Body: body, Actions: actions, MSTeams: map[string]string{"width": "Full"}}}}}
}

// teamsPayload is m as an Adaptive Card in the Workflows envelope.
func teamsPayload(m Message) teamsMessage {
	if m.Digest() {
		return teamsDigest(m.Notices)
	}
	n := m.Notices[0]
	approvers := n.Approvers
	if approvers == "" {
		approvers = "as the portal's permissions say"
	}
	facts := []fact{
		{"Who", cardText(n.Requester, 300)},
		{"What", cardText(n.What(), 1000)},
		{"Why", cardText(n.Reason, teamsReasonMax)},
		{"Until", cardText(n.Until(), 100)},
		{"Approvers", cardText(approvers, 300)},
	}
	if n.Decided != "" {
		facts = append(facts, fact{"Decided", cardText(n.Decided, teamsReasonMax)})
	}
	if n.To != "" {
		facts = append(facts, fact{"For", cardText(n.To, 300)})
	}
	body := []any{
		textBlock{Type: "TextBlock", Text: cardText(n.Title(), 200), Wrap: true, Weight: "Bolder", Size: "Medium"},
		factSet{Type: "FactSet", Facts: facts},
		textBlock{Type: "TextBlock", Text: cardText(n.Action(), 300), Wrap: true, IsSubtle: true, Size: "Small"},
	}
	return card(body, []any{openURL{Type: "Action.OpenUrl", Title: n.Button(), URL: n.Link}})
}

// teamsDigest folds notices a rate limit held back into one card: a line
// and an OpenUrl action each.
func teamsDigest(ns []Notice) teamsMessage {
	body := []any{
		textBlock{Type: "TextBlock", Text: cardText(digestTitle(ns), 200), Wrap: true, Weight: "Bolder", Size: "Medium"},
		textBlock{Type: "TextBlock", Text: cardText("This channel's rate limit held these back. Each link only opens its page: approving happens in the portal after signing in.", 300), Wrap: true, IsSubtle: true, Size: "Small"},
	}
	for i, n := range ns {
		if i == digestMax {
			body = append(body, textBlock{Type: "TextBlock", Text: cardText(fmt.Sprintf("and %d more: see the portal.", len(ns)-digestMax), 100), Wrap: true})
			break
		}
		body = append(body,
			textBlock{Type: "TextBlock", Text: cardText(n.Summary(), 500) + "\n\n" + cardText(n.Reason, 300), Wrap: true},
			actionSet{Type: "ActionSet", Actions: []openURL{{Type: "Action.OpenUrl", Title: n.Button(), URL: n.Link}}})
	}
	return card(body, nil)
}
