package operatorcli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- {name: one, cluster: {server: "https://one.example:6443"}}
- {name: two, cluster: {server: "https://two.example:6443"}}
users:
- {name: me, user: {token: secret}}
contexts:
- {name: one, context: {cluster: one, user: me}}
- {name: two, context: {cluster: two, user: me}}
current-context: one
`

// The operator-only binary's connection flags choose the kubeconfig, its context and
// impersonation as holdfast's do.
func TestConnectionFlags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	config := addConnectionFlags(fs, genericiooptions.NewTestIOStreamsDiscard())
	if err := fs.Parse([]string{"--kubeconfig", path, "--context", "two", "--as", "alice", "--as-user-extra", "team=a", "--as-user-extra", "team=b"}); err != nil {
		t.Fatal(err)
	}
	c, err := config()
	if err != nil {
		t.Fatal(err)
	}
	if c.Host != "https://two.example:6443" || c.BearerToken != "secret" || c.Impersonate.UserName != "alice" || c.WarningHandler == nil {
		t.Errorf("config: host %s, token %q, impersonating %q, warning handler %v", c.Host, c.BearerToken, c.Impersonate.UserName, c.WarningHandler)
	}
	if diff := cmp.Diff(map[string][]string{"team": {"a", "b"}}, c.Impersonate.Extra); diff != "" {
		t.Errorf("--as-user-extra (-want +got):\n%s", diff)
	}

	fs = pflag.NewFlagSet("test", pflag.ContinueOnError)
	config = addConnectionFlags(fs, genericiooptions.NewTestIOStreamsDiscard())
	if err := fs.Parse([]string{"--kubeconfig", path, "--as-user-extra", "team"}); err != nil {
		t.Fatal(err)
	}
	if _, err := config(); err == nil || !strings.Contains(err.Error(), "--as-user-extra") {
		t.Errorf("--as-user-extra team: got %v, want a refusal naming the flag", err)
	}
}
