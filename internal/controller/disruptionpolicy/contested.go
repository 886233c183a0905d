package disruptionpolicy

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/controller/announce"
	"github.com/holdfast-dev/holdfast/internal/controller/apply"
	"github.com/holdfast-dev/holdfast/internal/controller/contest"
	"github.com/holdfast-dev/holdfast/internal/policy"
)

// EventWriteContested says another writer undid one of holdfast's writes.
const EventWriteContested = "WriteContested"

// contests is what one reconcile found of the fields another writer fights over.
type contests struct {
	// fields are the contested fields the decision wanted written, by the other writer.
	fields []contested
	events []announce.Event
	// retry is when the first write held back may be made.
	retry time.Duration
}

type contested struct {
	field  contest.Field
	writer string
}

// guarded makes write, holdfast's write of value to f on an object read at
// resourceVersion seen ("" when read from the apiserver), unless the ledger holds it
// back, and says whether it did. When the write repeats one another writer undid, the
// writer is looked up and a Warning Event names it.
func (r *reconciler) guarded(ctx context.Context, cs *contests, f contest.Field, value, seen string, write func() error) (bool, error) {
	v := r.ledger.Ask(f, value, seen)
	if v.Undone && v.Write {
		writer, err := r.otherWriter(ctx, f)
		if err != nil {
			return false, err
		}
		v.Writer = writer
		r.ledger.Named(f, writer)
		cs.events = append(cs.events, announce.Warning(EventWriteContested,
			fmt.Sprintf("%s: %s undid holdfast's write; holdfast writes it again at most %d times a minute", f, writerName(writer), contest.Limit)).
			About(&corev1.ObjectReference{APIVersion: f.APIVersion, Kind: f.Kind, Namespace: f.Namespace, Name: f.Name}))
	}
	if v.Contested() {
		cs.fields = append(cs.fields, contested{field: f, writer: v.Writer})
	}
	if !v.Write {
		if v.Retry > 0 && (cs.retry == 0 || v.Retry < cs.retry) {
			cs.retry = v.Retry
		}
		return false, nil
	}
	if err := write(); err != nil {
		return false, err
	}
	r.ledger.Wrote(f, value, seen)
	return true, nil
}

// otherWriter reads the object's managedFields from the apiserver (the cache drops
// them) and names the writer of f other than holdfast.
func (r *reconciler) otherWriter(ctx context.Context, f contest.Field) (string, error) {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(schema.FromAPIVersionAndKind(f.APIVersion, f.Kind))
	if err := r.live.Get(ctx, client.ObjectKey{Namespace: f.Namespace, Name: f.Name}, obj); client.IgnoreNotFound(err) != nil {
		return "", fmt.Errorf("reading the field managers of %s: %w", f, err)
	}
	return contest.Writer(obj.ManagedFields, f, apply.Own), nil
}

// writerName is how a message names the writer: its field manager, quoted.
func writerName(writer string) string {
	if writer == "" {
		return "another writer"
	}
	return fmt.Sprintf("field manager %q", writer)
}

// condition is WritesContested: True while a write the decision wants is contested,
// naming the first contest and counting the others.
func (cs *contests) condition(gen int64, now time.Time) metav1.Condition {
	c := metav1.Condition{Type: holdfastv1alpha1.ConditionWritesContested, Status: metav1.ConditionFalse, Reason: holdfastv1alpha1.ReasonNoContest,
		Message: "no other writer undoes holdfast's writes", ObservedGeneration: gen, LastTransitionTime: metav1.NewTime(now)}
	if len(cs.fields) == 0 {
		return c
	}
	first := cs.fields[0]
	var msg strings.Builder
	fmt.Fprintf(&msg, "%s: %s undoes holdfast's writes; holdfast writes it at most %d times a minute", first.field, writerName(first.writer), contest.Limit)
	if n := len(cs.fields) - 1; n > 0 {
		fmt.Fprintf(&msg, " (and %d more fields contested)", n)
	}
	c.Status, c.Reason, c.Message = metav1.ConditionTrue, holdfastv1alpha1.ReasonUndoneByOtherWriter, msg.String()
	return c
}

// applyBudget applies b when the cache's differs, through the ledger. A budget the
// cache lacks is created without asking: a created budget the cache has not seen yet
// would look undone.
func (r *reconciler) applyBudget(ctx context.Context, cs *contests, b *policyv1.PodDisruptionBudget) error {
	cur, stale, err := apply.BudgetStale(ctx, r.client, b)
	if err != nil || !stale {
		return err
	}
	f := contest.Spec(contest.Object{APIVersion: "policy/v1", Kind: "PodDisruptionBudget", Namespace: b.Namespace, Name: b.Name})
	value, err := json.Marshal(b.Spec)
	if err != nil {
		return fmt.Errorf("encoding the spec of PodDisruptionBudget %s: %w", klog.KObj(b), err)
	}
	write := func() error { return apply.Object(ctx, r.client, r.live, b) }
	if cur == nil {
		if err := write(); err != nil {
			return err
		}
		r.ledger.Wrote(f, string(value), "")
		return nil
	}
	_, err = r.guarded(ctx, cs, f, string(value), cur.ResourceVersion, write)
	return err
}

// taint puts holdfast's taint of key on n, as read from the cache, with write, through
// the ledger; it says whether it did. A node deleted meanwhile needs none.
func (r *reconciler) taint(ctx context.Context, cs *contests, n *corev1.Node, key string, write func() error) (bool, error) {
	done, err := r.guarded(ctx, cs, contest.Taint(n.Name, key), "present", n.ResourceVersion, write)
	if nodeGone(err) {
		return false, nil
	}
	return done, err
}

// guardedLabel is labelPod through the ledger. Pods are read from the apiserver.
func (r *reconciler) guardedLabel(ctx context.Context, cs *contests, namespace string, z policy.PodZone) error {
	f := contest.Label(podObject(namespace, z.Pod), holdfastv1alpha1.ZoneLabel)
	_, err := r.guarded(ctx, cs, f, z.Zone, "", func() error { return r.labelPod(ctx, namespace, z) })
	return err
}

// guardedAnnotation is annotatePod through the ledger. Pods are read from the
// apiserver.
func (r *reconciler) guardedAnnotation(ctx context.Context, cs *contests, namespace, policyName string, a policy.PodAnnotation) error {
	f := contest.Annotation(podObject(namespace, a.Pod), a.Mark.Key)
	_, err := r.guarded(ctx, cs, f, strconv.FormatBool(a.Set), "", func() error { return r.annotatePod(ctx, namespace, policyName, a) })
	return err
}

func podObject(namespace, name string) contest.Object {
	return contest.Object{APIVersion: "v1", Kind: "Pod", Namespace: namespace, Name: name}
}
