package drain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	coreclient "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// Slot Leases are named SlotPrefix0, SlotPrefix1, ... and labelled SlotLabel so that one
// list call reads them all.
const (
	SlotPrefix = "holdfast-drain-slot-"
	SlotLabel  = "holdfast.dev/drain-slot"
)

// DefaultLeaseDuration is how long a slot stays taken after its holder's last renewal: a
// drain that died frees its slot this long after its last sign of life.
const DefaultLeaseDuration = 30 * time.Second

// SlotName returns the name of the i-th slot Lease.
func SlotName(i int) string { return fmt.Sprintf("%s%d", SlotPrefix, i) }

// Holder is who holds a slot, for telling the user whom they wait for.
type Holder struct {
	Slot     string
	Identity string
}

// SlotChoice is the slot to take and how: create the Lease when Current is nil, else update
// Current (at its resourceVersion, so that two drains racing for it cannot both win).
type SlotChoice struct {
	Name    string
	Current *coordinationv1.Lease
	// Expired names the holder whose Lease lapsed, when the slot is taken from a drain that
	// stopped renewing it.
	Expired string
}

// ChooseSlot picks a slot among the first size slots for identity, given the slot Leases
// that exist and when this process last saw each of them change (observed, by Lease name):
// one identity already holds, else the lowest missing, released or expired one. When
// every slot is held, ok is false and holders says by whom.
//
// A Lease expires its duration after this process last saw it change, never by its
// renewTime: that is the holder's clock, and a holder whose clock is 30 s slow would
// otherwise lose a slot it renewed a second ago. A Lease missing from observed is seen now.
func ChooseSlot(leases []coordinationv1.Lease, observed map[string]time.Time, size int, identity string, now time.Time) (choice SlotChoice, holders []Holder, ok bool) {
	byName := make(map[string]*coordinationv1.Lease, len(leases))
	for i := range leases {
		byName[leases[i].Name] = &leases[i]
	}
	var free []SlotChoice
	for i := range size {
		name := SlotName(i)
		l, exists := byName[name]
		if !exists {
			free = append(free, SlotChoice{Name: name})
			continue
		}
		holder := ptr.Deref(l.Spec.HolderIdentity, "")
		seen, known := observed[name]
		if !known {
			seen = now
		}
		duration := time.Duration(ptr.Deref(l.Spec.LeaseDurationSeconds, 0)) * time.Second
		switch {
		case holder == identity:
			return SlotChoice{Name: name, Current: l}, nil, true
		case holder == "":
			free = append(free, SlotChoice{Name: name, Current: l})
		case !seen.Add(duration).After(now):
			free = append(free, SlotChoice{Name: name, Current: l, Expired: holder})
		default:
			holders = append(holders, Holder{Slot: name, Identity: holder})
		}
	}
	if len(free) == 0 {
		return SlotChoice{}, holders, false
	}
	return free[0], nil, true
}

// LeaseObserver times Leases on its own clock: a Lease expires its duration after the
// observer first saw it at its current resourceVersion, never by its renewTime, which is
// the holder's clock. The drain slots and the operator's judgement of a drain run both
// count so.
type LeaseObserver struct {
	mu   sync.Mutex
	seen map[string]observation
}

// observation is a Lease's resourceVersion and when the observer first saw it, and the
// Lease's duration.
type observation struct {
	resourceVersion string
	at              time.Time
	duration        time.Duration
}

// Seen records the Lease as seen at now, unless it was seen before at the same
// resourceVersion, and returns when it was first seen so.
func (o *LeaseObserver) Seen(l *coordinationv1.Lease, now time.Time) time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.seen == nil {
		o.seen = map[string]observation{}
	}
	key := l.Namespace + "/" + l.Name
	ob, ok := o.seen[key]
	if !ok || ob.resourceVersion != l.ResourceVersion {
		ob = observation{resourceVersion: l.ResourceVersion, at: now, duration: time.Duration(ptr.Deref(l.Spec.LeaseDurationSeconds, 0)) * time.Second}
		o.seen[key] = ob
	}
	return ob.at
}

// Expiry is when the Lease expires as this observer counts, and whether it has been seen.
func (o *LeaseObserver) Expiry(namespace, name string) (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	ob, ok := o.seen[namespace+"/"+name]
	return ob.at.Add(ob.duration), ok
}

// Forget drops what was seen of a Lease that is gone, so that the observer does not grow.
func (o *LeaseObserver) Forget(namespace, name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.seen, namespace+"/"+name)
}

// Semaphore is a counting semaphore of Size slots shared by every holdfast drain of the
// cluster through coordination.k8s.io Leases in Namespace. One Semaphore serves a whole
// run: it remembers when it saw each slot Lease change, which is what expiry counts from.
type Semaphore struct {
	Leases    coordinationclient.LeasesGetter
	Namespace string
	// Namespaces, when set, creates Namespace the first time a slot Lease cannot be
	// created for want of it.
	Namespaces coreclient.NamespacesGetter
	Size       int
	Duration   time.Duration
	Clock      clock.WithTicker

	observer LeaseObserver
}

// Slot is one taken slot of a Semaphore.
type Slot struct {
	sem      *Semaphore
	identity string
	// expired is the holder the slot was taken from after its Lease lapsed, if any.
	expired string

	mu    sync.Mutex
	lease *coordinationv1.Lease
	// wrote is when the last write of the Lease that succeeded was sent, on this
	// process's clock. The others time the Lease's expiry from when they see that write,
	// which is later, so the slot is ours for at least Duration after it.
	wrote time.Time
}

// String names the slot's Lease, and the holder it was taken from if its Lease lapsed.
func (s *Slot) String() string {
	if s.expired != "" {
		return fmt.Sprintf("%s (taken over from %s, whose Lease expired)", s.Name(), s.expired)
	}
	return s.Name()
}

// Name is the slot's Lease.
func (s *Slot) Name() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lease.Name
}

// renewEvery is how often a held slot is renewed, and how long each renewal may take: a
// renewal begun a third of the duration after the last write must succeed before two
// thirds have passed, which leaves a third for the others' polling and any delay between
// the write and their seeing it.
func (s *Semaphore) renewEvery() time.Duration { return s.Duration / 3 }

// ProvenUntil is when holding the slot stops being certain: two thirds of the duration
// after the last write that succeeded. From then on no eviction starts in its name.
func (s *Slot) ProvenUntil() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.wrote.Add(2 * s.sem.renewEvery())
}

// Held reports whether the slot is certainly still this drain's.
func (s *Slot) Held() bool { return s.sem.Clock.Now().Before(s.ProvenUntil()) }

var (
	// errRaced means another drain changed the Lease between our read and our write.
	errRaced = errors.New("another drain changed the slot first")
	// errSlotTaken means another drain took a slot this one held.
	errSlotTaken = errors.New("the slot expired and another drain took it")
	// ErrSlotLost means holding the slot could not be proven: no renewal succeeded in time,
	// so other drains may see it expire.
	ErrSlotLost = errors.New("the drain slot was not renewed in time and another drain may take it; nothing more is evicted in its name")
)

// Acquire takes a slot for identity; waiting is called with the holders each time the
// slots are found full. While they are, it waits on a watch of the slot Leases and looks
// again when one changes (a release), when the first held one would expire on this
// process's clock, or every interval when the Leases cannot be watched (a user allowed to
// list them only).
func (s *Semaphore) Acquire(ctx context.Context, identity string, interval time.Duration, waiting func([]Holder)) (*Slot, error) {
	// Watching from before each look, no release between the look and the wait is missed.
	changes, stop := s.watch(ctx)
	defer func() { stop() }()
	for {
		slot, holders, err := s.TryAcquire(ctx, identity)
		switch {
		case err == nil && slot != nil:
			return slot, nil
		case errors.Is(err, errRaced):
			continue
		case err != nil:
			return nil, err
		}
		waiting(holders)
		wake := interval
		if changes != nil {
			wake = max(interval, s.untilExpiry(holders))
		}
		timer := s.Clock.NewTimer(wake)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, context.Cause(ctx)
		case <-timer.C():
		case _, open := <-changes:
			if !open { // the API server ends watches now and then
				stop()
				changes, stop = s.watch(ctx)
			}
		}
		timer.Stop()
	}
}

// watch watches the slot Leases. The channel is nil, and never ready, when they cannot
// be watched.
func (s *Semaphore) watch(ctx context.Context) (<-chan watch.Event, func()) {
	w, err := s.Leases.Leases(s.Namespace).Watch(ctx, metav1.ListOptions{LabelSelector: SlotLabel})
	if err != nil {
		return nil, func() {}
	}
	return w.ResultChan(), w.Stop
}

// untilExpiry is how long until the first of the holders' slots expires, on this
// process's clock, as ChooseSlot counts it; 0 when none is known.
func (s *Semaphore) untilExpiry(holders []Holder) time.Duration {
	now := s.Clock.Now()
	var first time.Duration
	for _, h := range holders {
		if expiry, ok := s.observer.Expiry(s.Namespace, h.Slot); ok {
			if d := expiry.Sub(now); first == 0 || d < first {
				first = d
			}
		}
	}
	return first
}

// observe records when each Lease was first seen at its resourceVersion, and returns
// those times by Lease name.
func (s *Semaphore) observe(leases []coordinationv1.Lease, now time.Time) map[string]time.Time {
	out := make(map[string]time.Time, len(leases))
	for i := range leases {
		out[leases[i].Name] = s.observer.Seen(&leases[i], now)
	}
	return out
}

// TryAcquire takes a free or expired slot once; it returns the holders when all are taken,
// and errRaced when another drain took the chosen slot first.
func (s *Semaphore) TryAcquire(ctx context.Context, identity string) (*Slot, []Holder, error) {
	list, err := s.Leases.Leases(s.Namespace).List(ctx, metav1.ListOptions{LabelSelector: SlotLabel})
	if err != nil {
		return nil, nil, fmt.Errorf("listing drain slots in %s: %w", s.Namespace, err)
	}
	now := s.Clock.Now()
	choice, holders, ok := ChooseSlot(list.Items, s.observe(list.Items, now), s.Size, identity, now)
	if !ok {
		return nil, holders, nil
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
		Name: choice.Name, Namespace: s.Namespace, Labels: map[string]string{SlotLabel: "true"},
	}}
	if choice.Current != nil {
		lease = choice.Current.DeepCopy()
	}
	if ptr.Deref(lease.Spec.HolderIdentity, "") != identity {
		lease.Spec.AcquireTime = &metav1.MicroTime{Time: now}
		lease.Spec.LeaseTransitions = ptr.To(ptr.Deref(lease.Spec.LeaseTransitions, 0) + 1)
	}
	lease.Spec.HolderIdentity = ptr.To(identity)
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(s.Duration / time.Second))
	lease.Spec.RenewTime = &metav1.MicroTime{Time: now}
	leases := s.Leases.Leases(s.Namespace)
	if choice.Current == nil {
		lease, err = leases.Create(ctx, lease, metav1.CreateOptions{})
	} else {
		lease, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	}
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		return nil, nil, errRaced
	}
	if apierrors.IsNotFound(err) && choice.Current == nil && s.Namespaces != nil {
		if err := s.createNamespace(ctx); err != nil {
			return nil, nil, err
		}
		return nil, nil, errRaced // try again, in the namespace now there
	}
	if err != nil {
		return nil, nil, fmt.Errorf("taking drain slot %s/%s: %w", s.Namespace, choice.Name, err)
	}
	return &Slot{sem: s, identity: identity, lease: lease, wrote: now, expired: choice.Expired}, nil, nil
}

// createNamespace creates the slot namespace. holdfast's install creates it; a drain
// run before, by someone allowed to, creates it too, rather than fail on first use.
func (s *Semaphore) createNamespace(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.Namespace}}
	_, err := s.Namespaces.Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	switch {
	case err == nil || apierrors.IsAlreadyExists(err):
		return nil
	case apierrors.IsForbidden(err):
		return fmt.Errorf("namespace %s of the drain slots does not exist and this user may not create it: install holdfast (holdfast install, or the Helm chart), or give --slot-namespace: %w", s.Namespace, err)
	}
	return fmt.Errorf("creating namespace %s for the drain slots: %w", s.Namespace, err)
}

// Renew extends the slot; it fails when another drain took the slot, which happens only
// if this one stopped renewing for longer than the Lease duration.
func (s *Slot) Renew(ctx context.Context) error {
	s.mu.Lock()
	lease := s.lease.DeepCopy()
	s.mu.Unlock()
	leases := s.sem.Leases.Leases(s.sem.Namespace)
	for range 3 {
		sent := s.sem.Clock.Now()
		lease.Spec.RenewTime = &metav1.MicroTime{Time: sent}
		updated, err := leases.Update(ctx, lease, metav1.UpdateOptions{})
		if err == nil {
			s.mu.Lock()
			s.lease, s.wrote = updated, sent
			s.mu.Unlock()
			return nil
		}
		if !apierrors.IsConflict(err) {
			return fmt.Errorf("renewing drain slot %s: %w", lease.Name, err)
		}
		// Someone wrote the Lease since our last write; it is still ours only if they
		// did not take it.
		current, err := leases.Get(ctx, lease.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("renewing drain slot %s: %w", lease.Name, err)
		}
		if ptr.Deref(current.Spec.HolderIdentity, "") != s.identity {
			return fmt.Errorf("drain slot %s now held by %q: %w", lease.Name, ptr.Deref(current.Spec.HolderIdentity, ""), errSlotTaken)
		}
		lease = current
	}
	return fmt.Errorf("renewing drain slot %s: %w", lease.Name, errRaced)
}

// Hold renews the slot every third of its duration until ctx ends, and calls lost as soon
// as holding it can no longer be proven: another drain took it, or no renewal succeeded
// by ProvenUntil. A renewal that hangs is abandoned then, on this process's clock, not
// when the API server or the network gives up on it.
func (s *Slot) Hold(ctx context.Context, lost func(error)) {
	tick := s.sem.Clock.NewTicker(s.sem.renewEvery())
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
		}
		for {
			err := s.renewBy(ctx, s.ProvenUntil())
			switch {
			case ctx.Err() != nil:
				return
			case errors.Is(err, errSlotTaken) || errors.Is(err, ErrSlotLost):
				lost(err)
				return
			case err == nil:
			default:
				// A failed renewal is tried again soon, until ProvenUntil: the next tick
				// would be too late.
				if !sleep(ctx, s.sem.Clock, min(time.Second, s.sem.renewEvery()/4)) {
					return
				}
				continue
			}
			break
		}
	}
}

// sleep waits d on clk and reports whether ctx is still going. Its timer is stopped on
// return, so that a fake clock in tests has no stale waiter.
func sleep(ctx context.Context, clk clock.Clock, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

// renewBy renews the slot, and gives up at deadline with ErrSlotLost.
func (s *Slot) renewBy(ctx context.Context, deadline time.Time) error {
	left := deadline.Sub(s.sem.Clock.Now())
	if left <= 0 {
		return fmt.Errorf("drain slot %s: %w", s.Name(), ErrSlotLost)
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Renew(rctx) }()
	timer := s.sem.Clock.NewTimer(left)
	defer timer.Stop()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, errSlotTaken) && !s.Held() {
			return fmt.Errorf("drain slot %s: %w (last renewal: %v)", s.Name(), ErrSlotLost, err)
		}
		return err
	case <-timer.C():
		if s.Held() {
			// The renewal landed just as its deadline passed.
			return nil
		}
		return fmt.Errorf("drain slot %s: %w (a renewal took longer than %s)", s.Name(), ErrSlotLost, s.sem.renewEvery())
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Release frees the slot for the next drain. A slot that someone else took meanwhile is
// left alone.
func (s *Slot) Release(ctx context.Context) error {
	leases := s.sem.Leases.Leases(s.sem.Namespace)
	s.mu.Lock()
	lease := s.lease.DeepCopy()
	s.mu.Unlock()
	for range 3 {
		lease.Spec.HolderIdentity = nil
		lease.Spec.RenewTime = nil
		lease.Spec.AcquireTime = nil
		_, err := leases.Update(ctx, lease, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			if err != nil {
				return fmt.Errorf("releasing drain slot %s: %w", lease.Name, err)
			}
			return nil
		}
		current, err := leases.Get(ctx, lease.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("releasing drain slot %s: %w", lease.Name, err)
		}
		if ptr.Deref(current.Spec.HolderIdentity, "") != s.identity {
			return nil
		}
		lease = current
	}
	return fmt.Errorf("releasing drain slot %s: %w", lease.Name, errRaced)
}

// describeHolders renders who holds the slots, sorted. It leaves out when the slots
// expire, which changes on every renewal, so that a wait is reported once per holder change.
func describeHolders(holders []Holder) string {
	parts := make([]string, 0, len(holders))
	for _, h := range holders {
		parts = append(parts, h.Identity+" ("+h.Slot+")")
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}
