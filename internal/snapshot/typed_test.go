package snapshot

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/equality"
	sigsjson "sigs.k8s.io/json"
)

// typedKinds are the types the snapshot decodes objects into, by kind: its slices of
// Kubernetes objects.
var typedKinds = func() map[string]reflect.Type {
	kinds := map[string]reflect.Type{}
	for f := range reflect.TypeFor[Snapshot]().Fields() {
		if t := f.Type; t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct {
			if _, object := t.Elem().FieldByName("ObjectMeta"); object {
				kinds[t.Elem().Name()] = t.Elem()
			}
		}
	}
	return kinds
}()

// checkTyped decodes js into a value of type t with decodeTyped and with the strict JSON
// decoder, the oracle, and fails the test where they differ: whatever decodeTyped
// decodes, the JSON decoder decodes alike, with no error and no unknown field. It checks
// too that decodeStrict, which falls back on the JSON decoder, gives the oracle's object,
// error and unknown fields. Both share maps with the objects decoded before with maps;
// each object decoded, and the oracle's, are added to decodedPairs, to be checked again
// once they are all decoded: a map shared with one decoded later must not have changed.
// It reports whether decodeTyped decoded js.
func checkTyped(t *testing.T, js []byte, typ reflect.Type, maps sharedMaps, decoded *decodedPairs) bool {
	t.Helper()
	want := reflect.New(typ)
	strict, wantErr := sigsjson.UnmarshalStrict(js, want.Interface(), sigsjson.DisallowUnknownFields)
	got := reflect.New(typ)
	typed := decodeTyped(js, got.Elem(), maps)
	if typed {
		if wantErr != nil || len(strict) > 0 {
			t.Fatalf("decodeTyped took %s as a %s, which the JSON decoder refuses: %v %v", js, typ, wantErr, strict)
		}
		if !reflect.DeepEqual(got.Interface(), want.Interface()) || !equality.Semantic.DeepEqual(got.Interface(), want.Interface()) {
			t.Fatalf("decodeTyped read %s as a %s unlike the JSON decoder (-json +typed):\n%s", js, typ,
				cmp.Diff(want.Interface(), got.Interface()))
		}
	}
	fallback := reflect.New(typ)
	unknown, err := decodeStrict(js, fallback.Elem(), maps)
	if fmt.Sprint(err) != fmt.Sprint(wantErr) {
		t.Fatalf("decodeStrict of %s as a %s: error %v, the JSON decoder's %v", js, typ, err, wantErr)
	}
	if wantErr == nil {
		if diff := cmp.Diff(unknownFields(typ, strict), unknown, cmp.AllowUnexported(unknownField{})); diff != "" {
			t.Fatalf("decodeStrict of %s as a %s: unknown fields unlike the JSON decoder's (-json +decodeStrict):\n%s", js, typ, diff)
		}
	}
	if !reflect.DeepEqual(fallback.Interface(), want.Interface()) {
		t.Fatalf("decodeStrict read %s as a %s unlike the JSON decoder (-json +decodeStrict):\n%s", js, typ,
			cmp.Diff(want.Interface(), fallback.Interface()))
	}
	*decoded = append(*decoded, [3]any{js, want.Interface(), fallback.Interface()})
	if typed {
		*decoded = append(*decoded, [3]any{js, want.Interface(), got.Interface()})
	}
	return typed
}

// decodedPairs are objects decoded, each with its JSON and the JSON decoder's object.
type decodedPairs [][3]any

// check fails the test where an object decoded no longer equals the JSON decoder's.
func (d decodedPairs) check(t *testing.T) {
	t.Helper()
	for _, p := range d {
		if !reflect.DeepEqual(p[1], p[2]) {
			t.Fatalf("%s changed once objects decoded after it shared its maps (-json +now):\n%s", p[0], cmp.Diff(p[1], p[2]))
		}
	}
}

// checkTypedManifests reads data as the loader does and checks each object's JSON, and
// the whole of data as JSON, against every kind. It returns how many objects there were
// and how many of them decodeTyped decoded.
func checkTypedManifests(t *testing.T, data []byte) (objects, typed int) {
	t.Helper()
	l := newParser(ManifestOptions{}, len(data))
	l.loadDocuments("typed.yaml", splitYAML(data))
	maps, decoded := sharedMaps{}, decodedPairs{}
	for _, o := range l.result.objects {
		typ, known := typedKinds[o.kind.gvk.Kind]
		if !known {
			continue // Karpenter's kinds, decoded as they are
		}
		objects++
		if checkTyped(t, o.js, typ, maps, &decoded) {
			typed++
		}
		for _, other := range typedKinds {
			checkTyped(t, o.js, other, maps, &decoded)
		}
	}
	for _, typ := range typedKinds {
		checkTyped(t, data, typ, maps, &decoded)
	}
	decoded.check(t)
	return objects, typed
}

// typedSeeds are objects whose fields decodeTyped gives up on, or reads with care: values
// that decode themselves, nulls, empty lists and maps, numbers at their limits, escaped
// and non-ASCII text, merged and repeated keys, unknown fields and values of the wrong
// type.
var typedSeeds = []string{
	"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, creationTimestamp: null, labels: {}, annotations: null}\n" +
		"spec:\n  replicas: 2147483647\n  strategy: {rollingUpdate: {maxSurge: 25%, maxUnavailable: 0}}\n  selector: {matchLabels: {a: b}, matchExpressions: []}\n" +
		"  template:\n    spec:\n      terminationGracePeriodSeconds: null\n      containers:\n      - name: c\n        args: ['a \"q\" & <b>', \"\\t\\u00e9\", é]\n" +
		"        resources: {requests: {cpu: 100m, memory: 1.5Gi}, limits: {cpu: 2, memory: 1e3}}\n" +
		"        readinessProbe: {httpGet: {port: http, path: /}, periodSeconds: 0}\n",
	"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: 2147483648}\n",
	"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: 1.5, paused: yes}\n",
	"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: \"3\"}\n",
	"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicaz: 3, template: {spec: {containers: [{name: a, imagePullPolicyy: x}]}}}\n",
	"apiVersion: apps/v1\nkind: Deployment\nmetadata: {Name: d, name: d}\n",
	"apiVersion: apps/v1\nkind: Deployment\nbase: &b {replicas: 2, paused: true}\nmetadata: {name: d}\nspec:\n  <<: *b\n  replicas: 3\n",
	"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, labels: &l {a: b}}\nspec: {selector: {matchLabels: *l}, template: {metadata: {labels: *l}}}\n",
	"apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: p, deletionTimestamp: 2024-01-02T03:04:05Z}\nspec: {minAvailable: 50%, maxUnavailable: null}\n",
	"apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: p, labels: {a: null, b: '', c: ~}, annotations: {}}\nspec: {minAvailable: [1]}\n",
	"apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: p, labels: {a: null, b: '', c: ~}, annotations: {}}\nspec: {minAvailable: 1}\n",
	"apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: p}\nspec: {minAvailable: 1.5, selector: {matchLabels: {a: 1, b: true, c: null}}}\n",
	"apiVersion: v1\nkind: Pod\nmetadata: {name: p, ownerReferences: [{apiVersion: v1, kind: X, name: y, uid: z, controller: true}]}\n" +
		"spec: {overhead: {cpu: 1m}, nodeSelector: {}, tolerations: [{key: k, operator: Exists, tolerationSeconds: -9223372036854775808}]}\n" +
		"status: {phase: Running, startTime: 2024-01-02T03:04:05Z, conditions: [{type: Ready, status: \"True\", lastTransitionTime: null}]}\n",
	"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {requests: {cpu: x}}}]}\n",
	// Keys that JSON escapes.
	"apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {\"é\": x, \"a\\\"b\": y, \"t\\tb\": z}}\nspec: {overhead: {\"c\\u0070u\": 1m}}\n",
	// Maps alike, shared, and one given twice, which the JSON decoder merges.
	"apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {a: b}}\nspec: {nodeSelector: {a: b}, overhead: {cpu: 1m}, containers: [{name: c, resources: {requests: {cpu: 1m}}}]}\n---\n" +
		"apiVersion: v1\nkind: Pod\nmetadata: {name: q, labels: {a: b}, labels: {c: d}}\nspec: {nodeSelector: {a: b}, nodeSelector: {e: f}, overhead: {cpu: 1m}, overhead: {memory: 1Mi}}\n",
	"apiVersion: v1\nkind: Node\nmetadata: {name: n, managedFields: [{manager: m, fieldsV1: {f:metadata: {}}}]}\nspec: {unschedulable: true, taints: [{key: k, effect: NoSchedule}]}\n" +
		"status: {allocatable: {cpu: '4', pods: 110}, images: [{names: [a], sizeBytes: 9007199254740993}]}\n",
	"apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: h}\nspec: {minReplicas: 1, maxReplicas: 3, metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}}]}\n",
	"apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: p}\nvalue: -1e3\nglobalDefault: false\n",
	"apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {name: l, namespace: kube-node-lease}\nspec: {holderIdentity: n, renewTime: 2024-01-02T03:04:05.123456Z, leaseDurationSeconds: 40}\n",
	"apiVersion: holdfast.dev/v1alpha1\nkind: DisruptionPolicy\nmetadata: {name: p}\nspec: {selector: {matchLabels: {app: a}}}\n",
	`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":01}}`,
	`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":3}} `,
	`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","labels":{"a":"b","a":"c"},"finalizers":["a","b"],"finalizers":["c"]}}`,
	`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d\u0000\ud800"},"spec":{"replicas":-0,"minReadySeconds":1E2}}`,
}

// CheckTypedManifests is checkTypedManifests, for the tests of the benchmark's manifests,
// which snapshottest writes from outside the package.
var CheckTypedManifests = checkTypedManifests

// TestDecodeTypedAsTheJSONDecoder holds decodeTyped to the strict JSON decoder on the
// seeds and the repository's YAML.
func TestDecodeTypedAsTheJSONDecoder(t *testing.T) {
	var objects, typed int
	for _, seed := range typedSeeds {
		o, n := checkTypedManifests(t, []byte(seed))
		objects, typed = objects+o, typed+n
	}
	if typed == 0 || typed == objects {
		t.Errorf("decodeTyped decoded %d of the %d seeds' objects; want some, not all (some are mistakes)", typed, objects)
	}
	objects, typed = 0, 0
	for _, doc := range repositoryDocuments(t) {
		o, n := checkTypedManifests(t, doc)
		objects, typed = objects+o, typed+n
	}
	t.Logf("decodeTyped decoded %d of the repository's %d objects, the JSON decoder the rest", typed, objects)
}

// FuzzDecodeTyped holds decodeTyped to the strict JSON decoder on arbitrary YAML, read
// as the loader reads it, and on arbitrary JSON.
func FuzzDecodeTyped(f *testing.F) {
	for _, doc := range repositoryDocuments(f) {
		f.Add(doc)
	}
	for _, seed := range typedSeeds {
		f.Add([]byte(seed))
	}
	f.Add([]byte(deploymentYAML))
	f.Add([]byte(flowDeploymentYAML))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkTypedManifests(t, data)
	})
}
