package snapshot

import (
	"fmt"
	"io"
	"path/filepath"
	"runtime"
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

// decoded is one object read from a file, with the function that puts it in its place
// in a snapshot.
type decoded struct {
	ref    ObjectRef
	origin Origin
	legacy bool
	add    func(s *Snapshot, i int)
}

// merge builds the snapshot from the files' results in order; an object defined in two
// places is kept where it is first defined. The places settled, the objects are decoded
// into them on every core: one large file's objects are most of the work.
func merge(results []fileResult) (*Snapshot, []Problem) {
	var problems []Problem
	total := 0
	for _, r := range results {
		total += len(r.objects)
	}
	s := &Snapshot{Source: SourceManifests, Origins: make(map[ObjectRef]Origin, total), LegacySelectorPDBs: map[ObjectRef]bool{}}
	type placed struct {
		o *decoded
		i int // in its kind's slice
	}
	kept, counts := make([]placed, 0, total), map[string]int{}
	for _, r := range results {
		problems = append(problems, r.problems...)
		s.Warnings = append(s.Warnings, r.warnings...)
		s.Skipped = append(s.Skipped, r.skipped...)
		for i := range r.objects {
			o := &r.objects[i]
			if first, dup := s.Origins[o.ref]; dup {
				problems = append(problems, Problem{File: o.origin.File, Line: o.origin.Line, Object: o.ref.String(),
					Err: fmt.Errorf("defined again; first defined at %s", first)})
				continue
			}
			s.Origins[o.ref] = o.origin
			if o.legacy {
				s.LegacySelectorPDBs[o.ref] = true
			}
			kept = append(kept, placed{o, counts[o.ref.Kind]})
			counts[o.ref.Kind]++
		}
	}
	s.size(counts)
	workers := min(runtime.GOMAXPROCS(0), len(kept))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for _, p := range kept[w*len(kept)/workers : (w+1)*len(kept)/workers] {
				p.o.add(s, p.i)
			}
		})
	}
	wg.Wait()
	return s, problems
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

// sized is a slice of n objects, nil for none, as appending none leaves it.
func sized[T any](n int) []T {
	if n == 0 {
		return nil
	}
	return make([]T, n)
}

// String renders the origin as file:line.
func (o Origin) String() string { return o.File + ":" + strconv.Itoa(o.Line) }
