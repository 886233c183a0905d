// Command timeline records the ready replicas of every Deployment, StatefulSet and
// DaemonSet in some namespaces while the demo runs, and when stopped (SIGINT or SIGTERM)
// writes a self-contained HTML report: one line per workload on a timeline chart, with
// the demo's steps marked on it.
//
//	timeline --kubeconfig K --namespaces prod,storage --marks marks.txt --out report.html
//
// marks.txt holds one "RFC3339-time text" line per step; the demo appends to it.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"html/template"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// interval is how often the workloads are sampled: the demo's claims ("never below the
// floor", "zero time at zero ready") are about moments this short.
const interval = 200 * time.Millisecond

// sample is one workload's ready and desired replicas at one moment.
type sample struct {
	at             time.Time
	ready, desired int32
}

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster to watch")
	namespaces := flag.String("namespaces", "default", "comma-separated namespaces to watch")
	marks := flag.String("marks", "", "file of \"RFC3339 text\" lines marking the demo's steps")
	out := flag.String("out", "report.html", "the HTML report to write when stopped")
	flag.Parse()
	if err := run(*kubeconfig, strings.Split(*namespaces, ","), *marks, *out); err != nil {
		fmt.Fprintln(os.Stderr, "timeline:", err)
		os.Exit(1)
	}
}

func run(kubeconfig string, namespaces []string, marksFile, out string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	series := map[string][]sample{}
	start := time.Now()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for ctx.Err() == nil {
		for _, ns := range namespaces {
			record(ctx, cs, ns, series)
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
	marks, err := readMarks(marksFile)
	if err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := render(f, start, time.Now(), series, marks); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// record appends one sample per workload; a failed list skips the moment rather than
// recording a false zero.
func record(ctx context.Context, cs kubernetes.Interface, ns string, series map[string][]sample) {
	now := time.Now()
	// A Deployment's surge set serves beside it: its Ready pods count, as a Service
	// counts them.
	surges, err := cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: holdfastv1alpha1.SurgeOfLabel})
	if ds, derr := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{}); err == nil && derr == nil {
		for _, d := range ds.Items {
			ready := d.Status.ReadyReplicas
			for _, rs := range surges.Items {
				if rs.Annotations[holdfastv1alpha1.SurgeForAnnotation] == d.Name {
					ready += rs.Status.ReadyReplicas
				}
			}
			key := "Deployment " + ns + "/" + d.Name
			series[key] = append(series[key], sample{now, ready, *d.Spec.Replicas})
		}
	}
	if ss, err := cs.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, s := range ss.Items {
			key := "StatefulSet " + ns + "/" + s.Name
			series[key] = append(series[key], sample{now, s.Status.ReadyReplicas, *s.Spec.Replicas})
		}
	}
	if ds, err := cs.AppsV1().DaemonSets(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, d := range ds.Items {
			key := "DaemonSet " + ns + "/" + d.Name
			series[key] = append(series[key], sample{now, d.Status.NumberReady, d.Status.DesiredNumberScheduled})
		}
	}
}

type mark struct {
	at   time.Time
	text string
}

func readMarks(path string) ([]mark, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var marks []mark
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		ts, text, _ := strings.Cut(sc.Text(), " ")
		at, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		marks = append(marks, mark{at, text})
	}
	return marks, sc.Err()
}

// The chart's geometry, in SVG user units; bottom holds the time axis.
const (
	width, rowHeight, left, right, top, bottom = 1000.0, 70.0, 250.0, 20.0, 30.0, 30.0
)

// tick is one labelled point of an axis.
type tick struct {
	At    float64 // x on the time axis, y on a values axis
	Label string
}

// timeSteps are the time axis's candidate spacings, in seconds.
var timeSteps = []float64{5, 10, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600}

// timeTicks labels the time axis every step of timeSteps that gives at most a dozen
// ticks over span seconds.
func timeTicks(span float64, x func(seconds float64) float64) []tick {
	step := timeSteps[len(timeSteps)-1]
	for _, s := range timeSteps {
		if span/s <= 12 {
			step = s
			break
		}
	}
	var ts []tick
	for s := 0.0; s <= span; s += step {
		ts = append(ts, tick{x(s), fmt.Sprintf("%d:%02d", int(s)/60, int(s)%60)})
	}
	return ts
}

// valueTicks labels a row's values axis at 0, the middle and the top of the shared scale.
func valueTicks(maxV int32, y func(int32) float64) []tick {
	vs := []int32{0, maxV}
	if maxV >= 4 {
		vs = []int32{0, maxV / 2, maxV}
	}
	var ts []tick
	for _, v := range vs {
		ts = append(ts, tick{y(v), fmt.Sprint(v)})
	}
	return ts
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"}

type row struct {
	Name, Colour, Points, Summary string
	Y, Base, Desired              float64
	Ticks                         []tick
}

type markView struct {
	X           float64
	Label, Text string
	At          string
}

func render(w io.Writer, start, end time.Time, series map[string][]sample, marks []mark) error {
	names := make([]string, 0, len(series))
	for k := range series {
		names = append(names, k)
	}
	slices.Sort(names)
	span := end.Sub(start).Seconds()
	if span <= 0 {
		span = 1
	}
	xs := func(seconds float64) float64 { return left + (width-left-right)*seconds/span }
	x := func(t time.Time) float64 { return xs(t.Sub(start).Seconds()) }
	// One scale for every row, so that rows compare: a replica is as tall everywhere.
	maxV := int32(1)
	for _, ss := range series {
		for _, s := range ss {
			maxV = max(maxV, s.desired, s.ready)
		}
	}
	var rows []row
	for i, name := range names {
		ss := series[name]
		base := top + float64(i+1)*rowHeight - 10
		y := func(v int32) float64 { return base - (rowHeight-25)*float64(v)/float64(maxV) }
		// A workload's line starts when it first wants replicas, not when it was created.
		for len(ss) > 1 && ss[0].desired == 0 {
			ss = ss[1:]
		}
		var pts []string
		// The lowest point counts from the moment the workload is first whole: its
		// start-up is not a disruption.
		up := false
		summary := "never fully ready"
		var lowest sample
		for j, s := range ss {
			if j > 0 { // a step line: ready holds its value until the next sample
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(s.at), y(ss[j-1].ready)))
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(s.at), y(s.ready)))
			if !up && s.ready >= s.desired {
				up, lowest = true, s
			}
			if up && s.ready < lowest.ready {
				lowest = s
			}
		}
		if up {
			summary = fmt.Sprintf("lowest %d of %d ready once up", lowest.ready, lowest.desired)
		}
		rows = append(rows, row{
			Name: name, Colour: palette[i%len(palette)], Points: strings.Join(pts, " "),
			Summary: summary,
			Y:       base - rowHeight/2 + 10, Base: base, Desired: y(ss[len(ss)-1].desired),
			Ticks: valueTicks(maxV, y),
		})
	}
	var mv []markView
	for _, m := range marks {
		if !m.at.Before(start) && !m.at.After(end) {
			label, _, _ := strings.Cut(m.text, ".")
			mv = append(mv, markView{X: x(m.at), Label: label, Text: m.text, At: m.at.UTC().Format("15:04:05")})
		}
	}
	axis := top + float64(len(rows))*rowHeight
	return page.Execute(w, map[string]any{
		"Rows": rows, "Marks": mv, "Width": width, "Height": axis + bottom,
		"Left": left, "Right": width - right, "Start": start.UTC().Format(time.RFC3339),
		"Seconds": fmt.Sprintf("%.0f", span), "Interval": interval, "Max": maxV,
		"Axis": axis, "AxisTick": axis + 5, "TimeTicks": timeTicks(span, xs),
	})
}

var page = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>holdfast demo: ready replicas during the drains</title>
<style>
body { font: 14px system-ui, sans-serif; margin: 2em; color: #222; }
svg text { font: 12px system-ui, sans-serif; }
.mark line { stroke: #999; stroke-dasharray: 4 3; }
.tick { fill: #666; }
</style></head><body>
<h1>Ready replicas per workload</h1>
<p>Sampled every {{.Interval}} for {{.Seconds}} s from {{.Start}}. Each line is a workload's ready replicas (a Deployment's with the extra pods of its surge set),
every row on the same scale of 0 to {{.Max}} replicas (the numbers left of each row); the faint dotted line is its
desired replicas. The time axis counts minutes:seconds from the start; the dashed verticals are the demo's steps,
listed below.</p>
<svg xmlns="http://www.w3.org/2000/svg" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}">
{{range .Marks}}<g class="mark"><line x1="{{.X}}" x2="{{.X}}" y1="20" y2="{{$.Height}}"/><text x="{{.X}}" y="14" text-anchor="middle">{{.Label}}</text><title>{{.Text}}</title></g>
{{end}}{{range .Rows}}<g><text x="5" y="{{.Y}}" fill="{{.Colour}}">{{.Name}}</text><text x="5" y="{{.Base}}" fill="#666">{{.Summary}}</text>
<line x1="{{$.Left}}" x2="{{$.Right}}" y1="{{.Base}}" y2="{{.Base}}" stroke="#ddd"/>
{{range .Ticks}}<text class="tick" x="{{$.Left}}" dx="-6" y="{{.At}}" dy="4" text-anchor="end">{{.Label}}</text>{{end}}
<line x1="{{$.Left}}" x2="{{$.Right}}" y1="{{.Desired}}" y2="{{.Desired}}" stroke="{{.Colour}}" stroke-opacity="0.3" stroke-dasharray="2 4"/>
<polyline fill="none" stroke="{{.Colour}}" stroke-width="2" points="{{.Points}}"/></g>
{{end}}<g class="axis"><line x1="{{.Left}}" x2="{{.Right}}" y1="{{.Axis}}" y2="{{.Axis}}" stroke="#999"/>
{{range .TimeTicks}}<line x1="{{.At}}" x2="{{.At}}" y1="{{$.Axis}}" y2="{{$.AxisTick}}" stroke="#999"/><text class="tick" x="{{.At}}" y="{{$.Axis}}" dy="16" text-anchor="middle">{{.Label}}</text>{{end}}
<text class="tick" x="{{.Left}}" dx="-24" y="{{.Axis}}" dy="16" text-anchor="end">m:ss</text></g>
</svg>
<h2>Steps</h2>
<ol style="list-style: none; padding: 0">{{range .Marks}}<li>{{.At}} — {{.Text}}</li>{{end}}</ol>
</body></html>
`))
