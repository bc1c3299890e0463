package notify

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// TestDecisionsCarryTheDecidersWords: a decision's notice says who decided
// and what they said, beside the requester's reason; every sink shows it.
func TestDecisionsCarryTheDecidersWords(t *testing.T) {
	denied := func(s *v1alpha1.Session) {
		s.Status.Denial = &v1alpha1.Denial{By: "bob@example.com", Reason: "not during the freeze"}
	}
	for name, tc := range map[string]struct {
		kind string
		edit func(*v1alpha1.Session)
		want string
	}{
		"a denial": {v1alpha1.NotifyRequestDenied, denied, "denied by bob@example.com: not during the freeze"},
		"an approval": {v1alpha1.NotifyRequestApproved, func(s *v1alpha1.Session) {
			s.Status.Approval = &v1alpha1.Approval{By: "bob@example.com", Comment: "keep it short"}
		}, "approved by bob@example.com: keep it short"},
		"an end by someone else": {v1alpha1.NotifySessionEnded, func(s *v1alpha1.Session) {
			s.Status.End = &v1alpha1.End{By: "bob@example.com", Note: "found it"}
		}, "ended by bob@example.com: found it"},
		"a request decides nothing": {v1alpha1.NotifyRequestNew, func(*v1alpha1.Session) {}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			n := makeNotice(tc.kind, "s-1", tc.edit)
			if n.Decided != tc.want || n.Reason != "checkout returns 500s" {
				t.Fatalf("decided %q, reason %q; want %q beside the requester's reason", n.Decided, n.Reason, tc.want)
			}
			if tc.want == "" {
				return
			}
			m := Message{Notices: []Notice{n}}
			_, text := emailText(m)
			for sink, body := range map[string]string{"slack": asJSON(t, slackPayload(m)), "teams": asJSON(t, teamsPayload(m)), "e-mail": text} {
				if !strings.Contains(body, tc.want) {
					t.Errorf("%s does not show %q: %s", sink, tc.want, body)
				}
			}
		})
	}
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
