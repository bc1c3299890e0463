package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Slack posts Block Kit messages, through an incoming webhook (its URL,
// a secret, in WebhookURLFile) or as a bot through the Web API's
// chat.postMessage (its token in TokenFile) to Channel. Buttons are URL
// buttons only: nothing in a message approves; the page it opens does,
// after sign-in.
type Slack struct {
	WebhookURLFile string
	TokenFile      string
	Channel        string
	// APIURL is the Web API's base (default https://slack.com/api).
	APIURL string
	Client *http.Client
}

// Kind is "slack".
func (s *Slack) Kind() string { return "slack" }

// Deliver posts m. The Web API answers 200 even when it refuses, with
// {"ok":false,"error":...}: that is an error too.
func (s *Slack) Deliver(ctx context.Context, m Message) error {
	msg := slackPayload(m)
	if s.WebhookURLFile != "" {
		target, err := secretURL(s.WebhookURLFile)
		if err != nil {
			return err
		}
		body, err := json.Marshal(msg)
		if err != nil {
			return permanent(err)
		}
		_, err = post(ctx, s.Client, target, "application/json", body, nil)
		return err
	}
	token, err := readSecret(s.TokenFile)
	if err != nil {
		return err
	}
	msg.Channel = s.Channel
	body, err := json.Marshal(msg)
	if err != nil {
		return permanent(err)
	}
	api := s.APIURL
	if api == "" {
		api = "https://slack.com/api"
	}
	answer, err := post(ctx, s.Client, strings.TrimSuffix(api, "/")+"/chat.postMessage", "application/json; charset=utf-8", body,
		http.Header{"Authorization": {"Bearer " + token}})
	if err != nil {
		return err
	}
	var r struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(answer, &r); err != nil {
		return errors.New("slack: the Web API's answer is not JSON")
	}
	if r.OK {
		return nil
	}
	err = fmt.Errorf("slack: chat.postMessage to %s: %s", s.Channel, r.Error)
	switch r.Error {
	case "ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout":
		return err
	}
	return permanent(err) // invalid_auth, channel_not_found, not_in_channel, invalid_blocks...
}

// Block Kit's limits (api.slack.com/reference/block-kit): a message's
// payload is refused whole when one is passed, so every user-supplied
// text is cut to fit after escaping.
const (
	slackHeaderMax  = 150
	slackSectionMax = 3000
	slackFieldMax   = 2000
	slackButtonMax  = 75
	slackURLMax     = 3000
	slackTextMax    = 3000 // the top-level text: Slack's own advice is under 4,000
	slackBlocksMax  = 50
)

type slackText struct {
	Type string `json:"type"` // plain_text or mrkdwn
	Text string `json:"text"`
}

type slackButton struct {
	Type string    `json:"type"` // button
	Text slackText `json:"text"`
	URL  string    `json:"url"`
}

type slackBlock struct {
	Type      string       `json:"type"` // header, section, context, actions
	Text      *slackText   `json:"text,omitempty"`
	Fields    []slackText  `json:"fields,omitempty"`
	Elements  []any        `json:"elements,omitempty"`
	Accessory *slackButton `json:"accessory,omitempty"`
}

type slackMessage struct {
	Channel string       `json:"channel,omitempty"`
	Text    string       `json:"text"`
	Blocks  []slackBlock `json:"blocks"`
	// No previews: a link preview would fetch the portal's page from Slack.
	UnfurlLinks bool `json:"unfurl_links"`
	UnfurlMedia bool `json:"unfurl_media"`
}

// slackEscape is the escaping Slack asks of text in mrkdwn: &, < and >,
// so that no name or reason can make a mention (<!channel>) or a link.
func slackEscape(r rune) string {
	switch r {
	case '&':
		return "&amp;"
	case '<':
		return "&lt;"
	case '>':
		return "&gt;"
	}
	return string(r)
}

func keep(r rune) string { return string(r) }

func mrkdwn(s string) slackText { return slackText{Type: "mrkdwn", Text: s} }

// slackField is a bold label over an escaped value, cut to a field's limit.
func slackField(label, value string) slackText {
	head := "*" + label + "*\n"
	return mrkdwn(head + fit(plain(value), slackFieldMax-len(head), slackEscape))
}

func button(label, link string) *slackButton {
	if len(link) > slackURLMax {
		return nil
	}
	return &slackButton{Type: "button", Text: slackText{Type: "plain_text", Text: fit(label, slackButtonMax, keep)}, URL: link}
}

// slackPayload is m as a Block Kit message.
func slackPayload(m Message) slackMessage {
	if m.Digest() {
		return slackDigest(m.Notices)
	}
	n := m.Notices[0]
	approvers := n.Approvers
	if approvers == "" {
		approvers = "as the portal's permissions say"
	}
	fields := []slackText{slackField("Who", n.Requester), slackField("What", n.What()), slackField("Until", n.Until()), slackField("Approvers", approvers)}
	if n.To != "" {
		fields = append(fields, slackField("For", n.To))
	}
	blocks := []slackBlock{
		{Type: "header", Text: &slackText{Type: "plain_text", Text: fit(n.Title(), slackHeaderMax, keep)}},
		{Type: "section", Fields: fields},
		{Type: "section", Text: &slackText{Type: "mrkdwn", Text: "*Why*\n" + fit(plain(n.Reason), slackSectionMax-len("*Why*\n"), slackEscape)}},
	}
	if n.Decided != "" {
		blocks = append(blocks, slackBlock{Type: "section", Text: &slackText{Type: "mrkdwn", Text: "*Decided*\n" + fit(plain(n.Decided), slackSectionMax-len("*Decided*\n"), slackEscape)}})
	}
	if b := button(n.Button(), n.Link); b != nil {
		blocks = append(blocks, slackBlock{Type: "actions", Elements: []any{*b}})
	}
	blocks = append(blocks, slackBlock{Type: "context", Elements: []any{mrkdwn(fit(n.Action(), slackSectionMax, slackEscape))}})
	text := fit(plain(n.Summary()+". Why: "+n.Reason), slackTextMax-len(n.Link)-1, slackEscape) + " " + n.Link
	return slackMessage{Text: text, Blocks: blocks}
}

// slackDigest folds notices a rate limit held back into one message: one
// line and one link each.
func slackDigest(ns []Notice) slackMessage {
	title := digestTitle(ns)
	blocks := []slackBlock{
		{Type: "header", Text: &slackText{Type: "plain_text", Text: fit(title, slackHeaderMax, keep)}},
		{Type: "context", Elements: []any{mrkdwn("This channel's rate limit held these back. Each button only opens its page: approving happens in the portal after signing in.")}},
	}
	for i, n := range ns {
		if i == digestMax {
			blocks = append(blocks, slackBlock{Type: "context", Elements: []any{mrkdwn(fmt.Sprintf("and %d more: see the portal.", len(ns)-digestMax))}})
			break
		}
		line := fit(plain(n.Summary()), 500, slackEscape) + "\n" + fit(plain(n.Reason), 300, slackEscape)
		blocks = append(blocks, slackBlock{Type: "section", Text: &slackText{Type: "mrkdwn", Text: line}, Accessory: button(n.Button(), n.Link)})
	}
	return slackMessage{Text: fit(title, slackTextMax, slackEscape), Blocks: blocks[:min(len(blocks), slackBlocksMax)]}
}
