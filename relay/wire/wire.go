// Package wire is the relay's HTTP API as it travels: the bodies its
// endpoints take and answer (relay/openapi.yaml describes each) and the
// terminal WebSocket's subprotocol. The relay serves them; its client, the
// kubectl plugin and the tests speak them without importing the server.
package wire

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/transcript"
)

// SessionView is a session as the API shows it.
type SessionView struct {
	Cluster   string                 `json:"cluster"`
	Namespace string                 `json:"namespace"`
	Name      string                 `json:"name"`
	Created   metav1.Time            `json:"created"`
	Spec      v1alpha1.SessionSpec   `json:"spec"`
	Status    v1alpha1.SessionStatus `json:"status"`
	// Live is set on a single Active session this relay holds.
	Live *LiveView `json:"live,omitempty"`
	// May is what the caller may do to it now (Offers), by the relay's
	// rules; every call is checked again.
	May []Offer `json:"may"`
}

// Request is what a person asks for.
type Request struct {
	Pod           string               `json:"pod"`
	Container     string               `json:"container,omitempty"`
	Mode          v1alpha1.SessionMode `json:"mode"`
	ProcessAccess bool                 `json:"processAccess,omitempty"`
	Duration      string               `json:"duration"`
	Reason        string               `json:"reason"`
	KeepPod       bool                 `json:"keepPod,omitempty"`
	// GlassBroken starts without approval, for whoever may break the glass;
	// the session must be reviewed afterwards.
	GlassBroken bool `json:"glassBroken,omitempty"`
}

// Decision is an approver's answer.
type Decision struct {
	// KeepPod keeps the pod after the session instead of recycling it.
	KeepPod bool `json:"keepPod,omitempty"`
	// WithoutProcessAccess approves a session asked with process access
	// without it.
	WithoutProcessAccess bool   `json:"withoutProcessAccess,omitempty"`
	Comment              string `json:"comment,omitempty"`
	// Reason is why a session is denied.
	Reason string `json:"reason,omitempty"`
}

// Review is a reviewer's note on a session, due for every glass-broken one.
type Review struct {
	Comment string `json:"comment"`
}

// LiveView is when a held session's idle and disconnect limits end it, as
// this relay counts them now.
type LiveView struct {
	Viewers int `json:"viewers"`
	// Attached is who has the terminal open: the requester typing, the
	// approvers watching.
	Attached   []Attached  `json:"attached"`
	IdleEndsAt metav1.Time `json:"idleEndsAt"`
	// AloneEndsAt is when the disconnect limit ends a session with no
	// terminal open (the requester's or a watcher's).
	AloneEndsAt *metav1.Time `json:"aloneEndsAt,omitempty"`
	// Moderated says the requester's input reaches the shell only while a
	// moderator (an approver) watches; InputHeld that none watches now.
	Moderated bool `json:"moderated,omitempty"`
	InputHeld bool `json:"inputHeld,omitempty"`
}

// Attached is one person with the session's terminal open.
type Attached struct {
	Name   string `json:"name"`
	Typing bool   `json:"typing"`
}

// EndRequest says why a session ends early; optional.
type EndRequest struct {
	Reason string `json:"reason,omitempty"`
}

// ExtensionAsk is the requester's ask for more time on a running session.
type ExtensionAsk struct {
	// Duration is how much later the hard stop is to move, e.g. 30m.
	Duration string `json:"duration"`
	Reason   string `json:"reason"`
}

// LoginConfig is where a CLI signs people in for this relay: the issuer
// and the client ID its tokens must be issued for (public in any OIDC
// client; no secret).
type LoginConfig struct {
	Issuer   string `json:"issuer"`
	ClientID string `json:"clientID"`
}

// SessionEvent says that a Session the caller may see changed. It names
// the Session and its phase only: a page reads what it shows through the
// API, as before, so an event tells nobody more than they could read. An
// event with no name says changes may have been missed: read again.
type SessionEvent struct {
	Cluster   string                `json:"cluster"`
	Namespace string                `json:"namespace,omitempty"`
	Name      string                `json:"name,omitempty"`
	Phase     v1alpha1.SessionPhase `json:"phase,omitempty"`
	// Deleted: the Session is gone (its record kept elsewhere).
	Deleted bool `json:"deleted,omitempty"`
}

// SessionSearch is where a search found its text in one recording.
type SessionSearch struct {
	Query string `json:"query"`
	// Truncated: the matches reached their bound; there may be more.
	Truncated bool               `json:"truncated"`
	Matches   []transcript.Match `json:"matches"`
}

// RecordingSearch is where a search found its text in the recordings of a
// namespace's sessions that ended since Since, newest first.
type RecordingSearch struct {
	Query string    `json:"query"`
	Since time.Time `json:"since"`
	// Searched names the sessions whose recordings were searched.
	Searched []string `json:"searched"`
	// Withheld counts the sessions whose recordings the caller may not play
	// (sensitive ones, without viewSensitive): not searched, not named.
	Withheld int `json:"withheld"`
	// LeftOut counts the older sessions past the limit of sessions or of
	// matches: not searched.
	LeftOut int `json:"leftOut"`
	// Unreadable are the sessions whose recordings could not be read as
	// their Sessions name them, and why.
	Unreadable []SessionProblem `json:"unreadable,omitempty"`
	// Overwritten names the sessions whose recordings someone wrote over
	// in the store: the recorded versions were searched.
	Overwritten []string `json:"overwritten,omitempty"`
	// Truncated: the matches reached their bound; there may be more.
	Truncated bool           `json:"truncated"`
	Results   []SearchResult `json:"results"`
}

// SessionProblem is why a session's recording was not searched.
type SessionProblem struct {
	Session string `json:"session"`
	Problem string `json:"problem"`
}

// SearchResult is one match and the session it is in; At is in seconds
// since the start of that session's recording.
type SearchResult struct {
	Session string  `json:"session"`
	At      float64 `json:"at"`
	Stream  string  `json:"stream"`
	Context string  `json:"context"`
}

// TerminalProtocol is the terminal WebSocket's subprotocol. A browser
// cannot set headers on a WebSocket, so it sends its token as a second
// subprotocol, BearerProtocolPrefix + token; the relay answers with
// TerminalProtocol only, never echoing the token.
const (
	TerminalProtocol     = "breakglass.terminal.v1"
	BearerProtocolPrefix = "bearer.breakglass.tower.dev."
)

// Offer is something the caller may do to a session now, by the relay's
// own rules (relay/api/may.go): what a portal shows and offers. Every call is
// checked again, so an offer is never a permission; a portal that also
// judges (Backstage's permissions) shows the offers it allows too.
type Offer string

// The offers, in the order a session's page shows them.
const (
	// OfferApprove and OfferDeny decide a request: another person, with the
	// approve permission, on a Pending session.
	OfferApprove Offer = "approve"
	OfferDeny    Offer = "deny"
	// OfferStart starts an approved session: its requester, while still
	// allowed to ask for it.
	OfferStart Offer = "start"
	// OfferWithdraw is the requester ending their session before it starts.
	OfferWithdraw Offer = "withdraw"
	// OfferCancel is someone else ending a session before it starts.
	OfferCancel Offer = "cancel"
	// OfferEnd ends a running session.
	OfferEnd Offer = "end"
	// OfferType opens a running session's terminal to type in (its
	// requester); OfferWatch opens it read-only (an approver).
	OfferType  Offer = "type"
	OfferWatch Offer = "watch"
	// OfferExtend asks for more time on a running session (its requester);
	// OfferDecideExtension answers such an ask (another person).
	OfferExtend          Offer = "extend"
	OfferDecideExtension Offer = "decideExtension"
	// OfferReview reviews a session whose review is due (never its requester).
	OfferReview Offer = "review"
	// OfferPlay plays an ended session's recording.
	OfferPlay Offer = "play"
)

// Offers is every offer: its button's label, and what it does.
var Offers = []v1alpha1.Term{
	{Name: string(OfferApprove), Label: "Approve", Means: "let the requester start the session, with what you grant"},
	{Name: string(OfferDeny), Label: "Deny", Means: "refuse the request; the requester reads your reason"},
	{Name: string(OfferStart), Label: "Start the session", Means: "grant, add the debug container (or the copy) and attach its terminal"},
	{Name: string(OfferWithdraw), Label: "Withdraw the request", Means: "end your own session before it starts"},
	{Name: string(OfferCancel), Label: "Cancel the session", Means: "end someone else's session before it starts"},
	{Name: string(OfferEnd), Label: "End the session", Means: "end a running session: the pod is recycled and the grant deleted"},
	{Name: string(OfferType), Label: "Open the terminal", Means: "type in the debug container's terminal (recorded)"},
	{Name: string(OfferWatch), Label: "Watch the terminal", Means: "watch the terminal read-only: what you type is not sent"},
	{Name: string(OfferExtend), Label: "Ask for more time", Means: "ask another person to move the hard stop later"},
	{Name: string(OfferDecideExtension), Label: "Give more time", Means: "answer the requester's ask for more time"},
	{Name: string(OfferReview), Label: "Submit the review", Means: "say what you found in the session's record"},
	{Name: string(OfferPlay), Label: "Play the recording", Means: "play the recording and check its hashes"},
}

// The durations a request form offers, shortest first, and the one it
// starts at; and what an ask for more time offers. The relay takes any
// duration within its bounds; these are the choices both portals show.
var (
	DurationChoices  = []string{"15m", "30m", "45m", "60m", "75m"}
	ExtensionChoices = []string{"15m", "30m", "45m"}
)

// DefaultDuration is the request form's first choice.
const DefaultDuration = "30m"

// MaxReason bounds a reason, a comment or a review's words.
const MaxReason = 1024
