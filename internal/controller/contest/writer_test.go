package contest

import (
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// holdfast's field managers: its applies, and its patches under the binary's name.
func holdfast(manager string) bool { return manager == "holdfast-operator" || manager == "manager" }

// The managedFields below are as the apiserver records them, after the other writer's
// undo.
func TestWriter(t *testing.T) {
	for name, tc := range map[string]struct {
		managedFields string
		field         Field
		want          string
	}{
		"a taint removed by a node-management tool": {
			field: Taint("worker-1", "holdfast.dev/lost"),
			managedFields: `[
				{"manager":"kubeadm","operation":"Update","apiVersion":"v1","time":"2026-11-29T11:00:00Z","fieldsType":"FieldsV1",
				 "fieldsV1":{"f:metadata":{"f:annotations":{".":{},"f:kubeadm.alpha.kubernetes.io/cri-socket":{}}}}},
				{"manager":"kube-controller-manager","operation":"Update","apiVersion":"v1","time":"2026-11-29T11:59:00Z","fieldsType":"FieldsV1",
				 "fieldsV1":{"f:metadata":{"f:annotations":{"f:node.alpha.kubernetes.io/ttl":{}}},"f:spec":{"f:podCIDR":{},"f:podCIDRs":{".":{},"v:\"10.244.1.0/24\"":{}}}}},
				{"manager":"kubelet","operation":"Update","apiVersion":"v1","time":"2026-11-29T12:00:05Z","fieldsType":"FieldsV1","subresource":"status",
				 "fieldsV1":{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{"f:lastHeartbeatTime":{}}}}}},
				{"manager":"node-sync","operation":"Update","apiVersion":"v1","time":"2026-11-29T12:00:02Z","fieldsType":"FieldsV1",
				 "fieldsV1":{"f:spec":{"f:taints":{}}}},
				{"manager":"manager","operation":"Update","apiVersion":"v1","time":"2026-11-29T12:00:03Z","fieldsType":"FieldsV1",
				 "fieldsV1":{"f:metadata":{"f:annotations":{"f:holdfast.dev/fenced":{}}}}}
			]`,
			want: "node-sync",
		},
		"an annotation removed: the writer owns only the annotations it keeps": {
			field: Annotation(Object{"v1", "Pod", "shop", "web-0"}, "karpenter.sh/do-not-disrupt"),
			managedFields: `[
				{"manager":"kube-controller-manager","operation":"Update","apiVersion":"v1","time":"2026-11-29T11:00:00Z","fieldsType":"FieldsV1",
				 "fieldsV1":{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{}},"f:ownerReferences":{}},"f:spec":{"f:containers":{}}}},
				{"manager":"kubelet","operation":"Update","apiVersion":"v1","time":"2026-11-29T12:00:09Z","fieldsType":"FieldsV1","subresource":"status",
				 "fieldsV1":{"f:status":{"f:conditions":{}}}},
				{"manager":"kubectl-annotate","operation":"Update","apiVersion":"v1","time":"2026-11-29T12:00:04Z","fieldsType":"FieldsV1",
				 "fieldsV1":{"f:metadata":{"f:annotations":{".":{},"f:team":{}}}}}
			]`,
			want: "kubectl-annotate",
		},
		"an annotation removed by a writer left with nothing else: the latest other manager": {
			field: Annotation(Object{"v1", "Pod", "shop", "web-0"}, "karpenter.sh/do-not-disrupt"),
			managedFields: `[
				{"manager":"kube-controller-manager","operation":"Update","apiVersion":"v1","time":"2026-11-29T11:00:00Z","fieldsType":"FieldsV1",
				 "fieldsV1":{"f:metadata":{"f:labels":{"f:app":{}}}}},
				{"manager":"kubectl-annotate","operation":"Update","apiVersion":"v1","time":"2026-11-29T12:00:04Z","fieldsType":"FieldsV1",
				 "fieldsV1":{"f:metadata":{"f:labels":{"f:team":{}}}}}
			]`,
			want: "kubectl-annotate",
		},
		"a budget's spec rewritten by a GitOps tool": {
			field: Spec(Object{"policy/v1", "PodDisruptionBudget", "shop", "holdfast-deployment-web"}),
			managedFields: `[
				{"manager":"holdfast-operator","operation":"Apply","apiVersion":"policy/v1","time":"2026-11-29T12:00:01Z","fieldsType":"FieldsV1",
				 "fieldsV1":{"f:metadata":{"f:labels":{"f:holdfast.dev/policy":{}},"f:ownerReferences":{"k:{\"uid\":\"7c0e\"}":{}}},"f:spec":{"f:selector":{}}}},
				{"manager":"kube-controller-manager","operation":"Update","apiVersion":"policy/v1","time":"2026-11-29T12:00:08Z","fieldsType":"FieldsV1","subresource":"status",
				 "fieldsV1":{"f:status":{"f:currentHealthy":{},"f:disruptionsAllowed":{}}}},
				{"manager":"argocd-controller","operation":"Update","apiVersion":"policy/v1","time":"2026-11-29T12:00:05Z","fieldsType":"FieldsV1",
				 "fieldsV1":{"f:spec":{"f:maxUnavailable":{}}}}
			]`,
			want: "argocd-controller",
		},
		"only holdfast": {
			field: Spec(Object{"policy/v1", "PodDisruptionBudget", "shop", "holdfast-deployment-web"}),
			managedFields: `[
				{"manager":"holdfast-operator","operation":"Apply","apiVersion":"policy/v1","time":"2026-11-29T12:00:01Z","fieldsType":"FieldsV1",
				 "fieldsV1":{"f:spec":{"f:maxUnavailable":{}}}}
			]`,
			want: "",
		},
	} {
		t.Run(name, func(t *testing.T) {
			var entries []metav1.ManagedFieldsEntry
			if err := json.Unmarshal([]byte(tc.managedFields), &entries); err != nil {
				t.Fatal(err)
			}
			if got := Writer(entries, tc.field, holdfast); got != tc.want {
				t.Errorf("Writer = %q, want %q", got, tc.want)
			}
		})
	}
}
