// Package backstageuser is a harness for Tower's Backstage plugins: a
// person signing in to Backstage at the local issuer as a browser would,
// and a relay client that goes through Backstage's backend.
package backstageuser

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"

	"github.com/tower-dev/breakglass/internal/oidcissuer"
	"github.com/tower-dev/breakglass/relay/client"
)

// Person is someone signed in to Backstage: its token, and the ID token
// the issuer gave Backstage for them.
type Person struct {
	BackstageToken, IDToken string
	// UserEntityRef is who Backstage says they are (user:default/alice).
	UserEntityRef string
}

// SignIn signs username in to Backstage at baseURL through its OIDC
// provider, as the sign-in page's popup does: the start redirects to the
// issuer, the issuer back to the frame handler (which sets the refresh
// cookie), and the refresh call answers both tokens.
func SignIn(baseURL, username string) (Person, error) {
	jar, _ := cookiejar.New(nil)
	noFollow := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	start := baseURL + "/api/auth/oidc/start?" + url.Values{"env": {"development"}, "origin": {baseURL}, "flow": {"popup"},
		"scope": {"openid profile email groups offline_access"}}.Encode()
	resp, err := noFollow.Get(start)
	if err != nil {
		return Person{}, err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		return Person{}, fmt.Errorf("starting Backstage's sign-in: %s", resp.Status)
	}
	back, err := oidcissuer.SignIn(resp.Header.Get("Location"), username)
	if err != nil {
		return Person{}, err
	}
	if resp, err = noFollow.Get(back.String()); err != nil {
		return Person{}, err
	}
	page, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "authorization_response") {
		return Person{}, fmt.Errorf("the Backstage sign-in handler: %s %.300s", resp.Status, page)
	}
	req, _ := http.NewRequest(http.MethodGet, baseURL+"/api/auth/oidc/refresh?env=development", nil)
	req.Header.Set("X-Requested-With", "XMLHttpRequest")
	if resp, err = noFollow.Do(req); err != nil {
		return Person{}, err
	}
	defer resp.Body.Close()
	var session struct {
		ProviderInfo struct {
			IDToken string `json:"idToken"`
		} `json:"providerInfo"`
		BackstageIdentity struct {
			Token    string `json:"token"`
			Identity struct {
				UserEntityRef string `json:"userEntityRef"`
			} `json:"identity"`
		} `json:"backstageIdentity"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&session); err != nil || session.BackstageIdentity.Token == "" || session.ProviderInfo.IDToken == "" {
		return Person{}, fmt.Errorf("the Backstage session for %s: %s, %w", username, resp.Status, err)
	}
	return Person{BackstageToken: session.BackstageIdentity.Token, IDToken: session.ProviderInfo.IDToken,
		UserEntityRef: session.BackstageIdentity.Identity.UserEntityRef}, nil
}

// IdentityHeader and EntityHeader are the plugins' headers
// (breakglass-common's wire.ts).
const (
	IdentityHeader = "X-Breakglass-Identity"
	EntityHeader   = "X-Breakglass-Entity"
)

// Client is a relay client that goes through Backstage's backend plugin as
// p, asking about entityRef (for requests).
func (p Person) Client(baseURL, entityRef string) *client.Client {
	h := http.Header{IdentityHeader: {p.IDToken}}
	if entityRef != "" {
		h.Set(EntityHeader, entityRef)
	}
	return &client.Client{BaseURL: baseURL + "/api/breakglass", Token: p.BackstageToken, Header: h}
}
