package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"

	"github.com/holdfast-dev/holdfast/internal/operatorcli"
)

// kubectlGlobals are kubectl's global flags beyond the connection flags: klog's -v and
// --vmodule, --warnings-as-errors and --match-server-version. A script that gives them to
// kubectl gives them to holdfast too, and a flag holdfast refused would fail the script.
type kubectlGlobals struct {
	warningsAsErrors   bool
	matchServerVersion bool
	// warnings prints the API server's warnings as kubectl does, once each, and counts
	// them for --warnings-as-errors.
	warnings interface {
		rest.WarningHandler
		WarningCount() int
	}
}

func newKubectlGlobals(errOut io.Writer) *kubectlGlobals {
	return &kubectlGlobals{warnings: rest.NewWarningWriter(errOut, rest.WarningWriterOptions{Deduplicate: true})}
}

// addFlags adds the flags to fs and has every client flags makes report its warnings.
func (g *kubectlGlobals) addFlags(fs *pflag.FlagSet, flags *genericclioptions.ConfigFlags) {
	operatorcli.AddKlogFlags(fs)
	fs.BoolVar(&g.warningsAsErrors, "warnings-as-errors", false, "treat warnings received from the server as errors and exit with a non-zero exit code (as kubectl)")
	fs.BoolVar(&g.matchServerVersion, "match-server-version", false,
		"require the server to run the Kubernetes minor release holdfast's client is built for ("+ClientRelease+"), as kubectl requires its own")
	flags.WrapConfigFn = func(c *rest.Config) *rest.Config {
		c.WarningHandler = g.warnings
		return c
	}
}

// checkServerVersion is --match-server-version's check, made before a command runs.
func (g *kubectlGlobals) checkServerVersion(flags *genericclioptions.ConfigFlags) error {
	if !g.matchServerVersion {
		return nil
	}
	disco, err := flags.ToDiscoveryClient()
	if err != nil {
		return fmt.Errorf("--match-server-version: %w", err)
	}
	server, err := disco.ServerVersion()
	if err != nil {
		return fmt.Errorf("--match-server-version: reading the server's version: %w", err)
	}
	if got := server.Major + "." + strings.TrimSuffix(server.Minor, "+"); got != ClientRelease {
		return fmt.Errorf("--match-server-version: the server runs Kubernetes %s, holdfast's client is built for %s", server.GitVersion, ClientRelease)
	}
	return nil
}

// warned is --warnings-as-errors' verdict once a command has run.
func (g *kubectlGlobals) warned() error {
	if !g.warningsAsErrors {
		return nil
	}
	switch n := g.warnings.WarningCount(); n {
	case 0:
		return nil
	case 1:
		return errors.New("1 warning received")
	default:
		return fmt.Errorf("%d warnings received", n)
	}
}

// ClientRelease is the Kubernetes minor release of the client-go holdfast is built with
// (client-go v0.37.x is Kubernetes 1.37); TestClientRelease keeps it in step with go.mod.
const ClientRelease = "1.37"
