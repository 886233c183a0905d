package announce

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// recorder keeps what it is asked to record, one line per Event.
type recorder []string

func (r *recorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	*r = append(*r, fmt.Sprintf("%s %s %s %s related=%v", eventtype, reason, action, fmt.Sprintf(note, args...), related != nil))
}

func TestRecord(t *testing.T) {
	var got recorder
	pod := &corev1.Pod{}
	related := Normal("Copied", "100% copied")
	related.Related = &corev1.ObjectReference{Kind: "DisruptionPolicy", Namespace: "a", Name: "fleet"}
	Record(&got, pod, Warning("Taken", "name taken"), related)
	want := recorder{
		// A nil Related is no related object, not a nil reference the recorder would trip on.
		"Warning Taken Reconcile name taken related=false",
		// The message is not a format.
		"Normal Copied Reconcile 100% copied related=true",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("recorded (-want +got):\n%s", diff)
	}
}
