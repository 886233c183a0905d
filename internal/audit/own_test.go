package audit_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/holdfast-dev/holdfast/internal/audit"
	"github.com/holdfast-dev/holdfast/internal/policy"
	"github.com/holdfast-dev/holdfast/internal/predict"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// webDeployment is rules_test.go's Deployment web in namespace ns, with 3 replicas.
var webDeployment = deploymentYAML("replicas: 3", "")

func disruptionPolicy(name, spec string) string {
	return `---
apiVersion: holdfast.dev/v1alpha1
kind: DisruptionPolicy
metadata:
  name: ` + name + `
  namespace: ns
  creationTimestamp: "2026-01-01T00:00:00Z"
spec:
` + spec
}

// The rules on holdfast's own objects read the operator's decision over the input.
func TestOwnRules(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		rule, in string
		want     []string
	}{
		"a bad schedule": {rule: "HF018", in: webDeployment + disruptionPolicy("maint", `  selector: {}
  maxUnavailable: 1
  maintenanceWindows:
    - schedule: "every saturday"
      duration: 4h
`), want: []string{"DisruptionPolicy/ns/maint"}},
		"a time zone that is no IANA name": {rule: "HF018", in: webDeployment + disruptionPolicy("maint", `  selector: {}
  maxUnavailable: 1
  maintenanceWindows:
    - schedule: "0 2 * * 6"
      duration: 4h
      timeZone: Mars/Olympus
`), want: []string{"DisruptionPolicy/ns/maint"}},
		"a good window": {rule: "HF018", in: webDeployment + disruptionPolicy("maint", `  selector: {}
  maxUnavailable: 1
  maintenanceWindows:
    - schedule: "0 2 * * 6"
      duration: 4h
      timeZone: Europe/Berlin
`)},
		"a selector matching nothing": {rule: "HF019", in: webDeployment + disruptionPolicy("typo", `  selector:
    matchLabels:
      tier: wbe
  maxUnavailable: 1
`), want: []string{"DisruptionPolicy/ns/typo"}},
		"a selector matching the workload": {rule: "HF019", in: webDeployment + disruptionPolicy("web", `  selector: {}
  maxUnavailable: 1
`)},
		"the younger of two policies over one workload": {rule: "HF020", in: webDeployment + disruptionPolicy("old", `  selector: {}
  maxUnavailable: 1
`) + strings.Replace(disruptionPolicy("young", `  selector: {}
  maxUnavailable: 2
`), "2026-01-01", "2026-02-01", 1), want: []string{"DisruptionPolicy/ns/young"}},
		"a Surge single replica on a node Karpenter consolidates": {rule: "HF028", in: consolidatable("WhenEmptyOrUnderutilized"),
			want: []string{"DisruptionPolicy/ns/single"}},
		"a Surge single replica on a node Karpenter consolidates only empty": {rule: "HF028", in: consolidatable("WhenEmpty")},
		"a NodeCompanion without its DaemonSet": {rule: "HF021", in: `apiVersion: holdfast.dev/v1alpha1
kind: NodeCompanion
metadata:
  name: guard
  namespace: ns
spec:
  daemonSet:
    name: agent
`, want: []string{"NodeCompanion/ns/guard"}},
		"a NodeCompanion template with a misspelt field": {rule: "HF029", in: companion("resource"), want: []string{"NodeCompanion/ns/guard"}},
		"a NodeCompanion template that is a pod's":       {rule: "HF029", in: companion("resources")},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, problems := snapshot.LoadManifestBytes("in.yaml", []byte(tc.in), snapshot.ManifestOptions{DefaultNamespace: "ns"})
			if len(problems) > 0 {
				t.Fatal(problems)
			}
			predicted, outcomes := predict.Operator(s, now, policy.Settings{})
			var got []string
			for _, f := range audit.RunOwn(predicted, outcomes, s.Origins) {
				if f.Rule != tc.rule {
					continue
				}
				got = append(got, f.Kind+"/"+f.Namespace+"/"+f.Name)
				if f.Message == "" || f.Fix == "" || f.Line == 0 {
					t.Errorf("finding %+v lacks a message, a fix or a line", f)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s findings (-want +got):\n%s", tc.rule, diff)
			}
		})
	}
}

// consolidatable is a Surge single replica alone on a Karpenter node whose NodeClaim has
// been Consolidatable since before the audit, of a NodePool with consolidationPolicy.
func consolidatable(consolidationPolicy string) string {
	return deploymentYAML("replicas: 1", "") + disruptionPolicy("single", `  selector: {}
  maxUnavailable: 1
  singleReplica: Surge
`) + `---
apiVersion: v1
kind: Node
metadata:
  name: node-1
  labels: {karpenter.sh/nodepool: general}
status:
  allocatable: {cpu: "4", memory: 16Gi}
---
apiVersion: v1
kind: Pod
metadata:
  name: web-1
  namespace: ns
  labels: {app: web}
spec:
  nodeName: node-1
  containers: [{name: app, image: web, resources: {requests: {cpu: 300m}}}]
---
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: general-abcde
  labels: {karpenter.sh/nodepool: general}
status:
  nodeName: node-1
  conditions: [{type: Consolidatable, status: "True", lastTransitionTime: "2026-11-22T11:00:00Z"}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: general
spec:
  disruption: {consolidationPolicy: ` + consolidationPolicy + `, consolidateAfter: 30s}
`
}

// companion is a NodeCompanion over the nodes labelled role=storage whose container
// asks for CPU under the field resources, spelt as given.
func companion(resources string) string {
	return `apiVersion: holdfast.dev/v1alpha1
kind: NodeCompanion
metadata:
  name: guard
  namespace: ns
spec:
  nodeSelector: {role: storage}
  template:
    spec:
      containers:
      - name: guard
        image: example.com/guard:1
        ` + resources + `: {requests: {cpu: 10m}}
`
}
