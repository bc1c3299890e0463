package oidcissuer

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// What a person does in a browser at this issuer, for tests that drive a
// client's sign-in without one (the CLI's login, the relay's tests).

var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// SignIn opens the sign-in page at authURL and picks username, as a person
// would; it returns where the issuer sends the browser back (the client's
// redirect URI with the code), without following it.
func SignIn(authURL, username string) (*url.URL, error) {
	resp, err := http.Get(authURL)
	if err != nil {
		return nil, err
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), `value="`+username+`"`) {
		return nil, fmt.Errorf("the sign-in page: %s %s", resp.Status, page)
	}
	u, err := url.Parse(authURL)
	if err != nil {
		return nil, err
	}
	form := u.Query()
	form.Set("username", username)
	resp, err = noRedirects.PostForm(u.Scheme+"://"+u.Host+u.Path, form)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		return nil, fmt.Errorf("signing in: %s", resp.Status)
	}
	return url.Parse(resp.Header.Get("Location"))
}

// SignInDevice enters userCode on the device page at verificationURI and
// signs in as username (or refuses, when username is empty).
func SignInDevice(verificationURI, userCode, username string) error {
	form := url.Values{"user_code": {userCode}}
	if username == "" {
		form.Set("deny", "1")
	} else {
		form.Set("username", username)
	}
	resp, err := http.PostForm(verificationURI, form)
	if err != nil {
		return err
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the device page: %s %s", resp.Status, page)
	}
	return nil
}
