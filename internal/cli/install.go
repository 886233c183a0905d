package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/holdfast-dev/holdfast/config"
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
		Short: "Install the operator: CRDs, RBAC, Deployment, budget and metrics Service",
		Long: `Install holdfast's operator into the current kube context with server-side apply:
the namespace holdfast-system, the CRDs, a ClusterRole with no wildcards and no access to
Secrets, the operator Deployment (two replicas, leader election, non-root, read-only root
filesystem), its PodDisruptionBudget and its metrics Service. These are the objects of
config/default, so "kubectl apply --server-side -k config/default" installs the same.

With --dry-run nothing is sent: the manifests are printed for review or for
"kubectl apply --server-side -f -", as YAML documents, or with -o json (or jsonpath,
go-template) as one v1 List. Running install again upgrades in place.

The operator always goes into holdfast-system, the namespace its RBAC and leader election
are written for: -n naming another namespace is refused. The drain slot Leases and the
drainers' Role are in a namespace of their own, holdfast-drain, away from the operator's
leader Lease.`,
		Example: `  holdfast install
  holdfast install --dry-run | kubectl apply --server-side -f -
  holdfast install --dry-run -o json
  holdfast install --image registry.example.com/holdfast:v0.1.0`,
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
	objs, err := config.Objects()
	if err != nil {
		return fmt.Errorf("reading the embedded manifests: %w", err)
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

func (o *InstallOptions) apply(ctx context.Context, objs []*unstructured.Unstructured) error {
	cfg, err := o.configFlags.ToRESTConfig()
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	disco, err := o.configFlags.ToDiscoveryClient()
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(disco)
	for _, u := range objs {
		gvk := u.GroupVersionKind()
		mapping, err := mapper.RESTMapping(schema.GroupKind{Group: gvk.Group, Kind: gvk.Kind}, gvk.Version)
		if err != nil {
			return fmt.Errorf("%s %s: %w", gvk.Kind, u.GetName(), err)
		}
		var r dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
		if u.GetNamespace() != "" {
			r = dyn.Resource(mapping.Resource).Namespace(u.GetNamespace())
		}
		if _, err := r.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: installFieldManager, Force: true}); err != nil {
			return fmt.Errorf("applying %s %s: %w", gvk.Kind, u.GetName(), err)
		}
		fmt.Fprintf(o.Out, "%s/%s applied\n", mapping.Resource.Resource, u.GetName())
	}
	return nil
}
