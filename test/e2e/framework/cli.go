package framework

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/holdfast-dev/holdfast/internal/audit"
	"github.com/holdfast-dev/holdfast/internal/cli"
)

// Audit runs `holdfast audit -n NS -o json` in-process against the testbed, in the
// test's namespace, and returns its report and what it wrote on standard error (its
// notes). Findings are no failure; any other error is.
func (f *Framework) Audit() (audit.Report, string) {
	f.T.Helper()
	var out, errOut bytes.Buffer
	cmd := cli.NewRootCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	cmd.SetArgs([]string{"--kubeconfig", f.Kubeconfig, "audit", "-n", f.Namespace, "-o", "json"})
	err := cmd.Execute()
	var coded *cli.ExitCodeError
	if err != nil && !(errors.As(err, &coded) && coded.Code == cli.ExitFindings) {
		f.T.Fatalf("holdfast audit: %v\n%s", err, errOut.String())
	}
	var r audit.Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		f.T.Fatalf("holdfast audit -o json printed something else: %v\n%s", err, out.String())
	}
	return r, errOut.String()
}
