package notify

import (
	"fmt"
	"net"
	"net/mail"
	"os"
	"path"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Default fills what the configuration leaves out: the rate a destination
// is sent at, and a webhook's format. It changes only empty fields.
func (c *Config) Default() {
	if c.RatePerMinute == 0 {
		c.RatePerMinute = DefaultRatePerMinute
	}
	for i := range c.Routes {
		for j := range c.Routes[i].To {
			if d := &c.Routes[i].To[j]; d.Sink == "webhook" && d.Format == "" {
				d.Format = FormatCloudEvents
			}
		}
	}
}

// Validate says what in the configuration cannot work, each at its field's
// path under at (notifications, in the relay's configuration; nil for the
// sweeper's file of its own). It reads the files the configuration names,
// so that a missing one is refused at start, not at the first session.
func (c *Config) Validate(at *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.RatePerMinute < 0 || c.RatePerMinute > 600 {
		errs = append(errs, field.Invalid(at.Child("ratePerMinute"), c.RatePerMinute, "not 1 to 600"))
	}
	if s := c.Slack; s != nil {
		errs = append(errs, fileAt(at.Child("slack", "tokenFile"), s.TokenFile)...)
		if s.APIURL != "" {
			if err := CheckURL(s.APIURL); err != nil {
				errs = append(errs, field.Invalid(at.Child("slack", "apiURL"), s.APIURL, err.Error()))
			}
		}
	}
	if e := c.Email; e != nil {
		if _, _, err := net.SplitHostPort(e.Server); err != nil {
			errs = append(errs, field.Invalid(at.Child("email", "server"), e.Server, "not host:port (e.g. smtp.example.com:587)"))
		}
		if _, err := mail.ParseAddress(e.From); err != nil {
			errs = append(errs, field.Invalid(at.Child("email", "from"), e.From, err.Error()))
		}
		if (e.UsernameFile == "") != (e.PasswordFile == "") {
			errs = append(errs, field.Invalid(at.Child("email"), "", "usernameFile and passwordFile go together"))
		}
		errs = append(errs, fileAt(at.Child("email", "usernameFile"), e.UsernameFile)...)
		errs = append(errs, fileAt(at.Child("email", "passwordFile"), e.PasswordFile)...)
		errs = append(errs, fileAt(at.Child("email", "caFile"), e.CAFile)...)
	}
	if len(c.Routes) == 0 {
		errs = append(errs, field.Required(at.Child("routes"), "at least one route is required: without one nothing is sent"))
	}
	for i := range c.Routes {
		errs = append(errs, c.validateRoute(at.Child("routes").Index(i), &c.Routes[i])...)
	}
	return errs
}

// fileAt refuses a file that is named but cannot be read.
func fileAt(p *field.Path, file string) field.ErrorList {
	if file == "" {
		return nil
	}
	if _, err := os.Stat(file); err != nil {
		return field.ErrorList{field.Invalid(p, file, err.Error())}
	}
	return nil
}

func (c *Config) validateRoute(at *field.Path, r *Route) field.ErrorList {
	var errs field.ErrorList
	for _, p := range append(slices.Clone(r.Clusters), r.Namespaces...) {
		if _, err := path.Match(p, ""); err != nil {
			errs = append(errs, field.Invalid(at, p, fmt.Sprintf("not a pattern: %v", err)))
		}
	}
	for i, k := range r.Kinds {
		if !slices.ContainsFunc(Kinds, func(known string) bool { ok, _ := path.Match(k, known); return ok }) {
			errs = append(errs, field.Invalid(at.Child("kinds").Index(i), k, fmt.Sprintf("matches none of %v", Kinds)))
		}
	}
	if len(r.To) == 0 {
		errs = append(errs, field.Required(at.Child("to"), "at least one destination is required"))
	}
	for j := range r.To {
		errs = append(errs, c.validateDestination(at.Child("to").Index(j), &r.To[j])...)
	}
	return errs
}

func (c *Config) validateDestination(at *field.Path, d *Destination) field.ErrorList {
	var errs field.ErrorList
	unused := func(fields ...string) {
		set := map[string]bool{"channel": d.Channel != "", "webhookURLFile": d.WebhookURLFile != "",
			"addresses": len(d.Addresses) > 0, "url": d.URL != "", "format": d.Format != "", "ratePerMinute": d.RatePerMinute != 0}
		for _, f := range fields {
			if set[f] {
				errs = append(errs, field.Forbidden(at.Child(f), fmt.Sprintf("a %s destination has none", d.Sink)))
			}
		}
	}
	if d.RatePerMinute < 0 || d.RatePerMinute > 600 {
		errs = append(errs, field.Invalid(at.Child("ratePerMinute"), d.RatePerMinute, "not 1 to 600"))
	}
	switch d.Sink {
	case "slack":
		unused("addresses", "url", "format")
		switch {
		case (d.Channel == "") == (d.WebhookURLFile == ""):
			errs = append(errs, field.Invalid(at, d.Channel, "a Slack destination has a channel (posted to as slack.tokenFile's bot) or a webhookURLFile, one of them"))
		case d.Channel != "" && (c.Slack == nil || c.Slack.TokenFile == ""):
			errs = append(errs, field.Invalid(at.Child("channel"), d.Channel, "posting to a channel needs slack.tokenFile, the bot's token"))
		default:
			errs = append(errs, fileAt(at.Child("webhookURLFile"), d.WebhookURLFile)...)
		}
	case "teams":
		unused("channel", "addresses", "url", "format")
		if d.WebhookURLFile == "" {
			errs = append(errs, field.Required(at.Child("webhookURLFile"), "the file holding the Workflows webhook's URL is required"))
		}
		errs = append(errs, fileAt(at.Child("webhookURLFile"), d.WebhookURLFile)...)
	case "email":
		unused("channel", "webhookURLFile", "url", "format")
		if c.Email == nil {
			errs = append(errs, field.Required(at, "an email destination needs the email section (the SMTP server)"))
		}
		if len(d.Addresses) == 0 {
			errs = append(errs, field.Required(at.Child("addresses"), "at least one address is required"))
		}
		for i, a := range d.Addresses {
			if _, err := mail.ParseAddress(a); err != nil {
				errs = append(errs, field.Invalid(at.Child("addresses").Index(i), a, err.Error()))
			}
		}
	case "webhook":
		unused("channel", "webhookURLFile", "addresses", "ratePerMinute")
		if err := CheckURL(d.URL); err != nil {
			errs = append(errs, field.Invalid(at.Child("url"), d.URL, err.Error()))
		}
		if d.Format != FormatCloudEvents && d.Format != FormatJSON {
			errs = append(errs, field.NotSupported(at.Child("format"), d.Format, []string{FormatCloudEvents, FormatJSON}))
		}
	default:
		errs = append(errs, field.NotSupported(at.Child("sink"), d.Sink, sinks))
	}
	return errs
}
