package debugsession_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/audit"
	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/relay/live"
	"github.com/tower-dev/breakglass/test/harness/cluster"
	"github.com/tower-dev/breakglass/test/harness/sessiontest"
)

// TestFailedStartLeavesNothing: the debug container is added but its image
// cannot be pulled. The start fails at once with the node's reason (not
// at a timeout); the grant is gone, the pod carrying the container is
// recycled, and the Session is Ended as a failed start, saying why, in
// the Session and the audit log. With keep-the-pod approved, the pod stays.
func TestFailedStartLeavesNothing(t *testing.T) {
	for _, keep := range []bool{false, true} {
		name := map[bool]string{false: "recycled", true: "kept"}[keep]
		t.Run(name, func(t *testing.T) {
			ns := cl.Namespace(t, "failed-start-"+name)
			s := approvedSession(t, ns, keep)
			var log bytes.Buffer
			r := runner(t, &recording.Dir{Root: t.TempDir()}, audit.NewLog(audit.Event{}, nil, &audit.Writer{W: &log}))
			r.DebugImage = brokenImage
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			start := time.Now()
			_, err := live.Start(ctx, r, s)
			if err == nil || !strings.Contains(err.Error(), "ErrImagePull") {
				t.Fatalf("the start: %v", err)
			}
			if took := time.Since(start); took > 20*time.Second {
				t.Fatalf("the start failed after %s, at a timeout rather than at the node's answer", took)
			}
			if err := cl.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "breakglass-s1"}, &rbacv1.RoleBinding{}); !apierrors.IsNotFound(err) {
				t.Fatalf("the grant after a failed start: %v", err)
			}
			pod := &corev1.Pod{}
			err = cl.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-1"}, pod)
			recycled := apierrors.IsNotFound(err) || (err == nil && pod.DeletionTimestamp != nil)
			if recycled == keep {
				t.Fatalf("keep the pod %t, yet the pod recycled %t (%v)", keep, recycled, err)
			}
			got := &v1alpha1.Session{}
			if err := cl.Client.Get(ctx, client.ObjectKeyFromObject(s), got); err != nil {
				t.Fatal(err)
			}
			if got.Status.Phase != v1alpha1.PhaseEnded || got.Status.End == nil || got.Status.End.Reason != v1alpha1.EndFailedStart ||
				!got.Status.End.Abnormal || got.Status.End.By != v1alpha1.PortalUsername || !strings.Contains(got.Status.End.Detail, "ErrImagePull") {
				t.Fatalf("the Session after a failed start: %+v", got.Status)
			}
			if !strings.Contains(log.String(), `"kind":"end"`) || !strings.Contains(log.String(), "failedStart: ") {
				t.Fatalf("the failed start is not audited:\n%s", log.String())
			}
		})
	}
}

// TestRefusedStartEnds: process access to an app that runs as the debug
// user is refused by the cluster (debug.same-user) whoever tries, so the
// start ends the session as a failed start, saying why, instead of leaving
// it Approved for a retry that fails the same way; its grant is deleted,
// the revoke audited after the grant and before the end.
func TestRefusedStartEnds(t *testing.T) {
	ns := cl.Namespace(t, "refused-start")
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: ns},
		Spec: corev1.PodSpec{NodeName: cluster.NodeName, Containers: []corev1.Container{{Name: "web", Image: "registry.example/shop/web:1.2",
			Command: []string{"sleep", "3600"}, SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To(v1alpha1.DebugUserID)}}}}}
	if err := cl.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	portal, err := cl.Portal()
	if err != nil {
		t.Fatal(err)
	}
	s := sessiontest.Make(ns, "s1").ProcessAccess("web").Reason("a stuck worker").Obj()
	if err := portal.Client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	s.Status = v1alpha1.SessionStatus{Phase: v1alpha1.PhaseApproved, Approval: &v1alpha1.Approval{Kind: v1alpha1.ApprovalPerson, By: "bob",
		At: metav1.Now(), Mode: v1alpha1.ModeLive, ProcessAccess: true}}
	if err := portal.Client.Status().Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	r := runner(t, &recording.Dir{Root: t.TempDir()}, audit.NewLog(audit.Event{}, nil, &audit.Writer{W: &log}))
	if _, err := live.Start(ctx, r, s); err == nil || !strings.Contains(err.Error(), "[debug.same-user]") {
		t.Fatalf("the start: %v, want the cluster's debug.same-user refusal", err)
	}
	got := &v1alpha1.Session{}
	if err := cl.Client.Get(ctx, client.ObjectKeyFromObject(s), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != v1alpha1.PhaseEnded || got.Status.End == nil || got.Status.End.Reason != v1alpha1.EndFailedStart ||
		!strings.Contains(got.Status.End.Detail, "refused") {
		t.Fatalf("the Session after a refused start: %+v", got.Status)
	}
	if err := cl.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "breakglass-s1"}, &rbacv1.RoleBinding{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the grant after a refused start: %v", err)
	}
	grant, revoke, end := strings.Index(log.String(), `"kind":"grant"`), strings.Index(log.String(), `"kind":"revoke"`), strings.Index(log.String(), `"kind":"end"`)
	if grant < 0 || revoke < grant || end < revoke {
		t.Fatalf("the grant, its revoke and the end are not audited in that order:\n%s", log.String())
	}
	if _, err := live.Start(ctx, r, got); err == nil || !strings.Contains(err.Error(), "not Approved") {
		t.Fatalf("starting it again: %v", err)
	}
	if p := (&corev1.Pod{}); cl.Client.Get(ctx, client.ObjectKeyFromObject(pod), p) != nil || p.DeletionTimestamp != nil {
		t.Fatalf("the app's pod went with a start that never touched it")
	}
}
