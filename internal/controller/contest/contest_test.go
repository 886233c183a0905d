package contest

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestLedgerBoundsTheWritesOfAFieldOthersUndo(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	l := NewLedger(clk)
	f := Spec(Object{"policy/v1", "PodDisruptionBudget", "shop", "holdfast-deployment-web"})
	writes := 0
	var last Verdict
	// Another writer undoes holdfast's write every 500 ms for two minutes: each undo is
	// a new resourceVersion in the cache.
	for i := range 240 {
		seen := string(rune('a' + i%26))
		last = l.Ask(f, "maxUnavailable=1", seen)
		if last.Write {
			writes++
			l.Wrote(f, "maxUnavailable=1", seen)
			if last.Undone {
				l.Named(f, "argocd-controller")
			}
		}
		if i == 119 && writes != Limit {
			t.Fatalf("%d writes in the first minute, want %d", writes, Limit)
		}
		clk.SetTime(clk.Now().Add(500 * time.Millisecond))
	}
	if writes != 2*Limit {
		t.Errorf("%d writes in two minutes, want %d", writes, 2*Limit)
	}
	if !last.Contested() || last.Writer != "argocd-controller" || last.Retry <= 0 || last.Retry > Window {
		t.Errorf("last verdict %+v, want a contest by argocd-controller held back less than a minute", last)
	}
}

func TestLedger(t *testing.T) {
	f := Taint("worker-1", "holdfast.dev/lost")
	for name, tc := range map[string]struct {
		// seen is what the decision read the node at, after holdfast wrote "v" over
		// resourceVersion 7 a given time ago.
		value, seen string
		ago         time.Duration
		want        Verdict
	}{
		"the cache is behind holdfast's write":        {value: "v", seen: "7", ago: time.Second, want: Verdict{}},
		"undone since":                                {value: "v", seen: "9", ago: time.Second, want: Verdict{Write: true, Undone: true}},
		"read from the apiserver: a repeat is undone": {value: "v", seen: "", ago: time.Second, want: Verdict{Write: true, Undone: true}},
		"another value is a new decision":             {value: "w", seen: "9", ago: time.Second, want: Verdict{Write: true}},
		"a write a minute old is forgotten":           {value: "v", seen: "9", ago: Window, want: Verdict{Write: true}},
	} {
		t.Run(name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
			l := NewLedger(clk)
			l.Wrote(f, "v", "7")
			clk.SetTime(clk.Now().Add(tc.ago))
			if got := l.Ask(f, tc.value, tc.seen); got != tc.want {
				t.Errorf("Ask = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// The ledger forgets the fields of writes long past, so that it holds only those of
// the last minutes however many objects holdfast writes.
func TestLedgerForgetsOldFields(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	l := NewLedger(clk)
	for _, pod := range []string{"a", "b", "c"} {
		l.Wrote(Label(Object{"v1", "Pod", "shop", pod}, "holdfast.dev/zone"), "zone-a", "")
	}
	clk.SetTime(clk.Now().Add(2*Window + time.Second))
	l.Ask(Label(Object{"v1", "Pod", "shop", "d"}, "holdfast.dev/zone"), "zone-a", "")
	if len(l.writes) != 0 {
		t.Errorf("the ledger holds %d fields two minutes after their writes", len(l.writes))
	}
}

func TestFieldString(t *testing.T) {
	for f, want := range map[Field]string{
		Taint("worker-1", "holdfast.dev/lost"):                                              "Node worker-1 spec.taints[holdfast.dev/lost]",
		Annotation(Object{"v1", "Pod", "shop", "web-0"}, "karpenter.sh/do-not-disrupt"):     "Pod shop/web-0 metadata.annotations[karpenter.sh/do-not-disrupt]",
		Spec(Object{"policy/v1", "PodDisruptionBudget", "shop", "holdfast-deployment-web"}): "PodDisruptionBudget shop/holdfast-deployment-web spec",
	} {
		if got := f.String(); got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
}
