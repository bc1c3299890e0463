package notify

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"os"
	"path"
	"slices"

	"sigs.k8s.io/yaml"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// Config is the relay's notifications section, and the file the sweeper's
// --notifications reads. Secrets (the Slack bot token, the SMTP
// credentials, Slack's and Teams' webhook URLs) are named by file, never
// written in it.
type Config struct {
	// RatePerMinute is how many messages one chat channel or mailbox gets
	// a minute (default 10); what comes beyond waits and goes as one
	// digest. Generic webhooks are not limited.
	RatePerMinute int          `json:"ratePerMinute,omitempty"`
	Slack         *SlackConfig `json:"slack,omitempty"`
	Email         *EmailConfig `json:"email,omitempty"`
	Routes        []Route      `json:"routes"`
}

// SlackConfig is how the relay posts as a Slack app's bot.
type SlackConfig struct {
	// TokenFile holds the bot token (xoxb-...), for destinations that
	// name a channel.
	TokenFile string `json:"tokenFile,omitempty"`
	// APIURL is the Web API (default https://slack.com/api).
	APIURL string `json:"apiURL,omitempty"`
}

// EmailConfig is the SMTP server mail goes through. STARTTLS is required.
type EmailConfig struct {
	// Server is host:port, e.g. smtp.example.com:587.
	Server string `json:"server"`
	// From is the sender, e.g. "Breakglass <breakglass@example.com>".
	From string `json:"from"`
	// UsernameFile and PasswordFile hold AUTH PLAIN credentials (both or neither).
	UsernameFile string `json:"usernameFile,omitempty"`
	PasswordFile string `json:"passwordFile,omitempty"`
	// CAFile is a PEM bundle the server's certificate is checked against
	// (default: the system's roots).
	CAFile string `json:"caFile,omitempty"`
}

// Kinds are the events the relay and the sweeper send.
var Kinds = v1alpha1.Names(v1alpha1.NotificationKinds)

var sinks = []string{"slack", "teams", "email", "webhook"}

// DefaultRatePerMinute is a chat channel's or a mailbox's messages a minute.
const DefaultRatePerMinute = 10

// LoadConfig reads a notifications file (the sweeper's): the relay
// config's notifications section on its own. Unknown fields are refused.
func LoadConfig(file string) (*Config, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	c := &Config{}
	if err := yaml.UnmarshalStrict(raw, c); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if err := c.Complete(""); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return c, nil
}

// Complete fills defaults and refuses what cannot work. at prefixes each
// error's path ("notifications" in the relay's config).
func (c *Config) Complete(at string) error {
	if at != "" {
		at += "."
	}
	var errs []error
	bad := func(where, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s%s: %s", at, where, fmt.Sprintf(format, args...)))
	}
	if c.RatePerMinute == 0 {
		c.RatePerMinute = DefaultRatePerMinute
	}
	if c.RatePerMinute < 0 || c.RatePerMinute > 600 {
		bad("ratePerMinute", "%d is not 1 to 600", c.RatePerMinute)
	}
	fileAt := func(where, file string) {
		if _, err := os.Stat(file); err != nil {
			bad(where, "%v", err)
		}
	}
	if s := c.Slack; s != nil {
		if s.TokenFile != "" {
			fileAt("slack.tokenFile", s.TokenFile)
		}
		if s.APIURL != "" {
			if err := CheckURL(s.APIURL); err != nil {
				bad("slack.apiURL", "%v", err)
			}
		}
	}
	if e := c.Email; e != nil {
		if _, _, err := net.SplitHostPort(e.Server); err != nil {
			bad("email.server", "%q is not host:port (e.g. smtp.example.com:587)", e.Server)
		}
		if _, err := mail.ParseAddress(e.From); err != nil {
			bad("email.from", "%q is not an address: %v", e.From, err)
		}
		if (e.UsernameFile == "") != (e.PasswordFile == "") {
			bad("email", "usernameFile and passwordFile go together")
		}
		for where, f := range map[string]string{"usernameFile": e.UsernameFile, "passwordFile": e.PasswordFile, "caFile": e.CAFile} {
			if f != "" {
				fileAt("email."+where, f)
			}
		}
	}
	if len(c.Routes) == 0 {
		bad("routes", "at least one route is required: without one nothing is sent")
	}
	for i := range c.Routes {
		errs = append(errs, c.checkRoute(fmt.Sprintf("%sroutes[%d]", at, i), &c.Routes[i])...)
	}
	return errors.Join(errs...)
}

func (c *Config) checkRoute(at string, r *Route) []error {
	var errs []error
	bad := func(where, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s%s: %s", at, where, fmt.Sprintf(format, args...)))
	}
	for _, p := range append(slices.Clone(r.Clusters), r.Namespaces...) {
		if _, err := path.Match(p, ""); err != nil {
			bad("", "pattern %q: %v", p, err)
		}
	}
	for _, k := range r.Kinds {
		if !slices.ContainsFunc(Kinds, func(known string) bool { ok, _ := path.Match(k, known); return ok }) {
			bad(".kinds", "%q matches none of %v", k, Kinds)
		}
	}
	if len(r.To) == 0 {
		bad(".to", "at least one destination is required")
	}
	for j := range r.To {
		d := &r.To[j]
		where := fmt.Sprintf(".to[%d]", j)
		fileAt := func(f string) {
			if _, err := os.Stat(f); err != nil {
				bad(where+".webhookURLFile", "%v", err)
			}
		}
		unused := func(fields ...string) {
			set := map[string]bool{"channel": d.Channel != "", "webhookURLFile": d.WebhookURLFile != "",
				"addresses": len(d.Addresses) > 0, "url": d.URL != "", "format": d.Format != "", "ratePerMinute": d.RatePerMinute != 0}
			for _, f := range fields {
				if set[f] {
					bad(where+"."+f, "a %s destination has none", d.Sink)
				}
			}
		}
		if d.RatePerMinute < 0 || d.RatePerMinute > 600 {
			bad(where+".ratePerMinute", "%d is not 1 to 600", d.RatePerMinute)
		}
		switch d.Sink {
		case "slack":
			unused("addresses", "url", "format")
			switch {
			case (d.Channel == "") == (d.WebhookURLFile == ""):
				bad(where, "a Slack destination has a channel (posted to as slack.tokenFile's bot) or a webhookURLFile, one of them")
			case d.Channel != "" && (c.Slack == nil || c.Slack.TokenFile == ""):
				bad(where+".channel", "posting to a channel needs slack.tokenFile, the bot's token")
			case d.WebhookURLFile != "":
				fileAt(d.WebhookURLFile)
			}
		case "teams":
			unused("channel", "addresses", "url", "format")
			if d.WebhookURLFile == "" {
				bad(where+".webhookURLFile", "the file holding the Workflows webhook's URL is required")
			} else {
				fileAt(d.WebhookURLFile)
			}
		case "email":
			unused("channel", "webhookURLFile", "url", "format")
			if c.Email == nil {
				bad(where, "an email destination needs the email section (the SMTP server)")
			}
			if len(d.Addresses) == 0 {
				bad(where+".addresses", "at least one address is required")
			}
			for _, a := range d.Addresses {
				if _, err := mail.ParseAddress(a); err != nil {
					bad(where+".addresses", "%q: %v", a, err)
				}
			}
		case "webhook":
			unused("channel", "webhookURLFile", "addresses", "ratePerMinute")
			if err := CheckURL(d.URL); err != nil {
				bad(where+".url", "%q: %v", d.URL, err)
			}
			if d.Format == "" {
				d.Format = FormatCloudEvents
			}
			if d.Format != FormatCloudEvents && d.Format != FormatJSON {
				bad(where+".format", "%q is neither cloudevents nor json", d.Format)
			}
		default:
			bad(where+".sink", "%q is not one of %v", d.Sink, sinks)
		}
	}
	return errs
}

// sink builds what delivers to d. Webhook URLs held in files are read and
// checked here, at start, and again at each delivery (a rotated Secret).
func (c *Config) sink(d Destination, source string) (Sink, error) {
	switch d.Sink {
	case "slack":
		s := &Slack{WebhookURLFile: d.WebhookURLFile, Channel: d.Channel}
		if c.Slack != nil {
			s.APIURL = c.Slack.APIURL
			if d.Channel != "" {
				s.TokenFile = c.Slack.TokenFile
			}
		}
		if d.WebhookURLFile != "" {
			if _, err := secretURL(d.WebhookURLFile); err != nil {
				return nil, err
			}
		}
		return s, nil
	case "teams":
		if _, err := secretURL(d.WebhookURLFile); err != nil {
			return nil, err
		}
		return &Teams{WebhookURLFile: d.WebhookURLFile}, nil
	case "email":
		if c.Email == nil {
			return nil, errors.New("an email destination needs the email section")
		}
		e := &Email{Server: c.Email.Server, From: c.Email.From, To: d.Addresses,
			UsernameFile: c.Email.UsernameFile, PasswordFile: c.Email.PasswordFile}
		if c.Email.CAFile != "" {
			pem, err := os.ReadFile(c.Email.CAFile)
			if err != nil {
				return nil, err
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("email.caFile: %s holds no PEM certificate", c.Email.CAFile)
			}
			e.TLS = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		}
		return e, nil
	case "webhook":
		return &Webhook{URL: d.URL, Format: d.Format, Source: source}, nil
	}
	return nil, fmt.Errorf("sink %q is not one of %v", d.Sink, sinks)
}
