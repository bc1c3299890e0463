package rekor

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	tsaserver "github.com/sigstore/timestamp-authority/v2/pkg/server"
	"github.com/spf13/viper"
)

// TSA is Sigstore's RFC 3161 timestamp authority, its own server code
// served in this process on loopback, with a key and certificate chain it
// made in memory. (Its binary also binds a fixed metrics port on every
// address, which two test packages running at once cannot share.)
type TSA struct {
	// URL is the timestamp endpoint signers post to.
	URL string
	// Chain is its certificate chain, leaf first.
	Chain []*x509.Certificate
	srv   *httptest.Server
}

// StartTSA starts a timestamp authority and reads its chain.
func StartTSA(ctx context.Context) (_ *TSA, err error) {
	// The server reads its settings from viper, as its flags set them.
	for key, value := range map[string]any{
		"timestamp-signer": "memory", "timestamp-signer-hash": "sha256", "enforce-intermediate-eku": true,
		"default-policy-oid": "1.3.6.1.4.1.57264.2", "accepted-policy-oids": []string{"1.3.6.1.4.1.57264.2"},
	} {
		viper.Set(key, value)
	}
	api := tsaserver.NewRestAPIServer("127.0.0.1", 0, []string{"http"}, false, 10*time.Second, 10*time.Second)
	t := &TSA{srv: httptest.NewServer(api.GetHandler())}
	defer func() {
		if err != nil {
			t.Stop()
		}
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.srv.URL+"/api/v1/timestamp/certchain", nil)
	if err != nil {
		return nil, err
	}
	resp, err := t.srv.Client().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	pemChain, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if t.Chain, err = cryptoutils.UnmarshalCertificatesFromPEM(pemChain); err != nil {
		return nil, fmt.Errorf("the timestamp authority's chain: %w", err)
	}
	if len(t.Chain) < 2 {
		return nil, fmt.Errorf("the timestamp authority's chain has %d certificates: %s", len(t.Chain), pemChain)
	}
	t.URL = t.srv.URL + "/api/v1/timestamp"
	return t, nil
}

// Authority is the TSA as a trusted root names it.
func (t *TSA) Authority() root.TimestampingAuthority {
	n := len(t.Chain)
	return &root.SigstoreTimestampingAuthority{Leaf: t.Chain[0], Intermediates: t.Chain[1 : n-1], Root: t.Chain[n-1], URI: t.URL}
}

// Stop stops serving.
func (t *TSA) Stop() { t.srv.Close() }
