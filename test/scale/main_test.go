//go:build scale

// Package scale measures holdfast on a testbed of a production cluster's size: by
// default 1,000 kwok nodes in 3 zones, 30,000 pods in 1,500 Deployments, 200
// StatefulSets and 20 DaemonSets, budgets on most workloads, DisruptionPolicies in half
// the namespaces, NodeCompanions and rebalance opt-ins. It prints each figure with the
// command that reproduces it. Not part of make test: run it with make bench-scale.
//
//	HOLDFAST_SCALE=0.1   a tenth of everything (100 nodes, 3,000 Deployment pods)
//	HOLDFAST_CHURN=10m   how long the operator is churned before its memory is read again
package scale

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

// size is the testbed's shape at one scale.
type size struct {
	scale       float64
	nodes       int
	namespaces  int
	deployments int
	statefulSet int
	daemonSets  int
	// batch is how many nodes each drain (holdfast's, then kubectl's) takes.
	batch int
	// churnNodes are cordoned and uncordoned during the churn.
	churnNodes int
	churn      time.Duration
}

// deploymentSizes repeat over the Deployments: assorted, 20 replicas on average.
var deploymentSizes = []int32{1, 2, 3, 5, 8, 12, 20, 30, 50, 69}

const (
	zones            = 3
	statefulReplicas = 3
	// apiQPS is the control plane's request rate (testbed up --api-qps).
	apiQPS = 500
	// podReadyDelay is every pod's start-up, as in the drain speed test.
	podReadyDelay = 5 * time.Second
)

var (
	shape size
	// started is when the test binary started: the testbed is up when TestScale runs.
	started = time.Now()
)

func sizeFor(scale float64, churn time.Duration) size {
	n := func(full int, least int) int { return max(least, int(math.Round(float64(full)*scale))) }
	return size{
		scale:       scale,
		nodes:       n(1000, 12),
		namespaces:  n(100, 4),
		deployments: n(1500, 20),
		statefulSet: n(200, 4),
		daemonSets:  20,
		batch:       n(100, 2),
		churnNodes:  n(50, 2),
		churn:       churn,
	}
}

func readShape() (size, error) {
	scale, churn := 1.0, 10*time.Minute
	if v := os.Getenv("HOLDFAST_SCALE"); v != "" {
		s, err := strconv.ParseFloat(v, 64)
		if err != nil || s <= 0 || s > 1 {
			return size{}, fmt.Errorf("HOLDFAST_SCALE=%q: want a number in (0, 1]", v)
		}
		scale = s
	}
	if v := os.Getenv("HOLDFAST_CHURN"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return size{}, fmt.Errorf("HOLDFAST_CHURN=%q: want a duration such as 10m", v)
		}
		churn = d
	}
	return sizeFor(scale, churn), nil
}

func TestMain(m *testing.M) {
	var err error
	if shape, err = readShape(); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(2)
	}
	framework.Main(m, framework.Options{Nodes: shape.nodes, Zones: zones, PodReadyDelay: podReadyDelay, APIQPS: apiQPS})
}
