package v1alpha1

// A session's words, spelled once: the steps the audit log records and the
// kinds of notification people are sent. Code, docs/api.md (hack/apidocs)
// and the notification routes' validation all read them from here, so a
// step or kind is added in one place and nowhere spelled differently.

// Word is one entry of the vocabulary: its spelling and what it means.
// +kubebuilder:object:generate=false
type Word struct {
	Name  string
	Means string
}

// The audit steps: each event's kind in the audit log.
const (
	// The moves of a Session's status, made through lifecycle.
	StepRequest    = "request"
	StepBreakGlass = "breakglass"
	StepApprove    = "approve"
	StepDeny       = "deny"
	StepStart      = "start"
	StepEnd        = "end"
	StepExpire     = "expire"
	StepEvidence   = "evidence"
	StepAnchor     = "anchor"
	StepReview     = "review"
	StepReviewDue  = "review-due"
	StepResume     = "resume"
	StepRelease    = "release"
	// An active session's extension: asked for by its requester, then
	// approved (a new grant, the hard stop moved) or denied by another.
	StepExtendRequest = "extend-request"
	StepExtend        = "extend"
	StepExtendDeny    = "extend-deny"
	// StepUndone follows a move that was audited but could not be written:
	// the log says it did not take effect.
	StepUndone = "undone"

	// Steps that leave the Session's status as it is.
	StepGrant          = "grant"
	StepAttach         = "attach"
	StepModeration     = "moderation"
	StepPlay           = "play"
	StepSearch         = "search"
	StepTampered       = "tampered"
	StepRefusal        = "refusal"
	StepRevoke         = "revoke"
	StepRecycle        = "recycle"
	StepStandingRights = "standing-rights"
	StepPlaneDrift     = "plane-drift"
)

// AuditSteps is every step the audit log records, in a session's order.
var AuditSteps = []Word{
	{StepRequest, "a person asked for a session; it waits for an approver"},
	{StepBreakGlass, "a person broke the glass: the session is approved without an approver and reviewed afterwards"},
	{StepApprove, "another person approved the request"},
	{StepDeny, "another person denied the request"},
	{StepGrant, "the relay bound its own identity to a debug role for the session's TTL (at the start, or at an approved extension)"},
	{StepStart, "the debug container (or the copy) runs and the session is Active"},
	{StepAttach, "a terminal attached: the relay to the debug container, or a person's browser or CLI to the relay (typing or watching)"},
	{StepModeration, "a moderator started or stopped watching a moderated session"},
	{StepExtendRequest, "the requester asked for more time"},
	{StepExtend, "another person approved the extension: a new grant, the hard stop moved"},
	{StepExtendDeny, "another person denied the extension"},
	{StepRelease, "a relay replica shutting down let go of the session for another to take up"},
	{StepResume, "a relay took the session up again after the one running it stopped"},
	{StepEnd, "the session ended: by a person, a limit, or the sweeper for an abandoned one"},
	{StepExpire, "a request nobody decided on, or an approval nobody used, ran out of time: the session never starts"},
	{StepRevoke, "the sweeper deleted a grant at its TTL, or a standing binding to the plane"},
	{StepRecycle, "the sweeper deleted a debugged pod (or copy) the session left behind"},
	{StepEvidence, "the recording's manifest was written to the store, with its SHA-256"},
	{StepAnchor, "the recording's SHA-256 was entered in the transparency log"},
	{StepPlay, "a person played a recording or read its commands"},
	{StepSearch, "a person searched recordings' commands"},
	{StepTampered, "a recording did not match its Session or was written over in the store: refused, never served"},
	{StepReviewDue, "a glass-broken session's review was scheduled (its due time recorded), or fell due and the fallback reviewer was told"},
	{StepReview, "a person other than the requester reviewed a glass-broken session"},
	{StepRefusal, "the relay refused a request (no valid token, not allowed, or no recording store)"},
	{StepStandingRights, "the sweeper found the plane's accounts holding rights outside any session (a binding, a widened role) and names them"},
	{StepPlaneDrift, "the sweeper found the plane's admission policies, their bindings or its roles changed from what the chart rendered, or gone, and names them"},
	{StepUndone, "a move audited just before did not take effect: the cluster refused it, or not every audit sink took it"},
}

// The notification kinds.
const (
	NotifyRequestNew         = "request.new"
	NotifyRequestApproved    = "request.approved"
	NotifyRequestDenied      = "request.denied"
	NotifyGlassBroken        = "glass.broken"
	NotifySessionStarted     = "session.started"
	NotifySessionEnded       = "session.ended"
	NotifySessionResumed     = "session.resumed"
	NotifyReviewOverdue      = "review.overdue"
	NotifyExtensionRequested = "extension.requested"
	NotifyExtensionApproved  = "extension.approved"
	NotifyExtensionDenied    = "extension.denied"
)

// Audience is whom a kind of notification is for.
type Audience string

// The audiences of notifications.
const (
	AudienceRequester        Audience = "the requester"
	AudienceApprovers        Audience = "the approvers"
	AudienceEveryone         Audience = "everyone routed"
	AudienceFallbackReviewer Audience = "the fallback reviewer"
)

// notifications is each kind, whom it is for and what it says: the one
// table NotificationKinds and NotificationAudience read.
var notifications = []struct {
	kind  string
	to    Audience
	means string
}{
	{NotifyRequestNew, AudienceApprovers, "a request waits for one of them"},
	{NotifyRequestApproved, AudienceRequester, "the request was approved"},
	{NotifyRequestDenied, AudienceRequester, "the request was denied"},
	{NotifyGlassBroken, AudienceEveryone, "a session started without approval and is to be reviewed"},
	{NotifySessionStarted, AudienceApprovers, "a session started"},
	{NotifySessionEnded, AudienceRequester, "the session ended, and why"},
	{NotifySessionResumed, AudienceRequester, "another relay took the session up again"},
	{NotifyReviewOverdue, AudienceFallbackReviewer, "a glass-broken session's review is overdue"},
	{NotifyExtensionRequested, AudienceApprovers, "the requester asks for more time"},
	{NotifyExtensionApproved, AudienceRequester, "more time was approved"},
	{NotifyExtensionDenied, AudienceRequester, "more time was denied"},
}

// NotificationKinds is every kind of notification, and whom it goes to.
var NotificationKinds = func() []Word {
	out := make([]Word, len(notifications))
	for i, n := range notifications {
		out[i] = Word{n.kind, "to " + string(n.to) + ": " + n.means}
	}
	return out
}()

// NotificationAudience is whom a notification of kind is for ("" for a
// kind not in the vocabulary).
func NotificationAudience(kind string) Audience {
	for _, n := range notifications {
		if n.kind == kind {
			return n.to
		}
	}
	return ""
}

// Names is the spellings of words, in their order.
func Names(words []Word) []string {
	names := make([]string, len(words))
	for i, w := range words {
		names[i] = w.Name
	}
	return names
}
