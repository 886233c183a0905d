// Command kube is one binary for the Kubernetes components the testbed runs, so that
// their shared code is linked once: "kube apiserver|controller-manager|scheduler
// FLAGS..." starts a control-plane component, and "kube kubectl ARGS..." (or the
// binary called through a link named kubectl) is kubectl of the same release.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	_ "time/tzdata" // CronJob time zones

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	kubectl "k8s.io/kubectl/pkg/cmd"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
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
	args := os.Args[1:]
	if filepath.Base(os.Args[0]) == "kubectl" {
		args = append([]string{"kubectl"}, args...)
	}
	if len(args) > 0 && args[0] == "kubectl" {
		cmd := kubectl.NewDefaultKubectlCommand()
		cmd.SetArgs(args[1:])
		if err := cli.RunNoErrOutput(cmd); err != nil {
			cmdutil.CheckErr(err)
		}
		return
	}
	if len(args) == 0 || components[args[0]] == nil {
		fmt.Fprintln(os.Stderr, "usage: kube apiserver|controller-manager|scheduler|kubectl [flags]")
		os.Exit(2)
	}
	cmd := components[args[0]]()
	cmd.SetArgs(args[1:])
	os.Exit(cli.Run(cmd))
}
