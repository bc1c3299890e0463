package v1alpha1

import (
	"strconv"
	"strings"
)

// Names other parts of the plane, and other engines, rely on. Keep them exactly.
const (
	// Namespace is the plane's own namespace.
	Namespace = "breakglass-system"
	// PortalServiceAccount is the portal's (the relay's) identity in Namespace.
	PortalServiceAccount = "tower-breakglass"
	// SweeperServiceAccount is the sweeper's identity in Namespace.
	SweeperServiceAccount = "breakglass-sweeper"
	// WebhookServiceAccount is the signature webhook's identity in Namespace.
	WebhookServiceAccount = "breakglass-webhook"

	// PortalUsername, SweeperUsername and WebhookUsername are the names the
	// API server gives requests made as the plane's ServiceAccounts. The
	// policies name each one: no other account in Namespace is the plane.
	PortalUsername  = "system:serviceaccount:" + Namespace + ":" + PortalServiceAccount
	SweeperUsername = "system:serviceaccount:" + Namespace + ":" + SweeperServiceAccount
	WebhookUsername = "system:serviceaccount:" + Namespace + ":" + WebhookServiceAccount

	// DebugRole is the ClusterRole a live session binds: a debug container, no process access.
	DebugRole = "breakglass:debug"
	// DebugProcessRole is the ClusterRole a process-access session binds.
	DebugProcessRole = "breakglass:debug-process"
	// PortalRole is the portal's at-rest ClusterRole: it can bind the debug roles and nothing else.
	PortalRole = "breakglass:portal"
	// SweeperRole is the sweeper's ClusterRole.
	SweeperRole = "breakglass:sweeper"

	// SessionLabel names the Session a grant, copy pod or debug container belongs to.
	SessionLabel = "breakglass.tower.dev/session"
	// TTLLabel holds a grant's time to live as a Go duration; it means what
	// Kyverno's cleanup controller means by it, so either engine can clean up.
	TTLLabel = "cleanup.kyverno.io/ttl"

	// NamespaceOptInLabel set to "true" on a namespace lets grants into it
	// when the chart requires namespaces to opt in (params.requireNamespaceOptIn).
	NamespaceOptInLabel = "breakglass.tower.dev/enabled"

	// DebugContainerPrefix starts the name of every debug container.
	DebugContainerPrefix = "breakglass-"
	// resumeSuffix numbers the debug containers a resumed session adds:
	// breakglass-<session>-r<N>. Sessions are named s-<random> by the API
	// server (the relay asks for generateName s-), never ending so.
	resumeSuffix = "-r"
	// DebugUserID is the user every debug container runs as.
	DebugUserID int64 = 65532

	// HoldVolume is the image volume a held copy mounts into its app
	// containers: the debug image itself, read-only, at HoldMountPath, so
	// the app's containers are held by the debug image's sleep, not by a
	// binary the app's image may lack (distroless images have no shell and
	// no sleep). The debug image carries a static sleep at /bin/sleep.
	HoldVolume    = "breakglass-hold"
	HoldMountPath = "/.breakglass-hold"
	HoldCommand   = HoldMountPath + "/bin/sleep"

	// ProcessAccessResource and ProcessAccessVerb form the custom permission that
	// only breakglass:debug-process holds; the admission policies ask the
	// authorizer for it before letting a debug container reach an app's processes.
	ProcessAccessResource = "processaccess"
	ProcessAccessVerb     = "use"
)

// DebugContainerName is the name of a session's debug container: the first
// one, or the one the resume-th resume adds.
func DebugContainerName(session string, resume int32) string {
	if resume == 0 {
		return DebugContainerPrefix + session
	}
	return DebugContainerPrefix + session + resumeSuffix + strconv.Itoa(int(resume))
}

// SessionOfDebugContainer is the session a debug container is named after,
// whichever resume added it (empty for a name that is the prefix alone: a
// debug container of no session); ok is false for a name that is not a
// debug container's.
func SessionOfDebugContainer(name string) (session string, ok bool) {
	rest, ok := strings.CutPrefix(name, DebugContainerPrefix)
	if !ok {
		return "", false
	}
	if i := strings.LastIndex(rest, resumeSuffix); i > 0 {
		if n, err := strconv.Atoi(rest[i+len(resumeSuffix):]); err == nil && n > 0 && rest[i+len(resumeSuffix)] != '0' {
			return rest[:i], true
		}
	}
	return rest, true
}
