//go:build e2e

// Package validation checks on the testbed that the API server refuses every value the
// operator could not decode or act on, and that an object stored before the schema
// tightened does not stop the operator.
package validation

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{Nodes: 2, Zones: 1})
}

// env is one test's cluster, with a client that knows holdfast's types.
type env struct {
	*framework.Framework
	c client.Client
}

func setup(t *testing.T) *env {
	t.Helper()
	f := framework.New(t)
	return &env{Framework: f, c: f.Holdfast(&holdfastv1alpha1.DisruptionPolicyList{}, &holdfastv1alpha1.NodeCompanionList{}, &holdfastv1alpha1.ClusterDisruptionPolicyList{})}
}

// object builds an unstructured holdfast object, so that a test can send values the Go
// types could not hold (9999999999 in an int-or-string).
func object(kind, namespace string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(holdfastv1alpha1.GroupVersion.String())
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetGenerateName("validation-")
	return u
}

// policySpec is a valid DisruptionPolicy spec changed by mod.
func policySpec(mod func(map[string]any)) map[string]any {
	s := map[string]any{"selector": map[string]any{}, "maxUnavailable": int64(1)}
	mod(s)
	return s
}

// window is a valid maintenance window changed by mod.
func window(mod func(map[string]any)) func(map[string]any) {
	return func(s map[string]any) {
		w := map[string]any{"schedule": "0 2 * * 6", "duration": "4h", "timeZone": "Europe/Paris"}
		mod(w)
		s["maintenanceWindows"] = []any{w}
	}
}

// set returns a modifier that sets key to v.
func set(key string, v any) func(map[string]any) {
	return func(m map[string]any) { m[key] = v }
}

func companionSpec(maxUnavailable any) map[string]any {
	return map[string]any{
		"daemonSet":      map[string]any{"name": "agent"},
		"maxUnavailable": maxUnavailable,
		"template":       map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "i"}}}},
	}
}

// The API server refuses each value of issue 17's list, one case each, with a message
// that says what to write instead; the usual spellings are accepted.
func TestRejected(t *testing.T) {
	e := setup(t)
	protect := func(escapeAfter string) func(map[string]any) {
		return func(s map[string]any) { s["singleReplica"] = "Protect"; s["escapeAfter"] = escapeAfter }
	}
	cases := map[string]struct {
		kind string
		spec map[string]any
		want string // "" is accepted
	}{
		"escapeAfter banana": {spec: policySpec(protect("banana")), want: "escapeAfter must be a non-negative duration"},
		"escapeAfter -1h":    {spec: policySpec(protect("-1h")), want: "escapeAfter must be a non-negative duration"},
		"escapeAfter 10m":    {spec: policySpec(protect("10m"))},
		"minAvailable 9999999999": {spec: policySpec(func(s map[string]any) {
			delete(s, "maxUnavailable")
			s["minAvailable"] = int64(9999999999)
		}), want: "minAvailable must be an integer from 0 to 2147483647"},
		"maxUnavailable 3000000000":              {spec: policySpec(set("maxUnavailable", int64(3000000000))), want: "maxUnavailable must be an integer from 1 to 2147483647"},
		"maxUnavailable 2147483647":              {spec: policySpec(set("maxUnavailable", int64(2147483647)))},
		"schedule every saturday":                {spec: policySpec(window(set("schedule", "every saturday"))), want: "schedule must be five cron fields"},
		"schedule 0 25 * * 9":                    {spec: policySpec(window(set("schedule", "0 25 * * 9"))), want: "schedule must be five cron fields"},
		"schedule @every 1h":                     {spec: policySpec(window(set("schedule", "@every 1h"))), want: "schedule must be five cron fields"},
		"schedule */15 * * * *":                  {spec: policySpec(window(set("schedule", "*/15 * * * *")))},
		"schedule 0 2 * * MON-FRI":               {spec: policySpec(window(set("schedule", "0 2 * * MON-FRI")))},
		"schedule 0 1-5 1,15 * 1,3,5":            {spec: policySpec(window(set("schedule", "0 1-5 1,15 * 1,3,5")))},
		"schedule @daily":                        {spec: policySpec(window(set("schedule", "@daily")))},
		"window duration banana":                 {spec: policySpec(window(set("duration", "banana"))), want: "duration must be a duration such as 4h"},
		"window duration 745h":                   {spec: policySpec(window(set("duration", "745h"))), want: "from 1m to 744h"},
		"window duration 30s":                    {spec: policySpec(window(set("duration", "30s"))), want: "from 1m to 744h"},
		"timeZone Europe Paris":                  {spec: policySpec(window(set("timeZone", "Europe Paris"))), want: "timeZone must be an IANA time zone name"},
		"timeZone Local":                         {spec: policySpec(window(set("timeZone", "Local"))), want: "timeZone must be an IANA time zone name"},
		"rebalance cooldown banana":              {spec: policySpec(set("rebalance", map[string]any{"cooldown": "banana"})), want: "cooldown must be a duration of at least 10s"},
		"rebalance cooldown -5m":                 {spec: policySpec(set("rebalance", map[string]any{"cooldown": "-5m"})), want: "cooldown must be a duration of at least 10s"},
		"rebalance cooldown 0s":                  {spec: policySpec(set("rebalance", map[string]any{"cooldown": "0s"})), want: "cooldown must be a duration of at least 10s"},
		"rebalance cooldown 10s":                 {spec: policySpec(set("rebalance", map[string]any{"cooldown": "10s"}))},
		"rebalance maxSkew 9999999999":           {spec: policySpec(set("rebalance", map[string]any{"maxSkew": int64(9999999999)})), want: "maxSkew"},
		"nodeFailure lostAfter 5s":               {spec: policySpec(set("nodeFailure", map[string]any{"lostAfter": "5s"})), want: "lostAfter must be a duration from 15s to 10m"},
		"nodeFailure lostAfter banana":           {spec: policySpec(set("nodeFailure", map[string]any{"lostAfter": "banana"})), want: "lostAfter must be a duration from 15s to 10m"},
		"nodeFailure lostAfter 45s":              {spec: policySpec(set("nodeFailure", map[string]any{"lostAfter": "45s"}))},
		"nodeFailure fenceAfter without fencing": {spec: policySpec(set("nodeFailure", map[string]any{"fenceAfter": "10m"})), want: "fenceAfter applies only to fencing: Verified"},
		"nodeFailure fenceAfter 30s":             {spec: policySpec(set("nodeFailure", map[string]any{"fencing": "Verified", "fenceAfter": "30s"})), want: "fenceAfter must be a duration of at least 1m"},
		"nodeFailure fencing Verified 10m":       {spec: policySpec(set("nodeFailure", map[string]any{"fencing": "Verified", "fenceAfter": "10m"}))},
		"nodeFailure surge Always":               {spec: policySpec(set("nodeFailure", map[string]any{"surge": "Always"})), want: "Unsupported value"},
		"zoneAware maxUnavailable 0":             {spec: policySpec(set("zoneAware", map[string]any{"maxUnavailable": int64(0)})), want: "zoneAware.maxUnavailable must be an integer from 1"},
		"zoneAware maxUnavailable 0%":            {spec: policySpec(set("zoneAware", map[string]any{"maxUnavailable": "0%"})), want: "zoneAware.maxUnavailable must be an integer from 1"},
		"zoneAware without maxUnavailable":       {spec: policySpec(set("zoneAware", map[string]any{"settleTime": "1m"})), want: "maxUnavailable: Required value"},
		"zoneAware settleTime 2h":                {spec: policySpec(set("zoneAware", map[string]any{"maxUnavailable": int64(3), "settleTime": "2h"})), want: "zoneAware.settleTime must be a duration from 0s to 1h"},
		"zoneAware topologyKey with spaces":      {spec: policySpec(set("zoneAware", map[string]any{"maxUnavailable": int64(3), "topologyKey": "my zone"})), want: "topologyKey"},
		"zoneAware 34% in rack zones":            {spec: policySpec(set("zoneAware", map[string]any{"maxUnavailable": "34%", "topologyKey": "example.com/rack", "settleTime": "0s"}))},
		"zoneAware 3":                            {spec: policySpec(set("zoneAware", map[string]any{"maxUnavailable": int64(3)}))},
		"ClusterDisruptionPolicy template zoneAware maxUnavailable 0": {kind: "ClusterDisruptionPolicy", spec: map[string]any{
			"namespaceSelector": map[string]any{}, "template": policySpec(set("zoneAware", map[string]any{"maxUnavailable": int64(0)})),
		}, want: "zoneAware.maxUnavailable must be an integer from 1"},
		"NodeCompanion maxUnavailable 2147483648": {kind: "NodeCompanion", spec: companionSpec(int64(2147483648)), want: "maxUnavailable must be an integer from 1 to 2147483647"},
		"NodeCompanion maxUnavailable 25%":        {kind: "NodeCompanion", spec: companionSpec("25%")},
		"ClusterDisruptionPolicy template escapeAfter banana": {kind: "ClusterDisruptionPolicy", spec: map[string]any{
			"namespaceSelector": map[string]any{}, "template": policySpec(protect("banana")),
		}, want: "escapeAfter must be a non-negative duration"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			kind, ns := tc.kind, e.Namespace
			if kind == "" {
				kind = "DisruptionPolicy"
			}
			if kind == "ClusterDisruptionPolicy" {
				ns = ""
			}
			obj := object(kind, ns, tc.spec)
			var err error
			// Another test may just have put the strict schema back: the API server judges
			// by it once its own watch has seen the CRD, so a refusal is waited for.
			_ = wait.PollUntilContextTimeout(e.Ctx, 100*time.Millisecond, settle, true, func(ctx context.Context) (bool, error) {
				err = e.c.Create(ctx, obj.DeepCopy(), client.DryRunAll)
				return tc.want == "" || err != nil, nil
			})
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("create: %v; want it accepted", err)
			case tc.want != "" && (!apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("create: %v; want Invalid with %q", err, tc.want)
			}
		})
	}
}

// create creates obj with the client that knows holdfast's types.
func (e *env) create(obj client.Object) {
	e.T.Helper()
	if err := e.c.Create(e.Ctx, obj); err != nil {
		e.T.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}
