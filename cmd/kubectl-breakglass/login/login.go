package login

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/spf13/cobra"
	"golang.org/x/oauth2"

	"github.com/tower-dev/breakglass/relay/client"
)

// New returns the login and logout commands.
func New() []*cobra.Command {
	return []*cobra.Command{newLogin(), newLogout()}
}

type loginOptions struct {
	cur       Current
	configDir string
	device    bool
	noBrowser bool
	listen    string
	timeout   time.Duration
}

func newLogin() *cobra.Command {
	o := &loginOptions{}
	cmd := &cobra.Command{
		Use:   "login --relay URL",
		Short: "Sign in with the relay's OIDC issuer; every other command uses the token",
		Long: `Sign in the way kubelogin does: a browser page at the issuer, which sends
the browser back to this command on a loopback port (authorization code flow
with PKCE), or, with --device, a code to enter on a page opened on any other
device (for a remote shell).

The relay says where its people sign in (GET /api/v1/login); --issuer and
--client-id override it. The ID token and refresh token are kept, readable by
you alone, in $BREAKGLASS_CONFIG_DIR or breakglass in your config directory,
per issuer and client, and refreshed when the ID token expires.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f := cmd.Flags()
	f.StringVar(&o.cur.Relay, "relay", os.Getenv("BREAKGLASS_RELAY"), "the relay's URL ($BREAKGLASS_RELAY)")
	f.StringVar(&o.cur.Issuer, "issuer", "", "the OIDC issuer (default: the one the relay names)")
	f.StringVar(&o.cur.ClientID, "client-id", "", "the OIDC client ID (default: the one the relay names)")
	f.StringSliceVar(&o.cur.Scopes, "scopes", []string{oidc.ScopeOpenID, "email", "groups", oidc.ScopeOfflineAccess}, "the scopes to ask for")
	f.BoolVar(&o.device, "device", false, "sign in on another device: print a code and a page to enter it on (RFC 8628)")
	f.BoolVar(&o.noBrowser, "no-browser", false, "print the sign-in address instead of opening a browser")
	f.StringVar(&o.configDir, ConfigDirFlag, "", "where the login is kept (default: $BREAKGLASS_CONFIG_DIR, else breakglass in your config directory)")
	f.StringVar(&o.listen, "listen-address", "127.0.0.1:0", "the loopback address the browser comes back to")
	f.DurationVar(&o.timeout, "timeout", 5*time.Minute, "how long to wait for the sign-in")
	return cmd
}

func (o *loginOptions) run(cmd *cobra.Command) error {
	if o.cur.Relay == "" {
		return errors.New("no relay: pass --relay or set BREAKGLASS_RELAY")
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
	defer cancel()
	if o.cur.Issuer == "" || o.cur.ClientID == "" {
		lc, err := (&client.Client{BaseURL: o.cur.Relay}).LoginConfig(ctx)
		if err != nil {
			return fmt.Errorf("asking the relay where to sign in (or pass --issuer and --client-id): %w", err)
		}
		if o.cur.Issuer == "" {
			o.cur.Issuer = lc.Issuer
		}
		if o.cur.ClientID == "" {
			o.cur.ClientID = lc.ClientID
		}
	}
	store, err := DefaultStore(o.configDir)
	if err != nil {
		return err
	}
	p, err := discover(ctx, o.cur)
	if err != nil {
		return err
	}
	var tok cached
	if o.device {
		tok, err = o.deviceFlow(ctx, cmd.ErrOrStderr(), p)
	} else {
		tok, err = o.codeFlow(ctx, cmd.ErrOrStderr(), p)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("no sign-in within %s: %w", o.timeout, err)
	}
	if err != nil {
		return err
	}
	if err := store.save(o.cur, tok); err != nil {
		return fmt.Errorf("keeping the token: %w", err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "logged in to %s as %s (issuer %s); the token is kept in %s\n",
		o.cur.Relay, subjectOf(tok.IDToken), o.cur.Issuer, store.Dir)
	return nil
}

// codeFlow: the browser goes to the issuer and comes back to a listener on
// a loopback port with a code, which is worth a token only with the
// verifier this process holds (PKCE).
func (o *loginOptions) codeFlow(ctx context.Context, notes io.Writer, p *provider) (cached, error) {
	host, _, err := net.SplitHostPort(o.listen)
	if err != nil || !isLoopback(host) {
		return cached{}, fmt.Errorf("--listen-address %q: a loopback address and port, such as 127.0.0.1:0", o.listen)
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return cached{}, err
	}
	defer ln.Close()
	conf := p.conf
	conf.RedirectURL = "http://" + ln.Addr().String() + "/callback"
	state, nonce, verifier := random(), random(), oauth2.GenerateVerifier()
	authURL := conf.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oidc.Nonce(nonce))

	type result struct {
		tok cached
		err error
	}
	done := make(chan result, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /callback", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		var res result
		switch {
		case q.Get("state") != state:
			// Not our browser's answer (or a replay): ignored, the wait goes on.
			http.Error(w, "this is not the answer to the sign-in this command started", http.StatusBadRequest)
			return
		case q.Get("error") != "":
			res.err = fmt.Errorf("the issuer refused: %s %s", q.Get("error"), q.Get("error_description"))
		default:
			var tok *oauth2.Token
			if tok, res.err = conf.Exchange(r.Context(), q.Get("code"), oauth2.VerifierOption(verifier)); res.err == nil {
				res.tok, res.err = p.verify(r.Context(), tok, nonce)
			}
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if res.err != nil {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, "Sign-in failed: %v\n", res.err)
		} else {
			fmt.Fprintln(w, "Signed in. You can close this page and go back to the terminal.")
		}
		select {
		case done <- res:
		default:
		}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer func() {
		// Shutdown, not Close: the browser's answer is still on its way.
		stop, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(stop)
	}()

	fmt.Fprintf(notes, "Sign in at this address (it comes back to this command on %s):\n\n  %s\n\n", ln.Addr(), authURL)
	if !o.noBrowser {
		if err := openBrowser(authURL); err != nil {
			fmt.Fprintf(notes, "(no browser opened: %v; open the address yourself)\n", err)
		}
	}
	select {
	case res := <-done:
		return res.tok, res.err
	case <-ctx.Done():
		return cached{}, ctx.Err()
	}
}

// deviceFlow: a code to enter on a page any device can open; this command
// polls the issuer until the person has.
func (o *loginOptions) deviceFlow(ctx context.Context, notes io.Writer, p *provider) (cached, error) {
	if p.conf.Endpoint.DeviceAuthURL == "" {
		return cached{}, fmt.Errorf("the issuer %s offers no device flow (no device_authorization_endpoint): sign in without --device", p.conf.Endpoint.AuthURL)
	}
	da, err := p.conf.DeviceAuth(ctx)
	if err != nil {
		return cached{}, fmt.Errorf("starting the device flow: %w", err)
	}
	fmt.Fprintf(notes, "On any device, open\n\n  %s\n\nand enter the code\n\n  %s\n\n", da.VerificationURI, da.UserCode)
	if da.VerificationURIComplete != "" {
		fmt.Fprintf(notes, "(or open %s)\n", da.VerificationURIComplete)
	}
	tok, err := p.conf.DeviceAccessToken(ctx, da)
	if err != nil {
		return cached{}, fmt.Errorf("the device sign-in: %w", err)
	}
	return p.verify(ctx, tok, "")
}

func newLogout() *cobra.Command {
	var configDir string
	cmd := &cobra.Command{
		Use:   "logout",
		Short: "Forget the login's tokens (and revoke the refresh token where the issuer allows)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			store, err := DefaultStore(configDir)
			if err != nil {
				return err
			}
			cur, err := store.Current()
			if err != nil {
				return err
			}
			refresh, err := store.forget(cur)
			if err != nil {
				return err
			}
			if refresh != "" {
				if p, err := discover(cmd.Context(), cur); err == nil && p.revokeURL != "" {
					resp, err := http.PostForm(p.revokeURL, url.Values{"token": {refresh}, "token_type_hint": {"refresh_token"}, "client_id": {cur.ClientID}})
					if err == nil {
						resp.Body.Close()
					}
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "logged out of %s\n", cur.Relay)
			return nil
		},
	}
	cmd.Flags().StringVar(&configDir, ConfigDirFlag, "", "where the login is kept")
	return cmd
}

func isLoopback(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func random() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// openBrowser hands the address to the desktop's browser, as kubelogin
// does; the address is one argument, never through a shell.
func openBrowser(u string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", u)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", u)
	default:
		cmd = exec.Command("xdg-open", u)
	}
	return cmd.Start()
}

// subjectOf is the token's email (or subject) for the message after the
// login; the token was verified before this.
func subjectOf(raw string) string {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return "?"
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "?"
	}
	var c struct{ Email, Sub string }
	if json.Unmarshal(b, &c) != nil {
		return "?"
	}
	if c.Email != "" {
		return c.Email
	}
	return c.Sub
}
