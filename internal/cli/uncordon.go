package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/holdfast-dev/holdfast/internal/drain"
)

// UncordonOptions holds the flags and collaborators of `holdfast uncordon`.
type UncordonOptions struct {
	Nodes    []string
	Selector string

	configFlags *genericclioptions.ConfigFlags
	cluster     cluster
	genericiooptions.IOStreams
}

// NewUncordonCommand returns `holdfast uncordon`.
func NewUncordonCommand(streams genericiooptions.IOStreams, flags *genericclioptions.ConfigFlags) *cobra.Command {
	return newUncordonCommand(&UncordonOptions{IOStreams: streams, configFlags: flags})
}

// newUncordonCommand binds the flags to o; tests give one with a client.
func newUncordonCommand(o *UncordonOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "uncordon NODE... | --selector SEL",
		Short: "Make nodes schedulable again, as kubectl uncordon, and clear what holdfast drains left on them",
		Long: `Mark nodes schedulable, as kubectl uncordon does and with its lines (node/N uncordoned,
node/N already uncordoned), and clear what holdfast drains left on them: the conditions
DrainInProgress and Drained holdfast wrote, the taint holdfast.dev/drain-queued and the
annotation holdfast.dev/drain-run. Giving a node back ends every drain's claim on it.

The operator clears the same once a node is uncordoned or the drain that marked it is
gone; this command is for clusters that run holdfast drain without the operator.

Needs nodes get and patch, and nodes/status patch (the ClusterRole holdfast-drainer).`,
		Example: `  # Give back a node a drain left cordoned.
  holdfast uncordon node-1

  # Every node of a pool.
  holdfast uncordon --selector pool=blue`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Nodes = args
			if err := o.Validate(); err != nil {
				return err
			}
			if err := o.Complete(); err != nil {
				return err
			}
			ctx := contextOf(cmd)
			return o.Run(ctx)
		},
	}
	cmd.Flags().StringVarP(&o.Selector, "selector", "l", "", "uncordon the nodes with these labels (as kubectl), besides any named")
	return cmd
}

// Complete connects to the cluster.
func (o *UncordonOptions) Complete() error { return o.cluster.connect(o.configFlags) }

// Validate checks the flags.
func (o *UncordonOptions) Validate() error {
	if len(o.Nodes) == 0 && o.Selector == "" {
		return errors.New("name at least one node, or give --selector")
	}
	if o.Selector != "" {
		if _, err := labels.Parse(o.Selector); err != nil {
			return fmt.Errorf("--selector: %w", err)
		}
	}
	return nil
}

// Run uncordons each node, and says so and what it cleared, in kubectl's words first.
func (o *UncordonOptions) Run(ctx context.Context) error {
	nodes, err := resolveNodes(ctx, o.cluster.kube, o.Nodes, o.Selector)
	if err != nil {
		return err
	}
	w := &errWriter{w: o.Out}
	var errs []error
	for _, node := range nodes {
		cordoned, left, err := drain.Uncordon(ctx, o.cluster.kube, node)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if cordoned {
			w.println("node/" + node + " uncordoned")
		} else {
			w.println("node/" + node + " already uncordoned")
		}
		if !left.Empty() {
			w.println("node/" + node + ": removed " + left.String())
		}
	}
	return errors.Join(append(errs, w.err)...)
}
