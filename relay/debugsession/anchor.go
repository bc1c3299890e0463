package debugsession

import (
	"context"
	"time"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/evidence/tlog"
	"github.com/tower-dev/breakglass/lifecycle"
)

// Anchor puts the manifest in the transparency log, retrying while the log
// is down (the Session says "anchor pending" meanwhile), then keeps the
// bundle beside the recording and names the entry in the Session.
func (r *Runner) Anchor(s *v1alpha1.Session, manifest []byte) {
	ctx := context.Background()
	b, err := r.Anchorer.AnchorWithRetry(ctx, manifest, func(err error) {
		r.Log.Info("the recording's anchor is pending", "session", s.Namespace+"/"+s.Name, "error", err.Error())
	})
	if err != nil {
		r.Log.Error(err, "the recording was not anchored", "session", s.Namespace+"/"+s.Name)
		return
	}
	if err := r.keepBundle(ctx, s, b, manifest); err != nil {
		r.Log.Error(err, "keeping the anchor", "session", s.Namespace+"/"+s.Name)
	}
}

func (r *Runner) keepBundle(ctx context.Context, s *v1alpha1.Session, b *tlog.Bundle, manifest []byte) error {
	key, err := recording.KeepBundle(ctx, r.Store, recording.RefOf(r.Cluster, s), b, manifest, r.Clock.Now().Add(r.Retention))
	if err != nil {
		return err
	}
	move := lifecycle.Move{Step: v1alpha1.StepAnchor, Actor: v1alpha1.PortalUsername, Reason: b.UUID, Merge: true,
		Status: func(st *v1alpha1.SessionStatus) {
			ev := st.Evidence.DeepCopy()
			ev.AnchorPending, ev.EntryID, ev.LogIndex = false, b.UUID, b.Entry.LogIndex
			ev.URIs = append(ev.URIs, key)
			st.Evidence = ev
		}}
	// Retried: the API server may be briefly away too.
	var last error
	for i := 0; i < 10; i++ {
		if last = r.Lifecycle().Make(ctx, s, move); last == nil {
			return nil
		}
		time.Sleep(time.Second)
	}
	return last
}
