// Package contest keeps holdfast from fighting another writer over a field of an
// object it does not own alone (a budget a GitOps tool also applies, a node's taints a
// node-management tool syncs, a pod's annotations): it remembers holdfast's recent
// writes, says when one was undone, holds the next ones back once Limit were made
// within Window, and names the other writer from the object's managedFields.
//
// The record is in memory: a restarted operator forgets it, so the bound holds per
// operator process, and a restart may add up to Limit writes to a contest.
package contest

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// At most Limit writes of the same value to one field of one object within Window:
// room for a write and two repairs of an honest mistake, while a writer that undoes
// holdfast every second is answered three times a minute, not sixty.
const (
	Limit  = 3
	Window = time.Minute
)

// Object names an object holdfast writes.
type Object struct {
	APIVersion, Kind, Namespace, Name string
}

// Field is one field of one object that holdfast writes.
type Field struct {
	Object
	// Path names the field for people: spec, spec.taints[key], metadata.labels[key].
	Path string
	// managed is the path of the field in managedFields' fieldsV1, "" past its end.
	managed [3]string
}

// Spec is the whole spec of an object (a budget's).
func Spec(o Object) Field {
	return Field{Object: o, Path: "spec", managed: [3]string{"f:spec"}}
}

// Taint is the taint of key on a node.
func Taint(node, key string) Field {
	return Field{Object: Object{APIVersion: "v1", Kind: "Node", Name: node}, Path: "spec.taints[" + key + "]", managed: [3]string{"f:spec", "f:taints"}}
}

// Annotation is the annotation key of an object.
func Annotation(o Object, key string) Field {
	return Field{Object: o, Path: "metadata.annotations[" + key + "]", managed: [3]string{"f:metadata", "f:annotations", "f:" + key}}
}

// Label is the label key of an object.
func Label(o Object, key string) Field {
	return Field{Object: o, Path: "metadata.labels[" + key + "]", managed: [3]string{"f:metadata", "f:labels", "f:" + key}}
}

// String names the object and the field: "Node worker-1 spec.taints[holdfast.dev/lost]".
func (f Field) String() string {
	if f.Namespace == "" {
		return fmt.Sprintf("%s %s %s", f.Kind, f.Name, f.Path)
	}
	return fmt.Sprintf("%s %s/%s %s", f.Kind, f.Namespace, f.Name, f.Path)
}

// Verdict is the Ledger's answer on a write the decision wants.
type Verdict struct {
	// Write says holdfast may write now.
	Write bool
	// Undone says holdfast wrote the same value less than Window ago and the object
	// has changed since without holding it: another writer undid it.
	Undone bool
	// Writer is the other writer, as named after an earlier undo ("" before).
	Writer string
	// Retry is when a write held back by the limit may be made.
	Retry time.Duration
}

// Contested says the field is fought over.
func (v Verdict) Contested() bool { return v.Undone || v.Writer != "" }

// Ledger remembers holdfast's writes of the last Window. It is safe for concurrent use.
type Ledger struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	// writes are the fields written within Window, and some written within the
	// Window before: swept is when the old ones were last dropped.
	writes map[Field]*record
	swept  time.Time
}

// record is holdfast's last writes of one field.
type record struct {
	// value is what holdfast wrote, and seen the resourceVersion it wrote over.
	value, seen string
	// at are the times of the writes of value within Window, oldest first.
	at []time.Time
	// writer undid value, once named.
	writer string
}

// NewLedger returns an empty Ledger that reads the time from clk.
func NewLedger(clk clock.PassiveClock) *Ledger {
	return &Ledger{clock: clk, writes: map[Field]*record{}}
}

// Ask says whether holdfast may write value to f, on an object that the decision
// read at resourceVersion seen: "" for an object read from the apiserver itself,
// which cannot be behind holdfast's own write.
func (l *Ledger) Ask(f Field, value, seen string) Verdict {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.live(f)
	if r == nil || r.value != value {
		return Verdict{Write: true}
	}
	if seen != "" && seen == r.seen {
		// The cache has not caught up with holdfast's write: it is done.
		return Verdict{Writer: r.writer}
	}
	v := Verdict{Undone: true, Writer: r.writer, Write: len(r.at) < Limit}
	if !v.Write {
		v.Retry = r.at[0].Add(Window).Sub(l.clock.Now())
	}
	return v
}

// Wrote records that holdfast wrote value to f over resourceVersion seen (as in Ask).
func (l *Ledger) Wrote(f Field, value, seen string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.live(f)
	if r == nil || r.value != value {
		r = &record{value: value}
		l.writes[f] = r
	}
	r.seen = seen
	r.at = append(r.at, l.clock.Now())
}

// Named records the writer that undid holdfast's last write of f.
func (l *Ledger) Named(f Field, writer string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r := l.live(f); r != nil {
		r.writer = writer
	}
}

// Forget drops the record of f, which holdfast itself undid (a taint it took off a
// node that came back): a write of it again is a new decision, not a repair.
func (l *Ledger) Forget(f Field) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.writes, f)
}

// live returns f's record without its writes older than Window, nil when none is
// left. Once a Window, it drops every record whose writes are all old, so that the
// ledger holds only the fields of the last two minutes, and only that one call in a
// Window reads them all.
func (l *Ledger) live(f Field) *record {
	now := l.clock.Now()
	since := now.Add(-Window)
	if !l.swept.After(since) {
		for k, r := range l.writes {
			if !r.at[len(r.at)-1].After(since) {
				delete(l.writes, k)
			}
		}
		l.swept = now
	}
	r := l.writes[f]
	if r == nil {
		return nil
	}
	if r.at = slices.DeleteFunc(r.at, func(t time.Time) bool { return !t.After(since) }); len(r.at) == 0 {
		delete(l.writes, f)
		return nil
	}
	return r
}
