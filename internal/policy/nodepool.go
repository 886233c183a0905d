package policy

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A NodePool's disruption budgets (spec.disruption.budgets) cap how many of its nodes
// Karpenter disrupts at once, for each reason. Karpenter checks them before it looks at
// a node: while they allow no disruption, it does not consolidate the node whatever the
// pods' budgets allow, and a hand-off would surge for nothing. holdfast reads them as
// Karpenter v1 does (NodePool.GetAllowedDisruptionsByReason and the disruption
// controller's count of the NodePool's nodes).

const (
	// reasonUnderutilized is Karpenter's reason for consolidating a node that has pods
	// (Empty is the reason for one without): a single replica's node always has one.
	reasonUnderutilized = "Underutilized"
	// defaultBudgetNodes is Karpenter's budget for a NodePool that sets none.
	defaultBudgetNodes = "10%"
	// budgetsField is where a NodePool keeps its budgets, for messages.
	budgetsField = "spec.disruption.budgets"
	// maxWindowSteps bounds the walk over a schedule's firings that finds when its
	// window ends: a schedule that fires again within its duration forever (hourly for
	// two hours) never ends, and the walk gives up.
	maxWindowSteps = 100
)

// PoolBudget is what a NodePool's disruption budgets allow Karpenter, for one reason, at
// one time.
type PoolBudget struct {
	// Pool names the NodePool.
	Pool string
	// Closed says why the budgets allow no further disruption: which budget allows how
	// many, and how many of the NodePool's nodes are being disrupted; or which budget
	// cannot be read. "" while they allow one.
	Closed string
	// Opens is when every budget that closes it stops being active; zero when that is
	// not known (a budget without schedule, one that cannot be read, or a schedule that
	// keeps its window open).
	Opens time.Time
}

// poolPoll is how often a hand-off held back by a NodePool's budgets, with no window
// end to wait for, is looked at again: the end of another node's disruption and an
// edit of the NodePool send no event a policy is woken by.
const poolPoll = time.Minute

// recheck is how long after now the hand-off is looked at again: when the budgets that
// close b stop being active, else after poolPoll.
func (b PoolBudget) recheck(now time.Time) time.Duration {
	if b.Opens.After(now) {
		return b.Opens.Sub(now)
	}
	return poolPoll
}

// budgetTerm is what one budget allows for a reason at a time.
type budgetTerm struct {
	// field names the budget in its NodePool, for messages.
	field string
	// nodes is its nodes value, and allowed what it comes to over the NodePool's nodes,
	// those being disrupted included.
	nodes   string
	allowed int
	// end is when its schedule's window ends; zero when it has no schedule or the end is
	// not known.
	end time.Time
	// err says why the budget cannot be read; Karpenter counts such a budget as allowing
	// nothing.
	err error
}

// poolBudgetOf is what pool's budgets allow Karpenter for reason at now, given claims,
// every NodeClaim (those of pool are counted). A budget that cannot be read allows
// nothing, as Karpenter fails closed on one.
func poolBudgetOf(pool *unstructured.Unstructured, claims []unstructured.Unstructured, reason string, now time.Time) PoolBudget {
	out := PoolBudget{Pool: pool.GetName()}
	nodes, disrupting := poolNodes(claims, out.Pool)
	var blocking []budgetTerm
	for _, t := range budgetTerms(pool, reason, nodes, now) {
		if t.err != nil || t.allowed <= disrupting {
			blocking = append(blocking, t)
		}
	}
	if len(blocking) == 0 {
		return out
	}
	out.Closed = closedBy(out.Pool, blocking, nodes, disrupting)
	if !slices.ContainsFunc(blocking, func(t budgetTerm) bool { return t.end.IsZero() }) {
		out.Opens = slices.MaxFunc(blocking, func(a, b budgetTerm) int { return a.end.Compare(b.end) }).end
	}
	return out
}

// closedBy says why a NodePool's budgets allow no disruption: the first budget that
// cannot be read, else the one that allows the fewest.
func closedBy(pool string, blocking []budgetTerm, nodes, disrupting int) string {
	if i := slices.IndexFunc(blocking, func(t budgetTerm) bool { return t.err != nil }); i >= 0 {
		return fmt.Sprintf("NodePool %s's %s cannot be read (%v), and Karpenter allows no disruption under it", pool, blocking[i].field, blocking[i].err)
	}
	t := slices.MinFunc(blocking, func(a, b budgetTerm) int { return cmp.Compare(a.allowed, b.allowed) })
	why := fmt.Sprintf("NodePool %s's %s (nodes %q of %s) allows %s", pool, t.field, t.nodes, Plural(int32(nodes), "node"), Plural(int32(t.allowed), "disruption"))
	if disrupting > 0 {
		verb := "are"
		if disrupting == 1 {
			verb = "is"
		}
		why += fmt.Sprintf(", and %d of its nodes %s being disrupted", disrupting, verb)
	}
	return why
}

// budgetTerms reads what each of pool's budgets that apply to reason and are active at
// now allows over its nodes; Karpenter's default budget when it sets none.
func budgetTerms(pool *unstructured.Unstructured, reason string, nodes int, now time.Time) []budgetTerm {
	raw, found, _ := unstructured.NestedFieldNoCopy(pool.Object, "spec", "disruption", "budgets")
	if !found {
		return []budgetTerm{{field: "default budget", nodes: defaultBudgetNodes, allowed: scaled(defaultBudgetNodes, nodes)}}
	}
	list, ok := raw.([]any)
	if !ok {
		return []budgetTerm{{field: budgetsField, err: errors.New("not a list")}}
	}
	var out []budgetTerm
	for i, b := range list {
		t, applies := readBudget(b, reason, nodes, now)
		if applies {
			t.field = fmt.Sprintf("%s[%d]%s", budgetsField, i, t.field)
			out = append(out, t)
		}
	}
	return out
}

// readBudget reads one budget: what it allows, and whether it applies to reason and is
// active at now. One that cannot be read applies, t.field naming what in it cannot be
// read; one for other reasons is not read further, as Karpenter ignores it for reason.
func readBudget(raw any, reason string, nodes int, now time.Time) (budgetTerm, bool) {
	b, ok := raw.(map[string]any)
	if !ok {
		return budgetTerm{err: errors.New("not an object")}, true
	}
	if applies, err := appliesTo(b, reason); err != nil {
		return budgetTerm{field: ".reasons", err: err}, true
	} else if !applies {
		return budgetTerm{}, false
	}
	end, active, field, err := budgetWindow(b, now)
	if err != nil {
		return budgetTerm{field: field, err: err}, true
	}
	if !active {
		return budgetTerm{}, false
	}
	value, _ := b["nodes"].(string)
	if !validNodes(value) {
		return budgetTerm{field: ".nodes", err: fmt.Errorf("%q is neither a number of nodes nor a percentage up to 100%%", b["nodes"])}, true
	}
	return budgetTerm{nodes: value, allowed: scaled(value, nodes), end: end}, true
}

// appliesTo reports whether a budget applies to reason: it names no reasons (every
// reason), or names reason.
func appliesTo(b map[string]any, reason string) (bool, error) {
	raw, found := b["reasons"]
	if !found {
		return true, nil
	}
	list, ok := raw.([]any)
	if !ok {
		return false, errors.New("not a list")
	}
	return slices.Contains(list, any(reason)), nil
}

// budgetWindow reads a budget's schedule and duration, and whether it is active at now,
// as Karpenter does: without them it always is; with them, from each time the
// schedule fires (in UTC) for the duration. end is when its window ends, zero when not
// known; field names what cannot be read.
func budgetWindow(b map[string]any, now time.Time) (end time.Time, active bool, field string, err error) {
	spec, hasSchedule := b["schedule"]
	rawDuration, hasDuration := b["duration"]
	if !hasSchedule && !hasDuration {
		return time.Time{}, true, "", nil
	}
	s, _ := spec.(string)
	sched, err := cron.ParseStandard("TZ=UTC " + s)
	if !hasSchedule || err != nil {
		return time.Time{}, false, ".schedule", fmt.Errorf("%q is no cron schedule (one is needed with a duration)", s)
	}
	ds, _ := rawDuration.(string)
	d, err := time.ParseDuration(ds)
	if !hasDuration || err != nil || d < 0 {
		return time.Time{}, false, ".duration", fmt.Errorf("%q is no duration (one is needed with a schedule)", ds)
	}
	first := sched.Next(now.Add(-d))
	if first.IsZero() {
		// A schedule that never fires ("0 0 30 2 *"; robfig/cron gives up after five
		// years) has no next firing after now either: Karpenter counts it active, for good.
		return time.Time{}, true, "", nil
	}
	if first.After(now) {
		return time.Time{}, false, "", nil
	}
	return windowEnd(sched, latestOpening(sched, now.Add(-d), now), d), true, "", nil
}

// windowEnd is when a budget's window that opened last at fired ends: d after the last
// of the firings that each come before the window they extend ends; zero when it has
// not ended after maxWindowSteps of them.
func windowEnd(sched cron.Schedule, fired time.Time, d time.Duration) time.Time {
	for range maxWindowSteps {
		next := sched.Next(fired)
		if next.IsZero() || next.After(fired.Add(d)) {
			return fired.Add(d)
		}
		fired = next
	}
	return time.Time{}
}

// validNodes reports whether a budget's nodes is what Karpenter accepts: a number, or a
// percentage up to 100.
func validNodes(s string) bool {
	if n, err := strconv.Atoi(s); err == nil {
		return n >= 0
	}
	pct, ok := strings.CutSuffix(s, "%")
	n, err := strconv.Atoi(pct)
	return ok && err == nil && n >= 0 && n <= 100
}

// scaled is what a valid nodes value allows over a NodePool of nodes: the number, or the
// percentage of nodes rounded up (a 10% budget of 3 nodes allows 1).
func scaled(s string, nodes int) int {
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	pct, _ := strconv.Atoi(strings.TrimSuffix(s, "%"))
	return int(math.Ceil(float64(pct) * float64(nodes) / 100))
}

// poolNodes counts the nodes of NodePool pool as Karpenter's budgets count them, from
// claims: its NodeClaims, but those not yet initialized (an Initialized condition that is
// not True; a NodeClaim without conditions, as in a manifest, counts) and those whose
// instance is terminating already; and of them, those being disrupted: deleted, or given
// a DisruptionReason (Karpenter sets it as it taints the node karpenter.sh/disrupted).
// Karpenter also counts a node that is not Ready as being disrupted; holdfast does not
// read every node of the NodePool to find those.
func poolNodes(claims []unstructured.Unstructured, pool string) (nodes, disrupting int) {
	for i := range claims {
		c := &claims[i]
		if c.GetLabels()[karpenterNodePoolLabel] != pool || conditionStatus(c, "Initialized", "True") != "True" ||
			conditionStatus(c, "InstanceTerminating", "False") == "True" {
			continue
		}
		nodes++
		if c.GetDeletionTimestamp() != nil || conditionStatus(c, "DisruptionReason", "False") == "True" {
			disrupting++
		}
	}
	return nodes, disrupting
}

// conditionStatus is the status of a NodeClaim's condition of type typ; absent when it
// has none.
func conditionStatus(claim *unstructured.Unstructured, typ, absent string) string {
	if c := condition(claim, typ); c != nil {
		s, _ := c["status"].(string)
		return s
	}
	return absent
}

// condition is a NodeClaim's condition of type typ; nil when it has none.
func condition(claim *unstructured.Unstructured, typ string) map[string]any {
	conds, _, _ := unstructured.NestedFieldNoCopy(claim.Object, "status", "conditions")
	list, _ := conds.([]any)
	for _, c := range list {
		if m, _ := c.(map[string]any); m["type"] == typ {
			return m
		}
	}
	return nil
}
