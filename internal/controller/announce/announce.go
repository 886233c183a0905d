// Package announce carries the Events a controller decides on as plain values, so that
// the decision stays pure and its tests compare them, and records them once the writes
// they tell of have succeeded.
package announce

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
)

// action is the Events' action: each tells of what one reconcile did or found.
const action = "Reconcile"

// Event is one Event to record on the object a controller reconciles.
type Event struct {
	Type    string
	Reason  string
	Message string
	// Related is the other object the Event is about, if any. The recorder folds the
	// Events of one type and reason about the same objects into a series that keeps
	// the first message, so Events that differ only in what they name stay apart only
	// through it.
	Related *corev1.ObjectReference
}

// Normal is an Event of type Normal.
func Normal(reason, message string) Event {
	return Event{Type: corev1.EventTypeNormal, Reason: reason, Message: message}
}

// Warning is an Event of type Warning.
func Warning(reason, message string) Event {
	return Event{Type: corev1.EventTypeWarning, Reason: reason, Message: message}
}

// About returns e with related set: Events of one reason that name different objects
// then stay apart.
func (e Event) About(related *corev1.ObjectReference) Event {
	e.Related = related
	return e
}

// Record records evs on regarding, in order.
func Record(rec events.EventRecorder, regarding runtime.Object, evs ...Event) {
	for _, e := range evs {
		// Not e.Related itself when nil: a nil pointer in the interface is not a nil
		// interface, and the recorder would fail to reference it.
		var related runtime.Object
		if e.Related != nil {
			related = e.Related
		}
		rec.Eventf(regarding, related, e.Type, e.Reason, action, "%s", e.Message)
	}
}
