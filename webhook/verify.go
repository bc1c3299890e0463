package webhook

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/cosign/v3/pkg/cosign"
	ociremote "github.com/sigstore/cosign/v3/pkg/oci/remote"
	"k8s.io/utils/clock"
)

// VerifierOptions tune a Verifier.
type VerifierOptions struct {
	// Deadline bounds one verification. It must be shorter than the webhook's
	// timeoutSeconds, so a slow registry ends in a denial, never in the API
	// server giving up on the call.
	Deadline time.Duration
	// CacheSize and CacheTTL bound the cache of successes.
	CacheSize int
	CacheTTL  time.Duration
	Clock     clock.PassiveClock
	// Registry adds options for talking to registries (transport, insecure
	// registries in tests). Credentials come from the Docker config the pull
	// secret is mounted as ($DOCKER_CONFIG/config.json).
	Registry []remote.Option
	// NameOptions parse image references (name.Insecure for a test registry).
	NameOptions []name.Option
}

// Verifier checks debug images against the signature policies.
type Verifier struct {
	config Config
	trust  map[string]*trust
	cache  *successCache
	opts   VerifierOptions
}

// NewVerifier loads each policy's key or trusted root.
func NewVerifier(ctx context.Context, cfg Config, opts VerifierOptions) (*Verifier, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if opts.Deadline <= 0 {
		opts.Deadline = 3 * time.Second
	}
	if opts.CacheSize <= 0 {
		opts.CacheSize = 1024
	}
	if opts.CacheTTL <= 0 {
		opts.CacheTTL = 10 * time.Minute
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	v := &Verifier{config: cfg, trust: map[string]*trust{}, opts: opts,
		cache: newSuccessCache(opts.CacheSize, opts.CacheTTL, opts.Clock)}
	for _, p := range cfg.Policies {
		var t *trust
		var err error
		if p.Keyless != nil {
			t, err = keylessTrust(p.Keyless)
		} else {
			t, err = keyTrust(ctx, p.Key)
		}
		if err != nil {
			return nil, fmt.Errorf("policy %s: %w", p.Name, err)
		}
		v.trust[p.Name] = t
	}
	return v, nil
}

// ErrNotPinned, ErrNoPolicy and ErrDeadline are the refusals that are not a
// bad signature.
var (
	ErrNotPinned = errors.New("not pinned by digest")
	ErrNoPolicy  = errors.New("no signature policy covers its repository")
	ErrDeadline  = errors.New("signature check did not finish in time")
)

// Verify checks that image is pinned by digest and carries a valid cosign
// signature, in either layout, by the key or identity of the policy that
// covers its repository.
func (v *Verifier) Verify(ctx context.Context, image string) (err error) {
	began, cached := time.Now(), false
	defer func() { observeVerification(began, err, cached) }()
	ref, err := name.NewDigest(image, v.opts.NameOptions...)
	if err != nil {
		return fmt.Errorf("%s: %w: use REPOSITORY@sha256:<digest>", image, ErrNotPinned)
	}
	repo := ref.Context().Name()
	policy, ok := v.config.For(repo)
	if !ok {
		return fmt.Errorf("%s: %w (%s)", image, ErrNoPolicy, repo)
	}
	if v.cache.ok(ref.DigestStr(), policy.Name) {
		cached = true
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, v.opts.Deadline)
	defer cancel()
	registry := append([]remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}, v.opts.Registry...)
	t := v.trust[policy.Name]
	bundleErr := t.verifyBundles(ref, registry)
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w (%s)", image, ErrDeadline, v.opts.Deadline)
	}
	if bundleErr == nil {
		v.cache.add(ref.DigestStr(), policy.Name)
		return nil
	}
	co := t.legacy
	co.ClaimVerifier = cosign.SimpleClaimVerifier
	co.RegistryClientOpts = []ociremote.Option{ociremote.WithRemoteOptions(registry...)}
	_, _, err = cosign.VerifyImageSignatures(ctx, ref, &co)
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w (%s)", image, ErrDeadline, v.opts.Deadline)
	}
	if err != nil {
		return fmt.Errorf("%s: no valid signature for policy %s: %w", image, policy.Name, signatureErrors(bundleErr, err))
	}
	v.cache.add(ref.DigestStr(), policy.Name)
	return nil
}

// signatureErrors says why neither layout held a valid signature, leaving
// out the layout the image does not use.
func signatureErrors(bundleErr, legacyErr error) error {
	var none *cosign.ErrNoSignaturesFound
	switch {
	case errors.Is(bundleErr, errNoBundle):
		return legacyErr
	case errors.As(legacyErr, &none):
		return bundleErr
	}
	return fmt.Errorf("%w; in the .sig layout: %w", bundleErr, legacyErr)
}
