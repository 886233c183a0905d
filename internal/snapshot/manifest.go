package snapshot

import (
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// StdinPath is the path that stands for standard input, as in kubectl apply -f -.
const StdinPath = "-"

// DefaultMaxFileSize bounds one manifest file. Real manifests, even a whole cluster's
// `kubectl get -o yaml`, stay far below it; a larger file is more likely a mistake (a
// binary, a log) that would otherwise cost gigabytes of memory to parse.
const DefaultMaxFileSize = 64 << 20

// ManifestOptions controls how manifests are read.
type ManifestOptions struct {
	// DefaultNamespace is given to namespaced objects that name none, as kubectl does with
	// the context's namespace. Empty means "default".
	DefaultNamespace string
	// Stdin is read for the path "-".
	Stdin io.Reader
	// MaxFileSize bounds each file in bytes; zero means DefaultMaxFileSize.
	MaxFileSize int64
	// Kustomize, when set, takes each path for a folder with a kustomization, and reads
	// what it builds from it, as kubectl -k does (kustomize.Build). Lines count in the
	// built output. It is given rather than called from here so that the operator, which
	// links this package for its types, does not link kustomize.
	Kustomize func(dir string) ([]byte, error)
}

// Problem is one piece of input that could not be read. Loading goes on past it, so one
// bad document never hides the findings of the others.
type Problem struct {
	File   string
	Line   int    // 1-based; 0 when the problem is with the whole file
	Object string // kind/namespace/name when known
	Field  string // JSON path of the offending field when known, e.g. spec.replicas
	Err    error
}

// Error renders the problem as file:line: object: field: cause.
func (p Problem) Error() string {
	where := p.File
	if p.Line > 0 {
		where += ":" + strconv.Itoa(p.Line)
	}
	return where + ": " + p.Detail()
}

// Detail renders the problem without its file and line: object: field: cause.
func (p Problem) Detail() string {
	var b strings.Builder
	if p.Object != "" {
		b.WriteString(p.Object + ": ")
	}
	if p.Field != "" {
		b.WriteString("field " + p.Field + ": ")
	}
	b.WriteString(p.Err.Error())
	return b.String()
}

// Unwrap returns the cause.
func (p Problem) Unwrap() error { return p.Err }

// LoadManifests reads every path (a file, a folder read recursively for .yaml, .yml and
// .json files, an http(s) URL, or "-" for stdin) into one Snapshot. It returns the objects it could read
// together with one Problem for each piece of input it could not. Files are parsed in
// parallel, but objects and problems keep the order of the paths and files.
func LoadManifests(paths []string, opts ManifestOptions) (*Snapshot, []Problem) {
	_, results := parseAll(paths, opts)
	return merge(results)
}

// parseAll lists and parses the files of every path, in parallel. keys name each file by
// the index of its path and the folders and name below that path.
func parseAll(paths []string, opts ManifestOptions) (keys [][]string, results []fileResult) {
	opts = opts.withDefaults()
	var files []fileJob
	for i, p := range paths {
		for _, f := range listFiles(p, opts) {
			key := []string{strconv.Itoa(i)}
			if rel, err := filepath.Rel(p, f.name); err == nil && rel != "." {
				key = append(key, strings.Split(filepath.ToSlash(rel), "/")...)
			}
			keys = append(keys, key)
			files = append(files, f)
		}
	}
	results = make([]fileResult, len(files))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(files)) {
		wg.Go(func() {
			for i := range next {
				results[i] = parseFile(files[i], opts)
			}
		})
	}
	for i := range files {
		next <- i
	}
	close(next)
	wg.Wait()
	return keys, results
}

// LoadManifestBytes reads one file's content as if it had been read from name.
func LoadManifestBytes(name string, data []byte, opts ManifestOptions) (*Snapshot, []Problem) {
	job := fileJob{name: name, read: func() ([]byte, error) { return data, nil }}
	return merge([]fileResult{parseFile(job, opts.withDefaults())})
}

func (o ManifestOptions) withDefaults() ManifestOptions {
	if o.DefaultNamespace == "" {
		o.DefaultNamespace = metav1.NamespaceDefault
	}
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = DefaultMaxFileSize
	}
	return o
}

// fileJob is one file to parse: read returns its content, or err says why it cannot be.
type fileJob struct {
	name string
	err  error
	read func() ([]byte, error)
}

// fileResult is what one file holds, in order.
type fileResult struct {
	objects  []decoded
	problems []Problem
	warnings []Problem
	skipped  []Problem
}

// decoded is one object read from a file, its JSON not yet decoded: merge decodes it
// into its place in a snapshot.
type decoded struct {
	ref    ObjectRef
	origin Origin
	kind   *kindDecoder
	js     []byte
	// doc is the document the object was read from, without its nodes, and prefix the
	// object's path in it ("items.3." for a List item, "" for the document itself): what
	// finds the line of a bad field.
	doc    document
	prefix string
	// problemAt and warningAt are how many problems and warnings the file had before the
	// object: its own go there, so that a file's stay in the order of its documents.
	problemAt, warningAt int
}

// legacy reports whether the object is a budget of policy/v1beta1, whose empty selector
// selects no pods.
func (o *decoded) legacy() bool {
	return o.kind.gvk.Group == "policy" && o.kind.gvk.Version == "v1beta1"
}

// outcome is what decoding one object gave.
type outcome struct {
	problem  *Problem // the object could not be decoded, and is left out
	warnings []Problem
}

// merge builds the snapshot from the files' results in order; an object defined in two
// places is kept where it is first defined. The places settled, the objects are decoded
// into them on every core: one large file's objects are most of the work. An object that
// cannot be decoded takes no place, which would have gone to the next definition of it:
// should any fail, the places are settled again without them, and the objects decoded
// again.
func merge(results []fileResult) (*Snapshot, []Problem) {
	var all []*decoded
	for _, r := range results {
		for i := range r.objects {
			all = append(all, &r.objects[i])
		}
	}
	outcomes := make([]outcome, len(all))
	s, places := place(results, all, outcomes)
	if decodeAll(s, all, places, outcomes) {
		s, places = place(results, all, outcomes)
		decodeAll(s, all, places, outcomes)
	}
	var problems []Problem
	k := 0
	for _, r := range results {
		objects := outcomes[k : k+len(r.objects)]
		problems = append(problems, inOrder(r.problems, r.objects, func(o *decoded) int { return o.problemAt }, func(j int) []Problem {
			if p := objects[j].problem; p != nil {
				return []Problem{*p}
			}
			return nil
		})...)
		s.Warnings = append(s.Warnings, inOrder(r.warnings, r.objects, func(o *decoded) int { return o.warningAt }, func(j int) []Problem {
			return objects[j].warnings
		})...)
		s.Skipped = append(s.Skipped, r.skipped...)
		for j := range r.objects {
			if o := &r.objects[j]; places[k+j] == duplicate {
				problems = append(problems, Problem{File: o.origin.File, Line: o.origin.Line, Object: o.ref.String(),
					Err: fmt.Errorf("defined again; first defined at %s", s.Origins[o.ref])})
			}
		}
		k += len(r.objects)
	}
	return s, problems
}

// The places of objects that take none in a snapshot.
const (
	duplicate = -1 // defined before
	failed    = -2 // cannot be decoded
)

// place settles the place of every object but those that failed to decode: the index
// in its kind's slice, or duplicate. It returns the snapshot with its slices sized, its
// origins and its budgets of legacy selectors.
func place(results []fileResult, all []*decoded, outcomes []outcome) (*Snapshot, []int) {
	s := &Snapshot{Source: SourceManifests, Origins: make(map[ObjectRef]Origin, len(all)), LegacySelectorPDBs: map[ObjectRef]bool{}}
	places, counts := make([]int, len(all)), map[string]int{}
	for k, o := range all {
		switch _, dup := s.Origins[o.ref]; {
		case outcomes[k].problem != nil:
			places[k] = failed
		case dup:
			places[k] = duplicate
		default:
			s.Origins[o.ref] = o.origin
			if o.legacy() {
				s.LegacySelectorPDBs[o.ref] = true
			}
			places[k] = counts[o.ref.Kind]
			counts[o.ref.Kind]++
		}
	}
	s.size(counts)
	return s, places
}

// decodeAll decodes every object that has not failed into its place, on every core, and a
// duplicate only for its problems. It records each outcome, and reports whether an
// object failed that had not before.
func decodeAll(s *Snapshot, all []*decoded, places []int, outcomes []outcome) bool {
	workers := min(runtime.GOMAXPROCS(0), len(all))
	fails := make([]bool, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			maps := sharedMaps{}
			for k := w * len(all) / workers; k < (w+1)*len(all)/workers; k++ {
				switch places[k] {
				case failed:
				case duplicate:
					outcomes[k].problem, outcomes[k].warnings = all[k].decodeTo(nil, 0, nil)
				default:
					outcomes[k].problem, outcomes[k].warnings = all[k].decodeTo(s, places[k], maps)
				}
				fails[w] = fails[w] || places[k] != failed && outcomes[k].problem != nil
			}
		})
	}
	wg.Wait()
	return slices.Contains(fails, true)
}

// inOrder puts each object's problems, of(j) for the j-th, where the object was read
// among the file's others.
func inOrder(file []Problem, objects []decoded, at func(*decoded) int, of func(j int) []Problem) []Problem {
	out, next := []Problem(nil), 0
	for j := range objects {
		if p := at(&objects[j]); p > next {
			out, next = append(out, file[next:p]...), p
		}
		out = append(out, of(j)...)
	}
	return append(out, file[next:]...)
}

// size makes the slices as long as the objects to come, each decoded into its place:
// objects are large, and growing the slices one append at a time copied them over and
// over. (The map of origins is sized for the same reason.)
func (s *Snapshot) size(counts map[string]int) {
	s.Nodes = sized[corev1.Node](counts[KindNode])
	s.Pods = sized[corev1.Pod](counts[KindPod])
	s.Deployments = sized[appsv1.Deployment](counts[KindDeployment])
	s.ReplicaSets = sized[appsv1.ReplicaSet](counts[KindReplicaSet])
	s.StatefulSets = sized[appsv1.StatefulSet](counts[KindStatefulSet])
	s.DaemonSets = sized[appsv1.DaemonSet](counts[KindDaemonSet])
	s.PodDisruptionBudgets = sized[policyv1.PodDisruptionBudget](counts[KindPodDisruptionBudget])
	s.HorizontalPodAutoscalers = sized[autoscalingv2.HorizontalPodAutoscaler](counts[KindHorizontalPodAutoscaler])
	s.PriorityClasses = sized[schedulingv1.PriorityClass](counts[KindPriorityClass])
	s.NodeCompanions = sized[holdfastv1alpha1.NodeCompanion](counts[KindNodeCompanion])
	s.Namespaces = sized[corev1.Namespace](counts[KindNamespace])
	s.DisruptionPolicies = sized[holdfastv1alpha1.DisruptionPolicy](counts[KindDisruptionPolicy])
	s.ClusterDisruptionPolicies = sized[holdfastv1alpha1.ClusterDisruptionPolicy](counts[KindClusterDisruptionPolicy])
	s.Leases = sized[coordinationv1.Lease](counts[KindLease])
	if counts[KindNodeClaim]+counts[KindNodePool] > 0 {
		// Karpenter's kinds were read: a node of a NodePool without a NodeClaim has none.
		s.NodeClaims = make([]unstructured.Unstructured, counts[KindNodeClaim])
		s.NodePools = make([]unstructured.Unstructured, counts[KindNodePool])
	}
}

// sized is a slice of n objects, nil for none, as appending none leaves it. Its memory
// is written here, by one core: fresh from the system, it is mapped a page at a time as
// it is first written, and with every decoding core writing its part at once, the
// faults' contention took a tenth of an audit of 10,000 Deployments.
func sized[T any](n int) []T {
	if n == 0 {
		return nil
	}
	out := make([]T, n)
	clear(out)
	return out
}

// String renders the origin as file:line.
func (o Origin) String() string { return o.File + ":" + strconv.Itoa(o.Line) }
