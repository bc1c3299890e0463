package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SystemNamespaces never receive a grant, whatever the chart's values say:
// the grant policy names them itself.
var SystemNamespaces = []string{"kube-system", "kube-public", "kube-node-lease", Namespace}

// The extension bounds of a PolicyParams that names none: one extension,
// two hours in all.
const (
	DefaultMaxExtensions = 1
	DefaultMaxTotal      = 2 * time.Hour
)

// MinExtension is the least more time worth asking for.
const MinExtension = 5 * time.Minute

// DefaultPolicyParams is the PolicyParams object the chart installs when its
// values are left alone, with the given debug images allowed.
func DefaultPolicyParams(debugImages ...string) *PolicyParams {
	if debugImages == nil {
		debugImages = []string{}
	}
	return &PolicyParams{
		TypeMeta:   metav1.TypeMeta{APIVersion: GroupVersion.String(), Kind: "PolicyParams"},
		ObjectMeta: metav1.ObjectMeta{Name: ParamsName},
		Spec: PolicyParamsSpec{
			DebugImages:     debugImages,
			GrantTTL:        DurationBounds{Min: "15m", Max: "75m"},
			SessionDuration: DurationBounds{Min: "15m", Max: "75m"},
			Extensions:      &ExtensionBounds{Max: DefaultMaxExtensions, MaxTotal: DefaultMaxTotal.String()},
			DebugUserID:     DebugUserID,
		},
	}
}
