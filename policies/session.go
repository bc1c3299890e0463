package policies

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// movesExpr is the CEL list of "from>to" phase moves w may make, from the
// one lifecycle table in api/v1alpha1, sorted so the policy is deterministic.
func movesExpr(w v1alpha1.Writer) string {
	var moves []string
	for from, tos := range v1alpha1.PhaseMoves {
		for to := range tos {
			if v1alpha1.CanMove(from, to, w) {
				moves = append(moves, string(from)+">"+string(to))
			}
		}
	}
	sort.Strings(moves)
	return celList(moves)
}

// unchanged is true when the status field at path (an optional chain such as
// "approval" or "review.?by") is the same before and after the request.
func unchanged(path string) string {
	return fmt.Sprintf("object.?status.?%s == oldObject.?status.?%s", path, path)
}

// once is true when the status field at path, once written, never changes.
func once(path string) string {
	return fmt.Sprintf("(!oldObject.?status.?%s.hasValue() || %s)", path, unchanged(path))
}

// SamePersonExpr is v1alpha1.SamePerson in CEL: each argument is a CEL
// expression for a string, empty where the field is absent (an optional
// chain ending in orValue with the empty string).
func SamePersonExpr(name, id, otherName, otherID string) string {
	return fmt.Sprintf("(%s != '' && %s != '' ? %s == %s : %s == %s)", id, otherID, id, otherID, name, otherName)
}

// The requester, as SamePersonExpr's first two arguments.
const requesterName, requesterID = "object.spec.requester", "object.spec.?requesterID.orValue('')"

// minExtension is the least more time a session is given.
var minExtension = v1alpha1.MinExtension.String()

// statusPaths are paths below a Session's status as optional CEL chains:
// "review.by" is review.?by, absent as a whole when review is.
func statusPaths(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = strings.ReplaceAll(p, ".", ".?")
	}
	return out
}

// SessionRules keeps a Session honest whoever writes it: only the portal
// creates one and records decisions; only the portal and the sweeper write
// its status, each only its own parts, each part once, and the phase only
// forward along the lifecycle; the spec never changes, the duration is within
// bounds, and the requester neither approves nor reviews their own session.
func SessionRules() Policy {
	update := `request.operation != 'UPDATE' || `
	return Policy{
		Name:     "breakglass-session",
		Summary:  "Sessions: made by the portal, immutable spec, bounded duration, status written by the plane once and forward only, never self-approved or self-reviewed.",
		Profiles: Profiles,
		Settings: []Setting{SessionDurationMinSetting, SessionDurationMaxSetting, ExtensionsMaxSetting, ExtensionsMaxTotalSetting},
		Rules: []Rule{{
			APIGroups:   []string{"breakglass.tower.dev"},
			APIVersions: []string{"v1alpha1"},
			Resources:   []string{"sessions", "sessions/status"},
			Operations:  []Operation{Create, Update},
		}},
		Variables: []Variable{
			{Name: "isPortal", Expression: isPortalPodExpr},
			{Name: "isSweeper", Expression: isSweeperPodExpr},
			{Name: "phase", Expression: `object.?status.?phase.orValue('')`},
			{Name: "oldPhase", Expression: `request.operation == 'UPDATE' ? oldObject.?status.?phase.orValue('') : ''`},
			{Name: "extensions", Expression: `object.?status.?extensions.orValue([])`},
			// The extension decided by this write, if any (at most one:
			// session.extensions).
			{Name: "decided", Expression: `request.operation == 'UPDATE' ?
				variables.extensions.filter(e, !(e in oldObject.?status.?extensions.orValue([]))) : variables.extensions`},
		},
		Validations: []Validation{
			{
				Name:       "session.portal-creates",
				Expression: `request.operation != 'CREATE' || variables.isPortal`,
				Message:    "[session.portal-creates] only the break-glass portal creates Sessions, so that its requester is who signed in: request a session in the portal.",
			},
			{
				Name:       "session.spec-immutable",
				Expression: update + `object.spec == oldObject.spec`,
				Message:    "[session.spec-immutable] a Session's spec never changes after it is requested: request a new session.",
			},
			{
				Name:       "session.status-writers",
				Expression: update + `variables.isPortal || variables.isSweeper || object.?status == oldObject.?status`,
				Message:    "[session.status-writers] only the break-glass portal and sweeper write a Session's status: approve, deny, end and review in the portal.",
			},
			{
				Name:       "session.portal-decides",
				Expression: update + `variables.isPortal || (` + allOf(statusPaths(v1alpha1.PortalOnlyStatus), unchanged) + `)`,
				Message:    "[session.portal-decides] only the portal records a Session's approval, denial, review, grant, debug container and times.",
			},
			{
				Name: "session.write-once",
				Expression: update + allOf(statusPaths(v1alpha1.WrittenOnceStatus), once) + ` &&
				(!oldObject.?status.?review.?fallbackNotified.orValue(false) || object.?status.?review.?fallbackNotified.orValue(false)) &&
				oldObject.?status.?evidence.?uris.orValue([]).all(u, u in object.?status.?evidence.?uris.orValue([]))`,
				// The evidence's files only grow: anchoring adds the bundle.
				Message: "[session.write-once] a Session's decisions, grant, end, review and evidence are written once and never changed (the evidence's files only added to).",
			},
			{
				Name:       "session.evidence-at-end",
				Expression: `!object.?status.?evidence.hasValue() || variables.phase in ['Ended', 'Expired']`,
				Message:    "[session.evidence-at-end] a Session's evidence is written when it is over (Ended or Expired), never while it runs.",
			},
			{
				// A pending anchor is cleared only by the entry that anchors
				// it, and an anchored recording never goes back to pending.
				Name: "session.anchor",
				Expression: update + `(!object.?status.?evidence.?anchorPending.orValue(false) || !oldObject.?status.?evidence.?entryID.hasValue()) &&
				(!oldObject.?status.?evidence.?anchorPending.orValue(false) || object.?status.?evidence.?anchorPending.orValue(false) ||
				 (object.?status.?evidence.?entryID.hasValue() && object.?status.?evidence.?logIndex.hasValue()))`,
				Message: "[session.anchor] a recording's anchor stops pending only with its transparency-log entry (entryID and logIndex), and never pends again once anchored.",
			},
			{
				Name: "session.sweeper-ends",
				Expression: update + `!variables.isSweeper || oldObject.?status.?end.hasValue() || !object.?status.?end.hasValue() ||
				(object.status.end.reason == 'swept' && object.status.end.?abnormal.orValue(false) && object.status.end.by == request.userInfo.username &&
				 !has(object.status.end.note))`,
				Message: "[session.sweeper-ends] the sweeper ends a session only as swept and abnormal, in its own name and with no person's words: it never speaks for a person.",
			},
			{
				Name: "session.owners",
				Expression: `request.operation == 'UPDATE' ? object.metadata.?ownerReferences == oldObject.metadata.?ownerReferences :
				!has(object.metadata.ownerReferences)`,
				Message: "[session.owners] a Session has no owner references: nothing may hand it to the garbage collector.",
			},
			{
				Name: "session.phase",
				Expression: fmt.Sprintf(`variables.phase == variables.oldPhase ||
					(variables.isPortal && (variables.oldPhase + '>' + variables.phase) in %s) ||
					(variables.isSweeper && (variables.oldPhase + '>' + variables.phase) in %s)`,
					movesExpr(v1alpha1.WriterPortal), movesExpr(v1alpha1.WriterSweeper)),
				MessageExpression: `'[session.phase] a Session does not move from ' +
					(variables.oldPhase == '' ? 'new' : variables.oldPhase) + ' to ' + variables.phase +
					' by this writer: its phase only moves forward, Pending, Approved or Denied, Active, Ended.'`,
			},
			{
				Name: "session.phase-record",
				Expression: `(variables.phase != 'Approved' || object.?status.?approval.hasValue()) &&
					(variables.phase != 'Denied' || object.?status.?denial.hasValue()) &&
					(variables.phase != 'Active' || (object.?status.?approval.hasValue() && object.?status.?grant.hasValue())) &&
					(variables.phase != 'Ended' || object.?status.?end.hasValue())`,
				Message: "[session.phase-record] a Session's phase comes with its record: Approved with the approval, Denied with the denial, Active with the approval and grant, Ended with the end.",
			},
			{
				// A resume adds one debug container to a running session:
				// one at a time, only while it is Active, never undone.
				Name: "session.resumes",
				Expression: update + `object.?status.?resumes.orValue(0) == oldObject.?status.?resumes.orValue(0) ||
					(object.?status.?resumes.orValue(0) == oldObject.?status.?resumes.orValue(0) + 1 &&
					 variables.phase == 'Active' && variables.oldPhase == 'Active')`,
				Message: "[session.resumes] a session is resumed one relay at a time, while it is Active, and its count of resumes never goes back.",
			},
			{
				// Which replica runs a session changes only as it is
				// started, resumed, or released by the one running it;
				// a release names no replica, and only a resume ends it.
				Name: "session.relay",
				Expression: update + `(object.?status.?relay == oldObject.?status.?relay && object.?status.?released == oldObject.?status.?released) ||
					(!object.?status.?released.hasValue() && ((variables.phase == 'Active' && variables.oldPhase == 'Approved') ||
					 object.?status.?resumes.orValue(0) == oldObject.?status.?resumes.orValue(0) + 1)) ||
					(variables.phase == 'Active' && variables.oldPhase == 'Active' && object.?status.?relay.orValue('') == '' &&
					 object.?status.?released.hasValue() && !oldObject.?status.?released.hasValue())`,
				Message: "[session.relay] the replica running a session is named when it starts or resumes, and a session is released only by the replica running it, while Active, naming none.",
			},
			{
				// A condition is a summary, never a claim of its own: a
				// writer that can say Anchored must have written the entry.
				Name: "session.conditions",
				Expression: `object.?status.?conditions.orValue([]).all(c, c.type in ['Granted', 'Attached', 'Recorded', 'Anchored', 'Reviewed'] && c.status == (
					c.type == 'Granted' ? (variables.phase == 'Active' && object.?status.?grant.hasValue() ? 'True' : 'False') :
					c.type == 'Attached' ? (variables.phase == 'Active' && object.?status.?debugContainer.hasValue() ? 'True' : 'False') :
					c.type == 'Recorded' ? (object.?status.?evidence.?manifestSHA256.orValue('') != '' ? 'True' : 'False') :
					c.type == 'Anchored' ? (object.?status.?evidence.?entryID.orValue('') != '' ? 'True' : 'False') :
					(object.?status.?review.?by.orValue('') != '' ? 'True' : 'False')))`,
				Message: "[session.conditions] a Session's conditions (Granted, Attached, Recorded, Anchored, Reviewed) say what its status records, no more: Granted and Attached only while Active with a grant and a debug container, Recorded with the manifest's hash, Anchored with the log entry, Reviewed with the reviewer.",
			},
			{
				// Decided extensions are only added to, one at a time, each
				// the one its requester asked for while the session ran,
				// decided by another person.
				Name: "session.extensions",
				Expression: update + `size(variables.decided) <= 1 &&
					size(variables.extensions) == size(oldObject.?status.?extensions.orValue([])) + size(variables.decided) &&
					oldObject.?status.?extensions.orValue([]).all(e, e in variables.extensions) &&
					(size(variables.decided) == 0 ||
					 (variables.phase == 'Active' && variables.oldPhase == 'Active' && !object.?status.?extensionRequest.hasValue() &&
					  variables.decided.all(e, oldObject.?status.?extensionRequest.?at == optional.of(e.at) &&
					   oldObject.?status.?extensionRequest.?duration == optional.of(e.duration) &&
					   oldObject.?status.?extensionRequest.?by == optional.of(e.by) &&
					   oldObject.?status.?extensionRequest.?reason == optional.of(e.reason) &&
					   oldObject.?status.?extensionRequest.?byID == e.?byID &&
					   !` + SamePersonExpr(requesterName, requesterID, "e.decidedBy", "e.decidedByID") + ` &&
					   !` + SamePersonExpr("e.by", "e.?byID.orValue('')", "e.decidedBy", "e.decidedByID") + ` &&
					   (e.decision != 'Approved' || (e.?grant.orValue('') != '' && e.?deadline.hasValue())))))`,
				Message: "[session.extensions] a session's extensions are only added to, one at a time, while it is Active: each the one its requester asked for, decided by another person (never the requester, under any name), an approved one naming its grant and hard stop.",
			},
			{
				// Asked for only while the session runs, by its requester.
				Name: "session.extension-request",
				Expression: `(request.operation != 'UPDATE' || !oldObject.?status.?extensionRequest.hasValue() ||
					 object.?status.?extensionRequest.hasValue() || size(variables.decided) == 1 || variables.phase != 'Active') &&
					(!object.?status.?extensionRequest.hasValue() ||
					(request.operation == 'UPDATE' && (` + unchanged("extensionRequest") + ` ||
					 (variables.phase == 'Active' && variables.oldPhase == 'Active' && !oldObject.?status.?extensionRequest.hasValue() &&
					  duration(object.status.extensionRequest.duration) >= duration('` + minExtension + `') &&
					  duration(object.status.extensionRequest.duration) <= duration(variables.paramsExtensionsMaxTotal) &&
					  ` + SamePersonExpr(requesterName, requesterID, "object.status.extensionRequest.by", "object.status.extensionRequest.?byID.orValue('')") + `))))`,
				Message: "[session.extension-request] more time is asked for by the session's requester, while it is Active, one ask at a time, of at least " + minExtension + " and at most the longest a session runs; an ask goes only with its decision.",
			},
			{
				// A grant's TTL never stretches in place (grant.ttl-immutable):
				// an extension replaces the grant with a new binding, and the
				// hard stop moves by exactly what was approved.
				Name: "session.extension-moves",
				Expression: update + `(!oldObject.?status.?grant.hasValue() || ` + unchanged("grant") + ` ||
					(size(variables.decided) == 1 && variables.decided[0].decision == 'Approved' &&
					 object.?status.?grant.?roleBinding == variables.decided[0].?grant &&
					 object.?status.?grant.?roleBinding != oldObject.status.grant.?roleBinding &&
					 object.?status.?grant.?role == oldObject.status.grant.?role)) &&
					(!oldObject.?status.?deadline.hasValue() || ` + unchanged("deadline") + ` ||
					(size(variables.decided) == 1 && variables.decided[0].decision == 'Approved' && object.?status.?deadline.hasValue() &&
					 variables.decided[0].?deadline == object.?status.?deadline &&
					 timestamp(string(object.status.deadline)) == timestamp(string(oldObject.status.deadline)) + duration(variables.decided[0].duration))) &&
					(variables.decided.all(e, e.decision != 'Approved') ||
					 (!(` + unchanged("grant") + `) && !(` + unchanged("deadline") + `)))`,
				Message: "[session.extension-moves] a running session's grant and hard stop change only with an approved extension, and an approved extension changes both: a new grant of the same role, and the hard stop later by exactly the time approved.",
			},
			{
				Name: "session.extension-bounds",
				Expression: `variables.decided.all(e, e.decision != 'Approved') ||
					(size(variables.extensions.filter(e, e.decision == 'Approved')) <= variables.paramsExtensionsMax &&
					 object.?status.?startedAt.hasValue() && object.?status.?deadline.hasValue() &&
					 timestamp(string(object.status.deadline)) - timestamp(string(object.status.startedAt)) <=
					 duration(variables.paramsExtensionsMaxTotal))`,
				MessageExpression: `'[session.extension-bounds] a session is extended at most ' + string(variables.paramsExtensionsMax) +
					' time(s) and runs at most ' + variables.paramsExtensionsMaxTotal + ' in all, from its start to its last hard stop.'`,
			},
			{
				Name: "session.approval-matches",
				Expression: `!has(object.status) || !has(object.status.approval) ||
					(object.status.approval.mode == object.spec.mode &&
					 (!object.status.approval.processAccess || (has(object.spec.processAccess) && object.spec.processAccess)))`,
				Message: "[session.approval-matches] an approval is for the mode requested and grants process access only where it was asked for.",
			},
			{
				Name: "session.duration",
				Expression: `object.spec.duration.matches('^([0-9]+h)?([0-9]+m)?([0-9]+s)?$') &&
					duration(object.spec.duration) >= duration(variables.paramsSessionDurationMin) &&
					duration(object.spec.duration) <= duration(variables.paramsSessionDurationMax)`,
				MessageExpression: `'[session.duration] a session lasts from ' + variables.paramsSessionDurationMin + ' to ' +
					variables.paramsSessionDurationMax + '; this one asks for ' + object.spec.duration + '.'`,
			},
			{
				Name:       "session.process-target",
				Expression: `!has(object.spec.processAccess) || !object.spec.processAccess || (has(object.spec.targetContainer) && object.spec.targetContainer != '')`,
				Message:    "[session.process-target] process access names the app container (spec.targetContainer) whose processes it sees.",
			},
			{
				Name: "session.self-approval",
				Expression: `!has(object.status) || !has(object.status.approval) ||
					!` + SamePersonExpr(requesterName, requesterID, "object.status.approval.by", "object.status.approval.?byID.orValue('')"),
				Message: "[session.self-approval] the requester never approves their own session, under any name: another person approves it.",
			},
			{
				Name: "session.self-review",
				Expression: `!has(object.status) || !has(object.status.review) || !has(object.status.review.by) ||
					!` + SamePersonExpr(requesterName, requesterID, "object.status.review.by", "object.status.review.?byID.orValue('')"),
				Message: "[session.self-review] the requester never reviews their own session, under any name: another person reviews it.",
			},
		},
	}
}

// terminalPhasesExpr are the phases a Session never leaves
// (v1alpha1.FinalPhases, from the phase table).
var terminalPhasesExpr = celList(v1alpha1.FinalPhases())

// finalPhasesSaid is them as a person reads them: "Denied, Ended or Expired".
var finalPhasesSaid = func() string {
	n := v1alpha1.FinalPhases()
	return strings.Join(n[:len(n)-1], ", ") + " or " + n[len(n)-1]
}()

// sessionOverExpr is true when the Session being deleted is over and its
// record complete: ended (or never started), its recording finalized and
// anchored if it ran (an anchor still pending keeps it), and no review
// open (one that falls due and is not yet made: a glass-broken session's).
var sessionOverExpr = fmt.Sprintf(`oldObject.?status.?phase.orValue('') in %s &&
	(!oldObject.?status.?startedAt.hasValue() ||
	 (oldObject.?status.?evidence.?manifestSHA256.orValue('') != '' && !oldObject.?status.?evidence.?anchorPending.orValue(false))) &&
	(!oldObject.spec.?glassBroken.orValue(false) || oldObject.?status.?review.?by.hasValue()) &&
	(!oldObject.?status.?review.?dueAt.hasValue() || oldObject.?status.?review.?by.hasValue())`, terminalPhasesExpr)

// SessionDelete keeps a Session, the cluster's record of a session, until
// its evidence exists: over, its recording finalized and anchored, its
// review made. Nobody deletes it sooner, the portal, the sweeper, an app
// team and cluster admins included, and deleting its namespace waits for
// it too (the namespace stays Terminating until the sweeper has finished
// the record). The portal may take back a request it could not finish
// writing (no phase yet). A delete-collection has no
// old object to judge, and is refused.
func SessionDelete() Policy {
	return Policy{
		Name:     "breakglass-session-delete",
		Summary:  "Sessions are deleted only once over, their recording finalized and anchored and their review made.",
		Profiles: Profiles,
		Rules: []Rule{{
			APIGroups:   []string{"breakglass.tower.dev"},
			APIVersions: []string{"v1alpha1"},
			Resources:   []string{"sessions"},
			Operations:  []Operation{Delete},
		}},
		Validations: []Validation{{
			Name: "session.delete",
			// A namespace being deleted takes a Session that never ran
			// (nothing to record): a request whose status was never written
			// would otherwise keep it Terminating for good.
			Expression: fmt.Sprintf(`(%s) || (oldObject.?status.?phase.orValue('') == '' && %s) ||
				(namespaceObject.?status.?phase.orValue('') == 'Terminating' && !oldObject.?status.?startedAt.hasValue() &&
				 oldObject.?status.?phase.orValue('') != 'Active')`, sessionOverExpr, isPortalPodExpr),
			Message: "[session.delete] a Session is kept until it is over (" + finalPhasesSaid + "), its recording finalized and anchored, " +
				"and its review (a glass-broken session's) made: it is the cluster's record of who did what. Deleting its namespace waits for it too.",
		}},
	}
}

// SessionCRDs keeps the Session CRD on Flight: deleting it deletes every
// Session with it, records of unfinished evidence and open reviews
// included. Helm never deletes a chart's crds/; an operator who really
// means to remove it deletes this policy first, which the API server's
// audit log records.
func SessionCRDs() Policy {
	return Policy{
		Name:     "breakglass-crds",
		Summary:  "On production, the plane's CRDs (and so every Session with them) are not deleted.",
		Profiles: []Profile{Flight},
		Rules: []Rule{{
			APIGroups:   []string{"apiextensions.k8s.io"},
			APIVersions: []string{"v1"},
			Resources:   []string{"customresourcedefinitions"},
			Operations:  []Operation{Update, Delete},
		}},
		MatchConditions: []Condition{{
			Name:       "the-planes-crds",
			Expression: fmt.Sprintf(`request.name == 'sessions.%s'`, v1alpha1.GroupVersion.Group),
		}},
		Validations: []Validation{
			{
				Name:       "crds.kept",
				Expression: `request.operation != 'DELETE'`,
				Message: "[crds.kept] on this cluster the break-glass CRDs are kept: deleting the Session CRD deletes every Session, the cluster's record of " +
					"who did what, with it. To remove the plane, delete the policy breakglass-crds first (the audit log records it).",
			},
			{
				// A version no longer served hides the records from the
				// plane and the namespace controller; a conversion webhook
				// could show admission a record other than the stored one.
				Name: "crds.served",
				Expression: `request.operation != 'UPDATE' ||
					(object.spec.?conversion == oldObject.spec.?conversion &&
					 oldObject.spec.versions.all(o, !o.served || object.spec.versions.exists(v, v.name == o.name && v.served)))`,
				Message: "[crds.served] the break-glass CRDs keep serving every version they served, with the conversion they have: a version " +
					"unserved, or a conversion webhook, would hide or rewrite the Sessions the cluster keeps.",
			},
		},
	}
}
