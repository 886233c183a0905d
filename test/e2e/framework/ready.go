package framework

import (
	"context"
	"sync"
	"time"
)

// ReadyWatch samples the Ready pods of a selector every interval and records how often
// and for how long at a stretch none was Ready.
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
	go func() {
		defer close(w.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			if pods, err := f.Pods(ctx, selector); err == nil {
				ready := 0
				for i := range pods {
					if pods[i].DeletionTimestamp == nil && PodReady(&pods[i]) {
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

func (w *ReadyWatch) record(ready int, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.samples++
	if w.lowest < 0 || ready < w.lowest {
		w.lowest = ready
	}
	switch {
	case ready > 0:
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

// LongestZero is the longest stretch between the first and the last of consecutive
// samples at zero Ready (0 for a single one).
func (w *ReadyWatch) LongestZero() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.longest
}
