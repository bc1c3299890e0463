package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The conditions a Session's status carries, each a summary of the fields
// it is computed from (SetConditions); the Session policy refuses a status
// whose conditions disagree with those fields, so a condition never says
// more than the record does.
const (
	// ConditionGranted: the session holds its grant (Active with a grant).
	ConditionGranted = "Granted"
	// ConditionAttached: its debug container runs and the relay's terminal
	// is attached (Active with a debug container).
	ConditionAttached = "Attached"
	// ConditionRecorded: its recording is finalized (the manifest's SHA-256 is in the evidence).
	ConditionRecorded = "Recorded"
	// ConditionAnchored: the recording is in the transparency log (an entry ID).
	ConditionAnchored = "Anchored"
	// ConditionReviewed: a glass-broken session was reviewed; False while the review is due.
	ConditionReviewed = "Reviewed"
)

// ConditionTypes are every condition a Session may carry.
var ConditionTypes = []string{ConditionGranted, ConditionAttached, ConditionRecorded, ConditionAnchored, ConditionReviewed}

// SetConditions sets st's conditions from its fields, keeping each one's
// transition time while its status does not change. Conditions that do not
// apply yet are left out: Granted and Attached once the session started,
// Recorded and Anchored once it has evidence, Reviewed once a review is due
// or done.
func SetConditions(st *SessionStatus, now metav1.Time) {
	set := func(t string, ok bool, yes, no, message string) {
		c := metav1.Condition{Type: t, Status: metav1.ConditionFalse, Reason: no, Message: message, LastTransitionTime: now}
		if ok {
			c.Status, c.Reason = metav1.ConditionTrue, yes
		}
		meta.SetStatusCondition(&st.Conditions, c)
	}
	active := st.Phase == PhaseActive
	if st.Grant != nil {
		set(ConditionGranted, active, "Granted", "Revoked", "the grant "+st.Grant.RoleBinding+" ("+st.Grant.Role+")")
	}
	if st.DebugContainer != nil {
		set(ConditionAttached, active, "Attached", "Detached", "debug container "+st.DebugContainer.Name+" in pod "+st.DebugContainer.Pod)
	}
	if ev := st.Evidence; ev != nil {
		set(ConditionRecorded, ev.ManifestSHA256 != "", "Finalized", "NotFinalized", "manifest sha256 "+ev.ManifestSHA256)
		switch {
		case ev.EntryID != "":
			set(ConditionAnchored, true, "InLog", "", "transparency-log entry "+ev.EntryID)
		case ev.AnchorPending:
			set(ConditionAnchored, false, "", "Pending", "waiting for the transparency log to take the manifest's hash")
		default:
			// Final: this plane anchors in no log, and nothing will change it.
			set(ConditionAnchored, false, "", "NoLog", "no transparency log is configured: the manifest's hash is anchored nowhere")
		}
	}
	if r := st.Review; r != nil && (r.DueAt != nil || r.By != "") {
		set(ConditionReviewed, r.By != "", "Reviewed", "Due", "reviewed by "+r.By)
	}
}
