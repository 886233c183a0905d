//go:build e2e

package nodecompanion

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

const (
	// settle bounds waits for the control plane and the operator to converge.
	settle = 60 * time.Second
	// refusedFor is how long a refused eviction is retried to show it stays refused.
	refusedFor = 3 * time.Second
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{Nodes: 5, Zones: 3})
}

// env is one test's cluster, with a client that knows holdfast's types.
type env struct {
	*framework.Framework
	c client.Client
}

func setup(t *testing.T) *env {
	t.Helper()
	f := framework.New(t)
	return &env{Framework: f, c: f.Holdfast(&holdfastv1alpha1.NodeCompanionList{})}
}

func (e *env) daemonSet(name string, mod func(*corev1.PodSpec)) *appsv1.DaemonSet {
	e.T.Helper()
	labels := map[string]string{"app": name}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.Namespace},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "registry.example/storage-agent:1"}}},
			},
		},
	}
	if mod != nil {
		mod(&ds.Spec.Template.Spec)
	}
	if err := e.c.Create(e.Ctx, ds); err != nil {
		e.T.Fatal(err)
	}
	return ds
}

// companionFor is a critical DaemonSet's companion as one object: a watcher next to every
// pod of the storage DaemonSet, one node at a time through drains.
func (e *env) companionFor(ds string, mod func(*holdfastv1alpha1.NodeCompanion)) *holdfastv1alpha1.NodeCompanion {
	e.T.Helper()
	nc := &holdfastv1alpha1.NodeCompanion{
		ObjectMeta: metav1.ObjectMeta{Name: "volume-guard", Namespace: e.Namespace},
		Spec: holdfastv1alpha1.NodeCompanionSpec{
			DaemonSet: &holdfastv1alpha1.DaemonSetReference{Name: ds},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "volume-guard"}},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					Containers:                    []corev1.Container{{Name: "guard", Image: "registry.example/volume-guard:1"}},
				},
			},
		},
	}
	if mod != nil {
		mod(nc)
	}
	if err := e.c.Create(e.Ctx, nc); err != nil {
		e.T.Fatal(err)
	}
	return nc
}

func (e *env) get(nc *holdfastv1alpha1.NodeCompanion) *holdfastv1alpha1.NodeCompanion {
	e.T.Helper()
	cur := &holdfastv1alpha1.NodeCompanion{}
	if err := e.c.Get(e.Ctx, client.ObjectKeyFromObject(nc), cur); err != nil {
		e.T.Fatal(err)
	}
	return cur
}

// companions returns the live companion pods of nc by node, and the unbound ones.
func (e *env) companions(ctx context.Context, nc *holdfastv1alpha1.NodeCompanion) (map[string]*corev1.Pod, []*corev1.Pod, error) {
	pods := &corev1.PodList{}
	if err := e.c.List(ctx, pods, client.InNamespace(nc.Namespace), client.MatchingLabels{holdfastv1alpha1.CompanionLabel: nc.Name}); err != nil {
		return nil, nil, err
	}
	byNode := map[string]*corev1.Pod{}
	var unbound []*corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		switch {
		case p.DeletionTimestamp != nil:
		case p.Spec.NodeName == "":
			unbound = append(unbound, p)
		default:
			if prev := byNode[p.Spec.NodeName]; prev != nil {
				return nil, nil, fmt.Errorf("two companions on node %s: %s and %s", p.Spec.NodeName, prev.Name, p.Name)
			}
			byNode[p.Spec.NodeName] = p
		}
	}
	return byNode, unbound, nil
}

func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitCovered waits until exactly these nodes have a Ready companion and the status says
// so with the given desired count.
func (e *env) waitCovered(nc *holdfastv1alpha1.NodeCompanion, nodes []string, desired int32) {
	e.T.Helper()
	e.Eventually(settle, fmt.Sprintf("Ready companions on %v", nodes), func(ctx context.Context) (bool, error) {
		byNode, _, err := e.companions(ctx, nc)
		if err != nil {
			return false, err
		}
		for _, n := range nodes {
			if p := byNode[n]; p == nil || !ready(p) {
				return false, fmt.Errorf("no Ready companion on %s", n)
			}
		}
		if len(byNode) != len(nodes) {
			return false, fmt.Errorf("companions on %d nodes, want %d", len(byNode), len(nodes))
		}
		cur := &holdfastv1alpha1.NodeCompanion{}
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(nc), cur); err != nil {
			return false, err
		}
		if cur.Status.Desired != desired || cur.Status.NodesCovered != desired {
			return false, fmt.Errorf("status desired %d covered %d, want %d", cur.Status.Desired, cur.Status.NodesCovered, desired)
		}
		return true, nil
	})
}

// waitAllowed waits until the main budget allows exactly n disruptions, as the
// disruption controller computed them.
func (e *env) waitAllowed(nc *holdfastv1alpha1.NodeCompanion, n int32) {
	e.T.Helper()
	e.Eventually(settle, fmt.Sprintf("budget allowing %d disruptions", n), func(ctx context.Context) (bool, error) {
		pdb := &policyv1.PodDisruptionBudget{}
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(nc), pdb); err != nil {
			return false, err
		}
		if pdb.Status.ObservedGeneration != pdb.Generation || pdb.Status.DisruptionsAllowed != n {
			return false, fmt.Errorf("disruptions allowed %d (generation %d observed %d)", pdb.Status.DisruptionsAllowed, pdb.Generation, pdb.Status.ObservedGeneration)
		}
		return true, nil
	})
}

// evictCompanion does what `kubectl drain --ignore-daemonsets` does to the companion of a
// node (the node is cordoned first): one Eviction API call.
func (e *env) evictCompanion(ctx context.Context, nc *holdfastv1alpha1.NodeCompanion, node string) error {
	byNode, _, err := e.companions(ctx, nc)
	if err != nil {
		return err
	}
	p := byNode[node]
	if p == nil {
		return fmt.Errorf("no companion on %s", node)
	}
	return e.Evict(ctx, p)
}

// drain cordons node and evicts its companion, retrying refusals like kubectl drain.
func (e *env) drain(nc *holdfastv1alpha1.NodeCompanion, node string) {
	e.T.Helper()
	e.Cordon(node)
	e.Eventually(settle, "eviction of the companion on "+node, func(ctx context.Context) (bool, error) {
		err := e.evictCompanion(ctx, nc, node)
		return err == nil, err
	})
}

// refused checks that the companion on node cannot be evicted, for refusedFor.
func (e *env) refused(nc *holdfastv1alpha1.NodeCompanion, node string) {
	e.T.Helper()
	deadline := time.Now().Add(refusedFor)
	for time.Now().Before(deadline) {
		err := e.evictCompanion(e.Ctx, nc, node)
		if err == nil {
			byNode, unbound, _ := e.companions(e.Ctx, nc)
			var where []string
			for n, p := range byNode {
				where = append(where, fmt.Sprintf("%s:%s(ready=%t,created=%s)", n, p.Name, ready(p), p.CreationTimestamp.Format(time.StampMilli)))
			}
			e.T.Fatalf("the companion on %s was evicted; want the eviction refused (companions %v, %d unbound, status %+v)", node, where, len(unbound), e.get(nc).Status)
		}
		if !apierrors.IsTooManyRequests(err) {
			e.T.Fatalf("evicting the companion on %s: %v; want 429 Too Many Requests", node, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// kubectlGet returns what `kubectl get` prints for args, in the test's namespace.
func (e *env) kubectlGet(args ...string) string {
	e.T.Helper()
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", e.Kubeconfig, "-n", e.Namespace, "get"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) || errors.Is(err, exec.ErrNotFound) {
			return fmt.Sprintf("kubectl get %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return string(out)
}

// events returns the messages of the Events with reason recorded on nc.
func (e *env) events(ctx context.Context, nc *holdfastv1alpha1.NodeCompanion, reason string) ([]string, error) {
	list, err := e.Clientset.EventsV1().Events(nc.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, ev := range list.Items {
		if ev.Regarding.Name == nc.Name && ev.Regarding.Kind == "NodeCompanion" && ev.Reason == reason {
			out = append(out, ev.Note)
		}
	}
	return out, nil
}
