package drain

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/holdfast-dev/holdfast/internal/plan"
)

func TestWavesOf(t *testing.T) {
	p := &plan.Plan{
		Waves:   []plan.Wave{{Nodes: []string{"a", "c"}}, {Nodes: []string{"b"}}},
		Blocked: []plan.Blocker{{Node: "d"}, {Node: "e"}},
	}
	if diff := cmp.Diff([][]string{{"a", "c"}, {"b"}, {"d", "e"}}, WavesOf(p)); diff != "" {
		t.Errorf("WavesOf (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([][]string{{"a", "c", "b", "d", "e"}}, InOneWave(WavesOf(p))); diff != "" {
		t.Errorf("InOneWave (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([][]string{{"a"}}, WavesOf(&plan.Plan{Waves: []plan.Wave{{Nodes: []string{"a"}}}})); diff != "" {
		t.Errorf("WavesOf with nothing blocked (-want +got):\n%s", diff)
	}
}
