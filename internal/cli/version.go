package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/holdfast-dev/holdfast/internal/buildinfo"
)

// VersionOptions holds the flags of `holdfast version`.
type VersionOptions struct {
	// Client leaves the cluster out: only the binary's version.
	Client bool
	// Info is the version to print; Complete reads the running binary's, and the
	// operators' unless Client.
	Info VersionReport

	output      *outputFlags
	printer     printers.ResourcePrinter
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams
}

// VersionReport is the binary's version and, unless --client, the running operators'.
type VersionReport struct {
	buildinfo.Info
	Operators []OperatorVersion `json:"operators,omitempty"`
}

// operatorLookupTimeout bounds the look for the operator: version must answer even when
// the cluster does not.
const operatorLookupTimeout = 10 * time.Second

// NewVersionCommand returns `holdfast version`.
func NewVersionCommand(streams genericiooptions.IOStreams, flags *genericclioptions.ConfigFlags) *cobra.Command {
	o := &VersionOptions{IOStreams: streams, output: newOutputFlags("text"), configFlags: flags}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print holdfast's version, and the version of the operator running in the cluster",
		Long: `Print holdfast's version, commit, build date and Go version, and the version of each
holdfast operator running in the current kube context's cluster: the Deployments labelled
` + operatorSelector + `, with their image and readiness.
When there is no cluster, no operator or no right to list Deployments, it says so and
still exits 0. --client leaves the cluster out.`,
		Example: "  holdfast version\n  holdfast version --client\n  holdfast version -o json\n  holdfast version -o jsonpath='{.operators[0].version}'",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			o.Complete(contextOf(cmd))
			return o.Run()
		},
	}
	cmd.Flags().BoolVar(&o.Client, "client", false, "print only holdfast's own version, without looking at the cluster")
	o.output.addFlags(cmd)
	return cmd
}

// Complete reads the running binary's version and, unless Client, the operators'.
func (o *VersionOptions) Complete(ctx context.Context) {
	o.Info = VersionReport{Info: buildinfo.Get()}
	if o.Client {
		return
	}
	var c cluster
	if err := c.connect(o.configFlags); err != nil {
		o.Info.Operators = []OperatorVersion{{Unknown: fmt.Sprintf("no cluster: %v", err)}}
		return
	}
	ctx, cancel := context.WithTimeout(ctx, operatorLookupTimeout)
	defer cancel()
	o.Info.Operators = findOperators(ctx, c.kube)
}

// Validate checks the flags.
func (o *VersionOptions) Validate() error {
	var err error
	o.printer, err = o.output.printer()
	return err
}

// Run prints the version.
func (o *VersionOptions) Run() error {
	if o.printer != nil {
		return printValue(o.printer, o.Info, o.Out)
	}
	w := &errWriter{w: o.Out}
	w.println(fmt.Sprintf("holdfast %s\n  commit:     %s\n  build date: %s\n  go:         %s\n  platform:   %s",
		o.Info.Version, orUnknown(o.Info.Commit), orUnknown(o.Info.BuildDate), o.Info.GoVersion, o.Info.Platform))
	for _, op := range o.Info.Operators {
		if op.Unknown != "" {
			w.println("operator: unknown: " + op.Unknown)
			continue
		}
		w.println(fmt.Sprintf("operator %s\n  deployment: %s\n  image:      %s\n  ready:      %s", orUnknown(op.Version), op.Deployment, op.Image, op.Ready))
	}
	return w.err
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
