package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
)

// The pod finalizer does for the simulated nodes what a kubelet does once a deleted
// pod's containers have stopped: it removes the pod from the API at once, on condition
// that its UID is the one deleted. kwok's own pod-delete stage deletes by name, so under
// load it at times removed the pod a StatefulSet had just made under the same name (a
// replacement deleted 7 ms after its creation, and a third pod where two were due).

// deletion is a deleted pod, known by its UID: a namesake made since is not it.
type deletion struct {
	namespace, name string
	uid             types.UID
}

// finalizeOptions are the flags of testbed finalize-pods.
type finalizeOptions struct {
	kubeconfig string
	health     string // address of /healthz, which answers once the pods are listed
	qps        int
	workers    int
}

func finalizePods(ctx context.Context, o finalizeOptions) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = float32(o.qps), 2*o.qps
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return err
	}
	// Metadata alone holds what matters (deletion time, UID) at a fraction of a pod's
	// size, which counts at fifty thousand pods.
	informer := metadatainformer.NewSharedInformerFactory(md, 0).ForResource(corev1.SchemeGroupVersion.WithResource("pods")).Informer()
	if err := informer.SetTransform(func(obj any) (any, error) {
		if m, ok := obj.(metav1.Object); ok {
			m.SetManagedFields(nil)
		}
		return obj, nil
	}); err != nil {
		return err
	}
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[deletion]())
	defer queue.ShutDown()
	enqueue := func(obj any) {
		if m, ok := obj.(*metav1.PartialObjectMetadata); ok && m.DeletionTimestamp != nil {
			queue.Add(deletion{namespace: m.Namespace, name: m.Name, uid: m.UID})
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		return err
	}
	go informer.RunWithContext(ctx)

	listener, err := net.Listen("tcp", o.health)
	if err != nil {
		return err
	}
	server := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !informer.HasSynced() {
			http.Error(w, "listing pods", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})}
	go server.Serve(listener)
	defer server.Close()

	for range o.workers {
		go func() {
			for finalize(ctx, cs, queue) {
			}
		}()
	}
	<-ctx.Done()
	return nil
}

// finalize removes the next deleted pod, and reports false once the queue is shut down.
func finalize(ctx context.Context, cs kubernetes.Interface, queue workqueue.TypedRateLimitingInterface[deletion]) bool {
	d, shutdown := queue.Get()
	if shutdown {
		return false
	}
	defer queue.Done(d)
	now := int64(0)
	err := cs.CoreV1().Pods(d.namespace).Delete(ctx, d.name, metav1.DeleteOptions{
		GracePeriodSeconds: &now,
		Preconditions:      &metav1.Preconditions{UID: &d.uid},
	})
	switch {
	case err == nil, apierrors.IsNotFound(err), apierrors.IsConflict(err), errors.Is(err, context.Canceled):
		// Gone, or gone and replaced by a namesake, which is not ours to delete.
		queue.Forget(d)
	default:
		fmt.Fprintf(os.Stderr, "deleting pod %s/%s (%s): %v\n", d.namespace, d.name, d.uid, err)
		queue.AddRateLimited(d)
	}
	return true
}

// withoutPodDelete writes kwok's stages without its pod-delete stage, which the pod
// finalizer replaces, with the pod-ready stage delayed by readyDelay when it is above 0.
func withoutPodDelete(from, to string, readyDelay time.Duration) (string, error) {
	data, err := os.ReadFile(from)
	if err != nil {
		return "", err
	}
	var docs []string
	ready := false
	for doc := range strings.SplitSeq(string(data), "\n---\n") {
		switch {
		case strings.Contains(doc, "\n  name: pod-delete\n"):
			continue
		case strings.Contains(doc, "\n  name: pod-ready\n"):
			ready = true
			if readyDelay > 0 {
				doc = strings.Replace(doc, "\nspec:\n", fmt.Sprintf("\nspec:\n  delay:\n    durationMilliseconds: %d\n", readyDelay.Milliseconds()), 1)
			}
		}
		docs = append(docs, doc)
	}
	if !ready {
		return "", fmt.Errorf("no pod-ready stage in %s", from)
	}
	return to, os.WriteFile(to, []byte(strings.Join(docs, "\n---\n")), 0o644)
}
