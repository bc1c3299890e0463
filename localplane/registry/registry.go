// Package registry is a real OCI registry on loopback (go-containerregistry's)
// and a cosign signer with a key made at run time, for tests and the local
// demo: images are pushed and signed as `crane push` and `cosign sign` would.
package registry

import (
	"context"
	"encoding/base64"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/cosign/v3/pkg/oci/mutate"
	ociremote "github.com/sigstore/cosign/v3/pkg/oci/remote"
	"github.com/sigstore/cosign/v3/pkg/oci/static"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature/payload"
)

// Registry is a real OCI registry on loopback, which can be told to answer
// slowly (Slow), to test deadlines.
type Registry struct {
	srv *httptest.Server
	// Host is host:port, the registry part of its image references.
	Host string
	Slow atomic.Bool
	// User and Password, when set, are required of every request (basic auth).
	User, Password string
}

// Start serves a new, empty registry.
func Start() *Registry { return start(nil, "", "") }

// StartPrivate serves a new, empty registry that answers only user.
func StartPrivate(user, password string) *Registry { return start(nil, user, password) }

// StartOn serves a new, empty registry on addr (host:port): the real node's
// pods pull from, and verify signatures at, an address on their bridge.
func StartOn(addr string) (*Registry, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return start(l, "", ""), nil
}

func start(l net.Listener, user, password string) *Registry {
	r := &Registry{User: user, Password: password}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.Slow.Load() {
			time.Sleep(4 * time.Second)
		}
		if u, p, ok := req.BasicAuth(); user != "" && (!ok || u != user || p != password) {
			w.Header().Set("WWW-Authenticate", `Basic realm="breakglass test registry"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, req)
	}))
	if l != nil {
		_ = r.srv.Listener.Close()
		r.srv.Listener = l
	}
	r.srv.Start()
	r.Host = r.srv.Listener.Addr().String()
	return r
}

// Close stops serving.
func (r *Registry) Close() { r.srv.Close() }

// Auth is how to reach the registry: its credentials, if it has any.
func (r *Registry) Auth() authn.Authenticator {
	if r.User == "" {
		return authn.Anonymous
	}
	return &authn.Basic{Username: r.User, Password: r.Password}
}

// Push writes a random image to repo:tag and returns its digest reference.
func (r *Registry) Push(repo, tag string) (name.Digest, error) {
	img, err := random.Image(512, 1)
	if err != nil {
		return name.Digest{}, err
	}
	return r.PushImage(repo, tag, img)
}

// PushImage pushes img as repo:tag and returns its reference by digest.
func (r *Registry) PushImage(repo, tag string, img v1.Image) (name.Digest, error) {
	return r.push(repo, tag, func(ref name.Tag) error { return remote.Write(ref, img, remote.WithAuth(r.Auth())) }, img.Digest)
}

// PushIndex pushes idx (an image per platform) as repo:tag and returns
// its reference by digest.
func (r *Registry) PushIndex(repo, tag string, idx v1.ImageIndex) (name.Digest, error) {
	return r.push(repo, tag, func(ref name.Tag) error { return remote.WriteIndex(ref, idx, remote.WithAuth(r.Auth())) }, idx.Digest)
}

// push writes an image or an index as repo:tag with write, and returns
// its reference by the digest it has.
func (r *Registry) push(repo, tag string, write func(name.Tag) error, digest func() (v1.Hash, error)) (name.Digest, error) {
	ref, err := name.NewTag(r.Host+"/"+repo+":"+tag, name.Insecure)
	if err != nil {
		return name.Digest{}, err
	}
	if err := write(ref); err != nil {
		return name.Digest{}, err
	}
	h, err := digest()
	if err != nil {
		return name.Digest{}, err
	}
	return name.NewDigest(ref.Context().Name()+"@"+h.String(), name.Insecure)
}

// Signer is a cosign key made at run time: nothing committed expires.
type Signer struct {
	key *sign.EphemeralKeypair
}

// NewSigner makes a new key (ECDSA P-256, cosign's default).
func NewSigner() (*Signer, error) {
	key, err := sign.NewEphemeralKeypair(nil)
	if err != nil {
		return nil, err
	}
	return &Signer{key: key}, nil
}

// Sign attaches a cosign signature of ref to the registry in the older
// layout (the sha256-<digest>.sig tag), as `cosign sign
// --new-bundle-format=false` does; opts reach the registry (e.g. its
// credentials).
func (s *Signer) Sign(ref name.Digest, opts ...ociremote.Option) error {
	body, err := (&payload.Cosign{Image: ref}).MarshalJSON()
	if err != nil {
		return err
	}
	sig, _, err := s.key.SignData(context.Background(), body)
	if err != nil {
		return err
	}
	ociSig, err := static.NewSignature(body, base64.StdEncoding.EncodeToString(sig))
	if err != nil {
		return err
	}
	se, err := ociremote.SignedEntity(ref, opts...)
	if err != nil {
		return err
	}
	signed, err := mutate.AttachSignatureToEntity(se, ociSig)
	if err != nil {
		return err
	}
	return ociremote.WriteSignatures(ref.Repository, signed, opts...)
}

// WritePublicKey writes the public key as PEM into dir/file.
func (s *Signer) WritePublicKey(dir, file string) (string, error) {
	pem, err := cryptoutils.MarshalPublicKeyToPEM(s.key.GetPublicKey())
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, file)
	return path, os.WriteFile(path, pem, 0o600)
}
