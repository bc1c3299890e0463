package console_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
)

// signedIn signs person in to the console as a browser does, through the
// issuer's page, and returns a client holding the console's cookies.
func signedIn(t *testing.T, relayURL, person string) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Jar: jar}
	// The relay sends a signed-out person to the issuer's sign-in page.
	resp, err := hc.Get(relayURL + "/console/")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	page := resp.Request.URL
	if resp.StatusCode != http.StatusOK || !strings.HasSuffix(page.Path, "/auth") || strings.HasPrefix(page.String(), relayURL) {
		t.Fatalf("a signed-out visit ended at %s (%d), not the issuer's sign-in page", page, resp.StatusCode)
	}
	// Picking the person posts the authorization request back with them.
	form := page.Query()
	form.Set("username", person)
	resp, err = hc.PostForm((&url.URL{Scheme: page.Scheme, Host: page.Host, Path: page.Path}).String(), form)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.String() != relayURL+"/console/" {
		t.Fatalf("the sign-in ended at %s (%d), not back on the console", resp.Request.URL, resp.StatusCode)
	}
	return hc
}
