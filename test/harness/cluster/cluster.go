// Package cluster is the test cluster: the local plane's control plane
// (localplane/cluster) with what tests ask of it, each failing the test
// that asked rather than returning an error.
package cluster

import (
	"context"

	plane "github.com/tower-dev/breakglass/localplane/cluster"
	"github.com/tower-dev/breakglass/policies"
)

// Cluster is a running control plane, as a test uses it.
type Cluster struct{ *plane.Cluster }

// Options are what a control plane starts with.
type Options = plane.Options

// User is one identity's clients on a control plane.
type User = plane.User

// The control plane's names and addresses (localplane/cluster), for the
// suites that import this package alone.
const (
	APIServerEnv  = plane.APIServerEnv
	NodeName      = plane.NodeName
	RealNodeName  = plane.RealNodeName
	DebugImage    = plane.DebugImage
	WaitingPrefix = plane.WaitingPrefix
	BridgeIP      = plane.BridgeIP
	// KubernetesServiceIP is the `kubernetes` Service's cluster IP on the
	// real node.
	KubernetesServiceIP = plane.KubernetesServiceIP
)

// The control plane's helpers that need no test (localplane/cluster).
var (
	FreePort   = plane.FreePort
	ProbeGrant = plane.ProbeGrant
	IsLine     = plane.IsLine
	Within     = plane.Within
)

// Start starts a control plane (plane.Start).
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	c, err := plane.Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &Cluster{c}, nil
}

// StartEach starts one control plane per profile (plane.StartEach).
func StartEach(ctx context.Context, opts func(policies.Profile) Options, then func(policies.Profile, *Cluster) error) (map[policies.Profile]*Cluster, error) {
	var each func(policies.Profile, *plane.Cluster) error
	if then != nil {
		each = func(p policies.Profile, c *plane.Cluster) error { return then(p, &Cluster{c}) }
	}
	started, err := plane.StartEach(ctx, opts, each)
	out := map[policies.Profile]*Cluster{}
	for p, c := range started {
		out[p] = &Cluster{c}
	}
	return out, err
}

// StopEach stops every control plane StartEach started.
func StopEach(clusters map[policies.Profile]*Cluster) error {
	planes := map[policies.Profile]*plane.Cluster{}
	for p, c := range clusters {
		planes[p] = c.Cluster
	}
	return plane.StopEach(planes)
}
