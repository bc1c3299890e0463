package v1alpha1

import (
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SessionMode says where the debug container runs.
// +kubebuilder:validation:Enum=live;copy;heldCopy
type SessionMode string

const (
	// ModeLive adds an ephemeral debug container to the running pod, which keeps serving.
	ModeLive SessionMode = "live"
	// ModeCopy creates a copy of the pod, behind no Service, with the debug container beside the app.
	ModeCopy SessionMode = "copy"
	// ModeHeldCopy is a copy whose app container is held from running its entrypoint.
	ModeHeldCopy SessionMode = "heldCopy"
)

// SessionSpec is what was asked for. The API server refuses any change to it after create.
type SessionSpec struct {
	// TargetPod is the pod to look inside, in the Session's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	TargetPod string `json:"targetPod"`

	// TargetContainer is the app container whose processes the debug
	// container may see; only with ProcessAccess.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	TargetContainer string `json:"targetContainer,omitempty"`

	// Mode is live, copy or heldCopy.
	Mode SessionMode `json:"mode"`

	// ProcessAccess asks for the breakglass:debug-process grant: the debug
	// container shares the target container's process namespace.
	// +optional
	ProcessAccess bool `json:"processAccess,omitempty"`

	// Duration is the hard stop, a Go duration within the chart's bounds
	// (params.sessionDuration).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+h)?([0-9]+m)?([0-9]+s)?$`
	// +kubebuilder:validation:MaxLength=16
	Duration metav1.Duration `json:"duration"`

	// KeepPod asks that the pod not be recycled at the end; the approver decides.
	// +optional
	KeepPod bool `json:"keepPod,omitempty"`

	// Reason is why, in the requester's words.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	Reason string `json:"reason"`

	// Requester is the person who asked, as the portal's identity provider names them.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Requester string `json:"requester"`
	// RequesterID is the requester's identity: the identity provider's
	// issuer and subject ("issuer#subject"). The name above is for people
	// to read; separation of duty compares this.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	RequesterID string `json:"requesterID,omitempty"`

	// GlassBroken is set when the requester started without approval; a review is then due.
	// +optional
	GlassBroken bool `json:"glassBroken,omitempty"`
}

// SessionPhase is where a Session is in its life.
// +kubebuilder:validation:Enum=Pending;Approved;Denied;Active;Ended;Expired
type SessionPhase string

// The phases of a Session.
const (
	PhasePending  SessionPhase = "Pending"
	PhaseApproved SessionPhase = "Approved"
	PhaseDenied   SessionPhase = "Denied"
	PhaseActive   SessionPhase = "Active"
	PhaseEnded    SessionPhase = "Ended"
	PhaseExpired  SessionPhase = "Expired"
)

// EndReason says why a session ended.
// +kubebuilder:validation:Enum=hardStop;idle;disconnect;user;approver;swept;failedStart
type EndReason string

// The reasons a session ends.
const (
	EndHardStop   EndReason = "hardStop"
	EndIdle       EndReason = "idle"
	EndDisconnect EndReason = "disconnect"
	EndUser       EndReason = "user"
	EndApprover   EndReason = "approver"
	EndSwept      EndReason = "swept"
	// EndFailedStart: the start failed after the debug container was
	// added; the pod was recycled (unless it was to be kept).
	EndFailedStart EndReason = "failedStart"
)

// Approval records who approved and exactly what they saw and approved.
type Approval struct {
	// Kind is what approved it: another person (Person), its requester
	// breaking the glass (GlassBroken), or a cluster that needs no approval
	// (NotRequired). Readers decide by it, never by By's words.
	// +kubebuilder:validation:Enum=Person;GlassBroken;NotRequired
	// +kubebuilder:default=Person
	// +optional
	Kind ApprovalKind `json:"kind,omitempty"`
	// By is who approved, by name (the username claim, e.g. an email), or
	// what let the session start without an approver ("glass broken by
	// NAME", "approval not required on CLUSTER"), for people to read.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	By string `json:"by"`
	// ByID is the approver's identity: the identity provider's issuer and subject
	// ("issuer#subject"), which never changes with a display name or email.
	// Separation of duty compares identities, never names.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	ByID string `json:"byID,omitempty"`
	// At is when the session was approved.
	At metav1.Time `json:"at"`
	// Mode is the mode approved: the one asked for, as the approver was shown it.
	Mode SessionMode `json:"mode"`
	// ProcessAccess is whether the debug container may see the app's
	// processes: never unless asked for, and the approver may refuse it.
	ProcessAccess bool `json:"processAccess"`
	// KeepPod keeps the pod, with its debug container, after the session
	// instead of recycling it: the approver's choice.
	KeepPod bool `json:"keepPod"`
	// Comment is the approver's note for the record.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Comment string `json:"comment,omitempty"`
}

// ApprovalKind is what let a session start: a person, a broken glass, or a
// cluster that asks for no approval.
type ApprovalKind string

// The kinds of approval.
const (
	ApprovalPerson      ApprovalKind = "Person"
	ApprovalGlassBroken ApprovalKind = "GlassBroken"
	ApprovalNotRequired ApprovalKind = "NotRequired"
)

// Denial records who denied and why.
type Denial struct {
	// By is who denied, by name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	By string `json:"by"`
	// ByID is the denier's identity: the identity provider's issuer and subject
	// ("issuer#subject"), which never changes with a display name or email.
	// Separation of duty compares identities, never names.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	ByID string `json:"byID,omitempty"`
	// At is when the session was denied.
	At metav1.Time `json:"at"`
	// Reason is why, in the denier's words: the requester reads it.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Reason string `json:"reason,omitempty"`
}

// Grant is the RoleBinding a session holds.
type Grant struct {
	// RoleBinding is the grant's name in the session's namespace
	// (breakglass-SESSION, or breakglass-SESSION-xN after the N-th
	// extension).
	RoleBinding string `json:"roleBinding"`
	// Role is the debug ClusterRole it binds: breakglass:debug, or
	// breakglass:debug-process with process access.
	Role string `json:"role"`
	// ExpiresAt is when its TTL runs out; the sweeper deletes it then
	// whatever else happens.
	ExpiresAt metav1.Time `json:"expiresAt"`
}

// DebugContainer is where the session's debug container runs.
type DebugContainer struct {
	// Pod is the target pod, or its copy.
	Pod string `json:"pod"`
	// Name is the debug container's (breakglass-SESSION, then -rN for the
	// N-th relay that resumed it).
	Name string `json:"name"`
	// Image is the pinned debug image it runs, by digest.
	Image string `json:"image"`
}

// End records who or what ended a session, and why.
type End struct {
	// By is who ended it: a person by name, or the plane by the name the
	// API server knows it by (the relay's
	// system:serviceaccount:breakglass-system:tower-breakglass, the
	// sweeper's system:serviceaccount:breakglass-system:breakglass-sweeper).
	// Only who: why is Reason, and what the plane saw is Detail.
	By string `json:"by"`
	// Reason is why, as one of the end reasons.
	Reason EndReason `json:"reason"`
	// Detail is what the plane saw that ended the session, in its words:
	// the error a failed start or a broken stream gave, the relay shutting
	// down, the sweeper's finding. Data for the reviewer, shown as text; a
	// person's words are Note, never here.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Detail string `json:"detail,omitempty"`
	// At is when it ended.
	At metav1.Time `json:"at"`
	// Abnormal is set when the session did not end by a person's word or
	// a limit: its terminal stream failed, its start failed after the
	// debug container was added, its recording could not be finalized at
	// the end (the sweeper finalizes what was streamed), or the sweeper
	// ended it for a relay that stopped.
	// +optional
	Abnormal bool `json:"abnormal,omitempty"`
	// Note is why the person who ended the session early said they did, in
	// their words: data for the reviewer, shown as text. Only a person's
	// end has one, never a limit's or the sweeper's.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Note string `json:"note,omitempty"`
}

// EndDetailMax is the most characters End.Detail holds.
const EndDetailMax = 512

// EndDetail is what the plane saw, cut to what End.Detail holds (by
// characters, as the API server counts them): an error's full text is
// in the audit log and the writer's own log.
func EndDetail(saw string) string {
	if utf8.RuneCountInString(saw) <= EndDetailMax {
		return saw
	}
	return string([]rune(saw)[:EndDetailMax-3]) + "..."
}

// Evidence points at the session's recording and its transparency-log entry.
type Evidence struct {
	// URIs are the recording's files in the evidence store (the manifest,
	// the transcript, the cast, and the anchor's bundle once anchored).
	// +optional
	URIs []string `json:"uris,omitempty"`
	// ManifestSHA256 is the hex SHA-256 of the recording's manifest: what is anchored.
	// +optional
	ManifestSHA256 string `json:"manifestSHA256,omitempty"`
	// ManifestVersion is the store's version of the manifest (S3's version
	// ID): the one read back, whatever is written over it later.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	ManifestVersion string `json:"manifestVersion,omitempty"`
	// Cluster is the name the relay knows this cluster by: part of the
	// recording's key, and named in its manifest.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Cluster string `json:"cluster,omitempty"`
	// LogIndex is the manifest's entry's index in the transparency log.
	// +optional
	LogIndex *int64 `json:"logIndex,omitempty"`
	// EntryID is the entry's ID (Rekor's UUID), or its log index for a
	// tile-based log.
	// +optional
	EntryID string `json:"entryID,omitempty"`
	// AnchorPending is set while the transparency log has not yet taken the entry.
	// +optional
	AnchorPending bool `json:"anchorPending,omitempty"`
}

// Review records the review of a glass-broken session.
type Review struct {
	// DueAt is when a glass-broken session's review falls due; after it
	// the fallback reviewer is told.
	// +optional
	DueAt *metav1.Time `json:"dueAt,omitempty"`
	// By is who reviewed, by name: never the requester.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	By string `json:"by,omitempty"`
	// ByID is the reviewer's identity ("issuer#subject"), compared with the
	// requester's.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	ByID string `json:"byID,omitempty"`
	// At is when it was reviewed.
	// +optional
	At *metav1.Time `json:"at,omitempty"`
	// Comment is what the reviewer found.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Comment string `json:"comment,omitempty"`
	// FallbackNotified is set once the fallback reviewer was told the review is overdue.
	// +optional
	FallbackNotified bool `json:"fallbackNotified,omitempty"`
}

// ExtensionRequest is the requester's ask for more time on an active
// session, waiting for another person to decide it.
type ExtensionRequest struct {
	// Duration is how much later the hard stop is to move.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]{1,2}h)?([0-9]{1,4}m)?([0-9]{1,5}s)?$`
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=16
	Duration metav1.Duration `json:"duration"`
	// Reason is why, in the requester's words.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	Reason string `json:"reason"`
	// By is who asked, by name: the session's requester.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	By string `json:"by"`
	// ByID is the requester's identity ("issuer#subject").
	// +optional
	// +kubebuilder:validation:MaxLength=512
	ByID string `json:"byID,omitempty"`
	// At is when it was asked for.
	At metav1.Time `json:"at"`
}

// ExtensionDecision is what became of an extension request.
// +kubebuilder:validation:Enum=Approved;Denied
type ExtensionDecision string

// The decisions on an extension request.
const (
	ExtensionApproved ExtensionDecision = "Approved"
	ExtensionDenied   ExtensionDecision = "Denied"
)

// Extension is an extension request and its decision. An approved one
// replaced the session's grant with Grant, a new RoleBinding (a grant's
// TTL never changes in place), and moved the hard stop to Deadline: the
// one before plus Duration.
type Extension struct {
	ExtensionRequest `json:",inline"`
	// Decision is Approved or Denied.
	Decision ExtensionDecision `json:"decision"`
	// DecidedBy is who decided, by name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	DecidedBy string `json:"decidedBy"`
	// DecidedByID is the decider's identity ("issuer#subject"): never the
	// requester's.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	DecidedByID string `json:"decidedByID"`
	// DecidedAt is when it was decided.
	DecidedAt metav1.Time `json:"decidedAt"`
	// Comment is the decider's note, or why it was denied.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Comment string `json:"comment,omitempty"`
	// Grant is the RoleBinding an approval made to replace the session's.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Grant string `json:"grant,omitempty"`
	// Deadline is the hard stop an approval moved the session's to.
	// +optional
	Deadline *metav1.Time `json:"deadline,omitempty"`
}

// SessionStatus is what happened. The cluster holds it so that the sweeper can
// finish a session the relay abandoned.
type SessionStatus struct {
	// Phase is where the session is in its lifecycle: Pending, Approved or
	// Denied, Active, then Ended (or Expired, never started); only forward.
	// +optional
	Phase SessionPhase `json:"phase,omitempty"`
	// Approval is who approved and what, once approved.
	// +optional
	Approval *Approval `json:"approval,omitempty"`
	// Denial is who denied and why, once denied.
	// +optional
	Denial *Denial `json:"denial,omitempty"`
	// Grant is the RoleBinding the session holds while it runs.
	// +optional
	Grant *Grant `json:"grant,omitempty"`
	// DebugContainer is where the session's debug container runs.
	// +optional
	DebugContainer *DebugContainer `json:"debugContainer,omitempty"`
	// StartedAt is when the session started.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// Deadline is the hard stop: the session ends then, whoever is typing.
	// An approved extension moves it.
	// +optional
	Deadline *metav1.Time `json:"deadline,omitempty"`
	// ExtensionRequest is the requester's ask for more time, while another
	// person has not yet decided it.
	// +optional
	ExtensionRequest *ExtensionRequest `json:"extensionRequest,omitempty"`
	// Extensions are the extension requests decided, in order; only ever
	// added to. Each approved one moved the Deadline and replaced the Grant.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	Extensions []Extension `json:"extensions,omitempty"`
	// Heartbeat is the relay's last sign of life for this session.
	// +optional
	Heartbeat *metav1.Time `json:"heartbeat,omitempty"`
	// Resumes counts the times a relay took the session up again after the
	// relay running it stopped: each adds a debug container of its own
	// (DebugContainerName), since a debug container's shell ends with the
	// attach that fed it.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=20
	Resumes int32 `json:"resumes,omitempty"`
	// Relay names the relay replica running the session: a terminal that
	// reaches another replica is passed on to it. Empty for a relay that
	// runs alone.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Relay string `json:"relay,omitempty"`
	// Released is when the replica running the session let go of it as it
	// shut down, for another replica to take up at once rather than after
	// its heartbeat goes stale.
	// +optional
	Released *metav1.Time `json:"released,omitempty"`
	// End is who or what ended the session, and why.
	// +optional
	End *End `json:"end,omitempty"`
	// Evidence points at the finalized recording and its anchor.
	// +optional
	Evidence *Evidence `json:"evidence,omitempty"`
	// Review is a glass-broken session's review: when it is due, who made it.
	// +optional
	Review *Review `json:"review,omitempty"`
	// Conditions summarize the record above (Granted, Attached, Recorded,
	// Anchored, Reviewed: SetConditions); the Session policy holds them to it.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Session is one debug session on one pod.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=bgs
// +kubebuilder:printcolumn:name="Pod",type=string,JSONPath=`.spec.targetPod`
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.mode`
// +kubebuilder:printcolumn:name="Requester",type=string,JSONPath=`.spec.requester`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Granted",type=string,JSONPath=`.status.conditions[?(@.type=="Granted")].status`,priority=1
// +kubebuilder:printcolumn:name="Attached",type=string,JSONPath=`.status.conditions[?(@.type=="Attached")].status`,priority=1
// +kubebuilder:printcolumn:name="Recorded",type=string,JSONPath=`.status.conditions[?(@.type=="Recorded")].status`,priority=1
// +kubebuilder:printcolumn:name="Anchored",type=string,JSONPath=`.status.conditions[?(@.type=="Anchored")].status`,priority=1
// +kubebuilder:printcolumn:name="Reviewed",type=string,JSONPath=`.status.conditions[?(@.type=="Reviewed")].status`,priority=1
type Session struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec SessionSpec `json:"spec"`
	// +optional
	Status SessionStatus `json:"status,omitempty"`
}

// SessionList is a list of Sessions.
//
// +kubebuilder:object:root=true
type SessionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Session `json:"items"`
}
