package snapshot_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/holdfast-dev/holdfast/internal/snapshot"
	"github.com/holdfast-dev/holdfast/internal/snapshot/snapshottest"
)

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
        - name: web
          image: web:1
`

const pdb = `apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
  namespace: prod
spec:
  maxUnavailable: 1
  selector:
    matchLabels:
      app: web
`

// loaded is what the tests compare: where each object came from, the problems, the
// warnings and what was skipped.
type loaded struct {
	Origins  map[string]string
	Problems []string
	Warnings []string
	Skipped  []string
}

func summarize(s *snapshot.Snapshot, problems []snapshot.Problem) loaded {
	out := loaded{Origins: map[string]string{}}
	for ref, o := range s.Origins {
		out.Origins[ref.String()] = o.String()
	}
	for _, p := range problems {
		out.Problems = append(out.Problems, p.Error())
	}
	for _, p := range s.Warnings {
		out.Warnings = append(out.Warnings, p.Error())
	}
	for _, p := range s.Skipped {
		out.Skipped = append(out.Skipped, p.Error())
	}
	return out
}

func TestLoadManifestBytes(t *testing.T) {
	tests := map[string]struct {
		input string
		want  loaded
	}{
		"multi-document YAML with comments and empty documents": {
			input: "# leading comment\n---\n" + deployment + "---\n---\n# Source: chart/templates/pdb.yaml\n" + pdb + "...\n",
			want: loaded{Origins: map[string]string{
				"Deployment/default/web":       "f.yaml:3",
				"PodDisruptionBudget/prod/web": "f.yaml:23",
			}},
		},
		"JSON object": {
			input: `{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}`,
			want:  loaded{Origins: map[string]string{"Node/n1": "f.yaml:1"}},
		},
		"stream of JSON objects": {
			input: "{\"apiVersion\": \"v1\", \"kind\": \"Node\", \"metadata\": {\"name\": \"n1\"}}\n\n{\"apiVersion\": \"v1\", \"kind\": \"Node\", \"metadata\": {\"name\": \"n2\"}}\n",
			want:  loaded{Origins: map[string]string{"Node/n1": "f.yaml:1", "Node/n2": "f.yaml:3"}},
		},
		"List kind, as kubectl get -o yaml writes": {
			input: "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata:\n    name: n1\n- apiVersion: v1\n  kind: Node\n  metadata:\n    name: n2\n",
			want:  loaded{Origins: map[string]string{"Node/n1": "f.yaml:4", "Node/n2": "f.yaml:8"}},
		},
		"malformed YAML in one document, the next still read": {
			input: "apiVersion: v1\nkind: Node\nmetadata:\n  name: [n1\n---\n" + pdb,
			want: loaded{
				Origins:  map[string]string{"PodDisruptionBudget/prod/web": "f.yaml:6"},
				Problems: []string{"f.yaml:4: yaml: line 4: did not find expected ',' or ']'"},
			},
		},
		"unknown kind of a built-in group": {
			input: strings.Replace(deployment, "kind: Deployment", "kind: Deploymnet", 1),
			want: loaded{
				Origins:  map[string]string{},
				Problems: []string{`f.yaml:1: Deploymnet/web: unknown kind "Deploymnet" in apps/v1`},
			},
		},
		"object without a name": {
			input: strings.Replace(pdb, "  name: web\n", "", 1),
			want: loaded{
				Origins:  map[string]string{},
				Problems: []string{"f.yaml:1: PodDisruptionBudget/prod/: object has no metadata.name"},
			},
		},
		"document without kind": {
			input: "metadata:\n  name: x\n",
			want:  loaded{Origins: map[string]string{}, Problems: []string{"f.yaml:1: object has no apiVersion or no kind"}},
		},
		"field of the wrong type names the field and its line": {
			input: strings.Replace(deployment, "replicas: 2", `replicas: "two"`, 1),
			want: loaded{
				Origins:  map[string]string{},
				Problems: []string{"f.yaml:6: Deployment/default/web: field spec.replicas: cannot read a JSON string as int32"},
			},
		},
		"same object twice": {
			input: pdb + "---\n" + pdb,
			want: loaded{
				Origins:  map[string]string{"PodDisruptionBudget/prod/web": "f.yaml:1"},
				Problems: []string{"f.yaml:12: PodDisruptionBudget/prod/web: defined again; first defined at f.yaml:1"},
			},
		},
		"a first definition that cannot be decoded leaves the place to the second": {
			input: strings.Replace(pdb, "maxUnavailable: 1", "maxUnavailable: [1]", 1) + "---\n" + pdb,
			want: loaded{
				Origins:  map[string]string{"PodDisruptionBudget/prod/web": "f.yaml:12"},
				Problems: []string{"f.yaml:7: PodDisruptionBudget/prod/web: field spec.maxUnavailable: cannot read a JSON array as int32"},
			},
		},
		"problems and warnings in the order of the documents": {
			input: strings.Replace(deployment, "replicas: 2", `replicas: "two"`, 1) + "---\nkind: [\n---\n" +
				strings.Replace(strings.Replace(pdb, "apiVersion: policy/v1", "apiVersion: policy/v1beta1", 1), "maxUnavailable: 1", "maxUnavailabel: 1", 1) +
				"---\napiVersion: v1\nkind: Node\nmetadata: {name: n1}\nspec: {flavour: large}\n",
			want: loaded{
				Origins: map[string]string{"PodDisruptionBudget/prod/web": "f.yaml:21", "Node/n1": "f.yaml:32"},
				Problems: []string{
					"f.yaml:6: Deployment/default/web: field spec.replicas: cannot read a JSON string as int32",
					"f.yaml:19: yaml: line 19: did not find expected node content",
				},
				Warnings: []string{
					"f.yaml:21: PodDisruptionBudget/prod/web: policy/v1beta1 PodDisruptionBudget was removed in Kubernetes 1.25 and the API server refuses it: use policy/v1 (read here as if it were)",
					"f.yaml:27: PodDisruptionBudget/prod/web: field spec.maxUnavailabel: unknown field, ignored; did you mean maxUnavailable?",
					"f.yaml:35: Node/n1: field spec.flavour: unknown field, ignored",
				},
			},
		},
		"a List nested in a List is flattened": {
			input: "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata:\n    name: n1\n" +
				"- apiVersion: v1\n  kind: List\n  items:\n  - apiVersion: v1\n    kind: Node\n    metadata:\n      name: n2\n" +
				"  - apiVersion: apps/v1\n    kind: Deployment\n    metadata:\n      name: web\n    spec:\n      replicas: two\n",
			want: loaded{
				Origins:  map[string]string{"Node/n1": "f.yaml:4", "Node/n2": "f.yaml:11"},
				Problems: []string{"f.yaml:20: Deployment/default/web: field spec.replicas: cannot read a JSON string as int32"},
			},
		},
		"a List whose items alias one another is read whole": {
			// Read item by item, the second item's alias has no anchor: the first item,
			// read already, is not read twice.
			input: "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Node, metadata: {name: n1}, spec: &s {unschedulable: true}}\n" +
				"- {apiVersion: v1, kind: Node, metadata: {name: n2}, spec: *s}\n",
			want: loaded{Origins: map[string]string{"Node/n1": "f.yaml:4", "Node/n2": "f.yaml:5"}},
		},
		"Lists nested too deep are reported": {
			// Nine Lists, one in the other, around a Node.
			input: strings.Repeat(`{"apiVersion": "v1", "kind": "List", "items": [`, 9) + `{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}` + strings.Repeat("]}", 9),
			want: loaded{
				Origins:  map[string]string{},
				Problems: []string{"f.yaml:1: a List nested more than 8 deep; its items are not read"},
			},
		},
		"a scalar is not a Kubernetes object: skipped": {
			input: "just text\n",
			want:  loaded{Origins: map[string]string{}, Skipped: []string{"f.yaml:1: not a Kubernetes object (a YAML scalar), skipped"}},
		},
		"a Helm values file is not a Kubernetes object: skipped": {
			input: "# Default values.\nreplicaCount: 1\nimage:\n  repository: web\n",
			want:  loaded{Origins: map[string]string{}, Skipped: []string{"f.yaml:2: not a Kubernetes object (no kind or metadata), skipped"}},
		},
		"a dashboard's JSON is not a Kubernetes object: skipped": {
			input: `{"title": "holdfast", "panels": [{"type": "graph"}]}`,
			want:  loaded{Origins: map[string]string{}, Skipped: []string{"f.yaml:1: not a Kubernetes object (no kind or metadata), skipped"}},
		},
		"a kustomization is skipped and points at -k": {
			input: "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [web.yaml]\n",
			want: loaded{Origins: map[string]string{}, Skipped: []string{
				"f.yaml:1: a kustomization, skipped: audit what it builds with -k DIR"}},
		},
		"a custom resource is skipped with a note": {
			input: "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {name: web}\n",
			want: loaded{Origins: map[string]string{}, Skipped: []string{
				"f.yaml:1: Rollout/web: kind Rollout of argoproj.io/v1alpha1 is a custom resource holdfast does not know, skipped: the pods it makes are not audited"}},
		},
		"Karpenter's kinds and a node's Lease are read, not skipped": {
			input: "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: general}\nspec: {disruption: {consolidationPolicy: WhenEmptyOrUnderutilized}}\n" +
				"---\napiVersion: karpenter.sh/v1\nkind: NodeClaim\nmetadata: {name: general-x}\n" +
				"---\napiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {name: n1, namespace: kube-node-lease}\nspec: {holderIdentity: n1}\n",
			want: loaded{Origins: map[string]string{"NodePool/general": "f.yaml:1", "NodeClaim/general-x": "f.yaml:6", "Lease/kube-node-lease/n1": "f.yaml:10"}},
		},
		"built-in kinds holdfast does not read are no news": {
			input: "apiVersion: v1\nkind: Service\nmetadata: {name: web}\n---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: rollouts.argoproj.io}\n",
			want:  loaded{Origins: map[string]string{}},
		},
		"a kind without apiVersion is still a broken manifest": {
			input: strings.Replace(deployment, "apiVersion: apps/v1\n", "", 1),
			want:  loaded{Origins: map[string]string{}, Problems: []string{"f.yaml:1: object has no apiVersion or no kind"}},
		},
		"metadata without a kind is still a broken manifest": {
			input: strings.Replace(deployment, "kind: Deployment\n", "", 1),
			want:  loaded{Origins: map[string]string{}, Problems: []string{"f.yaml:1: object has no apiVersion or no kind"}},
		},
		"a kind holdfast's group does not have is a typo": {
			input: "apiVersion: holdfast.dev/v1alpha1\nkind: DisruptionPolicyy\nmetadata: {name: p}\n",
			want: loaded{Origins: map[string]string{}, Problems: []string{
				`f.yaml:1: DisruptionPolicyy/p: unknown kind "DisruptionPolicyy" in holdfast.dev/v1alpha1`}},
		},
		"a removed API version is audited and warned about": {
			input: strings.Replace(deployment, "apps/v1", "apps/v1beta1", 1) + "---\napiVersion: extensions/v1beta1\nkind: Ingress\nmetadata: {name: web}\n",
			want: loaded{
				Origins: map[string]string{"Deployment/default/web": "f.yaml:1"},
				Warnings: []string{
					"f.yaml:1: Deployment/default/web: apps/v1beta1 Deployment was removed in Kubernetes 1.16 and the API server refuses it: use apps/v1 (read here as if it were)",
					"f.yaml:19: Ingress/web: extensions/v1beta1 Ingress was removed in Kubernetes 1.22 and the API server refuses it: use networking.k8s.io/v1",
				},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, problems := snapshot.LoadManifestBytes("f.yaml", []byte(tc.input), snapshot.ManifestOptions{})
			if diff := cmp.Diff(tc.want, summarize(s, problems)); diff != "" {
				t.Errorf("loaded (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLegacyAPIVersions(t *testing.T) {
	input := `apiVersion: extensions/v1beta1
kind: Deployment
metadata:
  name: platform
spec:
  template:
    metadata:
      labels:
        app: platform
    spec:
      containers:
        - name: platform
          image: platform:v1
---
apiVersion: policy/v1beta1
kind: PodDisruptionBudget
metadata:
  name: platform-pdb
spec:
  minAvailable: 2
  selector: {}
`
	s, problems := snapshot.LoadManifestBytes("f.yaml", []byte(input), snapshot.ManifestOptions{DefaultNamespace: "team"})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	d := s.Deployments[0]
	if d.Namespace != "team" || d.Spec.Selector == nil || d.Spec.Selector.MatchLabels["app"] != "platform" {
		t.Errorf("extensions/v1beta1 Deployment read as %s/%s with selector %v, want team/platform selecting app=platform", d.Namespace, d.Name, d.Spec.Selector)
	}
	ref := snapshot.ObjectRef{Kind: snapshot.KindPodDisruptionBudget, Namespace: "team", Name: "platform-pdb"}
	if !s.LegacySelectorPDBs[ref] {
		t.Errorf("policy/v1beta1 budget not marked as having legacy selector semantics")
	}
}

func TestLoadManifests(t *testing.T) {
	dir := t.TempDir()
	write := func(path, content string) {
		t.Helper()
		full := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("app/deploy.yaml", deployment)
	write("app/nested/pdb.yml", pdb)
	write("app/README.md", "not a manifest")
	write("app/.git/config.yaml", "not: [valid")
	write("huge.yaml", pdb+strings.Repeat("# padding\n", 100))

	stdin := strings.NewReader(strings.Replace(pdb, "name: web", "name: from-stdin", 1))
	s, problems := snapshot.LoadManifests(
		[]string{filepath.Join(dir, "app"), "-", filepath.Join(dir, "huge.yaml"), filepath.Join(dir, "missing.yaml")},
		snapshot.ManifestOptions{Stdin: stdin, MaxFileSize: 512},
	)
	got := summarize(s, problems)
	for i, p := range got.Problems {
		got.Problems[i] = strings.ReplaceAll(p, dir, "DIR")
	}
	for k, v := range got.Origins {
		got.Origins[k] = strings.ReplaceAll(v, dir, "DIR")
	}
	want := loaded{
		Origins: map[string]string{
			"Deployment/default/web":              "DIR/app/deploy.yaml:1",
			"PodDisruptionBudget/prod/web":        "DIR/app/nested/pdb.yml:1",
			"PodDisruptionBudget/prod/from-stdin": "-:1",
		},
		Problems: []string{
			"DIR/huge.yaml: larger than the 512-byte limit for one manifest file",
			"DIR/missing.yaml: stat DIR/missing.yaml: no such file or directory",
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("loaded (-want +got):\n%s", diff)
	}
}

// A large string repeated through aliases is refused by the bytes it expands to, fast,
// with the file and line of the object: 8 MB repeated through 1,000 aliases would be
// 8 GB of JSON.
func TestLoadManifestBytesAliasedStringBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n  annotations:\n    big: &big \"")
	b.WriteString(strings.Repeat("x", 8<<20))
	b.WriteString("\"\n")
	for i := range 1000 {
		fmt.Fprintf(&b, "    copy-%d: *big\n", i)
	}
	start := time.Now()
	s, problems := snapshot.LoadManifestBytes("bomb.yaml", []byte(b.String()), snapshot.ManifestOptions{})
	took := time.Since(start)
	want := loaded{
		Origins:  map[string]string{},
		Problems: []string{"bomb.yaml:1: Node/n1: the file expands past 8 times its size here (YAML aliases?); none of it is read"},
	}
	if diff := cmp.Diff(want, summarize(s, problems)); diff != "" {
		t.Errorf("loaded (-want +got):\n%s", diff)
	}
	if took > 10*time.Second {
		t.Errorf("took %s to refuse it", took)
	}
	t.Logf("refused in %s", took)
}

// TestLoadManifestBytesAliasBomb is item 1 of issue 30: Lists of aliases of Lists expanded
// without bound, as the budgets were an object's, and 10^7 Pods from 750 bytes ran holdfast
// out of memory. At 10^5 Pods the loader read them all, allocating 450 MB in 1.5 s; the
// file is now refused once it expands past its budget, having allocated little. Items of
// kinds holdfast skips spend the budget too: looking them over is work.
func TestLoadManifestBytesAliasBomb(t *testing.T) {
	tests := map[string]struct {
		data []byte
		want string
	}{
		"Pods": {
			data: snapshottest.AliasBomb(5),
			want: "bomb.yaml:5: Pod/default/p: the file expands past 8 times its size here (YAML aliases?); none of it is read",
		},
		"Services": {
			data: bytes.Replace(snapshottest.AliasBomb(7), []byte("kind: Pod"), []byte("kind: Service"), 1),
			want: "bomb.yaml:6: the file expands past 8 times its size here (YAML aliases?); none of it is read",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			s, problems := snapshot.LoadManifestBytes("bomb.yaml", tc.data, snapshot.ManifestOptions{})
			runtime.ReadMemStats(&after)
			if diff := cmp.Diff(loaded{Origins: map[string]string{}, Problems: []string{tc.want}}, summarize(s, problems)); diff != "" {
				t.Errorf("loaded (-want +got):\n%s", diff)
			}
			// Parsing and the few objects the budget allows take some hundreds of kilobytes.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
				t.Errorf("allocated %d MiB to refuse %d bytes", alloc>>20, len(tc.data))
			}
		})
	}
}

// A pod written without status is assumed running and Ready; a pod from a dump keeps its
// status, so that unready, pending and terminating pods count as they do in the cluster.
func TestLoadManifestsPodStatus(t *testing.T) {
	const pods = `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: written, namespace: ns}
  spec: {containers: [{name: c, image: i}]}
- apiVersion: v1
  kind: Pod
  metadata: {name: unready, namespace: ns}
  spec: {containers: [{name: c, image: i}]}
  status:
    phase: Running
    conditions: [{type: Ready, status: "False"}]
- apiVersion: v1
  kind: Pod
  metadata: {name: pending, namespace: ns}
  spec: {containers: [{name: c, image: i}]}
  status: {phase: Pending}
- apiVersion: v1
  kind: Pod
  metadata: {name: terminating, namespace: ns, deletionTimestamp: "2026-11-23T10:00:00Z", finalizers: [example.com/hold]}
  spec: {containers: [{name: c, image: i}]}
  status:
    phase: Running
    conditions: [{type: Ready, status: "True"}]
`
	s, problems := snapshot.LoadManifests([]string{"-"}, snapshot.ManifestOptions{Stdin: strings.NewReader(pods), MaxFileSize: 1 << 20})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	type status struct {
		Phase       string
		Ready       string
		Terminating bool
	}
	got := map[string]status{}
	for _, p := range s.Pods {
		st := status{Phase: string(p.Status.Phase), Terminating: p.DeletionTimestamp != nil}
		for _, c := range p.Status.Conditions {
			if c.Type == "Ready" {
				st.Ready = string(c.Status)
			}
		}
		got[p.Name] = st
	}
	want := map[string]status{
		"written":     {Phase: "Running", Ready: "True"},
		"unready":     {Phase: "Running", Ready: "False"},
		"pending":     {Phase: "Pending"},
		"terminating": {Phase: "Running", Ready: "True", Terminating: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pod status (-want +got):\n%s", diff)
	}
}

// holdfast's own kinds and namespaces load like workloads: the policies decide which
// budgets the model sees.
func TestLoadHoldfastKinds(t *testing.T) {
	const in = `apiVersion: v1
kind: Namespace
metadata:
  name: shop
  labels:
    team: web
---
apiVersion: holdfast.dev/v1alpha1
kind: DisruptionPolicy
metadata:
  name: budgets
spec:
  selector: {}
  maxUnavailable: 1
---
apiVersion: holdfast.dev/v1alpha1
kind: ClusterDisruptionPolicy
metadata:
  name: fleet
spec:
  namespaceSelector:
    matchLabels:
      team: web
  template:
    selector: {}
`
	s, problems := snapshot.LoadManifestBytes("in.yaml", []byte(in), snapshot.ManifestOptions{DefaultNamespace: "shop"})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	want := loaded{Origins: map[string]string{
		"Namespace/shop":                "in.yaml:1",
		"DisruptionPolicy/shop/budgets": "in.yaml:8",
		"ClusterDisruptionPolicy/fleet": "in.yaml:16",
	}}
	if diff := cmp.Diff(want, summarize(s, problems)); diff != "" {
		t.Errorf("loaded (-want +got):\n%s", diff)
	}
	if len(s.Namespaces) != 1 || s.Namespaces[0].Labels["kubernetes.io/metadata.name"] != "shop" || s.Namespaces[0].Labels["team"] != "web" {
		t.Errorf("namespace labels %v, want team=web and the name label the API server sets", s.Namespaces[0].Labels)
	}
	if len(s.DisruptionPolicies) != 1 || s.DisruptionPolicies[0].Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("policies %+v", s.DisruptionPolicies)
	}
	if len(s.ClusterDisruptionPolicies) != 1 || s.ClusterDisruptionPolicies[0].Spec.NamespaceSelector.MatchLabels["team"] != "web" {
		t.Errorf("cluster policies %+v", s.ClusterDisruptionPolicies)
	}
}

// TestUnknownFields is the finding of issue 19: fields a kind does not have were dropped
// silently. Each is now a warning naming file, line, object and field, with the field it
// most likely meant; the object is still read, without it.
func TestUnknownFields(t *testing.T) {
	tests := map[string]struct {
		input string
		want  []string
	}{
		"a PodDisruptionBudget with minAvaliable": {
			input: `apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
  namespace: prod
spec:
  minAvaliable: 2
  selector:
    matchLabels: {app: web}
`,
			want: []string{"f.yaml:7: PodDisruptionBudget/prod/web: field spec.minAvaliable: unknown field, ignored; did you mean minAvailable?"},
		},
		"a container field in a List item, and a field in the wrong case": {
			input: `apiVersion: v1
kind: List
items:
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: web}
  spec:
    replicas: 2
    selector: {matchLabels: {app: web}}
    template:
      metadata: {labels: {app: web}}
      spec:
        containers:
        - name: sidecar
          image: sidecar
        - name: web
          image: web
          readinessprobe: {tcpSocket: {port: 80}}
        TopologySpreadConstraints: []
`,
			want: []string{
				"f.yaml:18: Deployment/default/web: field spec.template.spec.containers.1.readinessprobe: unknown field, ignored; did you mean readinessProbe?",
				"f.yaml:19: Deployment/default/web: field spec.template.spec.TopologySpreadConstraints: unknown field, ignored; did you mean topologySpreadConstraints?",
			},
		},
		"nothing near it": {
			input: "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nspec: {flavour: large}\n",
			want:  []string{"f.yaml:4: Node/n1: field spec.flavour: unknown field, ignored"},
		},
		"labels and annotations take any key": {
			input: "apiVersion: v1\nkind: Node\nmetadata: {name: n1, labels: {minAvaliable: x}, annotations: {b: c}}\n",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, problems := snapshot.LoadManifestBytes("f.yaml", []byte(tc.input), snapshot.ManifestOptions{})
			if len(problems) > 0 || len(s.Origins) != 1 {
				t.Fatalf("objects %v, problems %v; want the object read", s.Origins, problems)
			}
			var got []string
			for _, w := range s.Warnings {
				got = append(got, w.Error())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}
