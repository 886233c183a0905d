//go:build scale

package scale

import (
	"cmp"
	"context"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// tier labels every workload of the benchmark: the DisruptionPolicies select it.
const tier = "fleet"

// companionZones are where the NodeCompanions' DaemonSets run, away from zone-a, whose
// nodes the drains take: a companion's budget allows one eviction in the whole cluster
// and its replacement has nowhere else to go until the node comes back.
var companionZones = []string{"zone-b", "zone-c"}

// fleet is what the benchmark created and what it expects to run.
type fleet struct {
	// stages are created one after the other: namespaces, policies, then workloads and
	// budgets.
	stages [3][]client.Object
	// pods is how many pods the workloads make once the operator runs (its companions
	// included).
	pods int
	// handBudgets are the budgets written by hand; budgets all of them once the
	// operator has made its own.
	handBudgets, budgets int
	// singles are 1-replica Deployments under a DisruptionPolicy: scaling one to 2 makes
	// the operator create its budget, back to 1 delete it.
	singles []ref
	// restartable are the Deployments of the rolling restarts.
	restartable []ref
}

// ref names a Deployment.
type ref struct{ namespace, name string }

func namespaceName(i int) string { return fmt.Sprintf("scale-%03d", i) }

// hasPolicy says which namespaces have a DisruptionPolicy: every other one.
func hasPolicy(ns int) bool { return ns%2 == 0 }

func podSpec(cpu string) corev1.PodSpec {
	return corev1.PodSpec{
		TerminationGracePeriodSeconds: ptr.To[int64](0),
		Containers: []corev1.Container{{
			Name: "app", Image: "registry.example/app:1",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("64Mi"),
			}},
		}},
	}
}

func workloadMeta(ns int, name string) (metav1.ObjectMeta, *metav1.LabelSelector, corev1.PodTemplateSpec, corev1.PodSpec) {
	lbls := map[string]string{"app": name}
	return metav1.ObjectMeta{Name: name, Namespace: namespaceName(ns), Labels: map[string]string{"app": name, "tier": tier}},
		&metav1.LabelSelector{MatchLabels: lbls},
		corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbls}},
		podSpec("100m")
}

// handBudget is a budget written by hand, in a namespace without a policy.
func handBudget(ns int, name string) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespaceName(ns)},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
		},
	}
}

// buildFleet returns the objects of a testbed of size s and what they make.
func buildFleet(s size, nodesInZone map[string]int) fleet {
	var f fleet
	add := func(objs ...client.Object) { f.stages[2] = append(f.stages[2], objs...) }
	for ns := range s.namespaces {
		f.stages[0] = append(f.stages[0], &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespaceName(ns)}})
		if hasPolicy(ns) {
			f.stages[1] = append(f.stages[1], &holdfastv1alpha1.DisruptionPolicy{
				ObjectMeta: metav1.ObjectMeta{Name: "fleet", Namespace: namespaceName(ns)},
				Spec: holdfastv1alpha1.DisruptionPolicySpec{
					Selector:       metav1.LabelSelector{MatchLabels: map[string]string{"tier": tier}},
					MaxUnavailable: ptr.To(intstr.FromInt32(1)),
				},
			})
		}
	}
	for i := range s.deployments {
		ns, name := i%s.namespaces, fmt.Sprintf("deploy-%d", i)
		replicas := deploymentSizes[i%len(deploymentSizes)]
		meta, sel, tmpl, spec := workloadMeta(ns, name)
		tmpl.Spec = spec
		d := &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: sel, Template: tmpl}}
		// A few opt in to rebalancing.
		if i%50 == 7 {
			d.Annotations = map[string]string{holdfastv1alpha1.RebalanceAnnotation: "true"}
		}
		add(d)
		f.pods += int(replicas)
		// Most workloads have a budget: the policy's, or one by hand on four in five.
		switch {
		case !hasPolicy(ns) && i%5 != 4:
			add(handBudget(ns, name))
			f.handBudgets++
		case hasPolicy(ns) && replicas > 1:
			f.budgets++
		}
		if hasPolicy(ns) && replicas == 1 {
			f.singles = append(f.singles, ref{namespaceName(ns), name})
		}
		if i%10 == 3 {
			f.restartable = append(f.restartable, ref{namespaceName(ns), name})
		}
	}
	for i := range s.statefulSet {
		ns, name := i%s.namespaces, fmt.Sprintf("sts-%d", i)
		meta, sel, tmpl, spec := workloadMeta(ns, name)
		tmpl.Spec = spec
		add(&appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](statefulReplicas), Selector: sel, Template: tmpl,
			ServiceName: name, PodManagementPolicy: appsv1.ParallelPodManagement,
		}})
		f.pods += statefulReplicas
		if !hasPolicy(ns) {
			add(handBudget(ns, name))
			f.handBudgets++
		} else {
			f.budgets++
		}
	}
	for i := range s.daemonSets {
		ns, name := i%s.namespaces, fmt.Sprintf("agent-%d", i)
		meta, sel, tmpl, _ := workloadMeta(ns, name)
		tmpl.Spec = podSpec("10m")
		nodes := s.nodes
		if i < len(companionZones) {
			zone := companionZones[i]
			tmpl.Spec.NodeSelector = map[string]string{corev1.LabelTopologyZone: zone}
			nodes = nodesInZone[zone]
			add(&holdfastv1alpha1.NodeCompanion{
				ObjectMeta: metav1.ObjectMeta{Name: name + "-guard", Namespace: namespaceName(ns)},
				Spec: holdfastv1alpha1.NodeCompanionSpec{
					DaemonSet: &holdfastv1alpha1.DaemonSetReference{Name: name},
					Template:  corev1.PodTemplateSpec{Spec: podSpec("10m")},
				},
			})
			f.pods += nodes // the companions, once the operator runs
			f.budgets++
		}
		if hasPolicy(ns) {
			f.budgets++
		}
		add(&appsv1.DaemonSet{ObjectMeta: meta, Spec: appsv1.DaemonSetSpec{Selector: sel, Template: tmpl}})
		f.pods += nodes
	}
	f.budgets += f.handBudgets
	return f
}

// create creates the fleet, a few objects at a time, stage after stage.
func (f fleet) create(ctx context.Context, c client.Client) error {
	const workers = 8
	for _, stage := range f.stages {
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			first error
		)
		todo := make(chan client.Object)
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for obj := range todo {
					if err := c.Create(ctx, obj); err != nil {
						mu.Lock()
						first = cmp.Or(first, fmt.Errorf("creating %T %s/%s: %w", obj, obj.GetNamespace(), obj.GetName(), err))
						mu.Unlock()
					}
				}
			}()
		}
		for _, obj := range stage {
			todo <- obj
		}
		close(todo)
		wg.Wait()
		if first != nil {
			return first
		}
	}
	return nil
}
