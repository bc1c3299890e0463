package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Sink delivers messages to one destination: a chat channel, a mailbox,
// a webhook.
type Sink interface {
	// Kind names the kind of sink for metrics: slack, teams, email, webhook.
	Kind() string
	// Deliver sends m once. An error that is not Permanent may be retried.
	Deliver(ctx context.Context, m Message) error
}

// deliveryError says whether trying again can help, and when.
type deliveryError struct {
	err        error
	permanent  bool
	retryAfter time.Duration
}

func (e *deliveryError) Error() string { return e.err.Error() }
func (e *deliveryError) Unwrap() error { return e.err }

// permanent marks err as one that a retry cannot cure (a refused payload,
// a bad token, a server without STARTTLS).
func permanent(err error) error { return &deliveryError{err: err, permanent: true} }

// IsPermanent says whether err will not go away by retrying.
func IsPermanent(err error) bool {
	var d *deliveryError
	return errors.As(err, &d) && d.permanent
}

// retryAfter is how long the server asked to wait, or 0.
func retryAfter(err error) time.Duration {
	var d *deliveryError
	if errors.As(err, &d) {
		return d.retryAfter
	}
	return 0
}

// post sends body and returns the answer's body (at most 64 KiB) when it
// is 2xx. Errors never name the URL: a Slack or Teams webhook's URL is its
// credential, and errors end up in logs.
func post(ctx context.Context, client *http.Client, target, contentType string, body []byte, header http.Header) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return nil, permanent(errors.New("the sink's URL does not parse"))
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", contentType)
	if client == nil {
		client = defaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("posting to %s: %w", req.URL.Host, err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	switch {
	case resp.StatusCode/100 == 2:
		return answer, nil
	case resp.StatusCode == http.StatusTooManyRequests:
		return nil, &deliveryError{err: fmt.Errorf("%s answered %s", req.URL.Host, resp.Status), retryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())}
	case resp.StatusCode/100 == 5 || resp.StatusCode == http.StatusRequestTimeout:
		return nil, fmt.Errorf("%s answered %s", req.URL.Host, resp.Status)
	}
	return nil, permanent(fmt.Errorf("%s answered %s: %s", req.URL.Host, resp.Status, strings.TrimSpace(string(answer[:min(len(answer), 200)]))))
}

var defaultClient = &http.Client{Timeout: 10 * time.Second}

// parseRetryAfter reads Retry-After: seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// readSecret reads a secret from a file, trimmed. It is read at each
// delivery, so a rotated Secret takes effect without a restart.
func readSecret(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", permanent(fmt.Errorf("reading a secret: %w", err))
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", permanent(fmt.Errorf("the secret file %s is empty", file))
	}
	return s, nil
}

// CheckURL refuses a sink URL that is not https, except http to a
// loopback address (tests, a local collector).
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return errors.New("not an absolute URL")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if ip := net.ParseIP(u.Hostname()); u.Hostname() == "localhost" || (ip != nil && ip.IsLoopback()) {
			return nil
		}
		return fmt.Errorf("http to %s: only https, or http to a loopback address", u.Hostname())
	}
	return fmt.Errorf("scheme %q: only https, or http to a loopback address", u.Scheme)
}

// secretURL reads a webhook URL from file and checks it.
func secretURL(file string) (string, error) {
	raw, err := readSecret(file)
	if err != nil {
		return "", err
	}
	if err := CheckURL(raw); err != nil {
		// The URL is the secret: name the file, not its content.
		return "", permanent(fmt.Errorf("the URL in %s: %w", file, err))
	}
	return raw, nil
}
