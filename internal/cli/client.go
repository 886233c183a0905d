package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/holdfast-dev/holdfast/internal/audit"
	"github.com/holdfast-dev/holdfast/internal/policy"
	"github.com/holdfast-dev/holdfast/internal/predict"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
	"github.com/holdfast-dev/holdfast/internal/snapshot/live"
)

// clientConfig reads the kube context for the commands that read or evict in bursts:
// a live snapshot lists every page of every kind at once (121 requests at 50,000 pods,
// which client-go's default of 5 a second after a burst of 10 would spread over 22 s), and
// a drain's evictions, their retries and its reads of workloads at hundreds of nodes would
// otherwise be paced by that default rather than by the API server's priority and
// fairness, which still protects it. Built-in kinds travel as protobuf, cheaper than JSON for the API server to
// encode and for holdfast to decode; the dynamic clients of holdfast's own kinds ask for
// JSON themselves.
func clientConfig(flags *genericclioptions.ConfigFlags) (*rest.Config, error) {
	config, err := flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the kube context: %w", err)
	}
	config = rest.CopyConfig(config)
	config.QPS, config.Burst = 50, 100
	config.ContentType = runtime.ContentTypeProtobuf
	config.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return config, nil
}

// cluster is the live cluster a command reads: kube serves Kubernetes' own kinds, dyn
// holdfast's (DisruptionPolicies, ClusterDisruptionPolicies, NodeCompanions), which no
// typed client of client-go knows.
type cluster struct {
	kube kubernetes.Interface
	dyn  dynamic.Interface
	// settings are the operator's flags, as plan and audit are told them.
	settings policy.Settings
}

// connect makes the clients of the kube context, unless c has them already (a test's).
func (c *cluster) connect(flags *genericclioptions.ConfigFlags) error {
	if c.kube != nil {
		return nil
	}
	config, err := clientConfig(flags)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(config)
	if err != nil {
		return fmt.Errorf("creating a client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(config)
	if err != nil {
		return fmt.Errorf("creating a client: %w", err)
	}
	c.kube, c.dyn = kube, dyn
	return nil
}

// load reads the cluster as the core sees it, and notes on notes what it was not
// allowed to read. audit, plan and drain (its dry run
// included) all read a live cluster here, so that what plan predicts is what the drain
// does: every kind holdfast reads, its own included (none where its CRDs are not
// installed), made by predict.Operator into the cluster the operator will make of it at
// now, with the budgets its DisruptionPolicies keep; and the operator's decision for
// each policy in effect.
func (c *cluster) load(ctx context.Context, namespace string, now time.Time, notes io.Writer) (snapshot.Predicted, []predict.Outcome, error) {
	snap, err := live.Load(ctx, c.kube, c.dyn, namespace)
	if err != nil {
		return snapshot.Predicted{}, nil, err
	}
	reportInput(notes, audit.Input{Skipped: snap.Skipped})
	predicted, outcomes := predict.Operator(snap, now, c.settings)
	return predicted, outcomes, nil
}
