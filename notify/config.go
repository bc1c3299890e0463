package notify

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

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
	c.Default()
	if err := c.Validate(nil).ToAggregate(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return c, nil
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
