package v1alpha1

import "time"

// SystemNamespaces never receive a grant, whatever the chart's values say:
// the grant policy names them itself.
var SystemNamespaces = []string{"kube-system", "kube-public", "kube-node-lease", Namespace}

// The extension bounds the chart sets unless its values say otherwise: one
// extension, two hours in all.
const (
	DefaultMaxExtensions = 1
	DefaultMaxTotal      = 2 * time.Hour
)

// MinExtension is the least more time worth asking for.
const MinExtension = 5 * time.Minute
