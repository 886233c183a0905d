// Command kube is one binary for the three Kubernetes control-plane components, so
// that the testbed links their shared code once: run it as
// "kube apiserver|controller-manager|scheduler FLAGS...".
package main

import (
	"fmt"
	"os"
	_ "time/tzdata" // CronJob time zones

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

var components = map[string]func() *cobra.Command{
	"apiserver":          apiserver.NewAPIServerCommand,
	"controller-manager": controllermanager.NewControllerManagerCommand,
	"scheduler":          func() *cobra.Command { return scheduler.NewSchedulerCommand() },
}

func main() {
	if len(os.Args) < 2 || components[os.Args[1]] == nil {
		fmt.Fprintln(os.Stderr, "usage: kube apiserver|controller-manager|scheduler [flags]")
		os.Exit(2)
	}
	cmd := components[os.Args[1]]()
	cmd.SetArgs(os.Args[2:])
	os.Exit(cli.Run(cmd))
}
