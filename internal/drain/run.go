package drain

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
)

// Each run holds a Lease of its own in the slot namespace for as long as it lives, named
// at random (one process may run several drains) and labelled RunLabel, and names it in
// RunAnnotation on the nodes it marks: the operator clears what a run left on a node
// (Leftovers) once that Lease is gone or expired, and leaves alone what a live run keeps.
const (
	RunLeasePrefix = "holdfast-drain-run-"
	RunLabel       = "holdfast.dev/drain-run"
)

// holdRun takes the run's Lease and renews it until release is called, which deletes it.
// ref is the Lease as RunAnnotation names it.
func (d *Drainer) holdRun(ctx context.Context) (ref string, release func() error, err error) {
	sem := d.semaphore()
	leases := sem.Leases.Leases(sem.Namespace)
	name := RunLeasePrefix + rand.String(10)
	create := func(ctx context.Context) error {
		now := metav1.NewMicroTime(d.Clock.Now())
		_, err := leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: sem.Namespace, Labels: map[string]string{RunLabel: "true"}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(d.Identity), LeaseDurationSeconds: ptr.To(int32(sem.Duration / time.Second)),
				AcquireTime: &now, RenewTime: &now},
		}, metav1.CreateOptions{})
		return err
	}
	renew := func(ctx context.Context) error {
		l, err := leases.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		l.Spec.RenewTime = &metav1.MicroTime{Time: d.Clock.Now()}
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		return err
	}
	err = create(ctx)
	if apierrors.IsNotFound(err) && sem.Namespaces != nil {
		if err = sem.createNamespace(ctx); err == nil {
			err = create(ctx)
		}
	}
	if err != nil {
		return "", nil, fmt.Errorf("taking the drain run's Lease %s/%s: %w", sem.Namespace, name, err)
	}
	held, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := d.Clock.NewTicker(sem.renewEvery())
		defer tick.Stop()
		for {
			select {
			case <-held.Done():
				return
			case <-tick.C():
				// A renewal missed only lets the operator clear the run's marks early.
				_ = renew(held)
			}
		}
	}()
	release = func() error {
		stop()
		<-done
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := leases.Delete(rctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting the drain run's Lease %s/%s: %w", sem.Namespace, name, err)
		}
		return nil
	}
	return sem.Namespace + "/" + name, release, nil
}
