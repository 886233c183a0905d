//go:build e2e

package audit_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/holdfast-dev/holdfast/internal/cli"
	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

// runVersion runs `holdfast version -o json` in-process against the testbed.
func runVersion(f *framework.Framework) cli.VersionReport {
	f.T.Helper()
	var out, errOut bytes.Buffer
	cmd := cli.NewRootCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	cmd.SetArgs([]string{"--kubeconfig", f.Kubeconfig, "version", "-o", "json"})
	if err := cmd.Execute(); err != nil {
		f.T.Fatalf("holdfast version: %v\n%s", err, errOut.String())
	}
	var r cli.VersionReport
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		f.T.Fatalf("holdfast version -o json printed something else: %v\n%s", err, out.String())
	}
	return r
}

// TestVersionShowsOperator reads the operator's version from its Deployment, as the chart
// labels it, through the API server: first none is installed, then one is, Ready.
func TestVersionShowsOperator(t *testing.T) {
	f := framework.New(t)
	if got := runVersion(f).Operators; len(got) != 1 || !strings.HasPrefix(got[0].Unknown, "not installed") {
		t.Errorf("before the install: operators %+v, want one saying not installed", got)
	}
	d := f.Deployment("holdfast", 1)
	d.Labels["app.kubernetes.io/name"] = "holdfast"
	d.Labels["app.kubernetes.io/component"] = "operator"
	d.Spec.Template.Spec.Containers[0].Image = "registry.example/holdfast:v9.8.7-e2e"
	f.Create(d)
	f.WaitReady(d)
	want := cli.OperatorVersion{Version: "v9.8.7-e2e", Deployment: f.Namespace + "/holdfast", Image: "registry.example/holdfast:v9.8.7-e2e", Ready: "1/1"}
	if got := runVersion(f).Operators; len(got) != 1 || got[0] != want {
		t.Errorf("operators %+v, want [%+v]", got, want)
	}
}
