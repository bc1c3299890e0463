package relay

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/evidence/transcript"
	"github.com/tower-dev/breakglass/relay/api"
	"github.com/tower-dev/breakglass/relay/wire"
)

var recordingsConfig = &Config{Permissions: []api.Permission{
	{Groups: []string{"shop"}, Namespaces: []string{"shop"}, Actions: []api.Action{api.ActionRequest}},
	{Groups: []string{"sre"}, Namespaces: []string{"*"}, Actions: []api.Action{api.ActionApprove, api.ActionReview}},
	{Groups: []string{"security"}, Namespaces: []string{"*"}, Actions: []api.Action{api.ActionReview, api.ActionViewSensitive}},
}}

// endedSession makes an ended, finalized Session of namespace shop.
func endedSession(name string, ended time.Time, processAccess bool) v1alpha1.Session {
	s := v1alpha1.Session{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}}
	s.Spec.Requester, s.Spec.RequesterID = "alice", "idp#alice"
	s.Status.Phase = v1alpha1.PhaseEnded
	s.Status.Approval = &v1alpha1.Approval{By: "bob", ProcessAccess: processAccess}
	s.Status.End = &v1alpha1.End{By: "alice", At: metav1.NewTime(ended)}
	s.Status.Evidence = &v1alpha1.Evidence{ManifestSHA256: "00"}
	return s
}

// mayPlayOn is the relay's rule for c playing sess on cluster, under cfg's permissions.
func mayPlayOn(cfg *Config, c api.Caller, cluster string, sess *v1alpha1.Session) error {
	p := api.Standing{Caller: c, Cluster: cluster, Can: func(a api.Action) bool { return cfg.Permissions.Can(c, a, cluster, sess.Namespace) }}
	return p.MayPlay(sess)
}

func TestMayPlay(t *testing.T) {
	alice := api.Caller{ID: "idp#alice", Name: "alice", Groups: []string{"shop"}}
	bob := api.Caller{ID: "idp#bob", Name: "bob", Groups: []string{"sre"}}
	sec := api.Caller{ID: "idp#sec", Name: "sec", Groups: []string{"security"}}
	eve := api.Caller{ID: "idp#eve", Name: "eve", Groups: []string{"shop"}}
	plain, sensitive := endedSession("s1", time.Now(), false), endedSession("s2", time.Now(), true)
	active := endedSession("s3", time.Now(), false)
	active.Status.Phase = v1alpha1.PhaseActive
	for name, tc := range map[string]struct {
		who  api.Caller
		sess v1alpha1.Session
		want int // HTTP status; 0 may play
	}{
		"the requester":                       {alice, plain, 0},
		"an approver":                         {bob, plain, 0},
		"another of the namespace":            {eve, plain, http.StatusForbidden},
		"a sensitive one, by its requester":   {alice, sensitive, http.StatusForbidden},
		"a sensitive one, by an approver":     {bob, sensitive, http.StatusForbidden},
		"a sensitive one, with viewSensitive": {sec, sensitive, 0},
		"one not ended":                       {bob, active, http.StatusConflict},
	} {
		t.Run(name, func(t *testing.T) {
			err := mayPlayOn(recordingsConfig, tc.who, "prod", &tc.sess)
			got := 0
			if ae := (*api.Error)(nil); errors.As(err, &ae) {
				got = ae.Status
			} else if err != nil {
				t.Fatalf("%v is not an API error", err)
			}
			if got != tc.want {
				t.Fatalf("%d (%v), want %d", got, err, tc.want)
			}
		})
	}
}

func TestRecordingQuery(t *testing.T) {
	for name, tc := range map[string]struct {
		query, wantErr string
		namespace      bool
		want           recordingQuery
	}{
		"the defaults": {query: "q=passwd", namespace: true,
			want: recordingQuery{text: "passwd", opts: recording.SearchOptions{Max: maxMatches}, since: 7 * 24 * time.Hour, limit: 20}},
		"input, 72h, 5": {query: "q=rm+-rf&stream=input&since=72h&limit=5", namespace: true,
			want: recordingQuery{text: "rm -rf", opts: recording.SearchOptions{Input: true, Max: maxMatches}, since: 72 * time.Hour, limit: 5}},
		"days":                    {query: "q=ab&stream=output&since=30d", namespace: true, want: recordingQuery{text: "ab", opts: recording.SearchOptions{Output: true, Max: maxMatches}, since: 30 * 24 * time.Hour, limit: 20}},
		"no query":                {query: "", wantErr: "q: say what to find"},
		"one character":           {query: "q=a", wantErr: "2 to 200 characters"},
		"blank":                   {query: "q=++++", wantErr: "q: say what to find"},
		"too long":                {query: "q=" + strings.Repeat("x", 201), wantErr: "2 to 200"},
		"not UTF-8":               {query: "q=%ff%fe", wantErr: "q: say"},
		"another stream":          {query: "q=ab&stream=resize", wantErr: `stream: "resize"`},
		"more than 30 days":       {query: "q=ab&since=31d", namespace: true, wantErr: "up to 30d"},
		"a negative window":       {query: "q=ab&since=-1h", namespace: true, wantErr: "since"},
		"too many sessions":       {query: "q=ab&limit=51", namespace: true, wantErr: "1 to 50 sessions"},
		"no sessions":             {query: "q=ab&limit=0", namespace: true, wantErr: "limit"},
		"since is for namespaces": {query: "q=ab&since=99d", want: recordingQuery{text: "ab", opts: recording.SearchOptions{Max: maxMatches}, since: defaultSince, limit: defaultSessions}},
	} {
		t.Run(name, func(t *testing.T) {
			v, err := url.ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			got, err := parseQuery(v, tc.namespace)
			if tc.wantErr != "" {
				var ae *api.Error
				if err == nil || !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("%v, want a 400 saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(recordingQuery{})); diff != "" {
				t.Errorf("-want +got:\n%s", diff)
			}
		})
	}
}

// TestSearchSessions: newest first, only what the caller may play (the
// rest counted, never named), within the window and the limits.
func TestSearchSessions(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	old := endedSession("s-old", now.Add(-8*24*time.Hour), false)
	active := endedSession("s-active", now, false)
	active.Status.Phase, active.Status.End = v1alpha1.PhaseActive, nil
	all := []v1alpha1.Session{
		endedSession("s-1", now.Add(-3*time.Hour), false),
		endedSession("s-2", now.Add(-1*time.Hour), false),
		endedSession("s-secret", now.Add(-2*time.Hour), true),
		endedSession("s-gone", now.Add(-4*time.Hour), false),
		endedSession("s-over", now.Add(-5*time.Hour), false),
		old, active,
	}
	bob := api.Caller{ID: "idp#bob", Name: "bob", Groups: []string{"sre"}}
	may := func(s *v1alpha1.Session) error { return mayPlayOn(recordingsConfig, bob, "prod", s) }
	var read []string
	reader := func(s *v1alpha1.Session) ([]recording.Record, bool, error) {
		read = append(read, s.Name)
		if s.Name == "s-gone" {
			return nil, false, api.NotFound("the recording's transcript.raw is not in the store")
		}
		return []recording.Record{
			{Kind: recording.KindInput, At: time.Second, Data: []byte("cat /etc/passwd\r")},
			{Kind: recording.KindOutput, At: 2 * time.Second, Data: []byte("root:x:0:0 in " + s.Name + "\r\n")},
		}, s.Name == "s-over", nil
	}
	q := recordingQuery{text: "passwd", opts: recording.SearchOptions{Max: maxMatches}, limit: 20}
	got := searchSessions(all, now.Add(-7*24*time.Hour), q, may, reader)
	want := wire.RecordingSearch{Query: "passwd", Since: now.Add(-7 * 24 * time.Hour), Searched: []string{"s-2", "s-1", "s-over"}, Withheld: 1,
		Unreadable:  []wire.SessionProblem{{Session: "s-gone", Problem: "the recording's transcript.raw is not in the store"}},
		Overwritten: []string{"s-over"},
		Results: []wire.SearchResult{{Session: "s-2", At: 1, Stream: transcript.StreamInput, Context: "cat /etc/passwd"}, {Session: "s-1", At: 1, Stream: transcript.StreamInput, Context: "cat /etc/passwd"},
			{Session: "s-over", At: 1, Stream: transcript.StreamInput, Context: "cat /etc/passwd"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("-want +got:\n%s", diff)
	}
	if strings.Contains(strings.Join(read, ","), "secret") {
		t.Error("a sensitive recording was read for a caller who may not view it")
	}

	// The limit of sessions: the newest, the rest left out unread.
	read = nil
	q.limit = 1
	if got := searchSessions(all, now.Add(-7*24*time.Hour), q, may, reader); !cmp.Equal(got.Searched, []string{"s-2"}) || got.LeftOut != 3 || len(read) != 1 {
		t.Errorf("limit 1: searched %v, left out %d, read %v", got.Searched, got.LeftOut, read)
	}
	// The bound of matches, across sessions.
	q.limit, q.text = 20, "0"
	many := func(s *v1alpha1.Session) ([]recording.Record, bool, error) {
		return []recording.Record{{Kind: recording.KindOutput, Data: []byte(strings.Repeat("0\r\n", 60))}}, false, nil
	}
	if got := searchSessions(all, now.Add(-7*24*time.Hour), q, may, many); len(got.Results) != maxMatches || !got.Truncated || len(got.Searched) != 2 || got.LeftOut != 2 {
		t.Errorf("the bound of matches: %d results, truncated %t, searched %v, left out %d", len(got.Results), got.Truncated, got.Searched, got.LeftOut)
	}
}
