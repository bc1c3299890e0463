// Package relay is the relay's HTTP surface: people authenticated by OIDC
// request, approve, deny and review debug sessions (the decisions, in
// relay/api), and start, end and attach to a session's recorded terminal
// over a WebSocket (the sessions this replica runs, here). The cluster
// holds each session's truth in a Session resource; the relay is the only
// identity that may take a debug grant, and only for an approved session.
package relay

import (
	"fmt"
	"os"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/notify"
	"github.com/tower-dev/breakglass/relay/api"
	"github.com/tower-dev/breakglass/relay/debugsession"
)

// Config is the relay's configuration file.
type Config struct {
	// Listen is the API's address, e.g. ":8443".
	Listen string `json:"listen"`
	// PortalURL is the portal's base address, for deep links in notifications.
	PortalURL string `json:"portalURL,omitempty"`
	// AllowedOrigins are the browser origins that may open a terminal
	// (e.g. "https://tower.example.com"). A request without an Origin
	// header is not a browser's and is let through to token checks.
	AllowedOrigins []string        `json:"allowedOrigins,omitempty"`
	OIDC           OIDC            `json:"oidc"`
	Clusters       []Cluster       `json:"clusters"`
	Permissions    api.Permissions `json:"permissions"`
	Limits         Limits          `json:"limits,omitempty"`
	Recording      Recording       `json:"recording"`
	// Rekor, when set, anchors every recording in a transparency log.
	Rekor *Rekor     `json:"rekor,omitempty"`
	Audit AuditSinks `json:"audit,omitempty"`
	// NotifyURL receives every notification as a plain JSON POST, as it
	// always has, beside what Notifications routes.
	NotifyURL string `json:"notifyURL,omitempty"`
	// Notifications routes them to Slack, Teams, e-mail and webhooks
	// (CloudEvents), rate limited and retried (docs/operators.md).
	Notifications *notify.Config `json:"notifications,omitempty"`
	// Console, when set, serves the web console at /console/, signing
	// people in with the OIDC issuer as client oidc.audience.
	Console *ConsoleConfig `json:"console,omitempty"`
}

// ConsoleConfig is the web console's.
type ConsoleConfig struct {
	// URL is the relay's address as browsers reach it, e.g.
	// https://breakglass.example.com. Register URL/auth/callback as the
	// client's redirect URI at the issuer. Notifications link into the
	// console unless portalURL says otherwise.
	URL string `json:"url"`
	// ClientSecretFile holds the client's secret, if the issuer has the
	// relay as a confidential client (recommended: a refresh token taken
	// from a browser is then of no use alone). Empty: a public client.
	ClientSecretFile string `json:"clientSecretFile,omitempty"`
}

// OIDC says whose tokens the relay accepts.
type OIDC struct {
	Issuer string `json:"issuer"`
	// Audience is the client ID tokens must be issued for.
	Audience string `json:"audience"`
	// PortalAudiences are the client IDs of portals that sign people in
	// at the same issuer and forward each person's own ID token (Tower's
	// Backstage backend): a person is the same issuer and subject whichever
	// way they come, so "never your own" holds across the console, the CLI
	// and the portal. A portal cannot make such a token up; it only carries
	// one the issuer gave the person.
	PortalAudiences []string `json:"portalAudiences,omitempty"`
	// UsernameClaim names a person (default "email").
	UsernameClaim string `json:"usernameClaim,omitempty"`
	// GroupsClaim lists their groups (default "groups").
	GroupsClaim string `json:"groupsClaim,omitempty"`
}

// Tier is how strict a cluster is.
type Tier string

const (
	// Ground clusters allow exec; approval may be turned off.
	Ground Tier = "ground"
	// Flight clusters are production: no exec, approval always required.
	Flight Tier = "flight"
)

// Cluster is one cluster the relay serves.
type Cluster struct {
	Name string `json:"name"`
	Tier Tier   `json:"tier"`
	// Kubeconfig is the portal identity's kubeconfig; empty means the
	// relay's in-cluster ServiceAccount.
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// DebugImage is the pinned debug image (by digest).
	DebugImage string `json:"debugImage"`
	// RequireApproval may be false on Ground only.
	RequireApproval *bool `json:"requireApproval,omitempty"`
	// Moderated are the namespaces ("*": all) whose sessions need a
	// moderator: the requester's keystrokes reach the shell only while an
	// approver watches.
	Moderated []string `json:"moderated,omitempty"`
}

// Moderates says whether sessions in namespace ns need a moderator.
func (c Cluster) Moderates(ns string) bool {
	return slices.Contains(c.Moderated, "*") || slices.Contains(c.Moderated, ns)
}

// NeedsApproval says whether a second person must approve sessions here.
func (c Cluster) NeedsApproval() bool {
	return c.Tier == Flight || c.RequireApproval == nil || *c.RequireApproval
}

// Limits end sessions; zero values take the defaults.
type Limits struct {
	// Idle is how long nobody may type (default 10m).
	Idle metav1.Duration `json:"idle,omitempty"`
	// Disconnect is how long nobody may watch (default 2m).
	Disconnect metav1.Duration `json:"disconnect,omitempty"`
	// Heartbeat is how often the relay writes each session's sign of life
	// (default 20s): a single relay restarting, or the sweeper, count a
	// session left after three missed. Replicas learn that one of them is
	// gone within seconds from its presence Lease instead.
	Heartbeat metav1.Duration `json:"heartbeat,omitempty"`
	// Grace is added to a session's duration for its grant's TTL (default 2m).
	Grace metav1.Duration `json:"grace,omitempty"`
	// ReviewWithin is when a glass-broken session's review falls due (default 24h).
	ReviewWithin metav1.Duration `json:"reviewWithin,omitempty"`
	// Extensions is how many times one session may be given more time
	// (default 1; 0: never). The cluster's policies bound it again (the
	// chart's params.extensions.max): the chart sets both from one value.
	Extensions *int `json:"extensions,omitempty"`
	// MaxTotal is the longest a session may run, extensions included
	// (default 2h), as the chart's params.extensions.maxTotal.
	MaxTotal metav1.Duration `json:"maxTotal,omitempty"`
}

// extensionLimits are the limits' bounds on extensions, their defaults
// where unset (a Config built in code, not completed).
func (l Limits) extensionLimits() debugsession.ExtensionLimits {
	e := debugsession.ExtensionLimits{Max: ptr.Deref(l.Extensions, v1alpha1.DefaultMaxExtensions), MaxTotal: l.MaxTotal.Duration}
	if e.MaxTotal == 0 {
		e.MaxTotal = v1alpha1.DefaultMaxTotal
	}
	return e
}

// Recording says where evidence goes: a write-once directory or S3 with
// Object Lock.
type Recording struct {
	Dir string               `json:"dir,omitempty"`
	S3  *recording.S3Options `json:"s3,omitempty"`
	// Retention is how long evidence is locked (default 365 days).
	Retention metav1.Duration `json:"retention,omitempty"`
}

// Rekor is the transparency log recordings are anchored in.
type Rekor struct {
	// URL is the log, e.g. https://rekor.sigstore.dev or a private instance.
	URL string `json:"url"`
	// KeyFile is the relay's signing key: a cosign key file (its password in
	// $BREAKGLASS_REKOR_KEY_PASSWORD), a KMS URI or k8s://namespace/secret.
	KeyFile string `json:"keyFile"`
	// CertificateFile, when set, is a certificate for that key naming the
	// relay's identity (PEM): each anchor carries it, and reviewers pin the
	// identity (issuer and subject) instead of the key.
	CertificateFile string `json:"certificateFile,omitempty"`
	// APIVersion is the log's: 1 (Rekor v1, the default) or 2 (Rekor v2,
	// tile-based; it needs PublicKeyFile and a signing key, not a
	// certificate).
	APIVersion int `json:"apiVersion,omitempty"`
	// PublicKeyFile is the log's public key (PEM), pinned: required for
	// Rekor v2, which does not serve it; for v1 it is used instead of asking
	// the log.
	PublicKeyFile string `json:"publicKeyFile,omitempty"`
}

// AuditSinks are where audit events go besides stdout.
type AuditSinks struct {
	// File is appended to and synced per batch; the chain continues from
	// its last event after a restart.
	File string `json:"file,omitempty"`
	// URL is a collector taking NDJSON posts, retried with backoff.
	URL string `json:"url,omitempty"`
	// Chain names this relay's audit chain in the evidence store's
	// checkpoints (default "relay").
	Chain string `json:"chain,omitempty"`
	// CheckpointEvery is how often the chain's head is signed and anchored
	// in the transparency log (with rekor set; default 10m), and once more
	// at shutdown.
	CheckpointEvery metav1.Duration `json:"checkpointEvery,omitempty"`
}

// LoadConfig reads and checks a config file. Unknown fields are refused:
// a misspelt limit must not silently fall back to its default.
func LoadConfig(path string) (*Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := ParseConfig(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// ParseConfig is LoadConfig on the file's bytes.
func ParseConfig(raw []byte) (*Config, error) {
	c := &Config{}
	if err := yaml.UnmarshalStrict(raw, c); err != nil {
		return nil, err
	}
	if err := c.Complete(); err != nil {
		return nil, err
	}
	return c, nil
}

// Complete fills the defaults and refuses what cannot work or is unsafe,
// as one error naming every field that is wrong.
func (c *Config) Complete() error {
	c.Default()
	return c.Validate().ToAggregate()
}
