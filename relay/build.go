package relay

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/tower-dev/breakglass/relay/console"
)

// New builds a relay from its configuration and its parts: it completes
// the configuration, connects to the issuer, and builds the web console
// the configuration asks for. The command, make dev and the tests all
// build a relay this way, so none of them can leave out a step. ctx bounds
// the issuer's discovery and its key fetches, for as long as the relay
// runs.
func New(ctx context.Context, o Options) (*Server, error) {
	if o.Config == nil {
		return nil, errors.New("relay: a configuration is required")
	}
	if err := o.Config.Complete(); err != nil {
		return nil, err
	}
	auth, err := NewAuthenticator(ctx, o.Config.OIDC, nil)
	if err != nil {
		return nil, err
	}
	web, err := newConsole(ctx, o.Config, auth)
	if err != nil {
		return nil, err
	}
	return newServer(o, auth, web)
}

// newConsole is the web console cfg asks for (nil without console:): it
// signs people in at the issuer as client oidc.audience, so the tokens it
// keeps are those the API accepts, checked by auth.
func newConsole(ctx context.Context, cfg *Config, auth *Authenticator) (*console.Console, error) {
	if cfg.Console == nil {
		return nil, nil
	}
	var secret string
	if f := cfg.Console.ClientSecretFile; f != "" {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("console.clientSecretFile: %w", err)
		}
		secret = strings.TrimSpace(string(data))
	}
	return console.New(ctx, console.Options{Issuer: cfg.OIDC.Issuer, ClientID: cfg.OIDC.Audience, ClientSecret: secret, URL: cfg.Console.URL,
		Verify: func(ctx context.Context, raw string) error {
			_, err := auth.Verify(ctx, raw)
			return err
		}})
}
