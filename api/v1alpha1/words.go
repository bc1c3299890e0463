package v1alpha1

// The words a person reads about a session, spelled once: the console, the
// Backstage plugin (both from the TypeScript hack/portalgen writes from
// here) and docs/api.md take them from these lists.

// Term is a word a person reads: its spelling, the label a page shows for
// it, and what it means.
// +kubebuilder:object:generate=false
type Term struct {
	Name  string
	Label string
	Means string
}

// PhaseTerms says what each phase means to the people of a session.
var PhaseTerms = []Term{
	{string(PhasePending), "Pending", "the request waits for another person to approve or deny it"},
	{string(PhaseApproved), "Approved", "approved: it waits for its requester to start it"},
	{string(PhaseDenied), "Denied", "another person denied the request: it never ran"},
	{string(PhaseActive), "Active", "the debug container runs, and every byte of its terminal is recorded"},
	{string(PhaseEnded), "Ended", "it ended, or was withdrawn or cancelled before it started; nothing runs"},
	{string(PhaseExpired), "Expired", "nobody decided on the request, or nobody started the approved session, in time: it never ran"},
}

// EndReasonTerms says why a session ended; the label completes "Ended by
// bob, ...".
var EndReasonTerms = []Term{
	{string(EndUser), "the requester", "its requester ended it, or withdrew it before it started"},
	{string(EndApprover), "an approver", "someone else ended it, or cancelled it before it started"},
	{string(EndHardStop), "its hard stop", "its duration ran out"},
	{string(EndIdle), "its idle limit", "nothing was typed for the idle limit"},
	{string(EndDisconnect), "its disconnect limit (no terminal open)", "no terminal was open for the disconnect limit"},
	{string(EndSwept), "the sweeper", "its relay was gone, and the sweeper finished it"},
	{string(EndFailedStart), "a failed start", "the debug container or the copy did not start"},
}

// ModeTerms says what each mode does, as the request form offers it.
var ModeTerms = []Term{
	{string(ModeLive), "Live", "A debug container joins the running pod: you see what it sees now. The pod is recycled afterwards unless the approver keeps it."},
	{string(ModeCopy), "Copy", "A copy of the pod that takes no traffic; the original is untouched."},
	{string(ModeHeldCopy), "Held copy", "A copy whose app containers do not start their program: for a pod that crashes at start."},
}

// Terms are the spellings of terms, in their order.
func Terms(terms []Term) []string {
	names := make([]string, len(terms))
	for i, t := range terms {
		names[i] = t.Name
	}
	return names
}
