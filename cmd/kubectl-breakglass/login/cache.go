// Package login is `kubectl breakglass login` and `logout`: an OIDC ID
// token for the relay the way kubelogin gets one (the authorization code
// flow with PKCE on a loopback port, or the device flow for a shell with no
// browser), cached per issuer and client in the user's config directory
// and refreshed when it expires, for every other command to use.
package login

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// Current is the last login: which relay, and where its people sign in.
type Current struct {
	Relay    string   `json:"relay"`
	Issuer   string   `json:"issuer"`
	ClientID string   `json:"clientID"`
	Scopes   []string `json:"scopes"`
}

// cached is one issuer and client's tokens.
type cached struct {
	IDToken      string    `json:"idToken"`
	RefreshToken string    `json:"refreshToken,omitempty"`
	Expiry       time.Time `json:"expiry"`
}

// Store is the CLI's config directory: the current login in login.json,
// tokens under tokens/, readable by the user alone.
type Store struct{ Dir string }

// ConfigDirFlag is the flag naming the store's directory (one per
// identity, for someone who signs in as more than one).
const ConfigDirFlag = "config-dir"

// DefaultStore is dir, else $BREAKGLASS_CONFIG_DIR, else breakglass in the
// user's config directory (~/.config on Linux, ~/Library/Application
// Support on macOS, %AppData% on Windows).
func DefaultStore(dir string) (Store, error) {
	if dir != "" {
		return Store{Dir: dir}, nil
	}
	if d := os.Getenv("BREAKGLASS_CONFIG_DIR"); d != "" {
		return Store{Dir: d}, nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return Store{}, fmt.Errorf("no config directory for the login: %w", err)
	}
	return Store{Dir: filepath.Join(d, "breakglass")}, nil
}

// ErrNotLoggedIn says there is no login to use.
var ErrNotLoggedIn = errors.New("not logged in: run kubectl breakglass login --relay URL (or pass --token-file, or set BREAKGLASS_TOKEN)")

// Current reads the last login.
func (s Store) Current() (Current, error) {
	var c Current
	b, err := os.ReadFile(filepath.Join(s.Dir, "login.json"))
	if errors.Is(err, os.ErrNotExist) {
		return c, ErrNotLoggedIn
	}
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("%s is not a login this CLI wrote (%w): run kubectl breakglass login again", filepath.Join(s.Dir, "login.json"), err)
	}
	if c.Issuer == "" || c.ClientID == "" {
		return c, fmt.Errorf("%s names no issuer or client ID: run kubectl breakglass login again", filepath.Join(s.Dir, "login.json"))
	}
	return c, nil
}

func (s Store) tokenFile(c Current) string {
	sum := sha256.Sum256([]byte(c.Issuer + "\n" + c.ClientID))
	return filepath.Join(s.Dir, "tokens", hex.EncodeToString(sum[:16])+".json")
}

// save writes the login and its tokens, 0600 in 0700 directories, each
// file replaced whole (written aside, then renamed).
func (s Store) save(c Current, t cached) error {
	if err := os.MkdirAll(filepath.Join(s.Dir, "tokens"), 0o700); err != nil {
		return err
	}
	for _, d := range []string{s.Dir, filepath.Join(s.Dir, "tokens")} {
		// An existing directory keeps its mode through MkdirAll.
		if err := os.Chmod(d, 0o700); err != nil {
			return err
		}
	}
	if err := writePrivate(s.tokenFile(c), t); err != nil {
		return err
	}
	return writePrivate(filepath.Join(s.Dir, "login.json"), c)
}

func writePrivate(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// expirySkew: a token this close to its expiry is refreshed first, so it
// does not expire on its way to the relay.
const expirySkew = 30 * time.Second

// Token is an ID token for the current login, refreshed with the cached
// refresh token when it is about to expire.
func (s Store) Token(ctx context.Context, c Current) (string, error) {
	var t cached
	b, err := os.ReadFile(s.tokenFile(c))
	if errors.Is(err, os.ErrNotExist) {
		return "", ErrNotLoggedIn
	}
	if err != nil {
		return "", err
	}
	if err := json.Unmarshal(b, &t); err != nil {
		return "", fmt.Errorf("the cached token %s is unreadable (%w): run kubectl breakglass login", s.tokenFile(c), err)
	}
	if t.IDToken != "" && time.Until(t.Expiry) > expirySkew {
		return t.IDToken, nil
	}
	if t.RefreshToken == "" {
		return "", fmt.Errorf("your login at %s expired: run kubectl breakglass login", c.Issuer)
	}
	p, err := discover(ctx, c)
	if err != nil {
		return "", err
	}
	tok, err := p.conf.TokenSource(ctx, &oauth2.Token{RefreshToken: t.RefreshToken}).Token()
	if err != nil {
		return "", fmt.Errorf("your login at %s expired and could not be refreshed (%w): run kubectl breakglass login", c.Issuer, err)
	}
	fresh, err := p.verify(ctx, tok, "")
	if err != nil {
		return "", err
	}
	if fresh.RefreshToken == "" {
		fresh.RefreshToken = t.RefreshToken // an issuer that does not rotate them
	}
	if err := s.save(c, fresh); err != nil {
		return "", fmt.Errorf("caching the refreshed token: %w", err)
	}
	return fresh.IDToken, nil
}

// forget removes the current login's tokens and returns its refresh token.
func (s Store) forget(c Current) (string, error) {
	var t cached
	if b, err := os.ReadFile(s.tokenFile(c)); err == nil {
		_ = json.Unmarshal(b, &t)
	}
	err := os.Remove(s.tokenFile(c))
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	return t.RefreshToken, errors.Join(err, os.Remove(filepath.Join(s.Dir, "login.json")))
}

// provider is an issuer found by discovery, as one client.
type provider struct {
	*oidc.Provider
	conf      oauth2.Config
	revokeURL string
}

func discover(ctx context.Context, c Current) (*provider, error) {
	p, err := oidc.NewProvider(ctx, c.Issuer)
	if err != nil {
		return nil, fmt.Errorf("the issuer %s: %w", c.Issuer, err)
	}
	var extra struct {
		Revocation string `json:"revocation_endpoint"`
	}
	_ = p.Claims(&extra)
	ep := p.Endpoint()
	// A public client: the client ID goes in the form, with no secret.
	ep.AuthStyle = oauth2.AuthStyleInParams
	return &provider{Provider: p, conf: oauth2.Config{ClientID: c.ClientID, Endpoint: ep, Scopes: c.Scopes}, revokeURL: extra.Revocation}, nil
}

// verify checks the ID token in tok as the relay will (issuer, audience,
// signature, expiry) and the nonce the login sent, if any.
func (p *provider) verify(ctx context.Context, tok *oauth2.Token, nonce string) (cached, error) {
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return cached{}, errors.New("the issuer sent no ID token: is openid among the scopes?")
	}
	idt, err := p.Verifier(&oidc.Config{ClientID: p.conf.ClientID}).Verify(ctx, raw)
	if err != nil {
		return cached{}, fmt.Errorf("the issuer's ID token does not verify: %w", err)
	}
	if nonce != "" && idt.Nonce != nonce {
		return cached{}, errors.New("the ID token is not the answer to this login (its nonce differs)")
	}
	return cached{IDToken: raw, RefreshToken: tok.RefreshToken, Expiry: idt.Expiry}, nil
}
