package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/holdfast-dev/holdfast/config"
)

func TestInstallDryRun(t *testing.T) {
	var out bytes.Buffer
	o := &InstallOptions{DryRun: true, Image: "registry.example.com/holdfast:test", IOStreams: genericiooptions.IOStreams{Out: &out}}
	if err := o.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got, crds, images []string
	r := utilyaml.NewYAMLReader(bufio.NewReader(&out))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			t.Fatalf("decoding document %d: %v", len(got)+1, err)
		}
		if u.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, u.GetName())
			u.SetName("*")
		}
		if len(got) == 0 || got[len(got)-1] != u.GetKind()+"/"+u.GetName() {
			got = append(got, u.GetKind()+"/"+u.GetName())
		}
		if u.GetKind() == "Deployment" {
			containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			for _, c := range containers {
				images = append(images, c.(map[string]any)["image"].(string))
			}
		}
	}
	// The namespace comes first and the CRDs and RBAC before the operator that needs them.
	want := []string{
		"Namespace/holdfast-drain", // the drain slots'
		"Namespace/holdfast-system",
		"CustomResourceDefinition/*",
		"ServiceAccount/holdfast-operator",
		"ClusterRole/holdfast-operator",
		"ClusterRole/holdfast-drainer",
		"ClusterRole/holdfast-metrics-reader",
		"ClusterRoleBinding/holdfast-operator",
		"Role/holdfast-operator", // the leader Lease, in holdfast-system only
		"Role/holdfast-drainer",
		"RoleBinding/holdfast-operator",
		"Service/holdfast-operator-metrics",
		"Deployment/holdfast-operator",
		"PodDisruptionBudget/holdfast-operator",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	// Every generated CRD is installed.
	files, err := filepath.Glob("../../config/crd/bases/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var wantCRDs []string
	for _, f := range files {
		group, plural, _ := strings.Cut(strings.TrimSuffix(filepath.Base(f), ".yaml"), "_")
		wantCRDs = append(wantCRDs, plural+"."+group)
	}
	if diff := cmp.Diff(wantCRDs, crds, cmpopts.SortSlices(strings.Compare)); diff != "" {
		t.Errorf("CRDs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"registry.example.com/holdfast:test"}, images); diff != "" {
		t.Errorf("images (-want +got):\n%s", diff)
	}
}

// TestInstallFlags is the finding of issue 19: install --dry-run accepted -n and ignored
// it. -n naming another namespace is refused, -o prints the manifests in kubectl's
// formats, and -o without --dry-run is refused rather than ignored.
// Issue 30 item 12: whoever drains gets nothing in the operator's namespace, where its
// leader Lease is (a drain creates and deletes Leases of names it picks, which
// resourceNames cannot restrict), and may patch nodes but not update them.
func TestDrainerRolesKeepOffTheOperator(t *testing.T) {
	objs, err := config.Objects()
	if err != nil {
		t.Fatal(err)
	}
	var operatorNamespace, drainerNamespace string
	var clusterRole rbacv1.ClusterRole
	for _, u := range objs {
		switch {
		case u.GetKind() == "Deployment" && u.GetName() == "holdfast-operator":
			operatorNamespace = u.GetNamespace()
		case u.GetKind() == "Role" && u.GetName() == "holdfast-drainer":
			drainerNamespace = u.GetNamespace()
		case u.GetKind() == "ClusterRole" && u.GetName() == "holdfast-drainer":
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &clusterRole); err != nil {
				t.Fatal(err)
			}
		}
	}
	if operatorNamespace == "" || drainerNamespace == "" || operatorNamespace == drainerNamespace {
		t.Errorf("the drainer's Role is in namespace %q, the operator in %q: they must be found, and apart", drainerNamespace, operatorNamespace)
	}
	if drainerNamespace != DefaultSlotNamespace {
		t.Errorf("the drainer's Role is in %q, but holdfast drain's --slot-namespace defaults to %q", drainerNamespace, DefaultSlotNamespace)
	}
	for _, r := range clusterRole.Rules {
		if slices.Contains(r.Resources, "nodes") && slices.Contains(r.Verbs, "update") {
			t.Errorf("the drainer's ClusterRole grants update on nodes (%v): patch is all a drain writes", r.Verbs)
		}
	}
}

func TestInstallFlags(t *testing.T) {
	tests := map[string]struct {
		args   []string
		code   int
		stdout func(string) bool
		stderr string
	}{
		"-n elsewhere": {args: []string{"install", "--dry-run", "-n", "elsewhere"}, code: ExitError,
			stderr: "-n elsewhere: install puts the operator in holdfast-system"},
		"-n holdfast-system": {args: []string{"install", "--dry-run", "-n", "holdfast-system"}, code: ExitOK,
			stdout: func(s string) bool { return strings.HasPrefix(s, "apiVersion: v1\nkind: Namespace\n") }},
		"-o json is a List": {args: []string{"install", "--dry-run", "-o", "json"}, code: ExitOK,
			stdout: func(s string) bool {
				var list struct {
					Kind  string           `json:"kind"`
					Items []map[string]any `json:"items"`
				}
				return json.Unmarshal([]byte(s), &list) == nil && list.Kind == "List" && len(list.Items) > 10
			}},
		"-o jsonpath": {args: []string{"install", "--dry-run", "-o", "jsonpath={.items[0].metadata.name}"}, code: ExitOK,
			stdout: func(s string) bool { return s == "holdfast-drain" }},
		"-o without --dry-run": {args: []string{"install", "-o", "json"}, code: ExitError, stderr: "-o prints the manifests of --dry-run: add --dry-run"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			stdout, stderr, code := runAudit(t, "", tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.stderr) || (tc.stdout != nil && !tc.stdout(stdout)) {
				t.Errorf("exit %d (want %d), stderr %q (want %q), stdout:\n%.300s", code, tc.code, stderr, tc.stderr, stdout)
			}
		})
	}
}

// install waits for what kubectl rollout status waits for, and the Available condition;
// a timeout says where the rollout is.
func TestRolledOut(t *testing.T) {
	available := appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"}
	unavailable := appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse, Reason: "MinimumReplicasUnavailable", Message: "Deployment does not have minimum availability."}
	deployment := func(generation, observed int64, replicas, updated, avail int32, c appsv1.DeploymentCondition) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: generation}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)}}
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: observed, Replicas: replicas, UpdatedReplicas: updated, AvailableReplicas: avail, Conditions: []appsv1.DeploymentCondition{c}}
		return d
	}
	tests := map[string]struct {
		d     *appsv1.Deployment
		done  bool
		state string
	}{
		"rolled out":                 {d: deployment(2, 2, 2, 2, 2, available), done: true},
		"not observed yet":           {d: deployment(3, 2, 2, 2, 2, available), state: "2 of 2 replicas updated, 2 available, 2 in all; Available=True (MinimumReplicasAvailable)"},
		"an old replica left":        {d: deployment(2, 2, 3, 2, 2, available), state: "2 of 2 replicas updated, 2 available, 3 in all; Available=True (MinimumReplicasAvailable)"},
		"an image not pulled":        {d: deployment(2, 2, 2, 2, 0, unavailable), state: "2 of 2 replicas updated, 0 available, 2 in all; Available=False (MinimumReplicasUnavailable): Deployment does not have minimum availability."},
		"available, condition false": {d: deployment(2, 2, 2, 2, 2, unavailable), state: "2 of 2 replicas updated, 2 available, 2 in all; Available=False (MinimumReplicasUnavailable): Deployment does not have minimum availability."},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := rolledOut(tc.d); got != tc.done {
				t.Errorf("rolledOut = %t, want %t", got, tc.done)
			}
			if got := rolloutState(tc.d); !tc.done && got != tc.state {
				t.Errorf("rolloutState =\n%s\nwant\n%s", got, tc.state)
			}
		})
	}
}
