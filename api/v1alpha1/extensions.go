package v1alpha1

import (
	"strconv"
	"time"
)

// Extended is the time the session's approved extensions added to its
// duration, and how many there were.
func (s *Session) Extended() (added time.Duration, approved int) {
	for _, e := range s.Status.Extensions {
		if e.Decision == ExtensionApproved {
			added += e.Duration.Duration
			approved++
		}
	}
	return added, approved
}

// ExtensionGrantName is the RoleBinding that replaces a session's grant at
// its n-th extension (from 1): a new binding, since a grant's TTL never
// changes in place.
func ExtensionGrantName(session string, n int) string {
	return GrantName(session) + "-x" + strconv.Itoa(n)
}

// GrantName is the RoleBinding a session's start makes.
func GrantName(session string) string { return DebugContainerPrefix + session }
