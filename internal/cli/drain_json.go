package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/drain"
)

// eventTypes are the stable names of a drain's events in -o json: pipelines match on
// them, so a name once shipped does not change.
var eventTypes = map[drain.EventKind]string{
	drain.WaitingForSlot:           "waitingForSlot",
	drain.SlotTaken:                "slotTaken",
	drain.Cordoned:                 "cordoned",
	drain.PodSkipped:               "skipped",
	drain.Evicting:                 "evicting",
	drain.Evicted:                  "evicted",
	drain.Blocked:                  "refused",
	drain.WaitingForReplacement:    "waitingForReplacement",
	drain.ReplacementUnschedulable: "replacementUnschedulable",
	drain.NoRoom:                   "noRoom",
	drain.PodGone:                  "gone",
	drain.PodStopped:               "stopped",
	drain.NodeDrained:              "drained",
	drain.NodeIncomplete:           "notDrained",
	drain.NodeRefused:              "nodeRefused",
	drain.SlotReleased:             "released",
}

// jsonEvent is one line of -o json. Field names are stable; empty fields are left out.
type jsonEvent struct {
	Time      time.Time   `json:"time"`
	Type      string      `json:"type"`
	Node      string      `json:"node,omitempty"`
	Namespace string      `json:"namespace,omitempty"`
	Pod       string      `json:"pod,omitempty"`
	Message   string      `json:"message,omitempty"`
	Budget    *jsonBudget `json:"budget,omitempty"`
	// Drained and Nodes count the nodes in the run's last line, of type result.
	Drained *int `json:"drained,omitempty"`
	Nodes   *int `json:"nodes,omitempty"`
}

// jsonBudget is the PodDisruptionBudget behind a refusal, with the numbers the Eviction
// API judged by.
type jsonBudget struct {
	Name               string `json:"name"`
	Spec               string `json:"spec"`
	ExpectedPods       int32  `json:"expectedPods"`
	CurrentHealthy     int32  `json:"currentHealthy"`
	DesiredHealthy     int32  `json:"desiredHealthy"`
	DisruptionsAllowed int32  `json:"disruptionsAllowed"`
}

// eventStream writes a drain's events as NDJSON, one object a line, as they happen.
type eventStream struct {
	w   io.Writer
	err error
}

func (s *eventStream) write(e jsonEvent) {
	if s.err != nil {
		return
	}
	e.Time = e.Time.UTC()
	line, err := json.Marshal(e)
	if err == nil {
		_, err = s.w.Write(append(line, '\n'))
	}
	s.err = err
}

// event is the drain's Report in -o json.
func (s *eventStream) event(e drain.Event) {
	out := jsonEvent{Time: e.Time, Type: eventTypes[e.Kind], Node: e.Node, Message: e.Message, Budget: budgetOf(e.Budget)}
	if out.Type == "" {
		out.Type = string(e.Kind)
	}
	if ns, name, ok := strings.Cut(e.Pod, "/"); ok {
		out.Namespace, out.Pod = ns, name
	}
	s.write(out)
}

func budgetOf(c *availability.Count) *jsonBudget {
	if c == nil {
		return nil
	}
	return &jsonBudget{
		Name: c.PDB.Name, Spec: availability.BudgetSpec(c.PDB), ExpectedPods: c.Status.ExpectedPods,
		CurrentHealthy: c.Status.CurrentHealthy, DesiredHealthy: c.Status.DesiredHealthy, DisruptionsAllowed: c.Status.DisruptionsAllowed,
	}
}

// result ends the stream: a timeout or interrupt line if the run was stopped, then the
// count of nodes drained.
func (s *eventStream) result(res drain.Result, now time.Time, took time.Duration, cause error) error {
	if cause != nil {
		typ := "interrupted"
		if errors.Is(cause, errTimeout) {
			typ = "timeout"
		}
		s.write(jsonEvent{Time: now, Type: typ, Message: stopReason(cause) + "; nothing more is evicted and the drain slots are released"})
	}
	if res.Err != nil {
		s.write(jsonEvent{Time: now, Type: "warning", Message: res.Err.Error()})
	}
	drained := 0
	for _, n := range res.Nodes {
		if n.Drained {
			drained++
		}
	}
	nodes := len(res.Nodes)
	s.write(jsonEvent{Time: now, Type: "result", Drained: &drained, Nodes: &nodes,
		Message: fmt.Sprintf("Drained %d of %d node(s) in %s.", drained, nodes, took.Round(time.Second))})
	return s.err
}
