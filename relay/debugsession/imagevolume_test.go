package debugsession

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

func TestHeldCopiesNeedImageVolumes(t *testing.T) {
	for _, tc := range []struct {
		version string
		refused bool
	}{
		{"v1.30.14", true},
		{"v1.34.9", true},
		{"v1.35.0", false},
		{"v1.35.2-gke.1200", false},
		{"v1.37.2", false},
	} {
		d := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}, FakedServerVersion: &version.Info{GitVersion: tc.version}}
		err := HeldCopies(d)
		if refused := errors.Is(err, ErrNoHeldCopies); refused != tc.refused || (!tc.refused && err != nil) {
			t.Errorf("%s: %v, want refused %t", tc.version, err, tc.refused)
		}
	}
	d := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}, FakedServerVersion: &version.Info{GitVersion: "not-a-version"}}
	if err := HeldCopies(d); err == nil || errors.Is(err, ErrNoHeldCopies) {
		t.Errorf("an unreadable version: %v, want an error that is not a refusal of the mode", err)
	}
}
