package v1alpha1

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	kjson "sigs.k8s.io/json"
)

// One policy stored with a value the types cannot hold does not fail the list it is in
// (the operator's cache lists every policy at once): it decodes with that field empty
// and named, the rest of it and the other policies whole.
func TestListWithUndecodablePolicy(t *testing.T) {
	data := `{"items": [
		{"metadata": {"name": "good"}, "spec": {"selector": {}, "maxUnavailable": 1, "escapeAfter": "10m", "singleReplica": "Protect"}},
		{"metadata": {"name": "bad"}, "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 3000000000, "escapeAfter": "banana", "singleReplica": "Protect",
			"maintenanceWindows": [{"schedule": "0 2 * * *", "duration": "4h"}]}}
	]}`
	var list DisruptionPolicyList
	if err := kjson.UnmarshalCaseSensitivePreserveInts([]byte(data), &list); err != nil {
		t.Fatal(err)
	}
	want := []DisruptionPolicySpec{
		{Selector: metav1.LabelSelector{}, MaxUnavailable: ptr.To(intstr.FromInt32(1)), EscapeAfter: &metav1.Duration{Duration: 10 * time.Minute}, SingleReplica: SingleReplicaProtect},
		{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, SingleReplica: SingleReplicaProtect,
			MaintenanceWindows: []MaintenanceWindow{{Schedule: "0 2 * * *", Duration: metav1.Duration{Duration: 4 * time.Hour}}},
		},
	}
	got := []DisruptionPolicySpec{list.Items[0].Spec, list.Items[1].Spec}
	if diff := cmp.Diff(want, got, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".DecodeErrors" }, cmp.Ignore())); diff != "" {
		t.Errorf("specs (-want +got):\n%s", diff)
	}
	if errs := list.Items[0].Spec.DecodeErrors; errs != nil {
		t.Errorf("the good policy: DecodeErrors = %q", errs)
	}
	errs := list.Items[1].Spec.DecodeErrors
	if len(errs) != 2 || !strings.HasPrefix(errs[0], "escapeAfter: ") || !strings.Contains(errs[0], "banana") || !strings.HasPrefix(errs[1], "maxUnavailable: ") {
		t.Errorf("the bad policy: DecodeErrors = %q, want escapeAfter and maxUnavailable", errs)
	}
}

// A cluster policy's template is a DisruptionPolicySpec: it decodes the same way.
func TestClusterPolicyTemplateUndecodable(t *testing.T) {
	var p ClusterDisruptionPolicy
	data := `{"metadata": {"name": "c"}, "spec": {"namespaceSelector": {}, "template": {"selector": {}, "minAvailable": 9999999999}}}`
	if err := kjson.UnmarshalCaseSensitivePreserveInts([]byte(data), &p); err != nil {
		t.Fatal(err)
	}
	if errs := p.Spec.Template.DecodeErrors; len(errs) != 1 || !strings.HasPrefix(errs[0], "minAvailable: ") {
		t.Errorf("DecodeErrors = %q, want minAvailable", errs)
	}
}

func TestNodeCompanionUndecodable(t *testing.T) {
	var nc NodeCompanion
	data := `{"metadata": {"name": "n"}, "spec": {"daemonSet": {"name": "agent"}, "maxUnavailable": 2147483648, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}}`
	if err := kjson.UnmarshalCaseSensitivePreserveInts([]byte(data), &nc); err != nil {
		t.Fatal(err)
	}
	if errs := nc.Spec.DecodeErrors; len(errs) != 1 || !strings.HasPrefix(errs[0], "maxUnavailable: ") {
		t.Errorf("DecodeErrors = %q, want maxUnavailable", errs)
	}
	if nc.Spec.DaemonSet == nil || nc.Spec.DaemonSet.Name != "agent" || len(nc.Spec.Template.Spec.Containers) != 1 {
		t.Errorf("the fields that decode were lost: %+v", nc.Spec)
	}
	// A copy carries the errors: controllers read objects from the cache as copies.
	if cp := nc.DeepCopy(); !cmp.Equal(cp.Spec.DecodeErrors, nc.Spec.DecodeErrors) {
		t.Errorf("DeepCopy lost DecodeErrors")
	}
}

// The CRD keeps a companion's template without its schema, so the API server stores
// fields that no pod template has, and values of the wrong type: each is named, the
// template decoded as far as it goes.
func TestNodeCompanionTemplateChecked(t *testing.T) {
	for name, tc := range map[string]struct {
		template string
		want     []string
	}{
		"valid": {
			template: `{"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "10m"}}}]}}`,
		},
		"misspelt container field": {
			template: `{"spec": {"containers": [{"name": "c", "image": "i", "resource": {"requests": {"cpu": "10m"}}}]}}`,
			want:     []string{`template: unknown field "spec.containers[0].resource"`},
		},
		"misspelt pod and metadata fields": {
			template: `{"metadata": {"label": {"app": "a"}}, "spec": {"tolerations": [], "priorityClass": "x", "containers": [{"name": "c", "image": "i"}]}}`,
			want:     []string{`template: unknown field "metadata.label"`, `template: unknown field "spec.priorityClass"`},
		},
		"wrong type": {
			template: `{"spec": {"containers": [{"name": "c", "image": "i", "ports": "80"}]}}`,
			want:     []string{"template: "},
		},
		"bad quantity": {
			template: `{"spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"memory": "lots"}}}]}}`,
			want:     []string{"template: "},
		},
	} {
		t.Run(name, func(t *testing.T) {
			var nc NodeCompanion
			data := `{"metadata": {"name": "n"}, "spec": {"daemonSet": {"name": "agent"}, "template": ` + tc.template + `}}`
			if err := kjson.UnmarshalCaseSensitivePreserveInts([]byte(data), &nc); err != nil {
				t.Fatal(err)
			}
			got := nc.Spec.DecodeErrors
			if len(got) != len(tc.want) {
				t.Fatalf("DecodeErrors = %q, want %q", got, tc.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("DecodeErrors[%d] = %q, want %q", i, got[i], tc.want[i])
				}
			}
			if nc.Spec.DaemonSet == nil || nc.Spec.DaemonSet.Name != "agent" {
				t.Errorf("the fields that decode were lost: %+v", nc.Spec)
			}
		})
	}
}
