package cli

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/term"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/holdfast-dev/holdfast/internal/drain"
)

// progress shows a drain's events: one log line each, or on a terminal a block with a
// line per node and per pod in flight, redrawn in place. The lines kubectl drain prints
// (node/N cordoned, evicting pod NS/P, pod/P evicted, node/N drained) go to out, as
// kubectl's go to its standard output, for the runbooks that grep them.
type progress struct {
	w     io.Writer
	out   io.Writer
	live  bool
	width int
	order []string
	nodes map[string]*nodeView
	drawn int // lines of the last live block, to erase before redrawing
}

// nodeView is what the live block shows of one node.
type nodeView struct {
	status  string
	evicted int
	skipped int
	// pods in flight and their latest step; pods leave the view once gone.
	pods map[string]string
}

func newProgress(w, out io.Writer, live bool, nodes []string) *progress {
	p := &progress{w: w, out: out, live: live, width: 100, order: nodes, nodes: map[string]*nodeView{}}
	for _, n := range nodes {
		p.nodes[n] = &nodeView{status: "waiting", pods: map[string]string{}}
	}
	if f, ok := w.(*os.File); ok && live {
		if width, _, err := term.GetSize(int(f.Fd())); err == nil && width > 20 {
			p.width = width
		}
	}
	return p
}

// describe renders an event for a person.
func describe(e drain.Event) string {
	switch e.Kind {
	case drain.WaitingForSlot:
		return "waiting for a drain slot: " + e.Message
	case drain.SlotTaken:
		return "took drain slot " + e.Message
	case drain.PodSkipped:
		return "skipped: " + e.Message
	case drain.Evicting:
		return "evicting"
	case drain.Evicted:
		return "evicted"
	case drain.Blocked:
		return e.Message + "; retrying"
	case drain.PodGone:
		return "gone"
	case drain.PodStopped:
		return "not evicted: " + e.Message
	case drain.NoRoom:
		return "no room: " + e.Message
	case drain.NodeDrained:
		return "drained: " + e.Message
	case drain.NodeIncomplete:
		return "NOT drained: " + e.Message
	case drain.NodeRefused:
		// kubectl's words, which scripts grep.
		return fmt.Sprintf("error: unable to drain node %q due to error: %s, continuing command...", e.Node, e.Message)
	case drain.SlotReleased:
		return "released drain slot " + e.Message
	}
	return e.Message
}

// kubectlLine is the line kubectl drain prints on its standard output for the event, if
// it prints one.
func kubectlLine(e drain.Event) (string, bool) {
	switch e.Kind {
	case drain.Cordoned:
		return "node/" + e.Node + " " + e.Message, true // cordoned, or already cordoned
	case drain.Evicting:
		return "evicting pod " + e.Pod, true
	case drain.Evicted:
		_, name, _ := strings.Cut(e.Pod, "/")
		return "pod/" + name + " evicted", true
	case drain.NodeDrained:
		return "node/" + e.Node + " drained", true
	}
	return "", false
}

func (p *progress) event(e drain.Event) {
	line, kubectl := kubectlLine(e)
	if !p.live {
		if kubectl {
			fmt.Fprintln(p.out, line)
		}
		subject := e.Node
		if e.Pod != "" {
			subject += " " + e.Pod
		}
		fmt.Fprintf(p.w, "%s %s: %s\n", e.Time.UTC().Format(time.TimeOnly), subject, describe(e))
		return
	}
	if kubectl {
		// Above the block, which is drawn again below it: out may be the same terminal.
		p.erase()
		fmt.Fprintln(p.out, line)
	}
	v := p.nodes[e.Node]
	switch {
	case e.Kind == drain.Evicted:
		v.evicted++
		v.pods[e.Pod] = describe(e)
	case e.Kind == drain.PodSkipped:
		v.skipped++
	case e.Kind == drain.PodGone:
		delete(v.pods, e.Pod)
	case e.Pod != "":
		v.pods[e.Pod] = describe(e)
	case e.Kind == drain.SlotReleased:
		// The node's outcome stays on screen.
	default:
		v.status = describe(e)
	}
	p.redraw()
}

// erase takes the live block off the terminal.
func (p *progress) erase() {
	if p.drawn > 0 {
		fmt.Fprintf(p.w, "\x1b[%dA\x1b[J", p.drawn)
		p.drawn = 0
	}
}

func (p *progress) redraw() {
	var b strings.Builder
	if p.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA\x1b[J", p.drawn)
	}
	lines := 0
	line := func(s string) {
		// A wrapped line would throw the count of lines to erase off.
		if len(s) > p.width-1 {
			s = s[:p.width-2] + "…"
		}
		b.WriteString(s + "\n")
		lines++
	}
	for _, n := range p.order {
		v := p.nodes[n]
		line(fmt.Sprintf("%s  %s  (%d evicted, %d skipped)", n, v.status, v.evicted, v.skipped))
		for _, pod := range slices.Sorted(maps.Keys(v.pods)) {
			line("    " + pod + "  " + v.pods[pod])
		}
	}
	p.drawn = lines
	_, _ = io.WriteString(p.w, b.String())
}

// summaryColumns are those of the summary of a drain, a row per node.
var summaryColumns = []metav1.TableColumnDefinition{
	column("Node", false), column("Result", false), column("Evicted", false), column("Skipped", false),
	column("Remaining", false), column("Stopped By", true),
}

// summary prints each node's outcome, and for nodes not drained what remains and how to
// resume or give the node back.
func (o *DrainOptions) summary(res drain.Result, took time.Duration, cause error) error {
	w := &errWriter{w: o.Out}
	table := &metav1.Table{ColumnDefinitions: summaryColumns}
	drained := 0
	var cordoned []string
	for _, n := range res.Nodes {
		result := "drained"
		switch {
		case n.Drained:
			drained++
		case !n.Started:
			result = "not started"
		case n.Refused:
			result = "NOT drained, refused, cordoned"
			cordoned = append(cordoned, n.Node)
		default:
			result = "NOT drained, cordoned"
			cordoned = append(cordoned, n.Node)
		}
		stopped := ""
		if n.Err != nil {
			stopped = n.Err.Error()
		}
		table.Rows = append(table.Rows, metav1.TableRow{Cells: []any{n.Node, result, n.Evicted, len(n.Skipped), len(n.Remaining), stopped}})
	}
	if err := o.table.print(w, table); err != nil {
		return err
	}
	for _, n := range res.Nodes {
		for _, r := range n.Remaining {
			w.println(fmt.Sprintf("  %s %s: %s", n.Node, r.Pod, r.Reason))
		}
		if n.Err != nil && len(n.Remaining) == 0 {
			w.println(fmt.Sprintf("  %s: %v", n.Node, n.Err))
		}
	}
	if res.Err != nil {
		w.println(fmt.Sprintf("Warning: %v", res.Err))
	}
	w.println(fmt.Sprintf("Drained %d of %d node(s) in %s.", drained, len(res.Nodes), took.Round(time.Second)))
	if drained == len(res.Nodes) {
		return w.err
	}
	if cause != nil {
		w.println(stopReason(cause) + "; nothing more is evicted and the drain slots are released.")
	}
	w.println("To resume, run the same command again: it skips what is done and goes on.")
	if len(cordoned) > 0 {
		// kubectl uncordon leaves holdfast's conditions for the operator to clear.
		names := strings.Join(cordoned, " ")
		w.println("To give the nodes back as they are: holdfast uncordon " + names + " (or kubectl uncordon " + names + " where the holdfast operator runs)")
	}
	return w.err
}
