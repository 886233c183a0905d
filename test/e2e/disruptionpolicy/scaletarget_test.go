//go:build e2e

package disruptionpolicy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/controller/disruptionpolicy"
	"github.com/holdfast-dev/holdfast/internal/policy"
	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

// databases is a custom kind with a scale subresource, as an operator of databases
// would define it; no controller runs it, the test plays that part.
var databases = holdfastv1alpha1.ScaleTarget{APIVersion: "e2e.holdfast.dev/v1", Kind: "Database"}

// A DisruptionPolicy selects a custom workload through its scale subresource: the budget
// takes the scale's selector, is owned by the object, and the real disruption controller
// finds the scale through the pods' controller reference; a user's budget makes it a
// conflict, and deleting the object takes the budget with it.
func TestScaleTargetBudget(t *testing.T) {
	e := setup(t)
	e.installDatabaseCRD()
	e.StartOperator()
	db := e.database("orders", "orders", 3, "app=orders")
	for i := range 3 {
		e.ownedPod(db, "orders", i)
	}
	e.Eventually(settle, "3 pods of Database orders Ready", func(ctx context.Context) (bool, error) {
		pods, err := e.Pods(ctx, "app=orders")
		return len(pods) == 3 && !slices.ContainsFunc(pods, func(p corev1.Pod) bool { return !framework.PodReady(&p) }), err
	})

	start := time.Now()
	p := e.policy("orders", func(s *holdfastv1alpha1.DisruptionPolicySpec) {
		s.ScaleTargets = []holdfastv1alpha1.ScaleTarget{databases}
	})
	e.waitManagedBudget(databases.Kind, "orders", "the scale's selector, owned by the Database", func(pdb *policyv1.PodDisruptionBudget) bool {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		owner := metav1.OwnerReference{APIVersion: databases.APIVersion, Kind: databases.Kind, Name: db.GetName(), UID: db.GetUID()}
		return err == nil && sel.Matches(labels.Set{"app": "orders"}) && !sel.Matches(labels.Set{"app": "other"}) &&
			pdb.Spec.MaxUnavailable != nil && pdb.Spec.MaxUnavailable.IntValue() == 1 &&
			slices.Equal(pdb.OwnerReferences, []metav1.OwnerReference{owner})
	})
	created := time.Since(start)
	// maxUnavailable needs the size: the disruption controller reads it from the
	// Database's scale, found through the pods' controller reference. Without it the
	// budget would allow nothing.
	name := policy.BudgetName(databases.Kind, "orders")
	var poked time.Time
	e.waitManagedBudgetWithin(2*settle, databases.Kind, "orders", "1 disruption allowed of 3 expected pods", func(pdb *policyv1.PodDisruptionBudget) bool {
		// The kube-controller-manager learns new kinds by rediscovering the API every
		// 30 s, and does not retry a budget whose sync failed until one of its pods
		// changes: a budget made seconds after its CRD (only in a test) waits for a pod
		// change after that.
		if c := meta.FindStatusCondition(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition); c != nil && c.Reason == policyv1.SyncFailedReason && time.Since(poked) > 5*time.Second {
			poked = time.Now()
			e.annotate(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: e.Namespace, Name: "orders-0"}}, "e2e.holdfast.dev/resync", poked.Format(time.RFC3339Nano))
		}
		return pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.ExpectedPods == 3 && pdb.Status.DisruptionsAllowed == 1
	})
	t.Logf("policy created to budget %s created: %s; to disruptions allowed 1: %s", name, created.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	e.waitState(p, databases.Kind, "orders", holdfastv1alpha1.WorkloadBudgeted)

	// A user's own budget over the same pods: holdfast's goes, the conflict is reported;
	// once the user's is gone, holdfast's comes back.
	user := e.PDB("orders-by-hand", "orders", 1)
	start = time.Now()
	e.Create(user)
	e.waitManagedBudget(databases.Kind, "orders", "gone for the user's budget", nil)
	t.Logf("user budget created to holdfast's deleted: %s", time.Since(start).Round(time.Millisecond))
	st := e.waitState(p, databases.Kind, "orders", holdfastv1alpha1.WorkloadConflict)
	t.Logf("conflict: %s", st.Message)
	start = time.Now()
	if err := e.c.Delete(e.Ctx, user); err != nil {
		t.Fatal(err)
	}
	e.waitManagedBudget(databases.Kind, "orders", "back, allowing 1", func(pdb *policyv1.PodDisruptionBudget) bool {
		return pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.DisruptionsAllowed == 1
	})
	t.Logf("user budget deleted to holdfast's back and allowing 1 (the disruption controller reading the scale): %s", time.Since(start).Round(time.Millisecond))

	// The budget goes with its object (garbage collection through the owner reference).
	if err := e.c.Delete(e.Ctx, db); err != nil {
		t.Fatal(err)
	}
	e.waitManagedBudget(databases.Kind, "orders", "garbage-collected", nil)
}

// annotate sets one annotation on obj.
func (e *env) annotate(obj client.Object, key, value string) {
	e.T.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, value)
	if err := e.c.Patch(e.Ctx, obj, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		e.T.Fatalf("annotating %s: %v", obj.GetName(), err)
	}
}

// installDatabaseCRD installs the Database kind, with the scale subresource a custom
// workload controller declares.
func (e *env) installDatabaseCRD() {
	e.T.Helper()
	preserve := map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "databases.e2e.holdfast.dev"},
		"spec": map[string]any{
			"group": "e2e.holdfast.dev",
			"scope": "Namespaced",
			"names": map[string]any{"kind": "Database", "listKind": "DatabaseList", "plural": "databases", "singular": "database"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "properties": map[string]any{"spec": preserve, "status": preserve}}},
				"subresources": map[string]any{
					"status": map[string]any{},
					"scale":  map[string]any{"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".status.selector"},
				},
			}},
		},
	}}
	// Applied, not created, and left in place: the tests of this binary share it.
	if err := e.c.Apply(e.Ctx, client.ApplyConfigurationFromUnstructured(crd), client.FieldOwner("holdfast-e2e"), client.ForceOwnership); err != nil {
		e.T.Fatalf("applying the Database CRD: %v", err)
	}
	e.Eventually(settle, "Databases served", func(ctx context.Context) (bool, error) {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(databases.APIVersion)
		list.SetKind("DatabaseList")
		return true, e.c.List(ctx, list, client.InNamespace(e.Namespace))
	})
}

// database creates a Database labelled tier=tier and writes its status as its
// controller would: the replicas it runs and the selector of its pods.
func (e *env) database(name, tier string, replicas int64, selector string) *unstructured.Unstructured {
	e.T.Helper()
	db := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"replicas": replicas}}}
	db.SetAPIVersion(databases.APIVersion)
	db.SetKind(databases.Kind)
	db.SetNamespace(e.Namespace)
	db.SetName(name)
	db.SetLabels(map[string]string{"tier": tier})
	if err := e.c.Create(e.Ctx, db); err != nil {
		e.T.Fatalf("creating Database %s: %v", name, err)
	}
	db.Object["status"] = map[string]any{"replicas": replicas, "selector": selector}
	if err := e.c.Status().Update(e.Ctx, db); err != nil {
		e.T.Fatalf("writing the status of Database %s: %v", name, err)
	}
	return db
}

// ownedPod creates the i-th pod of a Database, labelled app=app and controlled by it,
// as its controller would.
func (e *env) ownedPod(owner *unstructured.Unstructured, app string, i int) {
	e.T.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: owner.GetName() + "-" + string(rune('0'+i)), Namespace: e.Namespace, Labels: map[string]string{"app": app},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: owner.GetAPIVersion(), Kind: owner.GetKind(), Name: owner.GetName(), UID: owner.GetUID(), Controller: ptr.To(true)}},
		},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers:                    []corev1.Container{{Name: "db", Image: "registry.example/db:1"}},
		},
	}
	e.Create(pod)
}

// Run with the operator's own ClusterRole (config/rbac), a policy over a custom kind
// the operator may not read says which kind and which verb, in its status and in an
// Event, instead of failing its reconciles; each grant moves it on, and once the
// operator may read the scale the budget comes.
func TestScaleTargetForbidden(t *testing.T) {
	e := setup(t)
	e.installDatabaseCRD()
	e.StartOperatorAs(e.operatorAccount())
	e.database("orders", "orders", 3, "app=orders")
	p := e.policy("orders", func(s *holdfastv1alpha1.DisruptionPolicySpec) {
		s.ScaleTargets = []holdfastv1alpha1.ScaleTarget{databases}
	})

	cond := e.waitUnreadable(p, "list databases.e2e.holdfast.dev")
	t.Logf("without RBAC: %s", cond)
	if note := e.waitEvent(p, disruptionpolicy.EventUnreadable); !strings.Contains(note, "list databases.e2e.holdfast.dev") {
		t.Errorf("Event %q does not name the kind and the verb", note)
	}
	// Nothing watches RBAC: each grant is seen at the policy's next poll.
	start := time.Now()
	e.grant("databases", "get", "list", "watch")
	msg := e.waitUnreadable(p, "get databases.e2e.holdfast.dev/scale")
	t.Logf("list granted to status naming the scale, %s later: %s", time.Since(start).Round(time.Millisecond), msg)
	start = time.Now()
	e.grant("databases/scale", "get")
	e.waitManagedBudgetWithin(2*settle, databases.Kind, "orders", "created once the scale is readable", func(*policyv1.PodDisruptionBudget) bool { return true })
	t.Logf("scale granted to budget created: %s", time.Since(start).Round(time.Millisecond))
	e.waitState(p, databases.Kind, "orders", holdfastv1alpha1.WorkloadBudgeted)
}

// waitUnreadable waits until the policy's BudgetsReady condition says that the operator
// may not do what (a verb and a resource), and returns its message. A policy polls its
// scale targets, so a change in RBAC shows within scaleTargetPoll.
func (e *env) waitUnreadable(p *holdfastv1alpha1.DisruptionPolicy, what string) string {
	e.T.Helper()
	var msg string
	e.Eventually(2*settle, "BudgetsReady to say the operator may not "+what, func(ctx context.Context) (bool, error) {
		cur := &holdfastv1alpha1.DisruptionPolicy{}
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(cur.Status.Conditions, holdfastv1alpha1.ConditionBudgetsReady)
		if c == nil || c.Reason != holdfastv1alpha1.ReasonScaleTargetUnreadable {
			return false, nil
		}
		msg = c.Message
		return strings.Contains(msg, "may not "+what), nil
	})
	return msg
}

// operatorAccount returns a client config for a ServiceAccount of the test's namespace
// bound to the operator's ClusterRole, and to its Role (the leader Lease) in the test's
// namespace, where the test's operator elects its leader: as config/default installs
// them.
func (e *env) operatorAccount() *rest.Config {
	e.T.Helper()
	b, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "config", "rbac", "role.yaml"))
	if err != nil {
		e.T.Fatal(err)
	}
	e.Create(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "holdfast-operator", Namespace: e.Namespace}})
	for _, doc := range strings.Split(string(b), "\n---\n") {
		role := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &role.Object); err != nil {
			e.T.Fatal(err)
		}
		if len(role.Object) == 0 {
			continue
		}
		if role.GetKind() == "Role" {
			role.SetNamespace(e.Namespace)
		}
		if err := e.c.Apply(e.Ctx, client.ApplyConfigurationFromUnstructured(role), client.FieldOwner("holdfast-e2e"), client.ForceOwnership); err != nil {
			e.T.Fatalf("applying the operator's %s: %v", role.GetKind(), err)
		}
		if role.GetKind() == "Role" {
			e.Create(&rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: role.GetName(), Namespace: e.Namespace},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.GetName()},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "holdfast-operator", Namespace: e.Namespace}},
			})
			continue
		}
		e.bind(role.GetName())
	}
	token, err := e.Clientset.CoreV1().ServiceAccounts(e.Namespace).CreateToken(e.Ctx, "holdfast-operator", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		e.T.Fatalf("requesting a token: %v", err)
	}
	cfg := rest.AnonymousClientConfig(e.Config)
	cfg.BearerToken = token.Status.Token
	return cfg
}

// grant lets the test's operator account do verbs on a resource of the Database group,
// as the chart's scaleTargets value or the README's ClusterRole does.
func (e *env) grant(resource string, verbs ...string) {
	e.T.Helper()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: e.Namespace + "-" + strings.ReplaceAll(resource, "/", "-")},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"e2e.holdfast.dev"}, Resources: []string{resource}, Verbs: verbs}},
	}
	e.Create(role)
	e.bind(role.Name)
}

// bind binds a ClusterRole to the test's operator account, for the test's length.
func (e *env) bind(role string) {
	e.T.Helper()
	b := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: e.Namespace + "-" + role},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "holdfast-operator", Namespace: e.Namespace}},
	}
	e.Create(b)
	e.T.Cleanup(func() {
		if err := e.c.Delete(context.Background(), b); err != nil {
			e.T.Logf("deleting ClusterRoleBinding %s: %v", b.Name, err)
		}
	})
}

// The API server refuses scale targets that name no custom kind, with messages that say
// what to write instead.
func TestScaleTargetValidation(t *testing.T) {
	e := setup(t)
	cases := map[string]struct {
		targets []holdfastv1alpha1.ScaleTarget
		want    string // "" is accepted
	}{
		"custom kind":         {targets: []holdfastv1alpha1.ScaleTarget{databases}},
		"an apps kind":        {targets: []holdfastv1alpha1.ScaleTarget{{APIVersion: "apps/v1", Kind: "Deployment"}}, want: "selected by spec.kinds"},
		"an apps kind's name": {targets: []holdfastv1alpha1.ScaleTarget{{APIVersion: "example.com/v1", Kind: "StatefulSet"}}, want: "selected by spec.kinds"},
		"core group":          {targets: []holdfastv1alpha1.ScaleTarget{{APIVersion: "v1", Kind: "ReplicationController"}}, want: "apiVersion must be group/version"},
		"resource for kind":   {targets: []holdfastv1alpha1.ScaleTarget{{APIVersion: "example.com/v1", Kind: "databases"}}, want: "kind must be CamelCase"},
		"listed twice":        {targets: []holdfastv1alpha1.ScaleTarget{databases, databases}, want: "Duplicate value"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := &holdfastv1alpha1.DisruptionPolicy{
				ObjectMeta: metav1.ObjectMeta{GenerateName: "validation-", Namespace: e.Namespace},
				Spec:       holdfastv1alpha1.DisruptionPolicySpec{MaxUnavailable: ptr.To(intstr.FromInt32(1)), ScaleTargets: tc.targets},
			}
			err := e.c.Create(e.Ctx, p)
			if tc.want == "" && err != nil || tc.want != "" && (!apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("create: %v; want %q", err, tc.want)
			}
		})
	}
}
