package relay

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/evidence/transcript"
	"github.com/tower-dev/breakglass/lifecycle"
	"github.com/tower-dev/breakglass/relay/api"
	"github.com/tower-dev/breakglass/relay/wire"
)

// What was typed: the commands of an ended session, rebuilt from its
// transcript, and searches of one session's or a namespace's recordings.
// Each reads the recording as a play does, for whoever may play it, and
// is audited before it is answered.

// The bounds of a search: each one reads whole transcripts.
const (
	minQuery, maxQuery           = 2, 200
	defaultSince, maxSince       = 7 * 24 * time.Hour, 30 * 24 * time.Hour
	defaultSessions, maxSessions = 20, 50
	maxMatches                   = 100
)

// recordingQuery is a search as asked.
type recordingQuery struct {
	text  string
	opts  recording.SearchOptions
	since time.Duration
	limit int
}

// parseQuery reads q and stream, and for a namespace since and limit.
func parseQuery(v url.Values, namespace bool) (recordingQuery, error) {
	q := recordingQuery{text: v.Get("q"), opts: recording.SearchOptions{Max: maxMatches}, since: defaultSince, limit: defaultSessions}
	if n := utf8.RuneCountInString(q.text); !utf8.ValidString(q.text) || strings.TrimSpace(q.text) == "" || n < minQuery || n > maxQuery {
		return q, api.BadRequest("q: say what to find, in %d to %d characters", minQuery, maxQuery)
	}
	switch stream := v.Get("stream"); stream {
	case "", "both":
	case transcript.StreamInput:
		q.opts.Input = true
	case transcript.StreamOutput:
		q.opts.Output = true
	default:
		return q, api.BadRequest("stream: %q is not one of input, output, both", stream)
	}
	if !namespace {
		return q, nil
	}
	if raw := v.Get("since"); raw != "" {
		d, err := parseSince(raw)
		if err != nil || d <= 0 || d > maxSince {
			return q, api.BadRequest("since: %q is not a duration up to 30d, such as 72h or 7d", raw)
		}
		q.since = d
	}
	if raw := v.Get("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > maxSessions {
			return q, api.BadRequest("limit: %q is not 1 to %d sessions", raw, maxSessions)
		}
		q.limit = n
	}
	return q, nil
}

// parseSince reads a Go duration, or whole days ("7d"), which people use
// for windows this long.
func parseSince(raw string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(raw, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n > 366 {
			return 0, errors.New("not a number of days")
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	return time.ParseDuration(raw)
}

func (q recordingQuery) String() string {
	stream := "both"
	if q.opts.Input != q.opts.Output {
		stream = map[bool]string{true: transcript.StreamInput, false: transcript.StreamOutput}[q.opts.Input]
	}
	return fmt.Sprintf("search %q in %s", q.text, stream)
}

// transcript reads the transcript of the session the request names, for a
// caller who may play its recording.
func (s *Server) transcript(w http.ResponseWriter, r *http.Request, c api.Caller) (*api.Cluster, *v1alpha1.Session, []recording.Record, error) {
	t, sess, err := s.playable(r, c)
	if err != nil {
		return nil, nil, nil, err
	}
	body, err := s.readRecording(r.Context(), w.Header(), t, c, sess, recording.TranscriptFile)
	if err != nil {
		return nil, nil, nil, err
	}
	records, err := recording.ReadTranscript(body)
	if err != nil {
		return nil, nil, nil, api.Conflict("the recording's transcript does not decode: %v", err)
	}
	return t, sess, records, nil
}

// recordingCommands answers {commands: [...]}: the lines typed in an ended
// session (recording.Commands). Audited as a play.
func (s *Server) recordingCommands(w http.ResponseWriter, r *http.Request, c api.Caller) error {
	t, sess, records, err := s.transcript(w, r, c)
	if err != nil {
		return err
	}
	if err := t.Lifecycle.Note(r.Context(), v1alpha1.StepPlay, c.Name, sess, "commands"); err != nil {
		return err
	}
	cmds := recording.Commands(records)
	if cmds == nil {
		cmds = []transcript.Command{}
	}
	api.WriteJSON(w, http.StatusOK, map[string][]transcript.Command{"commands": cmds})
	return nil
}

// searchRecording answers where q shows in one ended session's recording.
func (s *Server) searchRecording(w http.ResponseWriter, r *http.Request, c api.Caller) error {
	q, err := parseQuery(r.URL.Query(), false)
	if err != nil {
		return err
	}
	t, sess, records, err := s.transcript(w, r, c)
	if err != nil {
		return err
	}
	matches := recording.Search(records, q.text, q.opts)
	if err := t.Lifecycle.Note(r.Context(), v1alpha1.StepSearch, c.Name, sess, q.String()); err != nil {
		return err
	}
	if matches == nil {
		matches = []transcript.Match{}
	}
	api.WriteJSON(w, http.StatusOK, wire.SessionSearch{Query: q.text, Truncated: len(matches) >= maxMatches, Matches: matches})
	return nil
}

// searchRecordings searches the recordings of a namespace's recent
// sessions, for its reviewers and approvers: one audit event names the
// search and the sessions searched.
func (s *Server) searchRecordings(w http.ResponseWriter, r *http.Request, c api.Caller) error {
	t, ns, err := s.sessions.ClusterOf(r, c, "")
	if err != nil {
		return err
	}
	if !s.sessions.Permissions.Can(c, api.ActionReview, t.Name, ns) && !s.sessions.Permissions.Can(c, api.ActionApprove, t.Name, ns) {
		return api.Forbidden("%s may neither review nor approve sessions in %s/%s: only they search its recordings", c.Name, t.Name, ns)
	}
	q, err := parseQuery(r.URL.Query(), true)
	if err != nil {
		return err
	}
	ctx := r.Context()
	list := &v1alpha1.SessionList{}
	if err := t.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
		return fmt.Errorf("listing sessions in %s/%s: %w", t.Name, ns, err)
	}
	res := searchSessions(list.Items, s.clock.Now().Add(-q.since), q,
		func(sess *v1alpha1.Session) error { return s.sessions.StandingOf(c, t, sess).MayPlay(sess) },
		func(sess *v1alpha1.Session) ([]recording.Record, bool, error) {
			h := http.Header{}
			body, err := s.readRecording(ctx, h, t, c, sess, recording.TranscriptFile)
			if err != nil {
				return nil, false, err
			}
			records, err := recording.ReadTranscript(body)
			return records, h.Get("Breakglass-Warning") != "", err
		})
	details := map[string]string{"namespace": ns, "since": q.since.String(), "searched": strings.Join(res.Searched, ","),
		"withheld": strconv.Itoa(res.Withheld), "matches": strconv.Itoa(len(res.Results))}
	plane := &lifecycle.Machine{Audit: s.audit, Cluster: t.Name}
	if err := plane.NotePlane(ctx, v1alpha1.StepSearch, c.Name, "", q.String(), details); err != nil {
		return &api.Error{Status: http.StatusServiceUnavailable, Reason: "AuditUnavailable", Message: "the search cannot be audited: " + err.Error()}
	}
	api.WriteJSON(w, http.StatusOK, res)
	return nil
}

// searchSessions searches the recordings of the sessions in all that ended
// since, newest first, up to q.limit of those may lets the caller play and
// maxMatches in all; read gives a session's transcript and whether it was
// written over in the store.
func searchSessions(all []v1alpha1.Session, since time.Time, q recordingQuery,
	may func(*v1alpha1.Session) error, read func(*v1alpha1.Session) ([]recording.Record, bool, error)) wire.RecordingSearch {
	res := wire.RecordingSearch{Query: q.text, Since: since, Searched: []string{}, Results: []wire.SearchResult{}}
	var ended []*v1alpha1.Session
	for i := range all {
		if sess := &all[i]; sess.Status.Phase == v1alpha1.PhaseEnded && sess.Status.Evidence != nil && !endOf(sess).Before(since) {
			ended = append(ended, sess)
		}
	}
	sort.Slice(ended, func(i, j int) bool {
		if a, b := endOf(ended[i]), endOf(ended[j]); !a.Equal(b) {
			return a.After(b)
		}
		return ended[i].Name < ended[j].Name
	})
	for _, sess := range ended {
		if may(sess) != nil {
			res.Withheld++
			continue
		}
		if res.Truncated || len(res.Searched)+len(res.Unreadable) >= q.limit {
			res.LeftOut++
			continue
		}
		records, overwritten, err := read(sess)
		if err != nil {
			res.Unreadable = append(res.Unreadable, wire.SessionProblem{Session: sess.Name, Problem: err.Error()})
			continue
		}
		if overwritten {
			res.Overwritten = append(res.Overwritten, sess.Name)
		}
		res.Searched = append(res.Searched, sess.Name)
		opts := q.opts
		opts.Max = maxMatches - len(res.Results)
		for _, m := range recording.Search(records, q.text, opts) {
			res.Results = append(res.Results, wire.SearchResult{Session: sess.Name, At: m.At.Seconds(), Stream: m.Stream, Context: m.Context})
		}
		res.Truncated = len(res.Results) >= maxMatches
	}
	return res
}

// endOf is when a session ended (its creation, for one that never says).
func endOf(s *v1alpha1.Session) time.Time {
	if s.Status.End != nil {
		return s.Status.End.At.Time
	}
	return s.CreationTimestamp.Time
}
