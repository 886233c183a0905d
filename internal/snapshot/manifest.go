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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
	// Kustomize takes each path for a folder with a kustomization, and reads what
	// kustomize builds from it, as kubectl -k does. Lines count in the built output.
	Kustomize bool
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

// decoded is one object read from a file, with the function that adds it to a snapshot.
type decoded struct {
	ref    ObjectRef
	origin Origin
	legacy bool
	add    func(*Snapshot)
}

// merge builds the snapshot from the files' results in order; an object defined in two
// places is kept where it is first defined.
func merge(results []fileResult) (*Snapshot, []Problem) {
	var problems []Problem
	counts, total := map[string]int{}, 0
	for _, r := range results {
		for _, o := range r.objects {
			counts[o.ref.Kind]++
		}
		total += len(r.objects)
	}
	s := &Snapshot{Source: SourceManifests, Origins: make(map[ObjectRef]Origin, total), LegacySelectorPDBs: map[ObjectRef]bool{}}
	s.reserve(counts)
	for _, r := range results {
		problems = append(problems, r.problems...)
		s.Warnings = append(s.Warnings, r.warnings...)
		s.Skipped = append(s.Skipped, r.skipped...)
		for _, o := range r.objects {
			if first, dup := s.Origins[o.ref]; dup {
				problems = append(problems, Problem{File: o.origin.File, Line: o.origin.Line, Object: o.ref.String(),
					Err: fmt.Errorf("defined again; first defined at %s", first)})
				continue
			}
			s.Origins[o.ref] = o.origin
			if o.legacy {
				s.LegacySelectorPDBs[o.ref] = true
			}
			o.add(s)
		}
	}
	return s, problems
}

// reserve sizes the slices for the objects to come: objects are large, and growing the
// slices one append at a time copied them over and over. (The map of origins is sized
// for the same reason.)
func (s *Snapshot) reserve(counts map[string]int) {
	s.Nodes = slices.Grow(s.Nodes, counts[KindNode])
	s.Pods = slices.Grow(s.Pods, counts[KindPod])
	s.Deployments = slices.Grow(s.Deployments, counts[KindDeployment])
	s.ReplicaSets = slices.Grow(s.ReplicaSets, counts[KindReplicaSet])
	s.StatefulSets = slices.Grow(s.StatefulSets, counts[KindStatefulSet])
	s.DaemonSets = slices.Grow(s.DaemonSets, counts[KindDaemonSet])
	s.PodDisruptionBudgets = slices.Grow(s.PodDisruptionBudgets, counts[KindPodDisruptionBudget])
	s.HorizontalPodAutoscalers = slices.Grow(s.HorizontalPodAutoscalers, counts[KindHorizontalPodAutoscaler])
	s.PriorityClasses = slices.Grow(s.PriorityClasses, counts[KindPriorityClass])
	s.NodeCompanions = slices.Grow(s.NodeCompanions, counts[KindNodeCompanion])
	s.Namespaces = slices.Grow(s.Namespaces, counts[KindNamespace])
	s.DisruptionPolicies = slices.Grow(s.DisruptionPolicies, counts[KindDisruptionPolicy])
	s.ClusterDisruptionPolicies = slices.Grow(s.ClusterDisruptionPolicies, counts[KindClusterDisruptionPolicy])
	s.Leases = slices.Grow(s.Leases, counts[KindLease])
	if counts[KindNodeClaim]+counts[KindNodePool] > 0 {
		// Karpenter's kinds were read: a node of a NodePool without a NodeClaim has none.
		s.NodeClaims = make([]unstructured.Unstructured, 0, counts[KindNodeClaim])
		s.NodePools = make([]unstructured.Unstructured, 0, counts[KindNodePool])
	}
}

// String renders the origin as file:line.
func (o Origin) String() string { return o.File + ":" + strconv.Itoa(o.Line) }
