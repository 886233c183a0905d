package drain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
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
// that exist: one identity already holds, else the lowest missing, released or expired
// one. When every slot is held, ok is false and holders says by whom.
func ChooseSlot(leases []coordinationv1.Lease, size int, identity string, now time.Time) (choice SlotChoice, holders []Holder, ok bool) {
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
		switch {
		case holder == identity:
			return SlotChoice{Name: name, Current: l}, nil, true
		case holder == "":
			free = append(free, SlotChoice{Name: name, Current: l})
		case !expiry(l).After(now):
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

// expiry is when a Lease lapses without renewal.
func expiry(l *coordinationv1.Lease) time.Time {
	last := l.Spec.RenewTime
	if last == nil {
		last = l.Spec.AcquireTime
	}
	if last == nil {
		return time.Time{}
	}
	return last.Add(time.Duration(ptr.Deref(l.Spec.LeaseDurationSeconds, 0)) * time.Second)
}

// Semaphore is a counting semaphore of Size slots shared by every holdfast drain of the
// cluster through coordination.k8s.io Leases in Namespace.
type Semaphore struct {
	Leases    coordinationclient.LeasesGetter
	Namespace string
	Size      int
	Duration  time.Duration
	Clock     clock.WithTicker
}

// Slot is one taken slot of a Semaphore.
type Slot struct {
	sem      *Semaphore
	identity string
	lease    *coordinationv1.Lease
	// expired is the holder the slot was taken from after its Lease lapsed, if any.
	expired string
}

// String names the slot's Lease, and the holder it was taken from if its Lease lapsed.
func (s *Slot) String() string {
	if s.expired != "" {
		return fmt.Sprintf("%s (taken over from %s, whose Lease expired)", s.lease.Name, s.expired)
	}
	return s.lease.Name
}

var (
	// errRaced means another drain changed the Lease between our read and our write.
	errRaced = errors.New("another drain changed the slot first")
	// errSlotTaken means another drain took a slot this one held.
	errSlotTaken = errors.New("the slot expired and another drain took it")
)

// Acquire takes a slot for identity, polling every interval while all are held; waiting is
// called with the holders each time the slots are found full.
func (s *Semaphore) Acquire(ctx context.Context, identity string, interval time.Duration, waiting func([]Holder)) (*Slot, error) {
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
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-s.Clock.After(interval):
		}
	}
}

// TryAcquire takes a free or expired slot once; it returns the holders when all are taken,
// and errRaced when another drain took the chosen slot first.
func (s *Semaphore) TryAcquire(ctx context.Context, identity string) (*Slot, []Holder, error) {
	list, err := s.Leases.Leases(s.Namespace).List(ctx, metav1.ListOptions{LabelSelector: SlotLabel})
	if err != nil {
		return nil, nil, fmt.Errorf("listing drain slots in %s: %w", s.Namespace, err)
	}
	now := s.Clock.Now()
	choice, holders, ok := ChooseSlot(list.Items, s.Size, identity, now)
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
	if err != nil {
		return nil, nil, fmt.Errorf("taking drain slot %s/%s: %w", s.Namespace, choice.Name, err)
	}
	return &Slot{sem: s, identity: identity, lease: lease, expired: choice.Expired}, nil, nil
}

// Renew extends the slot; it fails when another drain took the slot, which happens only
// if this one stopped renewing for longer than the Lease duration.
func (s *Slot) Renew(ctx context.Context) error {
	lease := s.lease.DeepCopy()
	lease.Spec.RenewTime = &metav1.MicroTime{Time: s.sem.Clock.Now()}
	updated, err := s.sem.Leases.Leases(s.sem.Namespace).Update(ctx, lease, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		// Someone wrote the Lease since our last write; it is still ours only if they
		// did not take it.
		current, getErr := s.sem.Leases.Leases(s.sem.Namespace).Get(ctx, lease.Name, metav1.GetOptions{})
		if getErr != nil {
			return fmt.Errorf("renewing drain slot %s: %w", lease.Name, getErr)
		}
		if ptr.Deref(current.Spec.HolderIdentity, "") != s.identity {
			return fmt.Errorf("drain slot %s now held by %q: %w", lease.Name, ptr.Deref(current.Spec.HolderIdentity, ""), errSlotTaken)
		}
		s.lease = current
		return s.Renew(ctx)
	}
	if err != nil {
		return fmt.Errorf("renewing drain slot %s: %w", lease.Name, err)
	}
	s.lease = updated
	return nil
}

// Hold renews the slot every third of its duration until ctx ends, and calls lost if
// the slot cannot be kept.
func (s *Slot) Hold(ctx context.Context, lost func(error)) {
	tick := s.sem.Clock.NewTicker(s.sem.Duration / 3)
	defer tick.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
		}
		err := s.Renew(ctx)
		if err == nil {
			failures = 0
			continue
		}
		if ctx.Err() != nil {
			return
		}
		// One failed renewal leaves two thirds of the duration: try again before giving
		// the slot up, unless someone else already holds it.
		failures++
		if failures >= 2 || errors.Is(err, errSlotTaken) {
			lost(err)
			return
		}
	}
}

// Release frees the slot for the next drain. A slot that someone else took meanwhile is
// left alone.
func (s *Slot) Release(ctx context.Context) error {
	leases := s.sem.Leases.Leases(s.sem.Namespace)
	lease := s.lease.DeepCopy()
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
