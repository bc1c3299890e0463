package notify

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

func parseConfig(t *testing.T, text string) (*Config, error) {
	t.Helper()
	c := &Config{}
	if err := yaml.UnmarshalStrict([]byte(text), c); err != nil {
		t.Fatal(err)
	}
	c.Default()
	return c, c.Validate(field.NewPath("notifications")).ToAggregate()
}

func TestConfigDefaults(t *testing.T) {
	token := writeFile(t, "token", "xoxb-1")
	c, err := parseConfig(t, `
slack: {tokenFile: `+token+`}
routes:
- namespaces: [shop]
  approvers: shop-oncall
  to:
  - {sink: slack, channel: C0SHOP}
  - {sink: webhook, url: "https://hooks.example.com/breakglass"}
  - {sink: webhook, url: "http://127.0.0.1:9000/in", format: json}
`)
	if err != nil {
		t.Fatal(err)
	}
	if c.RatePerMinute != 10 || c.Routes[0].To[1].Format != FormatCloudEvents || c.Routes[0].To[2].Format != FormatJSON {
		t.Fatalf("defaults: rate %d, formats %q %q", c.RatePerMinute, c.Routes[0].To[1].Format, c.Routes[0].To[2].Format)
	}
}

func TestConfigRefuses(t *testing.T) {
	file := writeFile(t, "secret", "https://hooks.example.com/x")
	for name, tc := range map[string]struct{ config, wantErr string }{
		"no routes":            {`ratePerMinute: 5`, "notifications.routes: Required value: at least one route"},
		"an unknown sink":      {`routes: [{to: [{sink: slak, channel: x}]}]`, `notifications.routes[0].to[0].sink: Unsupported value: "slak": supported values: "slack", "teams", "email", "webhook"`},
		"http off loopback":    {`routes: [{to: [{sink: webhook, url: "http://hooks.example.com/x"}]}]`, "notifications.routes[0].to[0].url: Invalid value: \"http://hooks.example.com/x\": http to hooks.example.com: only https"},
		"a missing file":       {`routes: [{to: [{sink: teams, webhookURLFile: /nonexistent/teams}]}]`, "notifications.routes[0].to[0].webhookURLFile: Invalid value: \"/nonexistent/teams\": stat /nonexistent/teams: no such file"},
		"no bot token":         {`routes: [{to: [{sink: slack, channel: C1}]}]`, "channel: Invalid value: \"C1\": posting to a channel needs slack.tokenFile"},
		"channel and webhook":  {`routes: [{to: [{sink: slack, channel: C1, webhookURLFile: ` + file + `}]}]`, "a channel (posted to as slack.tokenFile's bot) or a webhookURLFile, one of them"},
		"teams with a channel": {`routes: [{to: [{sink: teams, channel: C1, webhookURLFile: ` + file + `}]}]`, "to[0].channel: Forbidden: a teams destination has none"},
		"no SMTP server":       {`routes: [{to: [{sink: email, addresses: [a@example.com]}]}]`, "an email destination needs the email section"},
		"a bad address":        {`{email: {server: "smtp.example.com:587", from: b@example.com}, routes: [{to: [{sink: email, addresses: ["not an address"]}]}]}`, `addresses[0]: Invalid value: "not an address"`},
		"a server without port": {`{email: {server: smtp.example.com, from: b@example.com}, routes: [{to: [{sink: email, addresses: [a@example.com]}]}]}`,
			"email.server: Invalid value: \"smtp.example.com\": not host:port"},
		"a password without user": {`{email: {server: "smtp.example.com:587", from: b@example.com, passwordFile: ` + file + `}, routes: [{to: [{sink: webhook, url: "https://h.example"}]}]}`,
			"usernameFile and passwordFile go together"},
		"an unknown kind": {`routes: [{kinds: [request.neu], to: [{sink: webhook, url: "https://h.example"}]}]`, `kinds[0]: Invalid value: "request.neu": matches none`},
		"a bad format":    {`routes: [{to: [{sink: webhook, url: "https://h.example", format: xml}]}]`, `format: Unsupported value: "xml"`},
		"a bad pattern":   {`routes: [{namespaces: ["shop["], to: [{sink: webhook, url: "https://h.example"}]}]`, `Invalid value: "shop[": not a pattern`},
		"a silly rate":    {`{ratePerMinute: -1, routes: [{to: [{sink: webhook, url: "https://h.example"}]}]}`, "ratePerMinute: Invalid value: -1: not 1 to 600"},
		"a route to none": {`routes: [{namespaces: [shop]}]`, "routes[0].to: Required value: at least one destination"},
		"an http Slack API": {`{slack: {apiURL: "http://slack.example.com/api"}, routes: [{to: [{sink: webhook, url: "https://h.example"}]}]}`,
			"slack.apiURL"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parseConfig(t, tc.config)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v\nwant it to say %q", err, tc.wantErr)
			}
		})
	}
}

func TestDispatcherRefusesAWebhookFileThatHoldsNoHTTPS(t *testing.T) {
	file := writeFile(t, "teams", "http://outlook.example.com/webhook/secret-token")
	c, err := parseConfig(t, `routes: [{to: [{sink: teams, webhookURLFile: `+file+`}]}]`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewDispatcher(c, Options{})
	if err == nil || strings.Contains(err.Error(), "secret-token") || !strings.Contains(err.Error(), file) {
		t.Fatalf("err = %v: want the file named, its URL not shown", err)
	}
}
