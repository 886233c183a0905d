package operatorcli

import (
	"flag"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/holdfast-dev/holdfast/internal/buildinfo"
)

// AddKlogFlags adds klog's -v and --vmodule, kubectl's global logging flags, to fs. They
// bind klog's process-wide settings; the operator reads them back (readKlogFlags).
func AddKlogFlags(fs *pflag.FlagSet) {
	logFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(logFlags)
	for _, name := range []string{"v", "vmodule"} {
		fs.AddFlag(pflag.PFlagFromGoFlag(logFlags.Lookup(name)))
	}
}

// NewRootCommand returns the command tree of the operator-only binary, the image's
// entrypoint: `holdfast operator` alone, with the connection flags and the klog flags
// holdfast takes, so that the manifests' `operator --flag...` run it unchanged. It leaves
// out the CLI's other commands and what links them (kustomize, the manifest reader's
// callers, the audit and the planner's output).
func NewRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	root := &cobra.Command{
		Use:           "holdfast",
		Short:         "Run holdfast's operator; the holdfast CLI has the other commands",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildinfo.Get().Version,
		// Shell completion is the CLI's; this binary runs in a container.
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.SetVersionTemplate("holdfast {{.Version}}\n")
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	conn := addConnectionFlags(root.PersistentFlags(), streams)
	AddKlogFlags(root.PersistentFlags())
	root.AddCommand(NewCommand(conn, streams))
	return root
}

// addConnectionFlags adds the connection flags kubectl and holdfast take (--kubeconfig,
// --context, --server, -n, ...), with client-go's own definitions rather than
// cli-runtime's, which would link kustomize. Like holdfast's, the configuration they make
// falls back to the in-cluster one and prints the API server's warnings once each.
func addConnectionFlags(fs *pflag.FlagSet, streams genericiooptions.IOStreams) RESTConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	fs.StringVar(&rules.ExplicitPath, clientcmd.RecommendedConfigPathFlag, "", "Path to the kubeconfig file to use for CLI requests.")
	overrides := &clientcmd.ConfigOverrides{}
	names := clientcmd.RecommendedConfigOverrideFlags("")
	// As cli-runtime's: -s for --server, and no basic authentication, which holdfast's
	// flags do not offer.
	names.ClusterOverrideFlags.APIServer.ShortName = "s"
	names.AuthOverrideFlags.Username.LongName, names.AuthOverrideFlags.Password.LongName = "", ""
	clientcmd.BindOverrideFlags(overrides, fs, names)
	var userExtra []string
	fs.StringArrayVar(&userExtra, "as-user-extra", nil, "User extras to impersonate for the operation, this flag can be repeated to specify multiple values for the same key.")
	warnings := rest.NewWarningWriter(streams.ErrOut, rest.WarningWriterOptions{Deduplicate: true})
	return func() (*rest.Config, error) {
		for _, extra := range userExtra {
			key, value, ok := strings.Cut(extra, "=")
			if !ok {
				return nil, fmt.Errorf("--as-user-extra %q: want KEY=VALUE", extra)
			}
			if overrides.AuthInfo.ImpersonateUserExtra == nil {
				overrides.AuthInfo.ImpersonateUserExtra = map[string][]string{}
			}
			overrides.AuthInfo.ImpersonateUserExtra[key] = append(overrides.AuthInfo.ImpersonateUserExtra[key], value)
		}
		c, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
		if err != nil {
			return nil, err
		}
		c.WarningHandler = warnings
		return c, nil
	}
}

// Execute runs the operator-only binary with os.Args and returns the process exit code.
func Execute(streams genericiooptions.IOStreams) int {
	if err := NewRootCommand(streams).Execute(); err != nil {
		fmt.Fprintln(streams.ErrOut, "holdfast:", err)
		return 1
	}
	return 0
}
