package cli

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
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
