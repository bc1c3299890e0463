package live

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/relay/api"
)

// Peers are the other replicas of this relay behind one Service: any of
// them answers the API, but a session's terminal runs in the one that
// attached it (the Session's status.relay), so a request for that terminal
// (or its end, or its live counters) reaching another replica is passed on
// to it.
type Peers struct {
	// Self is this replica's name (a pod name), written to the sessions it runs.
	Self string
	// URL is where a replica is reached, with {replica} standing for its
	// name, e.g. https://{replica}.breakglass-relay-peers.breakglass-system.svc:8443.
	URL string
	// Transport reaches the replicas (their CA); nil: Go's default, but
	// never through a proxy the environment names (a hop carries the
	// caller's token). relay.New fills it in.
	Transport http.RoundTripper
}

// Check says what is wrong with the peers' settings.
func (p *Peers) Check() error {
	if errs := validation.IsDNS1123Label(p.Self); len(errs) > 0 {
		return fmt.Errorf("replica name %q: %s", p.Self, strings.Join(errs, "; "))
	}
	if _, err := p.urlOf(p.Self); err != nil {
		return err
	}
	return nil
}

// urlOf is where the replica named replica is reached. The name comes from
// a Session's status, which only the portal writes, but it is held to a DNS
// label all the same: no name makes the URL point anywhere else.
func (p *Peers) urlOf(replica string) (*url.URL, error) {
	if errs := validation.IsDNS1123Label(replica); len(errs) > 0 {
		return nil, fmt.Errorf("replica name %q: %s", replica, strings.Join(errs, "; "))
	}
	if !strings.Contains(p.URL, "{replica}") {
		return nil, fmt.Errorf("peer URL %q has no {replica}", p.URL)
	}
	u, err := url.Parse(strings.ReplaceAll(p.URL, "{replica}", replica))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("peer URL %q is not an http(s) URL", p.URL)
	}
	return u, nil
}

// hopHeader marks a request one replica passed to another: it is never
// passed on again (a session that moved meanwhile is NotRunHere, and the
// client retries through the Service).
const hopHeader = "Breakglass-Relay-Hop"

// passOn sends r to the replica running sess, if that is another one, and
// reports whether it did. The caller was authenticated and authorized
// here; the other replica checks them again, from the same token.
func (s *Sessions) passOn(w http.ResponseWriter, r *http.Request, sess *v1alpha1.Session) bool {
	p := s.peers
	holder := sess.Status.Relay
	if p == nil || holder == "" || holder == p.Self || r.Header.Get(hopHeader) != "" {
		return false
	}
	to, err := p.urlOf(holder)
	if err != nil {
		s.log.Error(err, "a session names a replica that cannot be reached", "session", sess.Namespace+"/"+sess.Name)
		return false
	}
	proxy := &httputil.ReverseProxy{
		Transport: p.Transport,
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(to)
			pr.Out.URL.Path, pr.Out.URL.RawPath = r.URL.Path, r.URL.RawPath
			pr.Out.Host = to.Host
			pr.Out.Header.Set(hopHeader, p.Self)
			pr.SetXForwarded()
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			api.WriteError(w, &api.Error{Status: http.StatusServiceUnavailable, Reason: "NotRunHere",
				Message: fmt.Sprintf("the replica running this session, %s, does not answer (%v): try again", holder, err)})
		},
	}
	if r.GetBody != nil { // read here already (keepBody): the replica reads it again
		body, err := r.GetBody()
		if err != nil {
			api.WriteError(w, api.Internal(err))
			return true
		}
		r.Body = body
	}
	s.log.V(1).Info("passing a request to the replica running the session", "session", sess.Namespace+"/"+sess.Name, "replica", holder, "path", r.URL.Path)
	proxy.ServeHTTP(w, r)
	return true
}

// keepBody reads r's body (at most api.MaxBody) so that it can be read again:
// by the handler here, and by the replica a request is passed on to.
func keepBody(r *http.Request) error {
	if r.Body == nil {
		return nil
	}
	b, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, api.MaxBody))
	if err != nil {
		return api.BadRequest("the body could not be read (at most %d bytes): %v", api.MaxBody, err)
	}
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	r.Body, _ = r.GetBody()
	r.ContentLength = int64(len(b))
	return nil
}
