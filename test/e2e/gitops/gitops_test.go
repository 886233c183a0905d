//go:build e2e

// Package gitops_test drains the node of a single replica under singleReplica: Surge
// while another owner keeps writing the Deployment or its autoscaler, as Argo CD or
// Flux with self-heal, helm upgrade, an HPA and KEDA do. holdfast's surge runs its extra
// pod beside the Deployment and writes neither, so no writer has anything to undo.
package gitops_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/cli"
	"github.com/holdfast-dev/holdfast/internal/policy"
	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{Nodes: 1})
}

// readyAfterAnnotation is the testbed's per-pod start-up time (docs/engineering/testbed.md).
const readyAfterAnnotation = "testbed.holdfast.dev/ready-after"

// every is how often each writer writes, as Argo CD's self-heal and KEDA do at most.
const every = 3 * time.Second

// writer is another owner of the Deployment or its autoscaler. start begins its writes
// once the workload exists and returns a function that stops them and says how many
// rounds it ran and how many of them changed the spec it writes (a revert of a holdfast
// write, if any).
type writer struct {
	name string
	// install creates the Deployment (and whatever else the owner keeps) instead of the
	// test; nil for a plain create.
	install func(c *gitopsCase, d *appsv1.Deployment)
	// start begins the owner's writes for the length of the drain.
	start func(c *gitopsCase, d *appsv1.Deployment) (stop func() (rounds, reverts int))
}

// TestSurgeBesideOtherWriters drains the node of a Surge single replica beside each
// writer, for pods that take 12 s and 30 s to become Ready. Each drain must end with
// exit code 0, no sample at zero Ready pods (every 200 ms), no revert by the writer,
// and the Deployment's generation as its owner left it. The drain's time beside each
// writer is printed next to the same drain with no writer.
func TestSurgeBesideOtherWriters(t *testing.T) {
	f := framework.New(t)
	f.InstallCRDs(f.HoldfastClient(), &holdfastv1alpha1.DisruptionPolicyList{})
	if _, err := f.Helm(f.Ctx, "version"); err != nil { // built before anything is timed
		t.Fatal(err)
	}
	kubectl, err := framework.Kubectl()
	if err != nil {
		t.Fatal(err)
	}
	f.StartOperator()
	writers := []writer{
		{name: "none"},
		{name: "client-side-apply", install: applied(kubectl, "client"), start: applier(kubectl, "client")},
		{name: "server-side-apply", install: applied(kubectl, "server"), start: applier(kubectl, "server")},
		{name: "helm-upgrade", install: helmInstall, start: helmUpgrade},
		{name: "hpa-1-1", install: withAutoscaler(1, 1), start: watchAutoscaler},
		{name: "hpa-1-5", install: withAutoscaler(1, 5), start: watchAutoscaler},
		{name: "keda-like", install: withAutoscaler(1, 1), start: boundsRewriter(kubectl)},
	}
	for _, ready := range []time.Duration{12 * time.Second, 30 * time.Second} {
		t.Run(fmt.Sprintf("ready-after-%s", ready), func(t *testing.T) {
			took := make(map[string]time.Duration, len(writers))
			var mu sync.Mutex
			t.Run("writers", func(t *testing.T) {
				for _, w := range writers {
					t.Run(w.name, func(t *testing.T) {
						t.Parallel()
						d := drainBeside(t, kubectl, w, ready)
						mu.Lock()
						took[w.name] = d
						mu.Unlock()
					})
				}
			})
			base := took["none"]
			for _, w := range writers[1:] {
				if d, ok := took[w.name]; ok && base > 0 {
					t.Logf("FIGURE gitops drain-seconds writer=%s ready-after=%s %.1f (no writer %.1f, ratio %.2f, target 1.5)",
						w.name, ready, d.Seconds(), base.Seconds(), d.Seconds()/base.Seconds())
				}
			}
		})
	}
}

// gitopsCase is one drain beside one writer, in a namespace and on two nodes of its own.
type gitopsCase struct {
	*framework.Framework
	kubectl string
	dir     string // the writer's files
}

// drainBeside runs one case and returns how long holdfast drain took.
func drainBeside(t *testing.T, kubectl string, w writer, ready time.Duration) time.Duration {
	f := framework.New(t)
	c := &gitopsCase{Framework: f, kubectl: kubectl, dir: t.TempDir()}
	pool := f.Namespace
	for _, suffix := range []string{"a", "b"} {
		f.AddNode(pool+"-"+suffix, "zone-a", map[string]string{"holdfast.dev/e2e-pool": pool})
	}
	p := &holdfastv1alpha1.DisruptionPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.Namespace, Name: "defaults"},
		Spec:       holdfastv1alpha1.DisruptionPolicySpec{MaxUnavailable: ptr.To(intstr.FromInt32(1)), SingleReplica: holdfastv1alpha1.SingleReplicaSurge},
	}
	if err := f.HoldfastClient().Create(f.Ctx, p); err != nil {
		t.Fatalf("creating DisruptionPolicy: %v", err)
	}
	d := f.Deployment("single", 1)
	d.Spec.Template.Annotations = map[string]string{readyAfterAnnotation: ready.String()}
	d.Spec.Template.Spec.NodeSelector = map[string]string{"holdfast.dev/e2e-pool": pool}
	if w.install != nil {
		w.install(c, d)
	} else {
		f.Create(d)
	}
	f.WaitReadyWithin(ready+time.Minute, d)
	f.WaitBudget(policy.BudgetName(holdfastv1alpha1.KindDeployment, "single"), 0)
	before := c.deployment(d)
	node := c.onlyPod(d).Spec.NodeName

	var stop func() (int, int)
	if w.start != nil {
		stop = w.start(c, d)
	}
	watch := f.WatchReady(framework.SelectorOf(d), 200*time.Millisecond)
	start := time.Now()
	code, out := c.drain(node, ready+3*time.Minute)
	took := time.Since(start)
	samples, zero, lowest := watch.Stop()
	rounds, reverts := 0, 0
	if stop != nil {
		rounds, reverts = stop()
	}
	after := c.deployment(d)
	t.Logf("drain of %s beside %s, pods Ready after %s: exit %d in %s; %d samples every 200ms, %d at zero Ready, lowest %d; %d rounds of the writer, %d reverts; generation %d → %d",
		node, w.name, ready, code, took.Round(100*time.Millisecond), samples, zero, lowest, rounds, reverts, before.Generation, after.Generation)
	if code != cli.ExitOK {
		t.Errorf("holdfast drain exited %d, want 0:\n%s", code, out)
	}
	if zero != 0 {
		t.Errorf("%d samples (of %d) saw zero Ready pods", zero, samples)
	}
	if stop != nil && rounds == 0 {
		t.Errorf("%s never wrote during the drain", w.name)
	}
	if reverts != 0 {
		t.Errorf("%s found %d holdfast writes to revert, want none", w.name, reverts)
	}
	if after.Generation != before.Generation || ptr.Deref(after.Spec.Replicas, 0) != 1 {
		t.Errorf("Deployment at generation %d with %d replicas after the drain, want generation %d and 1: holdfast wrote its spec",
			after.Generation, ptr.Deref(after.Spec.Replicas, 0), before.Generation)
	}
	f.Eventually(ready+time.Minute, "the surge set gone, 1 pod Ready off the drained node", func(ctx context.Context) (bool, error) {
		set, err := f.SurgeSet(ctx, d)
		if err != nil || set != nil {
			return false, err
		}
		pods, err := f.Pods(ctx, framework.SelectorOf(d))
		return len(pods) == 1 && framework.PodReady(&pods[0]) && pods[0].Spec.NodeName != node, err
	})
	return took
}

func (c *gitopsCase) deployment(d *appsv1.Deployment) *appsv1.Deployment {
	c.T.Helper()
	cur := &appsv1.Deployment{}
	if err := c.Client.Get(c.Ctx, client.ObjectKeyFromObject(d), cur); err != nil {
		c.T.Fatal(err)
	}
	return cur
}

func (c *gitopsCase) onlyPod(d *appsv1.Deployment) *corev1.Pod {
	c.T.Helper()
	pods, err := c.Pods(c.Ctx, framework.SelectorOf(d))
	if err != nil || len(pods) != 1 {
		c.T.Fatalf("the pods of %s: %d (%v), want 1", d.Name, len(pods), err)
	}
	return &pods[0]
}

// drain runs `holdfast drain NODE` in-process, as the binary would, and returns its
// exit code and output.
func (c *gitopsCase) drain(node string, timeout time.Duration) (int, string) {
	var out strings.Builder
	cmd := cli.NewRootCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out})
	cmd.SetArgs([]string{"drain", node, "--slot-namespace", c.Namespace, "--timeout", timeout.String(), "--kubeconfig", c.Kubeconfig})
	err := cmd.ExecuteContext(c.Ctx)
	var coded *cli.ExitCodeError
	switch {
	case err == nil:
		return cli.ExitOK, out.String()
	case errors.As(err, &coded):
		return coded.Code, out.String()
	}
	return cli.ExitError, out.String() + err.Error()
}

// manifest writes obj as YAML to a file of the case's folder and returns its path.
func (c *gitopsCase) manifest(name string, obj client.Object) string {
	c.T.Helper()
	data, err := yaml.Marshal(obj)
	if err != nil {
		c.T.Fatal(err)
	}
	path := filepath.Join(c.dir, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		c.T.Fatal(err)
	}
	return path
}

// run runs a real process (kubectl or helm) against the testbed and returns its output.
func (c *gitopsCase) run(name string, args ...string) (string, error) {
	out, err := exec.CommandContext(c.Ctx, name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// apply runs kubectl apply as Argo CD does: client-side by default, or server-side with
// --force-conflicts as the field manager argocd-controller.
func (c *gitopsCase) apply(kubectl, mode, path string) (string, error) {
	args := []string{"--kubeconfig", c.Kubeconfig, "apply", "-f", path}
	if mode == "server" {
		args = append(args, "--server-side", "--force-conflicts", "--field-manager", "argocd-controller")
	}
	return c.run(kubectl, args...)
}

// applied creates the Deployment by applying its manifest.
func applied(kubectl, mode string) func(*gitopsCase, *appsv1.Deployment) {
	return func(c *gitopsCase, d *appsv1.Deployment) {
		d.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}
		if _, err := c.apply(kubectl, mode, c.manifest("deployment.yaml", d)); err != nil {
			c.T.Fatal(err)
		}
	}
}

// applier re-applies the Deployment's manifest (replicas: 1) every 3 s, as a GitOps
// controller with self-heal does; a revert is an apply that raised the generation.
func applier(kubectl, mode string) func(*gitopsCase, *appsv1.Deployment) func() (int, int) {
	return func(c *gitopsCase, d *appsv1.Deployment) func() (int, int) {
		path := filepath.Join(c.dir, "deployment.yaml")
		return c.loop(func(ctx context.Context) (bool, bool, error) {
			before, err := c.generation(ctx, d)
			if err != nil {
				return false, false, err
			}
			if _, err := c.apply(kubectl, mode, path); err != nil {
				return false, false, err
			}
			after, err := c.generation(ctx, d)
			return true, after != before, err
		})
	}
}

func (c *gitopsCase) generation(ctx context.Context, obj client.Object) (int64, error) {
	cur := obj.DeepCopyObject().(client.Object)
	err := c.Client.Get(ctx, client.ObjectKeyFromObject(obj), cur)
	return cur.GetGeneration(), err
}

// loop runs write every 3 s until stopped, and counts the rounds that wrote and the
// writes that changed a spec; write says wrote false for a round it skipped. A write
// that fails fails the test, unless the stop cut it short.
func (c *gitopsCase) loop(write func(context.Context) (wrote, changed bool, err error)) func() (int, int) {
	ctx, cancel := context.WithCancel(c.Ctx)
	type counts struct{ rounds, reverts int }
	done := make(chan counts, 1)
	go func() {
		var n counts
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			wrote, changed, err := write(ctx)
			if err != nil && ctx.Err() == nil {
				c.T.Errorf("writer: %v", err)
			}
			// A round cut short by the stop reads no generation: it counts for nothing.
			if wrote && err == nil {
				n.rounds++
				if changed {
					n.reverts++
				}
			}
			select {
			case <-ctx.Done():
				done <- n
				return
			case <-tick.C:
			}
		}
	}()
	return func() (int, int) { cancel(); n := <-done; return n.rounds, n.reverts }
}

// chart is a Helm chart that sets the Deployment's replicas from its values, as most
// charts do, with a ConfigMap whose value changes on every upgrade.
const chartYAML = `apiVersion: v2
name: single
version: 0.1.0
`

// helmInstall installs the Deployment as a Helm release of replicaCount 1.
func helmInstall(c *gitopsCase, d *appsv1.Deployment) {
	c.T.Helper()
	chart := filepath.Join(c.dir, "chart")
	d.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}
	d.Spec.Replicas = nil
	data, err := yaml.Marshal(d)
	if err != nil {
		c.T.Fatal(err)
	}
	deployment := strings.Replace(string(data), "spec:\n", "spec:\n  replicas: {{ .Values.replicaCount }}\n", 1)
	files := map[string]string{
		"Chart.yaml":                chartYAML,
		"values.yaml":               "replicaCount: 1\nrevision: \"0\"\n",
		"templates/deployment.yaml": deployment,
		"templates/configmap.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: single-config\ndata:\n  revision: {{ .Values.revision | quote }}\n",
	}
	for name, body := range files {
		path := filepath.Join(chart, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			c.T.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			c.T.Fatal(err)
		}
	}
	if _, err := c.Helm(c.Ctx, "install", "single", chart, "--namespace", c.Namespace); err != nil {
		c.T.Fatal(err)
	}
}

// helmUpgrade runs helm upgrade once the surge has started, in the middle of the
// drain, and again every 3 s after: each a new revision of the release, which resets
// replicas to the chart's 1 if anything else had changed them.
func helmUpgrade(c *gitopsCase, d *appsv1.Deployment) func() (int, int) {
	chart := filepath.Join(c.dir, "chart")
	revision := 0
	started := false
	return c.loop(func(ctx context.Context) (bool, bool, error) {
		if !started {
			set, err := c.SurgeSet(ctx, d)
			if err != nil || set == nil {
				return false, false, err
			}
			started = true
		}
		before, err := c.generation(ctx, d)
		if err != nil {
			return false, false, err
		}
		revision++
		if _, err := c.Helm(ctx, "upgrade", "single", chart, "--namespace", c.Namespace, "--set-string", fmt.Sprintf("revision=%d", revision)); err != nil {
			return false, false, err
		}
		after, err := c.generation(ctx, d)
		return true, after != before, err
	})
}

// autoscaler is a HorizontalPodAutoscaler over the Deployment, on CPU.
func autoscaler(d *appsv1.Deployment, lo, hi int32) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"},
		ObjectMeta: metav1.ObjectMeta{Name: d.Name, Namespace: d.Namespace},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name},
			MinReplicas:    ptr.To(lo),
			MaxReplicas:    hi,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](80)},
			}}},
		},
	}
}

// withAutoscaler creates the Deployment and an autoscaler of bounds lo-hi over it.
func withAutoscaler(lo, hi int32) func(*gitopsCase, *appsv1.Deployment) {
	return func(c *gitopsCase, d *appsv1.Deployment) {
		c.Create(d)
		c.Create(autoscaler(d, lo, hi))
	}
}

// watchAutoscaler writes nothing itself: the HPA controller owns the Deployment's
// replicas. A revert is a change of the autoscaler's spec or of the Deployment's.
func watchAutoscaler(c *gitopsCase, d *appsv1.Deployment) func() (int, int) {
	hpa := autoscaler(d, 0, 0)
	first, err := c.generation(c.Ctx, hpa)
	if err != nil {
		c.T.Fatal(err)
	}
	return c.loop(func(ctx context.Context) (bool, bool, error) {
		g, err := c.generation(ctx, hpa)
		changed := g != first
		first = g
		return true, changed, err
	})
}

// boundsRewriter rewrites the autoscaler's bounds to 1-1 every 3 s with server-side
// apply as the field manager keda-operator, as KEDA does for the HPA of a
// ScaledObject; a revert is a write that changed its spec.
func boundsRewriter(kubectl string) func(*gitopsCase, *appsv1.Deployment) func() (int, int) {
	return func(c *gitopsCase, d *appsv1.Deployment) func() (int, int) {
		hpa := autoscaler(d, 1, 1)
		path := c.manifest("hpa.yaml", hpa)
		return c.loop(func(ctx context.Context) (bool, bool, error) {
			before, err := c.generation(ctx, hpa)
			if err != nil {
				return false, false, err
			}
			if _, err := c.run(kubectl, "--kubeconfig", c.Kubeconfig, "apply", "-f", path, "--server-side", "--force-conflicts", "--field-manager", "keda-operator"); err != nil {
				return false, false, err
			}
			after, err := c.generation(ctx, hpa)
			return true, after != before, err
		})
	}
}
