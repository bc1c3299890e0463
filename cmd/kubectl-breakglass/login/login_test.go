package login

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/tower-dev/breakglass/internal/oidcissuer"
)

// syncBuffer lets the test read what the command printed while it runs.
type syncBuffer struct {
	ch chan string
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.b.Write(p)
	s.ch <- s.b.String()
	return len(p), nil
}

// waitFor waits until the output matches re and returns the match.
func (s *syncBuffer) waitFor(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case out := <-s.ch:
			if m := re.FindStringSubmatch(out); m != nil {
				return m
			}
		case <-timeout:
			t.Fatalf("no %s in the output", re)
		}
	}
}

func issuerForLogin(t *testing.T) *oidcissuer.Issuer {
	t.Helper()
	iss, err := oidcissuer.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = iss.Close() })
	iss.AddClient("tower", "http://127.0.0.1/callback")
	iss.AddPerson("alice", oidcissuer.Person{Email: "alice@example.com"})
	return iss
}

// run runs one of the commands in its own goroutine; its notes go to notes.
func run(cmd *cobra.Command, notes *syncBuffer, args ...string) (<-chan error, *strings.Builder) {
	out := &strings.Builder{}
	cmd.SetArgs(args)
	cmd.SetOut(out)
	cmd.SetErr(notes)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(context.Background()) }()
	return done, out
}

// TestLoginCodeFlow: the browser (played by the test) signs alice in and
// comes back to the command's loopback port; the token is verified, kept
// readable by the user alone, and handed to every command; once expired it
// is refreshed with the refresh token; logout forgets it.
func TestLoginCodeFlow(t *testing.T) {
	iss := issuerForLogin(t)
	dir := filepath.Join(t.TempDir(), "config")
	notes := &syncBuffer{ch: make(chan string, 100)}
	done, out := run(newLogin(), notes, "--relay", "https://relay.example", "--issuer", iss.URL, "--client-id", "tower", "--no-browser", "--config-dir", dir)
	authURL := notes.waitFor(t, regexp.MustCompile(`(http://127\.0\.0\.1:\d+/auth\?\S+)`))[1]

	// Someone else's answer on the loopback port (no state) is ignored.
	back, err := oidcissuer.SignIn(authURL, "alice")
	if err != nil {
		t.Fatal(err)
	}
	forged := *back
	forged.RawQuery = "code=forged&state=other"
	resp, err := http.Get(forged.String())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a callback with another state: %s", resp.Status)
	}
	resp, err = http.Get(back.String())
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the callback: %v %v", resp, err)
	}
	resp.Body.Close()
	if err := <-done; err != nil || !strings.Contains(out.String(), "as alice@example.com") {
		t.Fatalf("login: %v %s", err, out)
	}

	for path, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, "tokens"): 0o700, filepath.Join(dir, "login.json"): 0o600} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Fatalf("%s: %v %v, want %v", path, fi.Mode(), err, want)
		}
	}
	store, _ := DefaultStore(dir)
	cur, err := store.Current()
	if err != nil || cur.Relay != "https://relay.example" || cur.Issuer != iss.URL || cur.ClientID != "tower" {
		t.Fatalf("the login kept: %+v %v", cur, err)
	}
	first, err := store.Token(context.Background(), cur)
	if err != nil || first == "" {
		t.Fatalf("the token: %v", err)
	}
	if again, _ := store.Token(context.Background(), cur); again != first {
		t.Fatal("a token still valid was refreshed")
	}

	// Expired: refreshed, and the new tokens kept.
	var c cached
	b, _ := os.ReadFile(store.tokenFile(cur))
	_ = json.Unmarshal(b, &c)
	oldRefresh := c.RefreshToken
	c.Expiry = time.Now().Add(10 * time.Second) // within the skew
	if err := writePrivate(store.tokenFile(cur), c); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // a new token has a new iat
	fresh, err := store.Token(context.Background(), cur)
	if err != nil || fresh == first {
		t.Fatalf("an expiring token was not refreshed: %v", err)
	}
	b, _ = os.ReadFile(store.tokenFile(cur))
	_ = json.Unmarshal(b, &c)
	if c.IDToken != fresh || c.RefreshToken == oldRefresh || time.Until(c.Expiry) < time.Minute {
		t.Fatalf("the refreshed tokens were not kept: %+v", c)
	}

	// A cache someone broke is refused with what to do.
	if err := os.WriteFile(store.tokenFile(cur), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Token(context.Background(), cur); err == nil || !strings.Contains(err.Error(), "run kubectl breakglass login") {
		t.Fatalf("a broken cache: %v", err)
	}

	logout := newLogout()
	logout.SetArgs([]string{"--config-dir", dir})
	logout.SetOut(&strings.Builder{})
	if err := logout.Execute(); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Current(); !errors.Is(err, ErrNotLoggedIn) {
		t.Fatalf("after logout: %v", err)
	}
}

// TestLoginDeviceFlow: with --device the command prints a code, and the
// person enters it on the issuer's page on another device.
func TestLoginDeviceFlow(t *testing.T) {
	iss := issuerForLogin(t)
	dir := t.TempDir()
	notes := &syncBuffer{ch: make(chan string, 100)}
	done, out := run(newLogin(), notes, "--relay", "https://relay.example", "--issuer", iss.URL, "--client-id", "tower", "--device", "--config-dir", dir)
	m := notes.waitFor(t, regexp.MustCompile(`open\s+(\S+/device)\s+and enter the code\s+([A-Z]{4}-[A-Z]{4})`))
	if err := oidcissuer.SignInDevice(m[1], m[2], "alice"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || !strings.Contains(out.String(), "as alice@example.com") {
		t.Fatalf("login --device: %v %s", err, out)
	}

	// Refused on the page: the command says so.
	notes = &syncBuffer{ch: make(chan string, 100)}
	done, _ = run(newLogin(), notes, "--relay", "https://relay.example", "--issuer", iss.URL, "--client-id", "tower", "--device", "--config-dir", t.TempDir())
	m = notes.waitFor(t, regexp.MustCompile(`open\s+(\S+/device)\s+and enter the code\s+([A-Z]{4}-[A-Z]{4})`))
	if err := oidcissuer.SignInDevice(m[1], m[2], ""); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil || !strings.Contains(err.Error(), "access_denied") {
		t.Fatalf("a refused device: %v", err)
	}
}

// TestLoginRefusals: a listener off loopback and a relay-less login are
// refused before anything is asked of the issuer.
func TestLoginRefusals(t *testing.T) {
	iss := issuerForLogin(t)
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"not loopback": {[]string{"--relay", "https://r.example", "--issuer", iss.URL, "--client-id", "tower", "--listen-address", "0.0.0.0:0", "--no-browser"}, "a loopback address"},
		"no relay":     {[]string{"--issuer", iss.URL, "--client-id", "tower"}, "no relay"},
		"no issuer":    {[]string{"--relay", "https://r.example", "--issuer", "http://127.0.0.1:1", "--client-id", "tower"}, "the issuer http://127.0.0.1:1"},
	} {
		t.Setenv("BREAKGLASS_RELAY", "")
		cmd := newLogin()
		cmd.SetArgs(append(tc.args, "--config-dir", t.TempDir()))
		cmd.SetOut(&strings.Builder{})
		cmd.SetErr(&strings.Builder{})
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}
