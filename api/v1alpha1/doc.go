// Package v1alpha1 holds the breakglass.tower.dev/v1alpha1 API: the Session a
// debug session lives in, and the names and rules the plane shares.
//
// +kubebuilder:object:generate=true
// +groupName=breakglass.tower.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "breakglass.tower.dev", Version: "v1alpha1"}

	// SchemeBuilder registers this package's kinds with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds this package's kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Session{}, &SessionList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
