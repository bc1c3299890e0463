// Package api holds what the plane's parts share about the kinds they read
// and write: the scheme with Kubernetes' own kinds and breakglass's.
package api

import (
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// Scheme holds Kubernetes' built-in kinds and the Session:
// everything the relay and the sweeper read and write.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}
