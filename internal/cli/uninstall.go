package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/pager"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// UninstallOptions holds the flags of `holdfast uninstall`.
type UninstallOptions struct {
	DryRun bool
	// Timeout bounds each wait: for the operator's pods to stop, and for a Deployment to
	// have its replicas available again before its surge set goes.
	Timeout time.Duration

	configFlags *genericclioptions.ConfigFlags
	c           *installClients
	genericiooptions.IOStreams
}

// NewUninstallCommand returns `holdfast uninstall`.
func NewUninstallCommand(streams genericiooptions.IOStreams, flags *genericclioptions.ConfigFlags) *cobra.Command {
	o := &UninstallOptions{IOStreams: streams, configFlags: flags}
	cmd := &cobra.Command{
		Use:   "uninstall",
		Short: "Remove what holdfast install applied and everything the operator wrote across the cluster",
		Long: `Remove holdfast from the current kube context, in this order:

  1. the operator: its Deployment is deleted and its pods waited for, so that nothing
     writes again what the next steps remove
  2. the budgets holdfast made (labelled holdfast.dev/disruption-policy or
     holdfast.dev/companion)
  3. the surge sets (ReplicaSets labelled holdfast.dev/surge-of), each once the
     Deployment it stands beside has all its replicas available again, so that a surge
     in flight ends as the operator would end it; with no budget left, a drain waiting
     on the Deployment's own pod is let through while the surge pod still serves
  4. the NodeCompanions' Deployments
  5. holdfast's marks: pods' zone labels, Protect's do-not-disrupt and a hand-off's
     safe-to-evict annotations,
     workloads' last-rebalance annotations, and on nodes the hand-off, lost-node and
     drain-queued taints, the drain-run annotation, and the out-of-service taint holdfast
     put on a fenced node that is Ready again (on a node still not Ready it is kept and
     named: removing it would stop the failover of its pods)
  6. every DisruptionPolicy, ClusterDisruptionPolicy and NodeCompanion
  7. what holdfast install applied (recorded in the Secret holdfast-system/holdfast-install),
     the CRDs and the namespaces holdfast-system and holdfast-drain last

Each object is named as it goes. With --dry-run nothing is changed and the same list is
printed. A wait that times out stops the uninstall with an error naming what it waited
for; running uninstall again goes on from there.

Only an operator installed with holdfast install is uninstalled: with Helm, run
"helm uninstall" first; the marks its operator wrote are then not removed.`,
		Example: `  holdfast uninstall --dry-run
  holdfast uninstall --timeout 10m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "print what would be removed, and change nothing")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 5*time.Minute, "how long each wait may take: for the operator's pods to stop, for a Deployment to have its replicas back before its surge set goes")
	return cmd
}

// Run removes holdfast, step by step.
func (o *UninstallOptions) Run(ctx context.Context) error {
	var err error
	if o.c, err = connectInstall(o.configFlags); err != nil {
		return err
	}
	record, found, err := readParent(ctx, o.c.kube)
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("secret %s/%s, the record holdfast install keeps, is not there: was the operator installed otherwise? With Helm, run helm uninstall first", installNamespace, applySetParentName)
	}
	set, err := members(ctx, o.c, installSetID(), record)
	if err != nil {
		return err
	}
	steps := []func(context.Context) error{
		func(ctx context.Context) error { return o.stopOperator(ctx, set) },
		o.deleteBudgets,
		o.deleteSurgeSets,
		o.deleteCompanionDeployments,
		o.clearPods,
		o.clearWorkloads,
		o.clearNodes,
		o.deleteCustomResources,
		func(ctx context.Context) error { return o.deleteSet(ctx, set) },
	}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

// report prints what was done, or would be with --dry-run, to one object.
func (o *UninstallOptions) report(kind, namespace, name, done, detail string) {
	what := strings.ToLower(kind) + " " + name
	if namespace != "" {
		what = strings.ToLower(kind) + " " + namespace + "/" + name
	}
	if o.DryRun {
		done += " (dry run)"
	}
	if detail != "" {
		done += ": " + detail
	}
	fmt.Fprintf(o.Out, "%s %s\n", what, done)
}

// stopOperator deletes the Deployments of the set and waits until their pods are gone.
func (o *UninstallOptions) stopOperator(ctx context.Context, set map[objectKey]*meta.RESTMapping) error {
	for _, k := range sortedKeys(set) {
		if k.kind != deploymentKind {
			continue
		}
		d, err := o.c.kube.AppsV1().Deployments(k.namespace).Get(ctx, k.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading the operator deployment %s/%s: %w", k.namespace, k.name, err)
		}
		o.report("Deployment", k.namespace, k.name, "deleted", "the operator stops first, so that it writes nothing again")
		if o.DryRun {
			continue
		}
		if err := o.c.kube.AppsV1().Deployments(k.namespace).Delete(ctx, k.name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting the operator deployment %s/%s: %w", k.namespace, k.name, err)
		}
		selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil {
			return fmt.Errorf("deployment %s/%s: spec.selector: %w", k.namespace, k.name, err)
		}
		what := fmt.Sprintf("the pods of deployment %s/%s (%s) to be gone", k.namespace, k.name, selector)
		fmt.Fprintf(o.Out, "waiting up to %s for %s\n", o.Timeout, what)
		left := 0
		err = wait.PollUntilContextTimeout(ctx, time.Second, o.Timeout, true, func(ctx context.Context) (bool, error) {
			pods, err := o.c.kube.CoreV1().Pods(k.namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
			left = len(pods.Items)
			return err == nil && left == 0, err
		})
		if err != nil {
			return fmt.Errorf("waiting for %s: %d left after %s: %w", what, left, o.Timeout, err)
		}
	}
	return nil
}

// deleteBudgets deletes the budgets the operator made for policies and companions.
func (o *UninstallOptions) deleteBudgets(ctx context.Context) error {
	for _, label := range []string{holdfastv1alpha1.PolicyLabel, holdfastv1alpha1.CompanionLabel} {
		pdbs, err := o.c.kube.PolicyV1().PodDisruptionBudgets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: label})
		if err != nil {
			return fmt.Errorf("listing the budgets labelled %s: %w", label, err)
		}
		for _, pdb := range pdbs.Items {
			o.report("PodDisruptionBudget", pdb.Namespace, pdb.Name, "deleted", "")
			if o.DryRun {
				continue
			}
			if err := o.c.kube.PolicyV1().PodDisruptionBudgets(pdb.Namespace).Delete(ctx, pdb.Name, uidPrecondition(pdb.UID)); ignoreGone(err) != nil {
				return fmt.Errorf("deleting budget %s/%s: %w", pdb.Namespace, pdb.Name, err)
			}
		}
	}
	return nil
}

// deleteSurgeSets deletes the surge sets, each once its Deployment has all its
// replicas available: until then the surge's pods may be the ones serving.
func (o *UninstallOptions) deleteSurgeSets(ctx context.Context) error {
	sets, err := o.c.kube.AppsV1().ReplicaSets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: holdfastv1alpha1.SurgeOfLabel})
	if err != nil {
		return fmt.Errorf("listing the surge sets (label %s): %w", holdfastv1alpha1.SurgeOfLabel, err)
	}
	for _, rs := range sets.Items {
		if name := rs.Annotations[holdfastv1alpha1.SurgeForAnnotation]; name != "" {
			if err := o.waitWhole(ctx, rs.Namespace, name); err != nil {
				return fmt.Errorf("keeping surge set %s/%s: %w", rs.Namespace, rs.Name, err)
			}
		}
		o.report("ReplicaSet", rs.Namespace, rs.Name, "deleted", fmt.Sprintf("surge set of deployment %s, surge pods: %d", rs.Annotations[holdfastv1alpha1.SurgeForAnnotation], rs.Status.Replicas))
		if o.DryRun {
			continue
		}
		if err := o.c.kube.AppsV1().ReplicaSets(rs.Namespace).Delete(ctx, rs.Name, uidPrecondition(rs.UID)); ignoreGone(err) != nil {
			return fmt.Errorf("deleting surge set %s/%s: %w", rs.Namespace, rs.Name, err)
		}
	}
	return nil
}

// waitWhole waits until the Deployment has as many available replicas as it asks for;
// a Deployment that is gone needs no wait. A dry run only says what it would wait for.
func (o *UninstallOptions) waitWhole(ctx context.Context, namespace, name string) error {
	what := fmt.Sprintf("deployment %s/%s", namespace, name)
	var available, want int32
	whole := func(ctx context.Context) (bool, error) {
		d, err := o.c.kube.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("reading %s: %w", what, err)
		}
		available, want = d.Status.AvailableReplicas, ptr.Deref(d.Spec.Replicas, 1)
		return available >= want, nil
	}
	if done, err := whole(ctx); done || err != nil {
		return err
	}
	if o.DryRun {
		fmt.Fprintf(o.Out, "would wait up to %s for %s to have its %d replicas available (%d now)\n", o.Timeout, what, want, available)
		return nil
	}
	fmt.Fprintf(o.Out, "waiting up to %s for %s to have its %d replicas available (%d now), so that its surge pods are not the ones serving\n", o.Timeout, what, want, available)
	err := wait.PollUntilContextTimeout(ctx, time.Second, o.Timeout, false, whole)
	if wait.Interrupted(err) {
		return fmt.Errorf("%s has %d of %d replicas available after %s; run holdfast uninstall again once it has them", what, available, want, o.Timeout)
	}
	return err
}

// deleteCompanionDeployments deletes the Deployments NodeCompanions made; their pods go
// with them.
func (o *UninstallOptions) deleteCompanionDeployments(ctx context.Context) error {
	list, err := o.c.kube.AppsV1().Deployments(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: holdfastv1alpha1.CompanionLabel})
	if err != nil {
		return fmt.Errorf("listing the companions' deployments (label %s): %w", holdfastv1alpha1.CompanionLabel, err)
	}
	for _, d := range list.Items {
		o.report("Deployment", d.Namespace, d.Name, "deleted", "companions of nodecompanion "+d.Labels[holdfastv1alpha1.CompanionLabel])
		if o.DryRun {
			continue
		}
		if err := o.c.kube.AppsV1().Deployments(d.Namespace).Delete(ctx, d.Name, uidPrecondition(d.UID)); ignoreGone(err) != nil {
			return fmt.Errorf("deleting deployment %s/%s: %w", d.Namespace, d.Name, err)
		}
	}
	return nil
}

// clearPods removes holdfast's labels and annotations from every pod, page by page.
func (o *UninstallOptions) clearPods(ctx context.Context) error {
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return o.c.kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, opts)
	})
	return p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		pod := obj.(*corev1.Pod)
		return o.clear(ctx, "Pod", pod.Namespace, pod.Name, podMarks(pod), func(ctx context.Context, patch []byte) error {
			_, err := o.c.kube.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
			return err
		})
	})
}

// clearWorkloads removes the rebalance record from Deployments and StatefulSets.
func (o *UninstallOptions) clearWorkloads(ctx context.Context) error {
	deployments, err := o.c.kube.AppsV1().Deployments(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing deployments: %w", err)
	}
	for _, d := range deployments.Items {
		err := o.clear(ctx, "Deployment", d.Namespace, d.Name, workloadMarks(d.Annotations), func(ctx context.Context, patch []byte) error {
			_, err := o.c.kube.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.MergePatchType, patch, metav1.PatchOptions{})
			return err
		})
		if err != nil {
			return err
		}
	}
	sets, err := o.c.kube.AppsV1().StatefulSets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing statefulsets: %w", err)
	}
	for _, s := range sets.Items {
		err := o.clear(ctx, "StatefulSet", s.Namespace, s.Name, workloadMarks(s.Annotations), func(ctx context.Context, patch []byte) error {
			_, err := o.c.kube.AppsV1().StatefulSets(s.Namespace).Patch(ctx, s.Name, types.MergePatchType, patch, metav1.PatchOptions{})
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// clear removes the labels and annotations of m from one object with a merge patch
// that names only their keys.
func (o *UninstallOptions) clear(ctx context.Context, kind, namespace, name string, m marks, patch func(context.Context, []byte) error) error {
	if m.empty() {
		return nil
	}
	o.report(kind, namespace, name, "cleared", strings.Join(slices.Concat(m.labels, m.annotations), ", "))
	if o.DryRun {
		return nil
	}
	data, err := json.Marshal(removalPatch(m))
	if err != nil {
		return err
	}
	if err := patch(ctx, data); ignoreGone(err) != nil {
		return fmt.Errorf("removing %s from %s %s/%s: %w", strings.Join(slices.Concat(m.labels, m.annotations), ", "), strings.ToLower(kind), namespace, name, err)
	}
	return nil
}

// clearNodes removes holdfast's taints and annotations from every node. Taints are a
// list: the node is read and updated, again on a conflict, so that a taint someone
// else adds in between is kept.
func (o *UninstallOptions) clearNodes(ctx context.Context) error {
	nodes, err := o.c.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	for _, n := range nodes.Items {
		m := nodeMarks(&n)
		if m.kept != "" {
			o.report("Node", "", n.Name, "kept "+m.kept, m.why)
		}
		if m.empty() {
			continue
		}
		o.report("Node", "", n.Name, "cleared", strings.Join(slices.Concat(m.taints, m.annotations), ", "))
		if o.DryRun {
			continue
		}
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			node, err := o.c.kube.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			m := nodeMarks(node)
			node.Spec.Taints = withoutTaints(node.Spec.Taints, m.taints)
			for _, k := range m.annotations {
				delete(node.Annotations, k)
			}
			_, err = o.c.kube.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
			return err
		})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("removing holdfast's taints and annotations from node %s: %w", n.Name, err)
		}
	}
	return nil
}

// customResources are holdfast's kinds, in the order uninstall deletes their objects:
// a ClusterDisruptionPolicy before the DisruptionPolicies it copies.
var customResources = []string{"clusterdisruptionpolicies", "disruptionpolicies", "nodecompanions"}

// deleteCustomResources deletes every object of holdfast's kinds. Nothing of theirs
// holds them: the operator puts no finalizer on them.
func (o *UninstallOptions) deleteCustomResources(ctx context.Context) error {
	for _, resource := range customResources {
		r := o.c.dyn.Resource(holdfastv1alpha1.GroupVersion.WithResource(resource))
		list, err := r.List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			continue // the kind is not served: nothing of it is left
		}
		if err != nil {
			return fmt.Errorf("listing %s: %w", resource, err)
		}
		for _, u := range list.Items {
			o.report(u.GetKind(), u.GetNamespace(), u.GetName(), "deleted", "")
			if o.DryRun {
				continue
			}
			if err := r.Namespace(u.GetNamespace()).Delete(ctx, u.GetName(), uidPrecondition(u.GetUID())); ignoreGone(err) != nil {
				return fmt.Errorf("deleting %s %s: %w", strings.ToLower(u.GetKind()), u.GetName(), err)
			}
		}
	}
	return nil
}

// deleteSet deletes what holdfast install applied, in the reverse of the apply order,
// the parent Secret before the Namespaces; the operator's Deployment went first.
func (o *UninstallOptions) deleteSet(ctx context.Context, set map[objectKey]*meta.RESTMapping) error {
	parentGone := false
	for _, k := range sortedKeys(set) {
		if k.kind == deploymentKind {
			continue
		}
		if k.kind.Kind == "Namespace" && !parentGone {
			if err := o.deleteParent(ctx); err != nil {
				return err
			}
			parentGone = true
		}
		r, _, err := o.c.resource(k.kind, k.namespace)
		if err != nil {
			return err
		}
		o.report(k.kind.Kind, k.namespace, k.name, "deleted", "")
		if o.DryRun {
			continue
		}
		if err := r.Delete(ctx, k.name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); ignoreGone(err) != nil {
			return fmt.Errorf("deleting %s %s: %w", strings.ToLower(k.kind.Kind), k.name, err)
		}
	}
	if !parentGone {
		return o.deleteParent(ctx)
	}
	return nil
}

func (o *UninstallOptions) deleteParent(ctx context.Context) error {
	o.report("Secret", installNamespace, applySetParentName, "deleted", "the record of holdfast install")
	if o.DryRun {
		return nil
	}
	if err := o.c.kube.CoreV1().Secrets(installNamespace).Delete(ctx, applySetParentName, metav1.DeleteOptions{}); ignoreGone(err) != nil {
		return fmt.Errorf("deleting the ApplySet parent secret %s/%s: %w", installNamespace, applySetParentName, err)
	}
	return nil
}

// sortedKeys are the members in the reverse of the apply order.
func sortedKeys(set map[objectKey]*meta.RESTMapping) []objectKey {
	keys := slices.Collect(maps.Keys(set))
	slices.SortFunc(keys, deleteOrder)
	return keys
}

// uidPrecondition deletes the object listed, not one made since under its name.
func uidPrecondition(uid types.UID) metav1.DeleteOptions {
	return metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
}

// ignoreGone treats an object already gone, or replaced since it was listed, as done.
func ignoreGone(err error) error {
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}
