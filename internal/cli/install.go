package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"

	"github.com/holdfast-dev/holdfast/config"
	"github.com/holdfast-dev/holdfast/internal/buildinfo"
)

// installFieldManager owns the fields holdfast install applies, so that a second install
// (an upgrade) updates them and leaves other managers' fields alone.
const installFieldManager = "holdfast-install"

// installNamespace is where install puts the operator: its RBAC and leader election are
// written for it.
const installNamespace = "holdfast-system"

// InstallOptions holds the flags of `holdfast install`.
type InstallOptions struct {
	DryRun bool
	Image  string
	// Filename, when set, holds the manifests to install instead of the embedded ones;
	// "-" is the input stream.
	Filename string
	// Timeout bounds the wait for the operator Deployment to be Available; 0 waits not.
	Timeout time.Duration

	output      *outputFlags
	printer     printers.ResourcePrinter
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams
}

// NewInstallCommand returns `holdfast install`.
func NewInstallCommand(streams genericiooptions.IOStreams, flags *genericclioptions.ConfigFlags) *cobra.Command {
	o := &InstallOptions{IOStreams: streams, configFlags: flags, output: newOutputFlags()}
	o.output.format = "yaml"
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Install or upgrade the operator (CRDs, RBAC, Deployment, budget, metrics Service), prune what an earlier install left, and wait until it is Available",
		Long: `Install holdfast's operator into the current kube context with server-side apply:
the namespace holdfast-system, the CRDs, a ClusterRole with no wildcards and no access to
Secrets, the operator Deployment (two replicas, leader election, non-root, read-only root
filesystem), its PodDisruptionBudget and its metrics Service. These are the objects of
config/default, so "kubectl apply --server-side -k config/default" installs the same.

Install records what it applied as an ApplySet, as "kubectl apply --prune --applyset"
does: each object is labelled applyset.kubernetes.io/part-of, and the Secret
holdfast-system/holdfast-install lists their kinds and namespaces. Running install again
upgrades in place and prunes: it deletes what an earlier install applied that the
manifests no longer hold, except CustomResourceDefinitions, which it names and keeps
(deleting one deletes every object of its kind). It then waits, up to --timeout, until
the operator Deployment has every replica of the new version Available, and says so.

With --dry-run nothing is sent: the manifests are printed for review or for
"kubectl apply --server-side -f -", as YAML documents, or with -o json (or jsonpath,
go-template) as one v1 List. -f installs manifests of your own instead, such as those of
--dry-run, edited. "holdfast uninstall" removes it all again.

The operator always goes into holdfast-system, the namespace its RBAC and leader election
are written for: -n naming another namespace is refused. The drain slot Leases and the
drainers' Role are in a namespace of their own, holdfast-drain, away from the operator's
leader Lease.`,
		Example: `  holdfast install
  holdfast install --dry-run | kubectl apply --server-side -f -
  holdfast install --dry-run -o json
  holdfast install --image registry.example.com/holdfast:v0.1.0
  holdfast install --dry-run > holdfast.yaml && holdfast install -f holdfast.yaml --timeout 10m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(cmd); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "print the manifests instead of applying them")
	cmd.Flags().StringVar(&o.Image, "image", "", "operator image to run instead of the released one")
	cmd.Flags().StringVarP(&o.Filename, "filename", "f", "", "install the manifests in this file (such as --dry-run's, edited) instead of the embedded ones; - reads standard input")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 5*time.Minute, "how long to wait for the operator Deployment to be Available; 0 does not wait")
	o.output.addFlags(cmd)
	return cmd
}

// Validate refuses flags install would otherwise ignore.
func (o *InstallOptions) Validate(cmd *cobra.Command) error {
	if ns := *o.configFlags.Namespace; cmd.Flags().Changed("namespace") && ns != installNamespace {
		return fmt.Errorf("-n %s: install puts the operator in %s, the namespace its RBAC and leader election are written for", ns, installNamespace)
	}
	if cmd.Flags().Changed("output") && !o.DryRun {
		return errors.New("-o prints the manifests of --dry-run: add --dry-run")
	}
	var err error
	o.printer, err = o.output.printer()
	return err
}

// Run prints or applies the manifests.
func (o *InstallOptions) Run(ctx context.Context) error {
	objs, err := o.manifests()
	if err != nil {
		return err
	}
	if o.Image != "" {
		if err := setImage(objs, o.Image); err != nil {
			return err
		}
	}
	if o.DryRun {
		return o.print(objs)
	}
	return o.apply(ctx, objs)
}

// manifests reads the objects to install, in apply order.
func (o *InstallOptions) manifests() ([]*unstructured.Unstructured, error) {
	if o.Filename == "" {
		objs, err := config.Objects()
		if err != nil {
			return nil, fmt.Errorf("reading the embedded manifests: %w", err)
		}
		return objs, nil
	}
	var data []byte
	var err error
	if o.Filename == "-" {
		data, err = io.ReadAll(o.In)
	} else {
		data, err = os.ReadFile(o.Filename)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the manifests: %w", err)
	}
	objs, err := config.Decode(o.Filename, data)
	if err != nil {
		return nil, err
	}
	config.InApplyOrder(objs)
	return objs, nil
}

// print writes the manifests: YAML as one document per object, the other formats over
// one v1 List, as kubectl get prints several objects.
func (o *InstallOptions) print(objs []*unstructured.Unstructured) error {
	if o.printer == nil {
		o.printer = &printers.YAMLPrinter{}
	}
	switch o.printer.(type) {
	case *printers.YAMLPrinter, *printers.KYAMLPrinter:
		for _, u := range objs {
			if err := o.printer.PrintObj(u, o.Out); err != nil {
				return err
			}
		}
		return nil
	}
	list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List"}}
	for _, u := range objs {
		list.Items = append(list.Items, *u)
	}
	return o.printer.PrintObj(list, o.Out)
}

// setImage points the operator Deployment's containers at image.
func setImage(objs []*unstructured.Unstructured, image string) error {
	for _, u := range objs {
		if u.GetKind() != "Deployment" {
			continue
		}
		containers, _, err := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		if err != nil {
			return fmt.Errorf("deployment %s: %w", u.GetName(), err)
		}
		for _, c := range containers {
			c.(map[string]any)["image"] = image
		}
		if err := unstructured.SetNestedSlice(u.Object, containers, "spec", "template", "spec", "containers"); err != nil {
			return err
		}
	}
	return nil
}

// installClients are the clients install and uninstall use.
type installClients struct {
	kube   kubernetes.Interface
	dyn    dynamic.Interface
	mapper meta.RESTMapper
}

func connectInstall(flags *genericclioptions.ConfigFlags) (*installClients, error) {
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the kube context: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disco, err := flags.ToDiscoveryClient()
	if err != nil {
		return nil, err
	}
	return &installClients{kube: kube, dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(disco)}, nil
}

// resource is the client of u's kind and namespace.
func (c *installClients) resource(gk schema.GroupKind, namespace string) (dynamic.ResourceInterface, *meta.RESTMapping, error) {
	mapping, err := c.mapper.RESTMapping(gk)
	if err != nil {
		return nil, nil, err
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		return c.dyn.Resource(mapping.Resource).Namespace(namespace), mapping, nil
	}
	return c.dyn.Resource(mapping.Resource), mapping, nil
}

// apply applies objs as the members of install's ApplySet, deletes the members an
// earlier install applied that objs no longer hold, and waits for the Deployments.
// The parent records the kinds and namespaces of the old set and the new together
// while both may be in the cluster, and of the new alone once the old is pruned: an
// install stopped at any point leaves every member where the next one looks.
func (o *InstallOptions) apply(ctx context.Context, objs []*unstructured.Unstructured) error {
	c, err := connectInstall(o.configFlags)
	if err != nil {
		return err
	}
	id := installSetID()
	old, _, err := readParent(ctx, c.kube)
	if err != nil {
		return err
	}
	record := recordOf(objs, installNamespace)
	parentWritten := false
	for _, u := range objs {
		// The parent lives in installNamespace: the Namespaces come first.
		if !parentWritten && u.GetKind() != "Namespace" {
			if err := writeParent(ctx, c.kube, id, old.union(record)); err != nil {
				return err
			}
			parentWritten = true
		}
		u = u.DeepCopy()
		labels := u.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[applySetPartOfLabel] = id
		u.SetLabels(labels)
		gvk := u.GroupVersionKind()
		r, mapping, err := c.resource(gvk.GroupKind(), u.GetNamespace())
		if err != nil {
			return fmt.Errorf("%s %s: %w", gvk.Kind, u.GetName(), err)
		}
		if _, err := r.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: installFieldManager, Force: true}); err != nil {
			return fmt.Errorf("applying %s %s: %w", gvk.Kind, u.GetName(), err)
		}
		fmt.Fprintf(o.Out, "%s/%s applied\n", mapping.Resource.Resource, u.GetName())
	}
	if !parentWritten {
		return errors.New("the manifests hold nothing but Namespaces: no operator to install")
	}
	if err := o.prune(ctx, c, id, old.union(record), objs); err != nil {
		return err
	}
	if err := writeParent(ctx, c.kube, id, record); err != nil {
		return err
	}
	if o.Timeout == 0 {
		return nil
	}
	for _, u := range objs {
		if u.GroupVersionKind().GroupKind() == deploymentKind {
			if err := waitAvailable(ctx, c.kube, o.Out, u.GetNamespace(), u.GetName(), o.Timeout); err != nil {
				return err
			}
		}
	}
	return nil
}

// readParent returns the record of install's ApplySet parent and whether there is one.
// A parent another tool manages is refused: its set is not holdfast's to prune.
func readParent(ctx context.Context, kube kubernetes.Interface) (applySetRecord, bool, error) {
	parent, err := kube.CoreV1().Secrets(installNamespace).Get(ctx, applySetParentName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return applySetRecord{}, false, nil
	}
	if err != nil {
		return applySetRecord{}, false, fmt.Errorf("reading the ApplySet parent secret %s/%s: %w", installNamespace, applySetParentName, err)
	}
	if tool := parent.Annotations[applySetToolingAnnotation]; !strings.HasPrefix(tool, applySetTool+"/") {
		return applySetRecord{}, false, fmt.Errorf("secret %s/%s is the parent of an ApplySet of %q (annotation %s), not of holdfast install: delete it or use that tool",
			installNamespace, applySetParentName, tool, applySetToolingAnnotation)
	}
	return parseRecord(parent.Annotations), true, nil
}

// writeParent applies install's ApplySet parent with the record.
func writeParent(ctx context.Context, kube kubernetes.Interface, id string, record applySetRecord) error {
	annotations := record.annotations()
	annotations[applySetToolingAnnotation] = applySetTool + "/" + buildinfo.Get().Version
	parent := corev1ac.Secret(applySetParentName, installNamespace).
		WithLabels(map[string]string{applySetIDLabel: id}).
		WithAnnotations(annotations)
	if _, err := kube.CoreV1().Secrets(installNamespace).Apply(ctx, parent, metav1.ApplyOptions{FieldManager: installFieldManager, Force: true}); err != nil {
		return fmt.Errorf("writing the ApplySet parent secret %s/%s: %w", installNamespace, applySetParentName, err)
	}
	return nil
}

// members lists the objects of the set id in the kinds and namespaces of record.
// A kind the cluster no longer serves has no objects left.
func members(ctx context.Context, c *installClients, id string, record applySetRecord) (map[objectKey]*meta.RESTMapping, error) {
	found := map[objectKey]*meta.RESTMapping{}
	selector := metav1.ListOptions{LabelSelector: applySetPartOfLabel + "=" + id}
	for _, gk := range record.kinds {
		mapping, err := c.mapper.RESTMapping(gk)
		if meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("listing the %s of holdfast install: %w", gk.Kind, err)
		}
		var lists []dynamic.ResourceInterface
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			for _, ns := range append([]string{installNamespace}, record.namespaces...) {
				lists = append(lists, c.dyn.Resource(mapping.Resource).Namespace(ns))
			}
		} else {
			lists = append(lists, c.dyn.Resource(mapping.Resource))
		}
		for _, r := range lists {
			list, err := r.List(ctx, selector)
			if err != nil {
				return nil, fmt.Errorf("listing the %s of holdfast install: %w", mapping.Resource.Resource, err)
			}
			for _, u := range list.Items {
				found[objectKey{kind: gk, namespace: u.GetNamespace(), name: u.GetName()}] = mapping
			}
		}
	}
	return found, nil
}

// prune deletes the members of the set that objs no longer hold.
func (o *InstallOptions) prune(ctx context.Context, c *installClients, id string, record applySetRecord, objs []*unstructured.Unstructured) error {
	found, err := members(ctx, c, id, record)
	if err != nil {
		return err
	}
	prune, kept := toPrune(slices.Collect(maps.Keys(found)), objs)
	for _, k := range prune {
		r, mapping, err := c.resource(k.kind, k.namespace)
		if err != nil {
			return err
		}
		err = r.Delete(ctx, k.name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("pruning %s %s: %w", k.kind.Kind, k.name, err)
		}
		fmt.Fprintf(o.Out, "%s/%s pruned\n", mapping.Resource.Resource, k.name)
	}
	for _, k := range kept {
		fmt.Fprintf(o.Out, "%s/%s kept: the manifests no longer hold it, but deleting it would delete every object of its kind; delete it yourself if you mean to\n",
			found[k].Resource.Resource, k.name)
	}
	return nil
}

// waitAvailable waits until the Deployment has rolled out, as kubectl rollout status
// waits, and is Available: every replica of the current template, none older, and the
// Available condition True.
func waitAvailable(ctx context.Context, kube kubernetes.Interface, out io.Writer, namespace, name string, timeout time.Duration) error {
	what := fmt.Sprintf("deployment %s/%s", namespace, name)
	fmt.Fprintf(out, "waiting up to %s for %s to be Available\n", timeout, what)
	var last *appsv1.Deployment
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		d, err := kube.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("reading %s: %w", what, err)
		}
		last = d
		return rolledOut(d), nil
	})
	if err == nil {
		fmt.Fprintf(out, "%s Available: %d of %d replicas\n", what, last.Status.AvailableReplicas, ptr.Deref(last.Spec.Replicas, 1))
		return nil
	}
	if last == nil || !wait.Interrupted(err) {
		return err
	}
	return fmt.Errorf("%s is not Available after %s: %s; see kubectl -n %s describe deployment %s, and its pods' events",
		what, timeout, rolloutState(last), namespace, name)
}

// rolledOut says whether d runs its current template on every replica, and is Available.
func rolledOut(d *appsv1.Deployment) bool {
	want := ptr.Deref(d.Spec.Replicas, 1)
	s := d.Status
	return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.Replicas == want &&
		s.AvailableReplicas == want && deploymentAvailable(d).Status == corev1.ConditionTrue
}

func deploymentAvailable(d *appsv1.Deployment) appsv1.DeploymentCondition {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			return c
		}
	}
	return appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionUnknown, Reason: "NotReported"}
}

// rolloutState says where a Deployment's rollout is.
func rolloutState(d *appsv1.Deployment) string {
	c := deploymentAvailable(d)
	state := fmt.Sprintf("%d of %d replicas updated, %d available, %d in all; Available=%s (%s)",
		d.Status.UpdatedReplicas, ptr.Deref(d.Spec.Replicas, 1), d.Status.AvailableReplicas, d.Status.Replicas, c.Status, c.Reason)
	if c.Message != "" {
		state += ": " + c.Message
	}
	return state
}
