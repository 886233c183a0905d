package drain

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/holdfast-dev/holdfast/internal/availability"
)

// DefaultInterval is how often a drain looks at its pods again while it waits.
const DefaultInterval = 250 * time.Millisecond

// Options shape a drain.
type Options struct {
	Filter
	// Pace makes the next eviction from a workload wait until the replacement of the
	// previous one is Ready, and keeps a node's slot until its pods' replacements are.
	Pace bool
	// MaxConcurrent is the number of slots: nodes drained at once in the whole cluster by
	// every drain that uses the same number.
	MaxConcurrent int
	// SlotNamespace holds the slot Leases; it is created if missing.
	SlotNamespace string
	// LeaseDuration is how long a slot outlives its holder's last renewal.
	LeaseDuration time.Duration
	// Identity names this process in slot Leases (host/pid); the node is appended.
	Identity string
	// Interval is how often pods are looked at again while waiting.
	Interval time.Duration
	// EvictUnplaceable evicts a pod even when its replacement would fit on no other node
	// now: right when an autoscaler adds nodes for Pending pods. Without it such a pod is
	// kept, and evicted once there is room (an uncordon, a new node), or never.
	EvictUnplaceable bool
	// GracePeriod, when set, is the seconds each evicted pod is given to stop, in place of
	// its own terminationGracePeriodSeconds (kubectl drain --grace-period).
	GracePeriod *int64
	// SkipWaitForDeleteTimeout, when positive, stops waiting for a pod that has been
	// deleting for longer (kubectl drain --skip-wait-for-delete-timeout): a kubelet that
	// is gone never confirms the deletion.
	SkipWaitForDeleteTimeout time.Duration
	// NodeStatus keeps the nodes' DrainInProgress and Drained conditions and writes the
	// DrainStarted, DrainBlocked and Drained Events on them.
	NodeStatus bool
}

// Drainer cordons nodes and evicts their pods through the Eviction API, one slot of the
// cluster-wide semaphore per node.
type Drainer struct {
	Client kubernetes.Interface
	Clock  clock.WithTicker
	Options
	// Report receives progress; calls are serialised. Nil drops progress.
	Report func(Event)

	reportMu sync.Mutex
	pacer    pacer
	semOnce  sync.Once
	sem      *Semaphore
	// pods is the run's watch of the cluster's pods.
	pods *podCache
	// status tells the nodes what their drains do, when NodeStatus asks for it.
	status *nodeStatus
	room   roomView
	// daemonSets are the DaemonSets the run's watch holds, for kubectl's rule on orphans.
	daemonSets availability.DaemonSets
	// run is the run's Lease as RunAnnotation names it.
	run string
}

// Result is the outcome of a drain, node by node in the order the nodes were given.
type Result struct {
	Nodes []NodeResult
	// Err holds what went wrong outside any one node's drain: marking the nodes queued.
	Err error
}

// Drained reports whether every node was drained.
func (r Result) Drained() bool {
	for _, n := range r.Nodes {
		if !n.Drained {
			return false
		}
	}
	return true
}

// NodeResult is what became of one node.
type NodeResult struct {
	Node string
	// Started is false for a node whose turn never came (interrupted or timed out before).
	Started bool
	Drained bool
	// Refused is true for a node left as it was, cordoned, because pods on it needed a
	// flag (kubectl's rules): nothing was evicted. Remaining names them.
	Refused bool
	Evicted int
	Skipped []PodNote
	// Remaining are the pods still to move off the node, with why they are still there.
	Remaining []PodNote
	// Err is why the drain of the node ended early: a timeout, an interrupt, an API error.
	Err error
}

// PodNote is a pod (namespace/name) and something to say about it.
type PodNote struct {
	Pod    string
	Reason string
}

// EventKind says what happened.
type EventKind string

// Progress events, in the order a node goes through them.
const (
	WaitingForSlot        EventKind = "WaitingForSlot"
	SlotTaken             EventKind = "SlotTaken"
	Cordoned              EventKind = "Cordoned"
	PodSkipped            EventKind = "Skipped"
	Evicting              EventKind = "Evicting"
	Evicted               EventKind = "Evicted"
	Blocked               EventKind = "Blocked"
	WaitingForReplacement EventKind = "WaitingForReplacement"
	// ReplacementUnschedulable: the node is drained but a replacement cannot be placed.
	ReplacementUnschedulable EventKind = "ReplacementUnschedulable"
	// NoRoom: the pod's replacement would fit on no other node now.
	NoRoom         EventKind = "NoRoom"
	PodGone        EventKind = "Gone"
	PodStopped     EventKind = "Stopped"
	NodeDrained    EventKind = "NodeDrained"
	NodeIncomplete EventKind = "NodeIncomplete"
	// NodeRefused: pods on the node need a flag, so none of its pods is evicted.
	NodeRefused  EventKind = "NodeRefused"
	SlotReleased EventKind = "SlotReleased"
)

// Event is one step of a drain; Pod is empty for events about the node.
type Event struct {
	Time    time.Time
	Node    string
	Pod     string
	Kind    EventKind
	Message string
	// Budget is the PodDisruptionBudget that refused the pod's eviction, with its
	// numbers as the refusal found them, when one did.
	Budget *availability.Count
}

func (d *Drainer) report(e Event) {
	e.Time = d.Clock.Now()
	// The node hears of the event first: its status is the lasting record.
	d.status.observe(e)
	if d.Report == nil {
		return
	}
	d.reportMu.Lock()
	defer d.reportMu.Unlock()
	d.Report(e)
}

// Run drains the waves in order; within a wave, nodes start as slots free up, in the order
// PickNext gives. It stops early when ctx ends; nodes it did not finish stay cordoned.
// With more than one node, the nodes not yet cordoned carry the QueuedTaintKey mark.
func (d *Drainer) Run(ctx context.Context, waves [][]string) (res Result) {
	all := slices.Concat(waves...)
	watching, stop := context.WithCancel(ctx)
	defer stop()
	d.pods = newPodCache(d.Client)
	sizes, sized := newSizeCache(d.Client), make(chan error, 1)
	go func() { sized <- sizes.start(watching) }()
	err := d.pods.start(watching)
	if sizeErr := <-sized; err == nil {
		err = sizeErr
	}
	if err != nil {
		for _, n := range all {
			res.Nodes = append(res.Nodes, NodeResult{Node: n, Err: stopped(ctx, err)})
		}
		return res
	}
	d.pacer.pods, d.pacer.sizes, d.pacer.clock = d.pods.ofController, sizes.desired, d.Clock
	d.daemonSets = sizes.daemonSetExists
	run, releaseRun, err := d.holdRun(ctx)
	if err != nil {
		for _, n := range all {
			res.Nodes = append(res.Nodes, NodeResult{Node: n, Err: stopped(ctx, err)})
		}
		return res
	}
	d.run = run
	if d.NodeStatus {
		d.status = newNodeStatus(ctx, d.Client, d.Clock, d.Identity)
		// Registered first, so run last: after the marks' errors are in.
		defer func() { res.Err = errors.Join(res.Err, d.status.err()) }()
	}
	var errs []error
	if len(all) > 1 {
		for _, n := range all {
			if err := d.markQueued(ctx, n, true); err != nil {
				errs = append(errs, err)
			}
		}
	}
	// The nodes lose the run's marks before its Lease goes, so that the operator never
	// sees a mark without its run.
	defer func() { res.Err = errors.Join(append(errs, d.release(ctx, all), releaseRun())...) }()
	for _, wave := range waves {
		res.Nodes = append(res.Nodes, d.dispatch(ctx, wave)...)
	}
	return res
}

// semaphore is the run's one Semaphore: it remembers when each slot Lease last changed,
// which is what their expiry is timed from.
func (d *Drainer) semaphore() *Semaphore {
	d.semOnce.Do(func() {
		d.sem = &Semaphore{
			Leases:     d.Client.CoordinationV1(),
			Namespace:  d.SlotNamespace,
			Namespaces: d.Client.CoreV1(),
			Size:       max(d.MaxConcurrent, 1),
			Duration:   cmp.Or(d.LeaseDuration, DefaultLeaseDuration),
			Clock:      d.Clock,
		}
	})
	return d.sem
}

func (d *Drainer) interval() time.Duration { return cmp.Or(d.Interval, DefaultInterval) }

// minWake spaces the looks a drain takes when the watch wakes it, so that a cluster whose
// pods change all the time does not keep it looking.
const minWake = 50 * time.Millisecond

// wait returns at the next change of a pod (but not before minWake) or after the
// interval, whichever comes first, or false when ctx ends. The interval still serves
// what only time changes: backoffs, room checks, the slot's proof.
func (d *Drainer) wait(ctx context.Context) bool {
	changed := d.pods.changes()
	tick := d.Clock.NewTimer(d.interval())
	defer tick.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-tick.C():
		return true
	case <-changed:
	}
	return sleep(ctx, d.Clock, minWake)
}

// acquire waits for a slot for the node.
func (d *Drainer) acquire(ctx context.Context, node string) (*Slot, error) {
	sem := d.semaphore()
	lastHolders := ""
	return sem.Acquire(ctx, d.Identity+"/"+node, d.interval(), func(holders []Holder) {
		if msg := describeHolders(holders); msg != lastHolders {
			lastHolders = msg
			d.report(Event{Node: node, Kind: WaitingForSlot, Message: "all " + fmt.Sprint(sem.Size) + " drain slot(s) are taken by " + msg})
		}
	})
}

// drainNode drains one node in the slot taken for it, and releases the slot.
func (d *Drainer) drainNode(ctx context.Context, node string, slot *Slot) (res NodeResult) {
	res = NodeResult{Node: node, Started: true}
	d.report(Event{Node: node, Kind: SlotTaken, Message: slot.String()})
	held, lose := context.WithCancelCause(ctx)
	go slot.Hold(held, lose)
	defer func() {
		lose(nil)
		// The drain's context may be over (Ctrl-C, timeout); releasing must still happen.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := slot.Release(rctx); err != nil {
			res.Err = errors.Join(res.Err, err)
		}
		d.report(Event{Node: node, Kind: SlotReleased, Message: slot.Name()})
	}()

	if err := d.cordon(held, node); err != nil {
		res.Err = stopped(held, err)
		return res
	}
	// Cordoned, the node takes no new pod at all; the run's end retries a failed unmark.
	_ = d.markQueued(held, node, false)
	w := &nodeWork{d: d, node: node, slot: slot, pods: map[string]*podWork{}, res: &res}
	refused, err := w.refusals(held)
	if err != nil {
		res.Err = stopped(held, err)
		return res
	}
	if len(refused) > 0 {
		// As kubectl drain: one pod that needs a flag stops the node before any eviction,
		// so that `drain || uncordon` never leaves it half emptied.
		for _, r := range refused {
			d.report(Event{Node: node, Pod: r.Pod, Kind: PodStopped, Message: r.Reason})
		}
		res.Refused, res.Remaining = true, refused
		d.report(Event{Node: node, Kind: NodeRefused, Message: fmt.Sprintf("%d pod(s) need a flag; nothing evicted, the node stays cordoned", len(refused))})
		return res
	}
	res.Err = stopped(held, w.run(held))
	res.Remaining = w.remaining()
	res.Drained = res.Err == nil && len(res.Remaining) == 0
	if res.Drained {
		d.report(Event{Node: node, Kind: NodeDrained, Message: fmt.Sprintf("%d pod(s) evicted", res.Evicted)})
	} else {
		d.report(Event{Node: node, Kind: NodeIncomplete, Message: fmt.Sprintf("%d pod(s) remain; the node stays cordoned", len(res.Remaining))})
	}
	return res
}

// stopped returns why ctx ended when it has, in place of err: an API call cut short by
// --timeout fails with "context deadline exceeded", which would hide the cause the
// caller gave (a timeout, an interrupt, the slot lost) behind what looks like an API error.
func stopped(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() == nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		// A context closes its Done before it cancels its children: the request may have
		// seen the parent end before ctx did. It follows at once; the bound is for an
		// error that came from elsewhere.
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}

func (d *Drainer) cordon(ctx context.Context, node string) error {
	n, err := d.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading node %s: %w", node, err)
	}
	// The run's annotation goes on with the cordon, before the node's conditions say a
	// drain runs: the operator would take those for a dead drain's without it.
	patch := map[string]any{"metadata": map[string]any{"annotations": map[string]string{RunAnnotation: d.run}}}
	msg := "already cordoned"
	if !n.Spec.Unschedulable {
		patch["spec"], msg = map[string]bool{"unschedulable": true}, "cordoned"
	}
	if n.Spec.Unschedulable && n.Annotations[RunAnnotation] == d.run {
		d.report(Event{Node: node, Kind: Cordoned, Message: msg})
		return nil
	}
	body, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	if _, err := d.Client.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, body, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("cordoning node %s: %w", node, err)
	}
	d.report(Event{Node: node, Kind: Cordoned, Message: msg})
	return nil
}

// nodeWork is the drain of one node: the pods found on it and what became of them.
type nodeWork struct {
	d    *Drainer
	node string
	// slot is the node's drain slot: no eviction starts once holding it is not proven.
	slot *Slot
	pods map[string]*podWork
	// gates are this node's evictions whose replacements must be Ready before the node's
	// slot goes to the next drain.
	gates []eviction
	res   *NodeResult
	// said is the last node-level wait reported.
	said string
	// roomAt is when the pods' room was last checked.
	roomAt time.Time
}

// eviction is one accepted eviction, by workload and pacer number.
type eviction struct {
	key workloadKey
	seq uint64
}

// podWork is one pod to move off the node.
type podWork struct {
	pod      *corev1.Pod
	state    PodState
	attempts int
	// refused is the last refusal's explanation, waiting the last pacing wait's.
	refused string
	waiting string
	// said is the last message reported, so that a waiting pod is reported once per change.
	said string
}

func podName(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

func (w *nodeWork) say(p *podWork, kind EventKind, msg string) { w.sayBudget(p, kind, msg, nil) }

// sayBudget reports a step of the pod once per change, with the budget behind it if any.
func (w *nodeWork) sayBudget(p *podWork, kind EventKind, msg string, budget *availability.Count) {
	if key := string(kind) + msg; key != p.said {
		p.said = key
		w.d.report(Event{Node: w.node, Pod: podName(p.pod), Kind: kind, Message: msg, Budget: budget})
	}
}

func (w *nodeWork) run(ctx context.Context) error {
	for {
		if !w.slot.Held() {
			// Hold says so too, but only when its clock wakes it: this is exact.
			return fmt.Errorf("%s: %w", w.slot.Name(), ErrSlotLost)
		}
		if err := w.refresh(ctx); err != nil {
			return err
		}
		if w.roomAt.IsZero() || w.waitingForRoom() {
			if err := w.checkRoom(ctx); err != nil {
				return err
			}
		}
		pending := 0
		for _, name := range slices.Sorted(maps.Keys(w.pods)) {
			p := w.pods[name]
			if w.step(ctx, p) {
				pending++
			}
		}
		if pending == 0 && (!w.d.Pace || w.replacementsReady(ctx)) {
			return nil
		}
		if !w.d.wait(ctx) {
			return context.Cause(ctx)
		}
	}
}

// classify applies the drain's rules to a pod, with the DaemonSets the run's watch holds.
func (d *Drainer) classify(pod *corev1.Pod) Classification {
	return d.Filter.Classify(pod, d.daemonSets)
}

// deletingTooLong reports whether --skip-wait-for-delete-timeout gives up on the pod: it
// has been deleting for longer.
func (d *Drainer) deletingTooLong(pod *corev1.Pod, now time.Time) bool {
	return d.SkipWaitForDeleteTimeout > 0 && pod.DeletionTimestamp != nil && now.Sub(pod.DeletionTimestamp.Time) > d.SkipWaitForDeleteTimeout
}

// refusals lists the node's pods that kubectl's rules refuse (refused), read from the API
// server rather than the run's watch, which may not have seen a pod bound just before the
// cordon.
func (w *nodeWork) refusals(ctx context.Context) ([]PodNote, error) {
	list, err := w.d.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + w.node})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of node %s: %w", w.node, err)
	}
	return w.d.refused(list.Items), nil
}

// refused lists, sorted, the pods the drain's rules refuse, leaving out those deleting
// for longer than --skip-wait-for-delete-timeout, as kubectl does.
func (d *Drainer) refused(pods []corev1.Pod) []PodNote {
	now := d.Clock.Now()
	var out []PodNote
	for i := range pods {
		pod := &pods[i]
		if d.deletingTooLong(pod, now) {
			continue
		}
		if c := d.classify(pod); c.Verdict == Refuse {
			out = append(out, PodNote{Pod: podName(pod), Reason: c.Reason})
		}
	}
	slices.SortFunc(out, func(a, b PodNote) int { return cmp.Compare(a.Pod, b.Pod) })
	return out
}

// refresh reads the pods on the node from the run's watch: new ones are classified,
// missing ones are gone.
func (w *nodeWork) refresh(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	seen := map[string]bool{}
	now := w.d.Clock.Now()
	for _, pod := range w.d.pods.onNode(w.node) {
		name := podName(pod)
		seen[name] = true
		if w.d.deletingTooLong(pod, now) {
			delete(w.pods, name)
			w.skip(name, fmt.Sprintf("deleting since %s, over --skip-wait-for-delete-timeout: no longer waited for",
				pod.DeletionTimestamp.UTC().Format(time.RFC3339)))
			continue
		}
		p, known := w.pods[name]
		if known && p.pod.UID != pod.UID {
			// A StatefulSet pod came back under the same name: the one we evicted is gone.
			p.state.Gone = true
			continue
		}
		if known {
			// Listed with its UID, the pod is there, whatever an earlier answer suggested.
			p.state.Gone = false
			p.pod = pod
			// Once evicted, terminating for good, whatever a watch a moment behind says.
			p.state.Terminating = p.state.Terminating || pod.DeletionTimestamp != nil
			continue
		}
		c := w.d.classify(pod)
		if c.Verdict == Skip {
			w.skip(name, c.Reason)
			continue
		}
		p = &podWork{pod: pod, state: PodState{Terminating: pod.DeletionTimestamp != nil}}
		if c.Verdict == Refuse {
			p.state.Stopped = c.Reason
		}
		w.pods[name] = p
	}
	for name, p := range w.pods {
		if !seen[name] {
			p.state.Gone = true
		}
	}
	return nil
}

// skip notes, once, a pod the drain leaves on the node.
func (w *nodeWork) skip(name, reason string) {
	if !slices.ContainsFunc(w.res.Skipped, func(n PodNote) bool { return n.Pod == name }) {
		w.res.Skipped = append(w.res.Skipped, PodNote{Pod: name, Reason: reason})
		w.d.report(Event{Node: w.node, Pod: name, Kind: PodSkipped, Message: reason})
	}
}

// step moves one pod on and reports whether it still needs the drain to wait for it.
func (w *nodeWork) step(ctx context.Context, p *podWork) bool {
	now := w.d.Clock.Now()
	p.state.PacingOpen = true
	key, paced := workloadOf(p.pod)
	paced = paced && w.d.Pace
	if paced && Next(p.state, now) == ActEvict {
		open, why, err := w.d.pacer.open(ctx, w.d.Client, key)
		if err != nil {
			if ctx.Err() == nil {
				w.say(p, Blocked, err.Error())
			}
			return true
		}
		p.state.PacingOpen = open
		if !open {
			p.waiting = why
			w.say(p, WaitingForReplacement, why)
		}
	}
	switch Next(p.state, now) {
	case ActDone:
		w.say(p, PodGone, "")
		return false
	case ActStopped:
		w.say(p, PodStopped, p.state.Stopped)
		return false
	case ActWaitRoom:
		w.say(p, NoRoom, p.state.NoRoom+"; kept, so as not to spend its budget on a replacement that would stay Pending (--evict-unplaceable evicts it anyway)")
		return true
	case ActEvict:
	default:
		return true
	}
	asked, err := w.evict(ctx, p, key, paced)
	if !asked || err != nil && ctx.Err() != nil {
		// Not asked (no slot, or the workload's turn taken), or cut short by the drain's
		// end, not refused: run returns why it ended.
		return true
	}
	return w.answer(ctx, p, err, now)
}

// evict asks the Eviction API to evict the pod while the node holds its slot, taking the
// workload's turn with the pacer when paced; asked is false when it did not ask.
func (w *nodeWork) evict(ctx context.Context, p *podWork, key workloadKey, paced bool) (asked bool, err error) {
	var (
		baseline int
		seq      uint64
	)
	if paced {
		var ok bool
		if baseline, seq, ok = w.d.pacer.begin(ctx, w.d.Client, key); !ok {
			return false, nil
		}
	}
	if !w.slot.Held() {
		if paced {
			w.d.pacer.end(key, baseline, seq, "", false)
		}
		return false, nil
	}
	if p.attempts == 0 {
		// Retries are not announced: the refusal they follow is, once per change.
		w.say(p, Evicting, "")
	}
	err = w.d.Client.CoreV1().Pods(p.pod.Namespace).EvictV1(ctx, &policyv1.Eviction{
		ObjectMeta: metav1.ObjectMeta{Name: p.pod.Name, Namespace: p.pod.Namespace},
		// The UID precondition keeps a retry from evicting a new pod of the same name.
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.pod.UID}, GracePeriodSeconds: w.d.GracePeriod},
	})
	if paced {
		w.d.pacer.end(key, baseline, seq, p.pod.UID, err == nil)
		if err == nil {
			w.gates = append(w.gates, eviction{key, seq})
		}
	}
	return true, err
}

// answer records what the Eviction API's answer (AnswerOf) means for the pod, reading
// the pod or its budgets where the answer alone does not say; it reports whether the
// pod still needs the drain to wait for it.
func (w *nodeWork) answer(ctx context.Context, p *podWork, err error, now time.Time) bool {
	retry := func(after time.Duration, why string) {
		p.attempts++
		p.state.RetryAt = now.Add(Backoff(p.attempts, after))
		p.refused = why
	}
	switch AnswerOf(err) {
	case AnsEvicted:
		p.state.Terminating = true
		w.res.Evicted++
		w.say(p, Evicted, "")
	case AnsGone:
		p.state.Gone = true
	case AnsConflict:
		gone, readErr := w.gone(ctx, p.pod)
		if gone {
			p.state.Gone = true
			break
		}
		why := "the Eviction API answered 409 Conflict and the pod is still there: " + err.Error()
		if readErr != nil {
			why = fmt.Sprintf("the Eviction API answered 409 Conflict and the pod could not be read again: %v", readErr)
		}
		retry(0, why)
		w.say(p, Blocked, p.refused)
	case AnsBudget:
		msg, never, budget := w.refusal(ctx, p.pod, err)
		if never {
			p.state.Stopped = msg
			w.sayBudget(p, PodStopped, msg, budget)
			return false
		}
		retryAfter, _ := apierrors.SuggestsClientDelay(err)
		p.attempts++
		allows := budget != nil && !budget.Stale && budget.Status.DisruptionsAllowed > 0
		p.state.RetryAt = now.Add(BudgetBackoff(p.attempts, time.Duration(retryAfter)*time.Second, allows))
		p.refused = msg
		w.sayBudget(p, Blocked, msg, budget)
	case AnsInternal:
		if pdbs, listErr := w.budgets(ctx, p.pod); listErr == nil && len(pdbs) > 1 {
			p.state.Stopped = Overlapping(pdbs)
			w.say(p, PodStopped, p.state.Stopped)
			return false
		}
		retry(0, err.Error())
		w.say(p, Blocked, p.refused)
	case AnsNever:
		p.state.Stopped = err.Error()
		w.say(p, PodStopped, p.state.Stopped)
		return false
	default:
		retry(0, err.Error())
		w.say(p, Blocked, p.refused)
	}
	return true
}

// gone reads the pod again by name: it has left the node only if it is not found or a
// new pod (another UID) took its name.
func (w *nodeWork) gone(ctx context.Context, pod *corev1.Pod) (bool, error) {
	current, err := w.d.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("reading pod %s: %w", podName(pod), err)
	}
	return current.UID != pod.UID, nil
}

// refusal names the budget behind a 429, with its numbers, and says whether it can ever
// allow the eviction.
func (w *nodeWork) refusal(ctx context.Context, pod *corev1.Pod, err error) (string, bool, *availability.Count) {
	pdbs, listErr := w.budgets(ctx, pod)
	if listErr != nil || len(pdbs) != 1 {
		// Not a budget (API priority and fairness also answers 429): show the server's words.
		return err.Error(), false, nil
	}
	count := availability.CountOf(pdbs[0])
	if msg, never := NeverAllows(pdbs[0]); never {
		return msg, true, &count
	}
	return "blocked by " + BlockedBy(pdbs[0]), false, &count
}

func (w *nodeWork) budgets(ctx context.Context, pod *corev1.Pod) ([]*policyv1.PodDisruptionBudget, error) {
	list, err := w.d.Client.PolicyV1().PodDisruptionBudgets(pod.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the budgets of namespace %s: %w", pod.Namespace, err)
	}
	return Covering(pod, list.Items), nil
}

// replacementsReady reports whether every workload this node evicted from is back to the
// ready pods it had, so that the next drain to take the slot starts from full strength.
func (w *nodeWork) replacementsReady(ctx context.Context) bool {
	for i, e := range w.gates {
		done, why, err := w.d.pacer.replaced(ctx, w.d.Client, e.key, e.seq)
		if err != nil {
			done, why = false, err.Error()
		}
		if why != "" && why != w.said {
			w.said = why
			kind := WaitingForReplacement
			if done {
				kind = ReplacementUnschedulable
			}
			w.d.report(Event{Node: w.node, Kind: kind, Message: why})
		}
		if !done {
			w.gates = w.gates[i:]
			return false
		}
	}
	w.gates = nil
	return true
}

func (w *nodeWork) remaining() []PodNote {
	var out []PodNote
	now := w.d.Clock.Now()
	for _, name := range slices.Sorted(maps.Keys(w.pods)) {
		p := w.pods[name]
		var reason string
		switch Next(p.state, now) {
		case ActDone:
			continue
		case ActStopped:
			reason = p.state.Stopped
		case ActWaitGone:
			reason = "evicted, still terminating"
		case ActWaitPacing:
			reason = p.waiting
		case ActWaitRoom:
			reason = "kept: " + p.state.NoRoom
		default:
			reason = "not evicted yet"
			if p.refused != "" {
				reason = fmt.Sprintf("refused %d time(s), last: %s", p.attempts, p.refused)
			}
		}
		out = append(out, PodNote{Pod: name, Reason: reason})
	}
	return out
}
