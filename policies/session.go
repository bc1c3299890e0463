package policies

// SessionRules keeps a Session honest whoever writes it: the spec never
// changes, the duration is within bounds, and the requester neither approves
// nor reviews their own session.
func SessionRules() Policy {
	return Policy{
		Name:       "breakglass-session",
		Summary:    "Sessions: immutable spec, bounded duration, never self-approved or self-reviewed.",
		Profiles:   Profiles,
		UsesParams: true,
		Rules: []Rule{{
			APIGroups:   []string{"breakglass.tower.dev"},
			APIVersions: []string{"v1alpha1"},
			Resources:   []string{"sessions", "sessions/status"},
			Operations:  []Operation{Create, Update},
		}},
		Validations: []Validation{
			{
				Name:       "session.spec-immutable",
				Expression: `request.operation != 'UPDATE' || object.spec == oldObject.spec`,
				Message:    "[session.spec-immutable] a Session's spec never changes after it is requested: request a new session.",
			},
			{
				Name: "session.duration",
				Expression: `object.spec.duration.matches('^([0-9]+h)?([0-9]+m)?([0-9]+s)?$') &&
					duration(object.spec.duration) >= duration(params.spec.sessionDuration.min) &&
					duration(object.spec.duration) <= duration(params.spec.sessionDuration.max)`,
				MessageExpression: `'[session.duration] a session lasts from ' + params.spec.sessionDuration.min + ' to ' +
					params.spec.sessionDuration.max + '; this one asks for ' + object.spec.duration + '.'`,
			},
			{
				Name:       "session.process-target",
				Expression: `!has(object.spec.processAccess) || !object.spec.processAccess || (has(object.spec.targetContainer) && object.spec.targetContainer != '')`,
				Message:    "[session.process-target] process access names the app container (spec.targetContainer) whose processes it sees.",
			},
			{
				Name: "session.self-approval",
				Expression: `!has(object.status) || !has(object.status.approval) ||
					object.status.approval.by != object.spec.requester`,
				Message: "[session.self-approval] the requester never approves their own session: another person approves it.",
			},
			{
				Name: "session.self-review",
				Expression: `!has(object.status) || !has(object.status.review) || !has(object.status.review.by) ||
					object.status.review.by != object.spec.requester`,
				Message: "[session.self-review] the requester never reviews their own session: another person reviews it.",
			},
		},
	}
}
