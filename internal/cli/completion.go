package cli

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/metadata"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// completionTimeout bounds the API calls of a completion: a shell waits on them at every
// tab, and an unreachable cluster should cost a moment, not the client's 32 s default.
const completionTimeout = 5 * time.Second

// registerConfigCompletions completes the connection flags every command takes:
// --namespace with the cluster's namespaces, --context, --cluster and --user with the
// kubeconfig's names.
func registerConfigCompletions(root *cobra.Command, flags *genericclioptions.ConfigFlags) {
	_ = root.RegisterFlagCompletionFunc("namespace", func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return listNames(cmd.Context(), flags, corev1.SchemeGroupVersion.WithResource("namespaces"), toComplete)
	})
	kubeconfig := func(names func(*clientcmdapi.Config) []string) cobra.CompletionFunc {
		return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			raw, err := flags.ToRawKubeConfigLoader().RawConfig()
			if err != nil {
				return nil, cobra.ShellCompDirectiveError
			}
			out := names(&raw)
			slices.Sort(out)
			return out, cobra.ShellCompDirectiveNoFileComp
		}
	}
	_ = root.RegisterFlagCompletionFunc("context", kubeconfig(func(c *clientcmdapi.Config) []string { return slices.Collect(maps.Keys(c.Contexts)) }))
	_ = root.RegisterFlagCompletionFunc("cluster", kubeconfig(func(c *clientcmdapi.Config) []string { return slices.Collect(maps.Keys(c.Clusters)) }))
	_ = root.RegisterFlagCompletionFunc("user", kubeconfig(func(c *clientcmdapi.Config) []string { return slices.Collect(maps.Keys(c.AuthInfos)) }))
}

// completeNodeNames completes arguments with the names of the cluster's nodes, leaving
// out those already given.
func completeNodeNames(flags *genericclioptions.ConfigFlags) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		names, directive := listNames(cmd.Context(), flags, corev1.SchemeGroupVersion.WithResource("nodes"), toComplete)
		return slices.DeleteFunc(names, func(n string) bool { return slices.Contains(args, n) }), directive
	}
}

// listNames lists the names of a cluster-scoped resource in the cluster of the kube
// context (metadata only), keeping those that start with toComplete, sorted. A cluster
// that cannot be reached completes nothing.
func listNames(ctx context.Context, flags *genericclioptions.ConfigFlags, resource schema.GroupVersionResource, toComplete string) ([]string, cobra.ShellCompDirective) {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, completionTimeout)
	defer cancel()
	config, err := flags.ToRESTConfig()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	client, err := metadata.NewForConfig(config)
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	list, err := client.Resource(resource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var names []string
	for _, item := range list.Items {
		if strings.HasPrefix(item.Name, toComplete) {
			names = append(names, item.Name)
		}
	}
	slices.Sort(names)
	return names, cobra.ShellCompDirectiveNoFileComp
}
