// Package v1alpha1 holds the breakglass.tower.dev/v1alpha1 API: the Session a
// debug session lives in, and the PolicyParams the admission policies read.
//
// +kubebuilder:object:generate=true
// +groupName=breakglass.tower.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "breakglass.tower.dev", Version: "v1alpha1"}

	// SchemeBuilder registers this package's kinds with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this package's kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func init() {
	SchemeBuilder.Register(&Session{}, &SessionList{}, &PolicyParams{}, &PolicyParamsList{})
}
