// Command holdfast keeps Kubernetes workloads available through node drains,
// upgrades, autoscaler consolidation and node crashes. It is also installable as the
// kubectl plugin kubectl-holdfast.
package main

import (
	"os"

	"github.com/holdfast-dev/holdfast/internal/cli"
)

func main() {
	os.Exit(cli.Execute(cli.DefaultStreams()))
}
