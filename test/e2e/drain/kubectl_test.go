//go:build e2e

package drain_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

// A runbook's drain step written for kubectl drain (testdata/runbook-drain.sh: kubectl's
// flags --ignore-daemonsets --delete-emptydir-data --force --grace-period --timeout
// --pod-selector, its global flags -v --warnings-as-errors --match-server-version, and a
// grep of its lines node/N cordoned, evicting pod, pod/P evicted, node/N drained) runs
// unchanged with holdfast, only the command it is given differs, and ends as it does with
// kubectl: exit 0, the node cordoned, the application's pods gone
// (a Deployment's under a budget that first refuses, a bare pod with an emptyDir), the
// DaemonSet's pod and the pod --pod-selector leaves out still there. With holdfast the
// node also says so: DrainInProgress True while the budget blocks, Drained True after,
// and kubectl describe node shows the Events.
func TestKubectlRunbook(t *testing.T) {
	kubectl, err := framework.Kubectl()
	if err != nil {
		t.Fatal(err)
	}
	hf := holdfastBinary(t)
	t.Run("kubectl", func(t *testing.T) { runbook(t, kubectl, kubectl, false) })
	t.Run("holdfast", func(t *testing.T) { runbook(t, kubectl, hf, true) })
}

// holdfastBinary is $HOLDFAST_BIN, or holdfast built from this tree: a script needs a
// binary, not the in-process command the other tests run.
func holdfastBinary(t *testing.T) string {
	if bin := os.Getenv("HOLDFAST_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "holdfast")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./cmd/holdfast")
	cmd.Dir = framework.RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building holdfast: %v\n%s", err, out)
	}
	return bin
}

func runbook(t *testing.T, kubectl, command string, holdfast bool) {
	f := framework.New(t)
	start := time.Now().Truncate(time.Second)
	// The runbook drains tier=app pods of every namespace: this test's must be gone before
	// the next runs, not left to the namespace's deletion, which refuses their eviction.
	t.Cleanup(func() { deletePods(f) })
	web := f.Deployment("web", 2)
	web.Spec.Template.Labels["tier"] = "app"
	framework.HostnameAntiAffinity(web)
	f.Create(web)
	agent := f.Deployment("agent", 1) // for its metadata and template
	agent.Spec.Template.Labels["tier"] = "app"
	f.Create(&appsv1.DaemonSet{ObjectMeta: agent.ObjectMeta, Spec: appsv1.DaemonSetSpec{Selector: agent.Spec.Selector, Template: agent.Spec.Template}})
	// minAvailable 2 over the two replicas and a pod that never starts: 2 of 3 healthy,
	// so the budget refuses for now, and would allow one eviction were all three healthy.
	pdb := f.PDB("web-pdb", "web", 0)
	pdb.Spec.MaxUnavailable = nil
	pdb.Spec.MinAvailable = ptr.To(intstr.FromInt32(2))
	f.Create(pdb)
	f.Create(barePod(f, "web-unstarted", map[string]string{"app": "web"}, "", func(p *corev1.Pod) {
		p.Spec.NodeSelector = map[string]string{"holdfast.dev/e2e-nowhere": "true"}
	}))
	f.WaitReady(web)
	var node string
	for _, p := range podsOf(t, f, web) {
		if p.Spec.NodeName != "" {
			node = p.Spec.NodeName
		}
	}
	uncordonAtEnd(f, node)
	f.Create(barePod(f, "scratch", map[string]string{"tier": "app"}, node, func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	}))
	f.Create(barePod(f, "bystander", map[string]string{"tier": "other"}, node, nil))
	f.Eventually(2*time.Minute, "the pods on "+node+" Ready and the budget counted", func(ctx context.Context) (bool, error) {
		pods, err := podsOn(ctx, f, node)
		if err != nil || len(pods) != 4 { // web, agent, scratch, bystander
			return false, err
		}
		for _, p := range pods {
			if !framework.PodReady(&p) {
				return false, nil
			}
		}
		b, err := f.Clientset.PolicyV1().PodDisruptionBudgets(f.Namespace).Get(ctx, pdb.Name, metav1.GetOptions{})
		return err == nil && b.Status.ObservedGeneration == b.Generation && b.Status.ExpectedPods == 3 && b.Status.CurrentHealthy == 2, err
	})

	var out syncBuffer
	script := exec.CommandContext(f.Ctx, "sh", filepath.Join(framework.RepoRoot(), "test", "e2e", "drain", "testdata", "runbook-drain.sh"), node)
	script.Env = append(os.Environ(), "KUBECONFIG="+f.Kubeconfig, "KUBECTL="+command)
	script.Stdout, script.Stderr = &out, &out
	if err := script.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- script.Wait() }()

	get := func(ctx context.Context, args ...string) (string, error) {
		b, err := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", f.Kubeconfig}, args...)...).CombinedOutput()
		return string(b), err
	}
	condition := func(ctx context.Context, typ, field string) (string, error) {
		return get(ctx, "get", "node", node, "-o", fmt.Sprintf(`jsonpath={.status.conditions[?(@.type=="%s")].%s}`, typ, field))
	}
	if holdfast {
		f.Eventually(2*time.Minute, "DrainInProgress True, reason Blocked, on "+node, func(ctx context.Context) (bool, error) {
			status, err := condition(ctx, "DrainInProgress", "status")
			if err != nil || status != "True" {
				return false, err
			}
			reason, err := condition(ctx, "DrainInProgress", "reason")
			return reason == "Blocked", err
		})
		msg, err := condition(f.Ctx, "DrainInProgress", "message")
		if err != nil || !strings.Contains(msg, "PodDisruptionBudget "+f.Namespace+"/web-pdb (minAvailable 2): 2 of 3 healthy, needs 2, allows 0") {
			t.Errorf("DrainInProgress's message %q (err %v) does not name the budget and its numbers", msg, err)
		}
		f.Eventually(time.Minute, "kubectl describe node to show DrainStarted and DrainBlocked", func(ctx context.Context) (bool, error) {
			desc, err := get(ctx, "describe", "node", node)
			return strings.Contains(desc, "DrainStarted") && strings.Contains(desc, "DrainBlocked") && strings.Contains(desc, f.Namespace+"/web-pdb"), err
		})
	} else {
		f.Eventually(2*time.Minute, "kubectl drain to be refused by the budget", func(context.Context) (bool, error) {
			return strings.Contains(out.String(), "Cannot evict pod as it would violate the pod's disruption budget"), nil
		})
	}

	// The budget relents; both drains go on and finish.
	pdb.Spec.MinAvailable = ptr.To(intstr.FromInt32(1))
	if _, err := f.Clientset.PolicyV1().PodDisruptionBudgets(f.Namespace).Patch(f.Ctx, pdb.Name, types.MergePatchType,
		[]byte(`{"spec":{"minAvailable":1}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Logf("%s:\n%s", filepath.Base(command), out.String())
		if err != nil {
			t.Fatalf("the runbook failed: %v", err)
		}
	case <-time.After(4 * time.Minute):
		t.Fatalf("the runbook did not end; output so far:\n%s", out.String())
	}

	n, err := f.Clientset.CoreV1().Nodes().Get(f.Ctx, node, metav1.GetOptions{})
	if err != nil || !n.Spec.Unschedulable {
		t.Errorf("node %s not cordoned (err %v)", node, err)
	}
	pods, err := podsOn(f.Ctx, f, node)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			left = append(left, strings.Join([]string{p.Labels["app"], p.Labels["tier"]}, "/"))
		}
	}
	slices.Sort(left)
	if want := []string{"/other", "agent/app"}; !slices.Equal(left, want) {
		t.Errorf("pods left on %s (app/tier): %v, want %v: the DaemonSet's and the one --pod-selector leaves out", node, left, want)
	}
	if !holdfast {
		return
	}
	for typ, want := range map[string]string{"DrainInProgress": "False", "Drained": "True"} {
		if got, err := condition(f.Ctx, typ, "status"); err != nil || got != want {
			t.Errorf("condition %s of %s: %q (err %v), want %q", typ, node, got, err, want)
		}
	}
	desc, err := get(f.Ctx, "describe", "node", node)
	if err != nil || !regexp.MustCompile(`Normal\s+Drained\s`).MatchString(desc) {
		t.Errorf("kubectl describe node %s shows no Drained Event (err %v):\n%s", node, err, desc)
	}
	// Other tests drain this node too: this drain's Drained Event is the one written since.
	events, err := f.Clientset.CoreV1().Events(metav1.NamespaceDefault).List(f.Ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + node + ",reason=Drained"})
	if err != nil || !slices.ContainsFunc(events.Items, func(e corev1.Event) bool { return !e.LastTimestamp.Time.Before(start) }) {
		t.Errorf("no Drained Event on %s since the test started (err %v)", node, err)
	}
}

// podsOn lists the test's pods on the node.
func podsOn(ctx context.Context, f *framework.Framework, node string) ([]corev1.Pod, error) {
	list, err := f.Clientset.CoreV1().Pods(f.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// barePod is a pod of no controller, on node if one is given.
func barePod(f *framework.Framework, name string, labels map[string]string, node string, mutate func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.Namespace, Labels: labels},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}},
	}
	if mutate != nil {
		mutate(p)
	}
	return p
}

// deletePods deletes the test's workloads and pods and waits until no pod is left.
func deletePods(f *framework.Framework) {
	ctx, all := context.Background(), metav1.ListOptions{}
	apps := f.Clientset.AppsV1()
	for _, err := range []error{
		apps.Deployments(f.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, all),
		apps.DaemonSets(f.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, all),
		f.Clientset.CoreV1().Pods(f.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, all),
	} {
		if err != nil {
			f.T.Errorf("deleting the test's pods: %v", err)
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := f.Clientset.CoreV1().Pods(f.Namespace).List(ctx, all)
		return err == nil && len(pods.Items) == 0, nil
	})
	if err != nil {
		f.T.Errorf("waiting for the test's pods to be gone: %v", err)
	}
}

// kubectl drain judges all of a node's pods before it evicts any (GetPodsForDeletion): a
// pod that needs a flag (a bare pod without --force, a DaemonSet's without
// --ignore-daemonsets) leaves the node cordoned and whole, so that `drain N || uncordon N`
// never leaves it half emptied, and the other nodes of the same command are drained all
// the same. holdfast does as kubectl does, the same command lines given to each; with
// the flags, the node then drains and the DaemonSet's pod stays.
func TestRefusedNodeIsLeftWhole(t *testing.T) {
	kubectl, err := framework.Kubectl()
	if err != nil {
		t.Fatal(err)
	}
	hf := holdfastBinary(t)
	t.Run("kubectl", func(t *testing.T) { refusedNode(t, kubectl, "refuse-k") })
	t.Run("holdfast", func(t *testing.T) { refusedNode(t, hf, "refuse-h") })
}

func refusedNode(t *testing.T, command, prefix string) {
	f := framework.New(t)
	t.Cleanup(func() { deletePods(f) })
	pool := map[string]string{"pool": f.Namespace}
	var nodes []string
	for i, zone := range []string{"zone-a", "zone-b", "zone-c"} {
		nodes = append(nodes, f.AddNode(fmt.Sprintf("%s-%d", prefix, i+1), zone, pool).Name)
	}
	uncordonAtEnd(f, nodes...)
	web := f.Deployment("web", 2)
	web.Spec.Template.Spec.NodeSelector = pool
	framework.HostnameAntiAffinity(web)
	f.Create(web)
	f.WaitReady(web)
	webOn := map[string]corev1.Pod{}
	for _, p := range podsOf(t, f, web) {
		webOn[p.Spec.NodeName] = p
	}
	var refused, drained string
	for _, n := range nodes {
		if _, ok := webOn[n]; ok && refused == "" {
			refused = n
		} else if ok {
			drained = n
		}
	}
	f.Create(barePod(f, "scratch", map[string]string{"app": "scratch"}, refused, nil))
	agent := f.Deployment("agent", 1) // for its metadata and template
	agent.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelHostname: refused}
	f.Create(&appsv1.DaemonSet{ObjectMeta: agent.ObjectMeta, Spec: appsv1.DaemonSetSpec{Selector: agent.Spec.Selector, Template: agent.Spec.Template}})
	f.Eventually(2*time.Minute, "the bare pod and the DaemonSet's pod Ready on "+refused, func(ctx context.Context) (bool, error) {
		pods, err := podsOn(ctx, f, refused)
		if err != nil || len(pods) != 3 { // web, scratch, agent
			return false, err
		}
		return !slices.ContainsFunc(pods, func(p corev1.Pod) bool { return !framework.PodReady(&p) }), nil
	})

	drain := func(args ...string) (int, string) {
		args = append([]string{"--kubeconfig", f.Kubeconfig, "drain"}, args...)
		if filepath.Base(command) == "holdfast" {
			args = append(args, "--slot-namespace", f.Namespace)
		}
		out, err := exec.CommandContext(f.Ctx, command, args...).CombinedOutput()
		t.Logf("%s %s:\n%s", filepath.Base(command), strings.Join(args[2:], " "), out)
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode(), string(out)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	code, out := drain(refused, drained, "--timeout=2m")
	if code == 0 {
		t.Errorf("exit code 0 with a node refused")
	}
	for _, want := range []string{"scratch", "--force", "--ignore-daemonsets", "node/" + drained + " drained", `unable to drain node "` + refused + `"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the output does not name %q", want)
		}
	}
	for _, n := range []string{refused, drained} {
		node, err := f.Clientset.CoreV1().Nodes().Get(f.Ctx, n, metav1.GetOptions{})
		if err != nil || !node.Spec.Unschedulable {
			t.Errorf("node %s not cordoned (err %v)", n, err)
		}
	}
	kept := webOn[refused]
	if p, err := f.Clientset.CoreV1().Pods(f.Namespace).Get(f.Ctx, kept.Name, metav1.GetOptions{}); err != nil || p.UID != kept.UID || p.DeletionTimestamp != nil {
		t.Errorf("pod %s on the refused node %s was evicted (err %v)", kept.Name, refused, err)
	}
	if empty, err := f.NodeDrained(f.Ctx, drained); err != nil || !empty {
		t.Errorf("node %s, drained by the same command, still runs pods of the test (err %v)", drained, err)
	}

	// With the flags, and room for web's pod again, the node drains; the DaemonSet's pod
	// stays.
	f.Uncordon(drained)
	if code, _ := drain(refused, "--force", "--ignore-daemonsets", "--timeout=2m"); code != 0 {
		t.Errorf("exit code %d with the flags, want 0", code)
	}
	pods, err := podsOn(f.Ctx, f, refused)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			left = append(left, p.Labels["app"])
		}
	}
	if !slices.Equal(left, []string{"agent"}) {
		t.Errorf("pods left on %s (app): %v, want only the DaemonSet's", refused, left)
	}
}
