// Package client calls the relay's session API and opens session terminals,
// for the kubectl-breakglass CLI and for tests. It speaks what
// relay/openapi.yaml describes.
package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/tower-dev/breakglass/evidence/transcript"
	"github.com/tower-dev/breakglass/relay/wire"
)

// ContextExtension names the kubeconfig context extension that maps a
// context to the relay's name for its cluster (and the relay, if not the
// login's):
//
//	contexts:
//	- name: prod-eu
//	  context:
//	    cluster: arn:aws:eks:eu-west-1:111122223333:cluster/prod-eu
//	    extensions:
//	    - name: breakglass.tower.dev
//	      extension: {cluster: prod, relay: https://breakglass.example.com}
const ContextExtension = "breakglass.tower.dev"

// Client calls one relay as one person.
type Client struct {
	// BaseURL is the relay's address, e.g. https://breakglass-relay.example.com.
	BaseURL string
	// Token is the person's OIDC ID token.
	Token string
	// Header goes with every call and the terminal's dial: what a portal
	// in front of the relay asks for beside its own token (Tower's
	// Backstage backend: the person's ID token, the entity asked about).
	Header http.Header
	HTTP   *http.Client
	// TLS is how to trust the relay (its certificate authority, the name
	// on its certificate) when that is not the system's way; it applies to
	// the terminal's WebSocket too, and to calls when HTTP is nil.
	TLS *tls.Config
}

// Error is the relay's refusal.
type Error struct {
	Status  int
	Reason  string
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("%s (%d %s)", e.Message, e.Status, e.Reason) }

// Target names a session: cluster, namespace and (but for Request) name.
type Target struct {
	Cluster, Namespace, Name string
}

func (t Target) path() string {
	p := "/api/v1/clusters/" + url.PathEscape(t.Cluster) + "/namespaces/" + url.PathEscape(t.Namespace) + "/sessions"
	if t.Name != "" {
		p += "/" + url.PathEscape(t.Name)
	}
	return p
}

func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.BaseURL, "/")+path, r)
	if err != nil {
		return err
	}
	for k, v := range c.Header {
		req.Header[k] = v
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.HTTP
	switch {
	case hc != nil:
	case c.TLS != nil:
		hc = &http.Client{Transport: &http.Transport{TLSClientConfig: c.TLS}}
	default:
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Error struct{ Reason, Message string } `json:"error"`
		}
		if json.Unmarshal(raw, &e) != nil || e.Error.Message == "" {
			return &Error{Status: resp.StatusCode, Reason: http.StatusText(resp.StatusCode), Message: strings.TrimSpace(string(raw))}
		}
		return &Error{Status: resp.StatusCode, Reason: e.Error.Reason, Message: e.Error.Message}
	}
	if out == nil {
		return nil
	}
	if b, ok := out.(*[]byte); ok {
		*b = raw
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("the relay's answer is not the expected JSON: %w", err)
	}
	return nil
}

// Request asks for a session on t's cluster and namespace.
func (c *Client) Request(ctx context.Context, t Target, q wire.Request) (wire.SessionView, error) {
	var v wire.SessionView
	t.Name = ""
	err := c.do(ctx, http.MethodPost, t.path(), q, &v)
	return v, err
}

// LoginConfig asks the relay where its people sign in (no token needed).
func (c *Client) LoginConfig(ctx context.Context) (wire.LoginConfig, error) {
	var lc wire.LoginConfig
	err := c.do(ctx, http.MethodGet, "/api/v1/login", nil, &lc)
	return lc, err
}

// List lists the sessions the caller may see; empty cluster or namespace means all.
func (c *Client) List(ctx context.Context, cluster, namespace string) ([]wire.SessionView, error) {
	q := url.Values{}
	if cluster != "" {
		q.Set("cluster", cluster)
	}
	if namespace != "" {
		q.Set("namespace", namespace)
	}
	var out struct {
		Sessions []wire.SessionView `json:"sessions"`
	}
	err := c.do(ctx, http.MethodGet, "/api/v1/sessions?"+q.Encode(), nil, &out)
	return out.Sessions, err
}

// Get reads one session.
func (c *Client) Get(ctx context.Context, t Target) (wire.SessionView, error) {
	var v wire.SessionView
	err := c.do(ctx, http.MethodGet, t.path(), nil, &v)
	return v, err
}

func (c *Client) post(ctx context.Context, t Target, verb string, body any) (wire.SessionView, error) {
	if t.Name == "" {
		return wire.SessionView{}, errors.New("a session name is required")
	}
	var v wire.SessionView
	err := c.do(ctx, http.MethodPost, t.path()+"/"+verb, body, &v)
	return v, err
}

// Approve approves t as decided.
func (c *Client) Approve(ctx context.Context, t Target, d wire.Decision) (wire.SessionView, error) {
	return c.post(ctx, t, "approve", d)
}

// Deny denies t, saying why.
func (c *Client) Deny(ctx context.Context, t Target, reason string) (wire.SessionView, error) {
	return c.post(ctx, t, "deny", wire.Decision{Reason: reason})
}

// Start starts an approved session.
func (c *Client) Start(ctx context.Context, t Target) (wire.SessionView, error) {
	return c.post(ctx, t, "start", nil)
}

// End ends a session.
func (c *Client) End(ctx context.Context, t Target, reason string) (wire.SessionView, error) {
	return c.post(ctx, t, "end", wire.EndRequest{Reason: reason})
}

// Extend asks for more time on a running session, for another person to decide.
func (c *Client) Extend(ctx context.Context, t Target, q wire.ExtensionAsk) (wire.SessionView, error) {
	return c.post(ctx, t, "extensions", q)
}

// ApproveExtension approves the extension asked for on t.
func (c *Client) ApproveExtension(ctx context.Context, t Target, comment string) (wire.SessionView, error) {
	return c.post(ctx, t, "extensions/approve", wire.Decision{Comment: comment})
}

// DenyExtension denies the extension asked for on t, saying why.
func (c *Client) DenyExtension(ctx context.Context, t Target, reason string) (wire.SessionView, error) {
	return c.post(ctx, t, "extensions/deny", wire.Decision{Reason: reason})
}

// Review reviews an ended session.
func (c *Client) Review(ctx context.Context, t Target, comment string) (wire.SessionView, error) {
	return c.post(ctx, t, "review", wire.Review{Comment: comment})
}

// Commands are what was typed in an ended session, rebuilt from its recording.
func (c *Client) Commands(ctx context.Context, t Target) ([]transcript.Command, error) {
	var v struct{ Commands []transcript.Command }
	err := c.do(ctx, http.MethodGet, t.path()+"/recording/commands", nil, &v)
	return v.Commands, err
}

// Recording fetches an ended session's file: cast, transcript or manifest.
func (c *Client) Recording(ctx context.Context, t Target, file string) ([]byte, error) {
	var b []byte
	err := c.do(ctx, http.MethodGet, t.path()+"/recording?file="+url.QueryEscape(file), nil, &b)
	return b, err
}
