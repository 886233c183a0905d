package framework

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// ReadyWatch samples the Ready pods of a selector every interval, and follows every
// change to them through a watch besides, and records how often and for how long at a
// stretch none was Ready. The watch sees a moment at zero however short it is, and
// however long a list takes on a busy machine: a sample can miss it.
type ReadyWatch struct {
	mu      sync.Mutex
	samples int
	zero    int
	lowest  int
	// zeroSince starts the current stretch at zero Ready; longest is the longest one.
	zeroSince time.Time
	longest   time.Duration
	stop      context.CancelFunc
	done      chan struct{}
}

// WatchReady starts sampling until Stop.
func (f *Framework) WatchReady(selector string, interval time.Duration) *ReadyWatch {
	ctx, cancel := context.WithCancel(f.Ctx)
	w := &ReadyWatch{lowest: -1, stop: cancel, done: make(chan struct{})}
	list, err := f.Clientset.CoreV1().Pods(f.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		f.T.Fatalf("listing pods %s to watch them: %v", selector, err)
	}
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return f.Clientset.CoreV1().Pods(f.Namespace).Watch(ctx, o)
		},
	})
	if err != nil {
		f.T.Fatalf("watching pods %s: %v", selector, err)
	}
	ready := map[string]bool{}
	for i := range list.Items {
		ready[list.Items[i].Name] = counted(&list.Items[i])
	}
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		defer rw.Stop()
		for e := range rw.ResultChan() {
			pod, ok := e.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			if e.Type == watch.Deleted {
				delete(ready, pod.Name)
			} else {
				ready[pod.Name] = counted(pod)
			}
			n := 0
			for _, r := range ready {
				if r {
					n++
				}
			}
			w.observe(n, time.Now())
		}
	}()
	go func() {
		defer func() { <-watching; close(w.done) }()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			if pods, err := f.Pods(ctx, selector); err == nil {
				ready := 0
				for i := range pods {
					if counted(&pods[i]) {
						ready++
					}
				}
				w.record(ready, time.Now())
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// counted says a pod counts as Ready: a pod being deleted serves no more.
func counted(p *corev1.Pod) bool { return p.DeletionTimestamp == nil && PodReady(p) }

// record adds a sample of ready pods at now.
func (w *ReadyWatch) record(ready int, now time.Time) {
	w.mu.Lock()
	w.samples++
	w.mu.Unlock()
	w.observe(ready, now)
}

// observe notes ready pods at now, from a sample or from the watch.
func (w *ReadyWatch) observe(ready int, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lowest < 0 || ready < w.lowest {
		w.lowest = ready
	}
	switch {
	case ready > 0:
		if !w.zeroSince.IsZero() {
			w.longest = max(w.longest, now.Sub(w.zeroSince))
		}
		w.zeroSince = time.Time{}
	case w.zeroSince.IsZero():
		w.zero++
		w.zeroSince = now
	default:
		w.zero++
		w.longest = max(w.longest, now.Sub(w.zeroSince))
	}
}

// Stop ends sampling and returns the samples, those at zero Ready, and the lowest count.
func (w *ReadyWatch) Stop() (samples, zero, lowest int) {
	w.stop()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.samples, w.zero, w.lowest
}

// LongestZero is the longest stretch at zero Ready: from the first sample or change
// at zero to the first above it, or to the last at zero while none is above it yet.
func (w *ReadyWatch) LongestZero() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.longest
}
