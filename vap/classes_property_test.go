package vap_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/utils/ptr"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/manifests"
	"github.com/tower-dev/breakglass/manifests/sessionobjects"
	"github.com/tower-dev/breakglass/test/harness/sessiontest"
	"github.com/tower-dev/breakglass/vap"
)

// One property per class of fence (docs/threat-model.md): random requests,
// each judged by the test's own account of what Kubernetes would then do
// (whom RBAC applies a binding to, what an update changes, who gets a
// token, whether a Session's record is complete), written in Go from
// Kubernetes' semantics and not from the policies' CEL. Whatever the
// policies admit must be no more powerful than the plane's own objects.
// TestWeakenedRulesAreCaught shows each property fails when a rule of its
// class is weakened.

// eval runs one request through plane's policies.
func (p *propertyPlane) eval(t testing.TB, op, group, resource, sub, ns, name string, obj, old runtime.Object, who user.Info) vap.Result {
	t.Helper()
	req := vap.Request{Operation: admissionregistrationv1.OperationType(op), Resource: schema.GroupVersionResource{Group: group, Version: "v1", Resource: resource},
		SubResource: sub, Namespace: ns, Name: name, User: who}
	for i, o := range []runtime.Object{obj, old} {
		if o == nil {
			continue
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			req.Object = m
		} else {
			req.OldObject = m
		}
		req.Kind = o.GetObjectKind().GroupVersionKind()
		req.Resource.Version = req.Kind.Version
	}
	return p.ev.Evaluate(context.Background(), req)
}

// The plane's accounts as RBAC sees them: a user name and its groups.
var planeUsers = []user.DefaultInfo{
	{Name: v1alpha1.PortalUsername, Groups: saGroups},
	{Name: v1alpha1.SweeperUsername, Groups: saGroups},
	{Name: v1alpha1.WebhookUsername, Groups: saGroups},
}

var saGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + v1alpha1.Namespace, "system:authenticated"}

// appliesTo is whether RBAC applies subject s of a binding in namespace ns
// ("" for a ClusterRoleBinding) to u (appliesToUser in
// k8s.io/kubernetes/pkg/registry/rbac/validation/rule.go).
func appliesTo(s rbacv1.Subject, ns string, u user.DefaultInfo) bool {
	switch s.Kind {
	case rbacv1.UserKind:
		return s.Name == u.Name
	case rbacv1.GroupKind:
		return slices.Contains(u.Groups, s.Name)
	case rbacv1.ServiceAccountKind:
		sns := s.Namespace
		if sns == "" {
			sns = ns
		}
		return "system:serviceaccount:"+sns+":"+s.Name == u.Name
	}
	return false
}

// chartBindingObjects are the chart's at-rest bindings, as it ships them,
// without their labels (for comparing with a test's).
var chartBindingObjects = sync.OnceValues(func() ([]string, error) {
	objs, err := manifests.Generated("flight")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, o := range append(objs, manifests.WebhookRoles()...) {
		switch o.(type) {
		case *rbacv1.RoleBinding, *rbacv1.ClusterRoleBinding:
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
			if err != nil {
				return nil, err
			}
			delete(m["metadata"].(map[string]any), "labels")
			out = append(out, fmt.Sprint(m))
		}
	}
	return out, nil
})

// checkBindings: a random binding, by a cluster admin, that RBAC would apply
// to a plane account is admitted only as a session grant's shape, as one
// of the chart's own bindings exactly, or through a broad group to a
// discovery role; one that applies to none is admitted (no over-refusal).
func checkBindings(t testing.TB, plane *propertyPlane, seed uint64) error {
	r := rand.New(rand.NewPCG(seed, 3))
	pick := func(xs []string) string { return xs[r.IntN(len(xs))] }
	names := []string{v1alpha1.PortalServiceAccount, v1alpha1.SweeperServiceAccount, v1alpha1.WebhookServiceAccount, "web"}
	var subjects []rbacv1.Subject
	for range 1 + r.IntN(3) {
		switch r.IntN(3) {
		case 0:
			subjects = append(subjects, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName,
				Name: pick([]string{v1alpha1.PortalUsername, v1alpha1.SweeperUsername, v1alpha1.WebhookUsername, "bob", "system:serviceaccount:shop:web"})})
		case 1:
			subjects = append(subjects, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName,
				Name: pick(append([]string{"sre", "system:serviceaccounts:shop"}, saGroups...))})
		default:
			subjects = append(subjects, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: pick(names), Namespace: pick([]string{"", v1alpha1.Namespace, "shop"})})
		}
	}
	roles := []rbacv1.RoleRef{{Kind: "ClusterRole", Name: "admin"}, {Kind: "ClusterRole", Name: "view"}, {Kind: "ClusterRole", Name: "system:discovery"},
		{Kind: "ClusterRole", Name: v1alpha1.PortalRole}, {Kind: "ClusterRole", Name: v1alpha1.SweeperRole}, {Kind: "Role", Name: "breakglass:webhook"}}
	role := roles[r.IntN(len(roles))]
	role.APIGroup = rbacv1.GroupName
	name := pick([]string{"helper", v1alpha1.PortalRole, v1alpha1.SweeperRole, "breakglass:webhook", "breakglass:sweeper-leader-election"})
	ns := ""
	var obj runtime.Object
	if r.IntN(2) == 0 || role.Kind == "Role" {
		ns = pick([]string{"shop", v1alpha1.Namespace})
		obj = &rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, RoleRef: role, Subjects: subjects}
	} else {
		// A ClusterRoleBinding's ServiceAccounts name their namespace (API validation).
		for i := range subjects {
			if subjects[i].Kind == rbacv1.ServiceAccountKind && subjects[i].Namespace == "" {
				subjects[i].Namespace = "shop"
			}
		}
		obj = &rbacv1.ClusterRoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: role, Subjects: subjects}
	}
	resource := map[bool]string{true: "rolebindings", false: "clusterrolebindings"}[ns != ""]
	res := plane.eval(t, "CREATE", rbacv1.GroupName, resource, "", ns, name, obj, nil, &user.DefaultInfo{Name: "alice", Groups: []string{"system:masters"}})
	direct, broad := false, false
	for _, s := range subjects {
		for _, u := range planeUsers {
			if appliesTo(s, ns, u) {
				if s.Kind == rbacv1.GroupKind && slices.Contains([]string{"system:serviceaccounts", "system:authenticated"}, s.Name) {
					broad = true
				} else {
					direct = true
				}
			}
		}
	}
	chartBindings, err := chartBindingObjects()
	if err != nil {
		t.Fatal(err)
	}
	om, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	chart := slices.Contains(chartBindings, fmt.Sprint(om))
	discovery := role.Kind == "ClusterRole" && slices.Contains([]string{"system:discovery"}, role.Name)
	switch {
	case res.Allowed() && direct && !chart:
		return fmt.Errorf("seed %d: a binding that RBAC applies to a plane account was admitted: %+v", seed, obj)
	case res.Allowed() && broad && !discovery && !chart:
		return fmt.Errorf("seed %d: a broad group bound to %s was admitted: %+v", seed, role.Name, obj)
	case !res.Allowed() && !direct && !broad:
		return fmt.Errorf("seed %d: a binding that applies to no plane account was refused: %v", seed, res.Denials)
	}
	return nil
}

// checkCopyUpdates: an admitted copy, updated at random by anyone, is
// admitted only unchanged; its status only from its own node.
func checkCopyUpdates(t testing.TB, plane *propertyPlane, seed uint64) error {
	r := rand.New(rand.NewPCG(seed, 4))
	target := randomTarget(r)
	target.Spec.RuntimeClassName = nil
	s := sessiontest.Make("shop", "s1").Mode(v1alpha1.ModeCopy).Obj()
	cp, err := sessionobjects.CopyPod(target, s, "breakglass-s1", propertyDebugImage, false, 30*time.Minute)
	if err != nil {
		return err
	}
	cp.APIVersion, cp.Kind = "v1", "Pod"
	who := []user.Info{&user.DefaultInfo{Name: "alice", Groups: []string{"system:masters"}}, &user.DefaultInfo{Name: "mallory"},
		plane.portal, &user.DefaultInfo{Name: "system:node:" + cp.Spec.NodeName, Groups: []string{"system:nodes"}},
		&user.DefaultInfo{Name: "system:node:other", Groups: []string{"system:nodes"}}}[r.IntN(5)]
	changes := map[string]func(p *corev1.Pod){
		"image": func(p *corev1.Pod) {
			p.Spec.Containers[r.IntN(len(p.Spec.Containers))].Image = "registry.example/miner@sha256:" + strings.Repeat("f", 64)
		},
		"app label":  func(p *corev1.Pod) { p.Labels["app"] = "web" },
		"no label":   func(p *corev1.Pod) { delete(p.Labels, v1alpha1.SessionLabel) },
		"annotation": func(p *corev1.Pod) { p.Annotations = map[string]string{"k8s.v1.cni.cncf.io/networks": "host-net"} },
		"owner": func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "gone", UID: "x"}}
		},
		"deadline": func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](1) },
		"toleration": func(p *corev1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "x", Operator: corev1.TolerationOpExists})
		},
	}
	name := keys(changes)[r.IntN(len(changes))]
	changed := cp.DeepCopy()
	changes[name](changed)
	if res := plane.eval(t, "UPDATE", "", "pods", "", "shop", cp.Name, changed, cp, who); res.Allowed() {
		return fmt.Errorf("seed %d: a copy's %s changed by %s was admitted", seed, name, who.GetName())
	}
	status := cp.DeepCopy()
	status.Status.Phase = corev1.PodSucceeded
	byNode := who.GetName() == "system:node:"+cp.Spec.NodeName
	if res := plane.eval(t, "UPDATE", "", "pods", "status", "shop", cp.Name, status, cp, who); res.Allowed() != byNode {
		return fmt.Errorf("seed %d: a copy's status written by %s: admitted %t", seed, who.GetName(), res.Allowed())
	}
	return nil
}

// checkTokens: a token for a plane account goes only to a node, for a pod.
func checkTokens(t testing.TB, plane *propertyPlane, seed uint64) error {
	r := rand.New(rand.NewPCG(seed, 5))
	who := []user.DefaultInfo{{Name: "system:node:node-1", Groups: []string{"system:nodes"}}, {Name: "system:node:node-1"},
		{Name: "alice", Groups: []string{"system:masters"}}, {Name: v1alpha1.PortalUsername, Groups: saGroups},
		{Name: "system:serviceaccount:kube-system:tokens", Groups: saGroups}}[r.IntN(5)]
	sa := []string{v1alpha1.PortalServiceAccount, v1alpha1.SweeperServiceAccount, v1alpha1.WebhookServiceAccount, "web"}[r.IntN(4)]
	ns := []string{v1alpha1.Namespace, "shop"}[r.IntN(2)]
	tr := &authenticationv1.TokenRequest{TypeMeta: metav1.TypeMeta{APIVersion: "authentication.k8s.io/v1", Kind: "TokenRequest"},
		ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns}}
	bound := r.IntN(3)
	if bound > 0 {
		tr.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: []string{"Pod", "Secret"}[bound-1], APIVersion: "v1", Name: "x", UID: "u"}
	}
	res := plane.eval(t, "CREATE", "", "serviceaccounts", "token", ns, sa, tr, nil, &who)
	plane3 := ns == v1alpha1.Namespace && sa != "web"
	kubelet := strings.HasPrefix(who.Name, "system:node:") && slices.Contains(who.Groups, "system:nodes") && bound == 1
	if res.Allowed() != (!plane3 || kubelet) {
		return fmt.Errorf("seed %d: a token for %s/%s asked by %s (bound %d): admitted %t", seed, ns, sa, who.Name, bound, res.Allowed())
	}
	return nil
}

// checkSessionDeletes: a Session is deleted only when its record is
// complete: over, its recording finalized and anchored if it ran, and no
// review open; or, by the portal, before it had a phase.
func checkSessionDeletes(t testing.TB, plane *propertyPlane, seed uint64) error {
	r := rand.New(rand.NewPCG(seed, 6))
	pick := func(n int) bool { return r.IntN(n) == 0 }
	w := sessiontest.Make("shop", "s1").Reason("x")
	if pick(3) {
		w.GlassBroken()
	}
	s := w.Obj()
	st := &s.Status
	st.Phase = []v1alpha1.SessionPhase{"", v1alpha1.PhasePending, v1alpha1.PhaseActive, v1alpha1.PhaseEnded, v1alpha1.PhaseDenied, v1alpha1.PhaseExpired}[r.IntN(6)]
	ran := pick(2)
	if ran {
		st.StartedAt = &metav1.Time{Time: time.Unix(1, 0)}
	}
	switch r.IntN(4) {
	case 1:
		st.Evidence = &v1alpha1.Evidence{ManifestSHA256: "aa"}
	case 2:
		st.Evidence = &v1alpha1.Evidence{ManifestSHA256: "aa", AnchorPending: true}
	case 3:
		st.Evidence = &v1alpha1.Evidence{ManifestSHA256: "aa", EntryID: "e", LogIndex: ptr.To[int64](1)}
	}
	if pick(2) {
		st.Review = &v1alpha1.Review{DueAt: &metav1.Time{Time: time.Unix(2, 0)}}
		if pick(2) {
			st.Review.By, st.Review.At = "carol", &metav1.Time{Time: time.Unix(3, 0)}
		}
	}
	who := []user.Info{&user.DefaultInfo{Name: "alice", Groups: []string{"system:masters"}}, &user.DefaultInfo{Name: "mallory"}, plane.portal,
		&user.DefaultInfo{Name: "system:serviceaccount:kube-system:namespace-controller", Groups: saGroups}}[r.IntN(4)]
	res := plane.eval(t, "DELETE", v1alpha1.GroupVersion.Group, "sessions", "", "shop", s.Name, nil, s, who)
	over := slices.Contains([]v1alpha1.SessionPhase{v1alpha1.PhaseEnded, v1alpha1.PhaseDenied, v1alpha1.PhaseExpired}, st.Phase)
	recorded := !ran || (st.Evidence != nil && st.Evidence.ManifestSHA256 != "" && !st.Evidence.AnchorPending)
	reviewed := st.Review == nil || st.Review.By != ""
	if s.Spec.GlassBroken && (st.Review == nil || st.Review.By == "") {
		reviewed = false
	}
	want := (over && recorded && reviewed) || (st.Phase == "" && who.GetName() == v1alpha1.PortalUsername)
	if res.Allowed() != want {
		return fmt.Errorf("seed %d: deleting a Session (%+v, glass broken %t) by %s: admitted %t, want %t", seed, *st, s.Spec.GlassBroken, who.GetName(), res.Allowed(), want)
	}
	return nil
}

// properties are the classes' properties, each named for its class.
var properties = map[string]func(testing.TB, *propertyPlane, uint64) error{
	"effective security": func(t testing.TB, p *propertyPlane, seed uint64) error {
		return errors.Join(checkCopy(t, p, seed), checkDebug(t, p, seed))
	},
	"identities": func(t testing.TB, p *propertyPlane, seed uint64) error {
		return errors.Join(checkBindings(t, p, seed), checkDecisions(t, p, seed))
	},
	"updates":            checkCopyUpdates,
	"minted credentials": checkTokens,
	"records kept":       checkSessionDeletes,
}

// TestClassProperties runs each class's property on 300 random requests.
func TestClassProperties(t *testing.T) {
	plane := newPropertyPlane(t)
	for _, class := range keys(properties) {
		t.Run(class, func(t *testing.T) {
			for seed := range uint64(300) {
				if err := properties[class](t, plane, seed); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// weakenable are the rules each property stands behind: weakened to
// always true, one at a time, each must make its class's property fail.
// copy.groups is weakened with copy.pod-security: both refuse a copy's pod
// groups 0, so neither alone lets one through (copy.pod-security alone
// still is caught, for its other fields).
var weakenable = map[string][]string{
	"effective security": {"debug.user", "debug.groups", "debug.confinement", "debug.seccomp", "debug.privilege", "debug.env",
		"debug.host-namespaces", "debug.runtime-class", "debug.mounted-volumes", "copy.user", "copy.groups+copy.pod-security", "copy.pod-security",
		"copy.app.non-root", "copy.app.env", "copy.app.confinement", "copy.app.seccomp", "copy.container-fields", "copy.spec-fields",
		"copy.resources", "copy.lifetime"},
	"identities":         {"grant.no-standing", "grant.no-broad-groups", "session.self-approval", "session.self-review"},
	"updates":            {"copy.unchanged", "copy.status-by-its-node"},
	"minted credentials": {"credentials.token-kubelet-only"},
	"records kept":       {"session.delete"},
}

// TestWeakenedRulesAreCaught weakens each rule in turn and wants its
// class's property to find a request it now gets wrong within 2,000 seeds.
func TestWeakenedRulesAreCaught(t *testing.T) {
	for _, class := range keys(weakenable) {
		for _, rule := range weakenable[class] {
			t.Run(rule, func(t *testing.T) {
				plane := newWeakenedPlane(t, rule)
				for seed := range uint64(2000) {
					if properties[class](t, plane, seed) != nil {
						return
					}
				}
				t.Fatalf("with %s weakened, the %s property still passes 2,000 seeds: it does not stand behind the rule", rule, class)
			})
		}
	}
}
