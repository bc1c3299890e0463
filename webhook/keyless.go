package webhook

import (
	"fmt"
	"os"

	"github.com/sigstore/cosign/v2/pkg/cosign"
	"github.com/sigstore/sigstore/pkg/tuf" //nolint:staticcheck // cosign v2 takes this package's StatusKind for a log key

	"github.com/tower-dev/breakglass/evidence/tlog"
)

// keylessOpts are the checks of a keyless policy: the certificate chains to
// the roots, names the identity, and the signature's Rekor entry (carried
// with the signature) verifies with the log's key. There is no
// certificate-transparency log here, so SCTs are not required; the Rekor
// entry is.
func keylessOpts(k *Keyless) (*cosign.CheckOpts, error) {
	rootsPEM, err := os.ReadFile(k.Roots)
	if err != nil {
		return nil, fmt.Errorf("keyless.roots: %w", err)
	}
	roots, intermediates, err := tlog.CertPools(rootsPEM)
	if err != nil {
		return nil, fmt.Errorf("keyless.roots: %s: %w", k.Roots, err)
	}
	rekorPEM, err := os.ReadFile(k.RekorPublicKey)
	if err != nil {
		return nil, fmt.Errorf("keyless.rekorPublicKey: %w", err)
	}
	rekorKeys := cosign.NewTrustedTransparencyLogPubKeys()
	if err := rekorKeys.AddTransparencyLogPubKey(rekorPEM, tuf.Active); err != nil {
		return nil, fmt.Errorf("keyless.rekorPublicKey: %w", err)
	}
	return &cosign.CheckOpts{
		RootCerts:         roots,
		IntermediateCerts: intermediates,
		Identities:        []cosign.Identity{{Issuer: k.Issuer, Subject: k.Subject, SubjectRegExp: k.SubjectRegExp}},
		RekorPubKeys:      &rekorKeys,
		IgnoreSCT:         true,
	}, nil
}
