package drain

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func lease(slot int, holder string, renewed time.Time) coordinationv1.Lease {
	l := coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: SlotName(slot), Namespace: "kube-system", Labels: map[string]string{SlotLabel: "true"}}}
	if holder != "" {
		l.Spec.HolderIdentity = ptr.To(holder)
		l.Spec.LeaseDurationSeconds = ptr.To(int32(30))
		l.Spec.RenewTime = &metav1.MicroTime{Time: renewed}
	}
	return l
}

func TestChooseSlot(t *testing.T) {
	tests := map[string]struct {
		leases      []coordinationv1.Lease
		observed    map[string]time.Time
		size        int
		wantName    string
		wantExpired string
		wantOK      bool
		wantHolders []Holder
	}{
		"no Lease yet: create the first slot": {
			size: 2, wantName: SlotName(0), wantOK: true,
		},
		"first slot held: create the second": {
			leases: []coordinationv1.Lease{lease(0, "a/1/node-1", t0)},
			size:   2, wantName: SlotName(1), wantOK: true,
		},
		"released slot is free": {
			leases: []coordinationv1.Lease{lease(0, "", t0)},
			size:   1, wantName: SlotName(0), wantOK: true,
		},
		"all held: wait and say by whom": {
			leases:      []coordinationv1.Lease{lease(0, "a/1/node-1", t0.Add(-10*time.Second))},
			size:        1,
			wantHolders: []Holder{{Slot: SlotName(0), Identity: "a/1/node-1"}},
		},
		"unchanged for its duration: its slot can be taken": {
			leases:   []coordinationv1.Lease{lease(0, "a/1/node-1", t0.Add(-30*time.Second))},
			observed: map[string]time.Time{SlotName(0): t0.Add(-30 * time.Second)},
			size:     1, wantName: SlotName(0), wantExpired: "a/1/node-1", wantOK: true,
		},
		"renewed 1 s ago by a clock 30 s slow: held": {
			leases:      []coordinationv1.Lease{lease(0, "a/1/node-1", t0.Add(-31*time.Second))},
			observed:    map[string]time.Time{SlotName(0): t0.Add(-time.Second)},
			size:        1,
			wantHolders: []Holder{{Slot: SlotName(0), Identity: "a/1/node-1"}},
		},
		"first seen now, whatever its renewTime: held": {
			leases:      []coordinationv1.Lease{lease(0, "a/1/node-1", t0.Add(-time.Hour))},
			size:        1,
			wantHolders: []Holder{{Slot: SlotName(0), Identity: "a/1/node-1"}},
		},
		"renewTime in the future, unchanged for its duration: taken": {
			leases:   []coordinationv1.Lease{lease(0, "a/1/node-1", t0.Add(time.Hour))},
			observed: map[string]time.Time{SlotName(0): t0.Add(-30 * time.Second)},
			size:     1, wantName: SlotName(0), wantExpired: "a/1/node-1", wantOK: true,
		},
		"our own slot is ours again": {
			leases: []coordinationv1.Lease{lease(0, "a/1/node-1", t0), lease(1, "me", t0)},
			size:   2, wantName: SlotName(1), wantOK: true,
		},
		"slots beyond size are not ours to take": {
			leases:      []coordinationv1.Lease{lease(0, "a/1/node-1", t0), lease(1, "", t0)},
			size:        1,
			wantHolders: []Holder{{Slot: SlotName(0), Identity: "a/1/node-1"}},
		},
		"the lowest free slot wins over a later expired one": {
			leases:   []coordinationv1.Lease{lease(0, "a/1/node-1", t0), lease(2, "b/2/node-2", t0.Add(-time.Hour))},
			observed: map[string]time.Time{SlotName(2): t0.Add(-time.Hour)},
			size:     3, wantName: SlotName(1), wantOK: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			choice, holders, ok := ChooseSlot(tc.leases, tc.observed, tc.size, "me", t0)
			if ok != tc.wantOK || choice.Name != tc.wantName || choice.Expired != tc.wantExpired {
				t.Errorf("ChooseSlot = %q (expired %q), ok %v; want %q (expired %q), ok %v", choice.Name, choice.Expired, ok, tc.wantName, tc.wantExpired, tc.wantOK)
			}
			if diff := cmp.Diff(tc.wantHolders, holders); diff != "" {
				t.Errorf("holders (-want +got):\n%s", diff)
			}
		})
	}
}

// The semaphore against a fake clientset: a leaf helper whose API use is a list, a
// create or an update at a resourceVersion.
func TestSemaphoreTakesReleasesAndExpires(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	withOptimisticConcurrency(client)
	clk := clocktesting.NewFakeClock(t0)
	sem := &Semaphore{Leases: client.CoordinationV1(), Namespace: "kube-system", Size: 1, Duration: 30 * time.Second, Clock: clk}

	first, _, err := sem.TryAcquire(ctx, "host/1/node-1")
	if err != nil || first == nil {
		t.Fatalf("first TryAcquire = %v, %v; want a slot", first, err)
	}
	second, holders, err := sem.TryAcquire(ctx, "host/2/node-2")
	if err != nil || second != nil {
		t.Fatalf("second TryAcquire = %v, %v; want no slot", second, err)
	}
	if len(holders) != 1 || holders[0].Identity != "host/1/node-1" {
		t.Errorf("holders = %+v, want host/1/node-1", holders)
	}

	clk.Step(20 * time.Second)
	if err := first.Renew(ctx); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	clk.Step(20 * time.Second) // 40 s after taking it, 20 s after renewing: still held
	if s, _, _ := sem.TryAcquire(ctx, "host/2/node-2"); s != nil {
		t.Fatal("took a slot renewed 20 s ago")
	}
	if err := first.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	second, _, err = sem.TryAcquire(ctx, "host/2/node-2")
	if err != nil || second == nil {
		t.Fatalf("TryAcquire after release = %v, %v; want the slot", second, err)
	}

	// The second holder dies without releasing. Another process sees its Lease for the
	// first time now: it counts the Lease duration from here, whatever the renewTime.
	clk.Step(31 * time.Second)
	other := &Semaphore{Leases: client.CoordinationV1(), Namespace: "kube-system", Size: 1, Duration: 30 * time.Second, Clock: clk}
	if s, _, _ := other.TryAcquire(ctx, "host/3/node-3"); s != nil {
		t.Fatal("took a slot seen for the first time")
	}
	// Unchanged for the Lease duration since: the slot is free, and the dead holder can
	// no longer renew it.
	clk.Step(30 * time.Second)
	third, _, err := other.TryAcquire(ctx, "host/3/node-3")
	if err != nil || third == nil {
		t.Fatalf("TryAcquire of an expired slot = %v, %v; want the slot", third, err)
	}
	if want := "holdfast-drain-slot-0 (taken over from host/2/node-2, whose Lease expired)"; third.String() != want {
		t.Errorf("slot %q, want %q", third.String(), want)
	}
	if err := second.Renew(ctx); err == nil {
		t.Error("the expired holder renewed a slot someone else took")
	}
	// Releasing a slot someone else took leaves it with them.
	if err := second.Release(ctx); err != nil {
		t.Errorf("Release of a lost slot: %v", err)
	}
	got, err := client.CoordinationV1().Leases("kube-system").Get(ctx, SlotName(0), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := ptr.Deref(got.Spec.HolderIdentity, ""); h != "host/3/node-3" {
		t.Errorf("holder = %q, want host/3/node-3", h)
	}
}

// withOptimisticConcurrency makes the fake refuse Lease writes at a stale resourceVersion,
// as the API server does; the fake's tracker alone accepts them.
func withOptimisticConcurrency(c *fake.Clientset) {
	gvr := coordinationv1.SchemeGroupVersion.WithResource("leases")
	version := 0
	c.PrependReactor("create", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l := a.(k8stesting.CreateAction).GetObject().(*coordinationv1.Lease).DeepCopy()
		version++
		l.ResourceVersion = strconv.Itoa(version)
		return true, l, c.Tracker().Create(gvr, l, l.Namespace)
	})
	c.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l := a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease).DeepCopy()
		current, err := c.Tracker().Get(gvr, l.Namespace, l.Name)
		if err != nil {
			return true, nil, err
		}
		if current.(*coordinationv1.Lease).ResourceVersion != l.ResourceVersion {
			return true, nil, apierrors.NewConflict(gvr.GroupResource(), l.Name, errors.New("the object has been modified"))
		}
		version++
		l.ResourceVersion = strconv.Itoa(version)
		return true, l, c.Tracker().Update(gvr, l, l.Namespace)
	})
}

// heldSlot is a semaphore of one 30 s slot on a fake clock, and the slot taken.
func heldSlot(t *testing.T) (*fake.Clientset, *clocktesting.FakeClock, *Semaphore, *Slot) {
	t.Helper()
	client := fake.NewClientset()
	withOptimisticConcurrency(client)
	clk := clocktesting.NewFakeClock(t0)
	sem := &Semaphore{Leases: client.CoordinationV1(), Namespace: "kube-system", Size: 1, Duration: 30 * time.Second, Clock: clk}
	slot, _, err := sem.TryAcquire(t.Context(), "host/1/node-1")
	if err != nil || slot == nil {
		t.Fatalf("TryAcquire = %v, %v", slot, err)
	}
	return client, clk, sem, slot
}

// Hold renews the slot every third of its duration, so that a drain longer than the
// Lease keeps it.
func TestHoldRenews(t *testing.T) {
	ctx := t.Context()
	client, clk, sem, slot := heldSlot(t)
	lost := make(chan error, 1)
	go slot.Hold(ctx, func(err error) { lost <- err })

	for step := 1; step <= 4; step++ {
		// Wait until Hold waits on its ticker before moving the clock past it.
		for !clk.HasWaiters() {
			time.Sleep(time.Millisecond)
		}
		clk.Step(10 * time.Second)
		want := t0.Add(time.Duration(step) * 10 * time.Second)
		deadline := time.Now().Add(5 * time.Second)
		for {
			l, err := client.CoordinationV1().Leases("kube-system").Get(ctx, SlotName(0), metav1.GetOptions{})
			// Renewed, and known to Hold as renewed.
			if err == nil && l.Spec.RenewTime.Time.Equal(want) && slot.ProvenUntil().Equal(want.Add(20*time.Second)) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("renewal %d: the Lease was not renewed at %s (last %v, err %v; now %s)", step, want, l.Spec.RenewTime, err, clk.Now())
			}
			time.Sleep(time.Millisecond)
		}
	}
	// 40 s after it was taken, with a 30 s duration, the slot is still held.
	if s, _, _ := sem.TryAcquire(ctx, "host/2/node-2"); s != nil {
		t.Error("another drain took a slot that was being renewed")
	}
	select {
	case err := <-lost:
		t.Errorf("Hold gave the slot up: %v", err)
	default:
	}
}

// Expiry is timed on this process's clock from when it saw the Lease change: a Lease
// renewed 1 s ago by a holder whose clock is 30 s slow (renewTime 31 s in the past) is
// held, and stays held while its holder renews it.
func TestSlotExpiryIgnoresTheHolderClock(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	withOptimisticConcurrency(client)
	slow := lease(0, "slow/1/node-1", t0.Add(-31*time.Second))
	if _, err := client.CoordinationV1().Leases("kube-system").Create(ctx, &slow, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(t0)
	sem := &Semaphore{Leases: client.CoordinationV1(), Namespace: "kube-system", Size: 1, Duration: 30 * time.Second, Clock: clk}
	tryTake := func() *Slot {
		t.Helper()
		s, _, err := sem.TryAcquire(ctx, "me/2/node-2")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if tryTake() != nil {
		t.Fatal("took a slot renewed 1 s ago by a clock 30 s slow")
	}
	// The holder renews with its slow clock 20 s later: a change, seen at t0+20s.
	clk.Step(20 * time.Second)
	renewed, err := client.CoordinationV1().Leases("kube-system").Get(ctx, SlotName(0), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	renewed.Spec.RenewTime = &metav1.MicroTime{Time: t0.Add(-11 * time.Second)}
	if _, err := client.CoordinationV1().Leases("kube-system").Update(ctx, renewed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if tryTake() != nil {
		t.Fatal("took a slot just renewed")
	}
	clk.Step(29 * time.Second) // 49 s after first seeing it, 29 s after its renewal
	if tryTake() != nil {
		t.Fatal("took a slot renewed 29 s ago with a duration of 30 s")
	}
	clk.Step(time.Second)
	got := tryTake()
	if got == nil || !strings.Contains(got.String(), "taken over from slow/1/node-1") {
		t.Fatalf("slot %v; want it taken over from the holder that stopped renewing for 30 s", got)
	}
}

// A renewal that hangs longer than a third of the lease duration loses the slot: Hold
// gives it up as soon as the renewal's deadline (two thirds of the duration after the
// last write) passes on this process's clock, and Held says so from that instant, so
// that no eviction starts in its name while another drain may take it.
func TestHoldStopsWhenARenewalHangs(t *testing.T) {
	ctx := t.Context()
	client, clk, _, slot := heldSlot(t)
	hang := make(chan struct{})
	defer close(hang)
	started := make(chan struct{}, 1)
	client.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		started <- struct{}{}
		<-hang
		return true, nil, errors.New("connection reset")
	})
	lost := make(chan error, 1)
	go slot.Hold(ctx, func(err error) { lost <- err })
	waitForWaiters := func(n int) {
		for clk.Waiters() < n {
			time.Sleep(time.Millisecond)
		}
	}

	waitForWaiters(1)          // Hold's ticker
	clk.Step(10 * time.Second) // a third of the duration: the renewal starts, and hangs
	<-started
	waitForWaiters(2) // and the renewal's deadline
	clk.Step(9 * time.Second)
	if !slot.Held() {
		t.Fatal("the slot is not held 19 s after its last write, with a duration of 30 s")
	}
	select {
	case err := <-lost:
		t.Fatalf("Hold gave the slot up early: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	clk.Step(time.Second) // the renewal has hung for a third of the duration
	if slot.Held() {
		t.Error("the slot is still taken as held 20 s after its last write, with a renewal hanging")
	}
	select {
	case err := <-lost:
		if !errors.Is(err, ErrSlotLost) {
			t.Errorf("lost(%v), want ErrSlotLost", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Hold did not give up the slot when its renewal hung past its deadline")
	}
}

// A drain waiting for a slot takes it as soon as its holder releases it, woken by the
// watch of the slot Leases: its clock, and so its next look, never comes.
func TestAcquireWakesOnRelease(t *testing.T) {
	_, _, sem, held := heldSlot(t)
	looked, got := acquireInBackground(t, sem, time.Hour)
	if h := <-looked; len(h) != 1 || h[0].Identity != "host/1/node-1" {
		t.Fatalf("waited for %+v, want host/1/node-1", h)
	}
	if err := held.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case slot := <-got:
		if slot == nil || slot.Name() != SlotName(0) {
			t.Errorf("Acquire = %v, want %s", slot, SlotName(0))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Acquire did not wake when the slot was released")
	}
}

// A holder that dies is waited for until its slot expires on the waiter's clock: with
// nothing changing, the waiter looks again exactly then, not an interval later.
func TestAcquireWakesAtExpiry(t *testing.T) {
	_, clk, sem, _ := heldSlot(t)
	looked, got := acquireInBackground(t, sem, time.Second)
	<-looked
	// The holder took the slot at t0 and never renews: it expires at t0+30s.
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clk.Step(29 * time.Second)
	select {
	case <-got:
		t.Fatal("took the slot before it expired")
	case <-time.After(100 * time.Millisecond):
	}
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clk.Step(time.Second)
	select {
	case slot := <-got:
		if slot == nil || !strings.Contains(slot.String(), "taken over from host/1/node-1") {
			t.Errorf("Acquire = %v, want the expired slot", slot)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Acquire did not look again when the slot expired")
	}
}

// acquireInBackground runs Acquire for host/2/node-2: the holders each time it finds the
// slots full, then the slot it took.
func acquireInBackground(t *testing.T, sem *Semaphore, interval time.Duration) (<-chan []Holder, <-chan *Slot) {
	looked := make(chan []Holder, 10)
	got := make(chan *Slot, 1)
	go func() {
		slot, err := sem.Acquire(t.Context(), "host/2/node-2", interval, func(h []Holder) { looked <- h })
		if err != nil {
			t.Errorf("Acquire: %v", err)
		}
		got <- slot
	}()
	return looked, got
}
