package v1alpha1

// Who may write which part of a Session's status, and which parts stay as
// first written. Each entry is a path below status, its JSON names joined
// by dots ("review.by"). The Session policy's session.portal-decides and
// session.write-once are generated from these lists, so the rule the
// cluster enforces and the one the code names are the same.
var (
	// PortalOnlyStatus are the parts only the portal writes: the decisions
	// a person made through it and the session it ran. The sweeper writes
	// the rest (the end of an abandoned session, the evidence, the review's
	// due date and fallback notice).
	PortalOnlyStatus = []string{"approval", "denial", "grant", "debugContainer", "startedAt", "deadline", "heartbeat", "resumes",
		"relay", "released", "extensionRequest", "extensions",
		"review.by", "review.byID", "review.at", "review.comment"}

	// WrittenOnceStatus are the parts that never change once written. The
	// grant and the deadline change only with an approved extension
	// (session.extension-moves); the evidence's files only grow.
	WrittenOnceStatus = []string{"approval", "denial", "debugContainer", "startedAt", "end",
		"review.by", "review.byID", "review.at", "review.comment", "review.dueAt",
		"evidence.manifestSHA256", "evidence.manifestVersion", "evidence.cluster", "evidence.entryID", "evidence.logIndex"}
)
