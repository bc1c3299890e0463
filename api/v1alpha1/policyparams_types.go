package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// DurationBounds is an inclusive range of Go durations such as "15m" and "75m".
type DurationBounds struct {
	// Min is the shortest allowed, e.g. 15m.
	// +kubebuilder:validation:Pattern=`^([0-9]+h)?([0-9]+m)?([0-9]+s)?$`
	// +kubebuilder:validation:MaxLength=16
	Min string `json:"min"`
	// Max is the longest allowed, e.g. 75m.
	// +kubebuilder:validation:Pattern=`^([0-9]+h)?([0-9]+m)?([0-9]+s)?$`
	// +kubebuilder:validation:MaxLength=16
	Max string `json:"max"`
}

// ExtensionBounds bound a session's extensions: how many may be approved,
// and how long the session may run in all, from its start to its last hard
// stop.
type ExtensionBounds struct {
	// Max is how many extensions one session may be given (0: none).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=4
	Max int32 `json:"max"`
	// MaxTotal is the longest a session may run, extensions included.
	// +kubebuilder:validation:Pattern=`^([0-9]+h)?([0-9]+m)?([0-9]+s)?$`
	// +kubebuilder:validation:MaxLength=16
	MaxTotal string `json:"maxTotal"`
}

// PolicyParamsSpec is what the admission policies read at every request:
// the allowlist and bounds an operator tunes. Who the portal is, which
// accounts are the plane's and which namespaces never receive a grant are
// not here: the policies name them, or the chart renders them into the
// policies' bindings at install, so no edit of this object moves them. The
// list bounds are part of the contract: they keep every CEL expression's
// cost estimate small.
type PolicyParamsSpec struct {
	// DebugImages are the debug images a debug container may run, each pinned
	// by digest (repository@sha256:...).
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:Pattern=`^[^@\s]+@sha256:[a-f0-9]{64}$`
	// +kubebuilder:validation:items:MaxLength=512
	// +listType=set
	DebugImages []string `json:"debugImages"`

	// GrantTTL bounds the TTL label on a grant.
	GrantTTL DurationBounds `json:"grantTTL"`

	// SessionDuration bounds a Session's spec.duration.
	SessionDuration DurationBounds `json:"sessionDuration"`

	// RuntimeClasses are the runtime classes a debug container may join a
	// pod in (a sandbox such as gVisor or Kata): a pod in any other runs
	// no debug container, since a runtime's handler may run containers
	// privileged or hand them devices.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=set
	// +optional
	RuntimeClasses []string `json:"runtimeClasses,omitempty"`

	// Extensions bound the more time an active session may be given.
	// Absent: one extension, and two hours in all.
	// +optional
	Extensions *ExtensionBounds `json:"extensions,omitempty"`

	// DebugUserID is the user id every debug container runs as.
	// +kubebuilder:validation:Minimum=1
	DebugUserID int64 `json:"debugUserID"`
}

// PolicyParams parameterizes the plane's ValidatingAdmissionPolicies. The
// bindings read the one object named "default"; without it, every request
// the policies match is denied.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=bgparams
type PolicyParams struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec PolicyParamsSpec `json:"spec"`
}

// PolicyParamsList is a list of PolicyParams.
//
// +kubebuilder:object:root=true
type PolicyParamsList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PolicyParams `json:"items"`
}
