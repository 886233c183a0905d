package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
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
// It leaves alone the deleted pods of a node that testbed crash stopped, until the node
// is restored.

// deletion is a deleted pod, known by its UID: a namesake made since is not it.
type deletion struct {
	namespace, name string
	uid             types.UID
	node            string
}

// pod is what the finalizer keeps of a pod: who it is, whether it is deleted, and its
// node. A typed Pod's empty fields alone take 1.2 kB, 60 MB at fifty thousand pods.
type pod struct {
	metav1.ObjectMeta // namespace, name, UID, resource version and deletion time only
	node              string
}

// slim is the pod informer's transform to a pod.
func slim(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil // already slim
	}
	return &pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: p.Namespace, Name: p.Name, UID: p.UID,
		ResourceVersion: p.ResourceVersion, DeletionTimestamp: p.DeletionTimestamp,
	}, node: p.Spec.NodeName}, nil
}

// finalizeOptions are the flags of testbed finalize-pods.
type finalizeOptions struct {
	kubeconfig string
	health     string // address of /healthz and /crashed, which answer once the pods are listed
	qps        int
	workers    int
}

func finalizePods(ctx context.Context, o finalizeOptions) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = float32(o.qps), 2*o.qps
	// Every pod comes whole to be slimmed: protobuf decodes it several times faster than JSON.
	cfg.ContentType = runtime.ContentTypeProtobuf
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return err
	}
	pods := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTransform(slim)).Core().V1().Pods().Informer()
	// Only the crashed nodes, by their mark: a crash is all the finalizer needs of nodes.
	crashed := metadatainformer.NewFilteredSharedInformerFactory(md, 0, "", func(o *metav1.ListOptions) {
		o.LabelSelector = crashedLabel
	}).ForResource(corev1.SchemeGroupVersion.WithResource("nodes")).Informer()
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[deletion]())
	defer queue.ShutDown()
	enqueue := func(obj any) {
		if p, ok := obj.(*pod); ok && p.DeletionTimestamp != nil {
			queue.Add(deletion{namespace: p.Namespace, name: p.Name, uid: p.UID, node: p.node})
		}
	}
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		return err
	}
	// A node that is restored (or removed) leaves the crashed: its deleted pods, skipped
	// while it was down, are finalized now.
	if _, err := crashed.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		node, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		if err != nil {
			return
		}
		for _, obj := range pods.GetStore().List() {
			if p, ok := obj.(*pod); ok && p.node == node {
				enqueue(p)
			}
		}
	}}); err != nil {
		return err
	}
	go pods.RunWithContext(ctx)
	go crashed.RunWithContext(ctx)
	down := func(node string) bool {
		_, ok, _ := crashed.GetStore().GetByKey(node)
		return ok
	}

	listener, err := net.Listen("tcp", o.health)
	if err != nil {
		return err
	}
	synced := func(w http.ResponseWriter) bool {
		if !pods.HasSynced() || !crashed.HasSynced() {
			http.Error(w, "listing pods and crashed nodes", http.StatusServiceUnavailable)
			return false
		}
		return true
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if synced(w) {
			fmt.Fprintln(w, "ok")
		}
	})
	// The nodes held crashed, one a line: testbed crash and restore wait until they agree.
	mux.HandleFunc("/crashed", func(w http.ResponseWriter, _ *http.Request) {
		if !synced(w) {
			return
		}
		nodes := crashed.GetStore().ListKeys()
		slices.Sort(nodes)
		for _, n := range nodes {
			fmt.Fprintln(w, n)
		}
	})
	server := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: mux}
	go server.Serve(listener)
	defer server.Close()

	// A deleted pod is not finalized before the crashed nodes are known.
	if !cache.WaitForCacheSync(ctx.Done(), pods.HasSynced, crashed.HasSynced) {
		return nil
	}
	for range o.workers {
		go func() {
			for finalize(ctx, cs, queue, down) {
			}
		}()
	}
	<-ctx.Done()
	return nil
}

// finalize removes the next deleted pod unless its node is down, and reports false once
// the queue is shut down.
func finalize(ctx context.Context, cs kubernetes.Interface, queue workqueue.TypedRateLimitingInterface[deletion], down func(node string) bool) bool {
	d, shutdown := queue.Get()
	if shutdown {
		return false
	}
	defer queue.Done(d)
	if down(d.node) {
		// The node's restore queues it again.
		queue.Forget(d)
		return true
	}
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

// podReadyAgain is a stage of the testbed's own: a node back from a crash reports its
// pods Ready again, which the node lifecycle controller marked not Ready while it was
// down. kwok's pod-ready stage takes only Pending pods, and would give them a second IP.
const podReadyAgain = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-ready-again
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Running'
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: 'NotIn'
      values:
      - 'True'
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: ContainersReady
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: true
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}
`

// ReadyAfterAnnotation on a pod (a Go duration, "12s") is how long kwok waits before
// marking it Running and Ready, in place of --pod-ready-delay: a workload's own start-up
// time, set on its pod template.
const ReadyAfterAnnotation = "testbed.holdfast.dev/ready-after"

// testbedStages writes kwok's stages for the testbed: without the pod-delete stage, which
// the pod finalizer replaces, with pod-ready-again, and with the stages that make pods
// Ready delayed by readyDelay when it is above 0, or by a pod's ReadyAfterAnnotation.
func testbedStages(from, to string, readyDelay time.Duration) (string, error) {
	data, err := os.ReadFile(from)
	if err != nil {
		return "", err
	}
	var docs []string
	ready := false
	for doc := range strings.SplitSeq(strings.TrimSpace(string(data))+"\n---\n"+podReadyAgain, "\n---\n") {
		switch {
		case strings.Contains(doc, "\n  name: pod-delete\n"):
			continue
		case strings.Contains(doc, "\n  name: pod-ready\n"):
			ready = true
			// A pod's ReadyAfterAnnotation, when set, is its own start-up time.
			doc = strings.Replace(doc, "\nspec:\n", fmt.Sprintf("\nspec:\n  delay:\n    durationMilliseconds: %d\n    durationFrom:\n      jq:\n        expression: '.metadata.annotations[\"%s\"]'\n",
				readyDelay.Milliseconds(), ReadyAfterAnnotation), 1)
		case strings.Contains(doc, "\n  name: pod-ready-again\n"):
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
