package debugsession

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/discovery"
)

// heldCopiesSince is the first Kubernetes version whose API server keeps an
// image volume by default (ImageVolume, beta and on in 1.35). An older one
// drops the field, so a held copy would have no hold volume to mount.
var heldCopiesSince = version.MajorMinor(1, 35)

// ErrNoHeldCopies is wrapped by HeldCopies' refusal of a cluster too old.
var ErrNoHeldCopies = errors.New("held copies are not supported on this cluster")

// HeldCopies says why the cluster cannot run a held copy, or returns nil.
func HeldCopies(d discovery.ServerVersionInterface) error {
	info, err := d.ServerVersion()
	if err != nil {
		return fmt.Errorf("reading the cluster's version: %w", err)
	}
	v, err := version.ParseGeneric(info.GitVersion)
	if err != nil {
		return fmt.Errorf("the cluster's version %q: %w", info.GitVersion, err)
	}
	if v.LessThan(heldCopiesSince) {
		return fmt.Errorf("%w: a held copy mounts the debug image as an image volume, which needs Kubernetes %d.%d or newer, and this cluster runs %s; ask for a copy instead",
			ErrNoHeldCopies, heldCopiesSince.Major(), heldCopiesSince.Minor(), info.GitVersion)
	}
	return nil
}
