package webhook_test

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/cosign/v2/pkg/oci/mutate"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
	"github.com/sigstore/cosign/v2/pkg/oci/static"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/payload"
)

// testRegistry is a real OCI registry (go-containerregistry's) on loopback,
// which can be told to answer slowly.
type testRegistry struct {
	srv  *httptest.Server
	host string
	slow atomic.Bool
}

func newRegistry() *testRegistry {
	r := &testRegistry{}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.slow.Load() {
			time.Sleep(4 * time.Second)
		}
		reg.ServeHTTP(w, req)
	}))
	r.host = r.srv.Listener.Addr().String()
	return r
}

// push writes a random image to repo:tag and returns its digest reference.
func (r *testRegistry) push(repo, tag string) (name.Digest, error) {
	ref, err := name.NewTag(r.host+"/"+repo+":"+tag, name.Insecure)
	if err != nil {
		return name.Digest{}, err
	}
	img, err := random.Image(512, 1)
	if err != nil {
		return name.Digest{}, err
	}
	if err := remote.Write(ref, img); err != nil {
		return name.Digest{}, err
	}
	h, err := img.Digest()
	if err != nil {
		return name.Digest{}, err
	}
	return name.NewDigest(ref.Context().Name()+"@"+h.String(), name.Insecure)
}

// signer is a cosign key made at test time: nothing committed expires.
type signer struct {
	priv *ecdsa.PrivateKey
	sv   signature.SignerVerifier
}

func newSigner() (*signer, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	sv, err := signature.LoadECDSASignerVerifier(priv, crypto.SHA256)
	if err != nil {
		return nil, err
	}
	return &signer{priv: priv, sv: sv}, nil
}

// sign attaches a cosign signature of ref to the registry, as `cosign sign` does.
func (s *signer) sign(ref name.Digest) error {
	body, err := (&payload.Cosign{Image: ref}).MarshalJSON()
	if err != nil {
		return err
	}
	sig, err := s.sv.SignMessage(bytes.NewReader(body))
	if err != nil {
		return err
	}
	ociSig, err := static.NewSignature(body, base64.StdEncoding.EncodeToString(sig))
	if err != nil {
		return err
	}
	se, err := ociremote.SignedEntity(ref)
	if err != nil {
		return err
	}
	signed, err := mutate.AttachSignatureToEntity(se, ociSig)
	if err != nil {
		return err
	}
	return ociremote.WriteSignatures(ref.Repository, signed)
}

// writePublicKey writes the public key as PEM into dir.
func (s *signer) writePublicKey(dir, file string) (string, error) {
	pem, err := cryptoutils.MarshalPublicKeyToPEM(s.priv.Public())
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, file)
	return path, os.WriteFile(path, pem, 0o600)
}
