package relay

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/tower-dev/breakglass/relay/console"
)

// NewConsole is the web console cfg asks for (nil without console:): it
// signs people in at the issuer as client oidc.audience, so the tokens it
// keeps are those the API accepts, checked by auth.
func NewConsole(ctx context.Context, cfg *Config, auth *Authenticator, hc *http.Client) (*console.Console, error) {
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
	return console.New(ctx, console.Options{Issuer: cfg.OIDC.Issuer, ClientID: cfg.OIDC.Audience, ClientSecret: secret, URL: cfg.Console.URL, HTTPClient: hc,
		Verify: func(ctx context.Context, raw string) error {
			_, err := auth.Verify(ctx, raw)
			return err
		}})
}
