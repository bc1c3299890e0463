package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/tower-dev/breakglass/policies"
)

// StartEach starts one control plane per profile, all at once (each takes
// seconds, mostly waiting), with the options opts gives it and then, if
// given, then run on it. The clusters that started are returned even when
// another did not, so that the caller stops every one (StopEach).
func StartEach(ctx context.Context, opts func(policies.Profile) Options, then func(policies.Profile, *Cluster) error) (map[policies.Profile]*Cluster, error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	var errs []error
	clusters := map[policies.Profile]*Cluster{}
	for _, p := range policies.Profiles {
		wg.Go(func() {
			c, err := Start(ctx, opts(p))
			if err == nil && then != nil {
				err = then(p, c)
			}
			mu.Lock()
			defer mu.Unlock()
			if c != nil {
				clusters[p] = c
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", p, err))
			}
		})
	}
	wg.Wait()
	return clusters, errors.Join(errs...)
}

// StopEach stops every cluster StartEach started, saying which could not.
func StopEach(clusters map[policies.Profile]*Cluster) error {
	var errs []error
	for p, c := range clusters {
		if err := c.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stopping the %s control plane: %w", p, err))
		}
	}
	return errors.Join(errs...)
}
