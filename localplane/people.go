package localplane

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/tower-dev/breakglass/internal/oidcissuer"
	"github.com/tower-dev/breakglass/notify"
	"github.com/tower-dev/breakglass/relay/api"
)

// The demo people, one for every role. They sign in to the console on the
// local issuer's page (no password: it is a demo issuer); the CLI takes
// the token files make dev writes.
var (
	// Alice owns the shop app: she may request sessions there and break the glass.
	Alice = oidcissuer.Person{Email: "alice@example.com", Groups: []string{"shop-owners"}}
	// Bob is an SRE: he approves, watches, ends and reviews, and plays sensitive recordings.
	Bob = oidcissuer.Person{Email: "bob@example.com", Groups: []string{"sre"}}
	// Carol is the fallback reviewer: overdue reviews go to her.
	Carol = oidcissuer.Person{Email: "carol@example.com", Groups: []string{"security"}}
	// Dave leads the shop team: he may request, approve and review there,
	// so that "never your own" is the relay's rule, not a missing permission.
	Dave = oidcissuer.Person{Email: "dave@example.com", Groups: []string{"shop-leads"}}
)

// People are the demo people by username, and what each is for.
var People = []struct {
	Username, Role string
	Person         oidcissuer.Person
}{
	{"alice", "app owner: requests sessions in shop and may break the glass", Alice},
	{"bob", "SRE: approves, watches, ends and reviews; plays sensitive recordings", Bob},
	{"carol", "security: the fallback reviewer, told of overdue reviews", Carol},
	{"dave", "shop lead: requests, approves and reviews in shop, never his own", Dave},
}

// FallbackReviewer is who the sweeper tells about an overdue review.
const FallbackReviewer = "carol@example.com"

// permissions are the relay's rules for the demo people, on every cluster.
func permissions() []api.Permission {
	return []api.Permission{
		{Groups: []string{"shop-owners"}, Namespaces: []string{"shop"}, Actions: []api.Action{api.ActionRequest, api.ActionBreakGlass}},
		{Groups: []string{"sre"}, Namespaces: []string{"*"}, Actions: []api.Action{api.ActionApprove, api.ActionEnd, api.ActionReview, api.ActionViewSensitive}},
		{Groups: []string{"security"}, Namespaces: []string{"*"}, Actions: []api.Action{api.ActionReview, api.ActionViewSensitive}},
		{Groups: []string{"shop-leads"}, Namespaces: []string{"shop"}, Actions: []api.Action{api.ActionRequest, api.ActionApprove, api.ActionReview}},
	}
}

// inbox stands in for a chat: the relay's and the sweepers' notifications
// are posted to it, printed with their deep links, and kept one JSON object
// per line in a file (for the tests, and to click from).
type inbox struct {
	mu   sync.Mutex
	file *os.File
	logs io.Writer
	srv  *http.Server
	URL  string
}

func startInbox(path string, logs io.Writer) (*inbox, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	in := &inbox{file: f, logs: logs, URL: "http://" + ln.Addr().String()}
	in.srv = &http.Server{Handler: http.HandlerFunc(in.receive), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = in.srv.Serve(ln) }()
	return in, nil
}

func (in *inbox) receive(w http.ResponseWriter, r *http.Request) {
	var e notify.Event
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&e); err != nil {
		http.Error(w, "not a notification: "+err.Error(), http.StatusBadRequest)
		return
	}
	line, _ := json.Marshal(e)
	in.mu.Lock()
	defer in.mu.Unlock()
	fmt.Fprintf(in.logs, ">> notification to %s: %s, %s/%s by %s: %s\n", e.To, e.Kind, e.Namespace, e.Session, e.Requester, e.Link)
	if _, err := in.file.Write(append(line, '\n')); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (in *inbox) close() error {
	err := in.srv.Shutdown(context.Background())
	in.mu.Lock()
	defer in.mu.Unlock()
	if cerr := in.file.Close(); err == nil {
		err = cerr
	}
	return err
}
