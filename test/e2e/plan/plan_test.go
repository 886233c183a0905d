//go:build e2e

// Package plan_test runs holdfast plan against the testbed's live state: a budget over a
// single replica, which never allows an eviction, must be reported as the blocker of the
// node its pod runs on, with the numbers the disruption controller itself computed.
package plan_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"

	"github.com/holdfast-dev/holdfast/internal/cli"
	"github.com/holdfast-dev/holdfast/internal/plan"
	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{Nodes: 3, Zones: 3})
}

// report is `holdfast plan drain -o json`.
type report struct {
	Waves   [][]string     `json:"waves"`
	Blocked []plan.Blocker `json:"blocked"`
}

// planDrain runs `holdfast plan drain ARGS -o json` in-process against the testbed and
// returns the report and the exit code.
func planDrain(f *framework.Framework, args ...string) (report, int) {
	f.T.Helper()
	var out, errOut bytes.Buffer
	cmd := cli.NewRootCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	cmd.SetArgs(append([]string{"--kubeconfig", f.Kubeconfig, "plan", "drain", "-o", "json"}, args...))
	code := cli.ExitOK
	if err := cmd.Execute(); err != nil {
		var coded *cli.ExitCodeError
		if !errors.As(err, &coded) {
			f.T.Fatalf("holdfast plan drain: %v\n%s", err, errOut.String())
		}
		code = coded.Code
	}
	var r report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		f.T.Fatalf("holdfast plan drain -o json printed something else: %v\n%s", err, out.String())
	}
	return r, code
}

func TestSingleReplicaBudgetBlocksItsNode(t *testing.T) {
	f := framework.New(t)
	mysvc := f.Deployment("mysvc", 1)
	f.Create(mysvc)
	budget := f.PDB("mysvc", "mysvc", 0)
	budget.Spec.MaxUnavailable, budget.Spec.MinAvailable = nil, ptr.To(intstr.FromInt32(1))
	f.Create(budget)
	f.WaitReady(mysvc)
	f.WaitBudget("mysvc", 0)

	var node string
	f.Eventually(time.Minute, "the pod of mysvc on a node", func(ctx context.Context) (bool, error) {
		pods, err := f.Pods(ctx, framework.SelectorOf(mysvc))
		if err != nil || len(pods) != 1 {
			return false, err
		}
		node = pods[0].Spec.NodeName
		return node != "", nil
	})

	r, code := planDrain(f, "--all")
	if code != cli.ExitFindings {
		t.Errorf("exit %d, want %d: a node is blocked", code, cli.ExitFindings)
	}
	for _, w := range r.Waves {
		for _, n := range w {
			if n == node {
				t.Errorf("node %s, which runs mysvc, is in wave %v", node, w)
			}
		}
	}
	var found bool
	for _, b := range r.Blocked {
		if b.Node != node {
			continue
		}
		for _, reason := range b.Reasons {
			if reason.Type == plan.SingleReplicaBudget && reason.Kind == "PodDisruptionBudget" &&
				reason.Namespace == f.Namespace && reason.Name == "mysvc" && reason.Permanent {
				found = true
				t.Logf("%s blocked: %s", node, reason.Message)
			}
		}
	}
	if !found {
		t.Errorf("node %s not blocked by the single-replica budget: blocked %+v", node, r.Blocked)
	}
}
