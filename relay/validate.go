package relay

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/relay/api"
	"github.com/tower-dev/breakglass/relay/console"
)

// Default fills what the configuration leaves out. It changes only empty
// fields, so a configuration defaulted twice is the same as once.
func (c *Config) Default() {
	def := func(d *metav1.Duration, v time.Duration) {
		if d.Duration == 0 {
			d.Duration = v
		}
	}
	def(&c.Limits.Idle, 10*time.Minute)
	def(&c.Limits.Disconnect, 2*time.Minute)
	def(&c.Limits.Heartbeat, 20*time.Second)
	def(&c.Limits.Grace, 2*time.Minute)
	def(&c.Limits.ReviewWithin, 24*time.Hour)
	def(&c.Limits.MaxTotal, v1alpha1.DefaultMaxTotal)
	if c.Limits.Extensions == nil {
		c.Limits.Extensions = ptr.To(v1alpha1.DefaultMaxExtensions)
	}
	def(&c.Recording.Retention, 365*24*time.Hour)
	def(&c.Audit.CheckpointEvery, 10*time.Minute)
	if c.Audit.Chain == "" {
		c.Audit.Chain = "relay"
	}
	if c.OIDC.UsernameClaim == "" {
		c.OIDC.UsernameClaim = "email"
	}
	if c.OIDC.GroupsClaim == "" {
		c.OIDC.GroupsClaim = "groups"
	}
	// Notifications link to the console when no portal is named; a
	// console address that is wrong is refused by Validate.
	if c.Console != nil && c.PortalURL == "" && console.CheckURL(c.Console.URL) == nil {
		c.PortalURL = strings.TrimSuffix(c.Console.URL, "/") + "/console"
	}
	if c.Notifications != nil {
		c.Notifications.Default()
	}
}

// Validate says what in the (defaulted) configuration cannot work or is
// unsafe, each at its field's path. It changes nothing.
func (c *Config) Validate() field.ErrorList {
	var errs field.ErrorList
	if c.Listen == "" {
		errs = append(errs, field.Required(field.NewPath("listen"), `the API's address, e.g. ":8443"`))
	}
	errs = append(errs, c.validateOIDC(field.NewPath("oidc"))...)
	if c.Console != nil {
		if err := console.CheckURL(c.Console.URL); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("console", "url"), c.Console.URL, err.Error()))
		}
	}
	for i, o := range c.AllowedOrigins {
		if u, err := url.Parse(o); err != nil || u.Scheme == "" || u.Host == "" || u.Path != "" {
			errs = append(errs, field.Invalid(field.NewPath("allowedOrigins").Index(i), o, "not an origin such as https://tower.example.com"))
		}
	}
	errs = append(errs, c.validateClusters(field.NewPath("clusters"))...)
	for i, p := range c.Permissions {
		at := field.NewPath("permissions").Index(i)
		if len(p.Groups) == 0 || len(p.Namespaces) == 0 || len(p.Actions) == 0 {
			errs = append(errs, field.Required(at, "groups, namespaces and actions are required"))
		}
		for j, a := range p.Actions {
			if !slices.Contains(api.Actions, a) {
				errs = append(errs, field.NotSupported(at.Child("actions").Index(j), a, api.Actions))
			}
		}
	}
	errs = append(errs, c.validateLimits(field.NewPath("limits"))...)
	if (c.Recording.Dir == "") == (c.Recording.S3 == nil) {
		errs = append(errs, field.Invalid(field.NewPath("recording"), "", "exactly one of dir and s3 is required: no store, no session"))
	}
	if c.Rekor != nil {
		errs = append(errs, c.Rekor.validate(field.NewPath("rekor"))...)
	}
	if c.NotifyURL != "" {
		if u, err := url.Parse(c.NotifyURL); err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
			errs = append(errs, field.Invalid(field.NewPath("notifyURL"), c.NotifyURL, "not an http(s) URL"))
		}
	}
	if c.Notifications != nil {
		errs = append(errs, c.Notifications.Validate(field.NewPath("notifications"))...)
	}
	return errs
}

func (c *Config) validateOIDC(at *field.Path) field.ErrorList {
	var errs field.ErrorList
	if u, err := url.Parse(c.OIDC.Issuer); c.OIDC.Issuer == "" || err != nil || u.Host == "" {
		errs = append(errs, field.Invalid(at.Child("issuer"), c.OIDC.Issuer, "an issuer URL is required"))
	}
	if c.OIDC.Audience == "" {
		errs = append(errs, field.Required(at.Child("audience"), "the client ID tokens are issued for"))
	}
	for i, aud := range c.OIDC.PortalAudiences {
		if aud == "" || aud == c.OIDC.Audience {
			errs = append(errs, field.Invalid(at.Child("portalAudiences").Index(i), aud, "not a portal's client ID (empty, or the relay's own)"))
		}
	}
	return errs
}

func (c *Config) validateClusters(at *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(c.Clusters) == 0 {
		errs = append(errs, field.Required(at, "at least one cluster is required"))
	}
	seen := map[string]bool{}
	for i, cl := range c.Clusters {
		at := at.Index(i)
		switch {
		case len(validation.IsDNS1123Label(cl.Name)) > 0:
			errs = append(errs, field.Invalid(at.Child("name"), cl.Name, "not a DNS label"))
		case seen[cl.Name]:
			errs = append(errs, field.Duplicate(at.Child("name"), cl.Name))
		}
		seen[cl.Name] = true
		if cl.Tier != Ground && cl.Tier != Flight {
			errs = append(errs, field.NotSupported(at.Child("tier"), cl.Tier, []Tier{Ground, Flight}))
		}
		if cl.Tier == Flight && cl.RequireApproval != nil && !*cl.RequireApproval {
			errs = append(errs, field.Invalid(at.Child("requireApproval"), false, "a Flight cluster always requires approval"))
		}
		if cl.DebugImage == "" {
			errs = append(errs, field.Required(at.Child("debugImage"), "the pinned debug image"))
		}
		for j, ns := range cl.Moderated {
			if ns != "*" && len(validation.IsDNS1123Label(ns)) > 0 {
				errs = append(errs, field.Invalid(at.Child("moderated").Index(j), ns, "neither a namespace name nor *"))
			}
		}
	}
	return errs
}

func (c *Config) validateLimits(at *field.Path) field.ErrorList {
	var errs field.ErrorList
	if n := c.Limits.Extensions; n != nil && (*n < 0 || *n > 4) {
		errs = append(errs, field.Invalid(at.Child("extensions"), *n, "a session is extended 0 to 4 times"))
	}
	if t := c.Limits.MaxTotal.Duration; t < api.MinDuration || t > 24*time.Hour {
		errs = append(errs, field.Invalid(at.Child("maxTotal"), t.String(), fmt.Sprintf("a session runs at most %s to 24h in all", api.MinDuration)))
	}
	if c.Limits.Heartbeat.Duration >= c.Limits.Disconnect.Duration {
		errs = append(errs, field.Invalid(at.Child("heartbeat"), c.Limits.Heartbeat.Duration.String(), "must be shorter than limits.disconnect"))
	}
	return errs
}

func (r *Rekor) validate(at *field.Path) field.ErrorList {
	var errs field.ErrorList
	if u, err := url.Parse(r.URL); err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		errs = append(errs, field.Invalid(at.Child("url"), r.URL, "not the log's http(s) URL"))
	}
	if r.KeyFile == "" {
		errs = append(errs, field.Required(at.Child("keyFile"), "the relay's signing key"))
	}
	switch {
	case r.APIVersion != 0 && r.APIVersion != 1 && r.APIVersion != 2:
		errs = append(errs, field.NotSupported(at.Child("apiVersion"), r.APIVersion, []string{"1", "2"}))
	case r.APIVersion == 2 && r.PublicKeyFile == "":
		errs = append(errs, field.Required(at.Child("publicKeyFile"), "Rekor v2 does not serve its key: pin it"))
	case r.APIVersion == 2 && r.CertificateFile != "":
		errs = append(errs, field.Forbidden(at.Child("certificateFile"), "Rekor v2 gives no trusted time to check a certificate at: sign with the key alone, or use Rekor v1"))
	}
	return errs
}
