// Package livetest gives tests of code that reads live snapshots a fake clientset that
// answers as the API server does.
package livetest

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

// Clientset is fake.NewClientset that also serves a watch of pods asking for its initial
// events (a watch-list, how a snapshot reads pods) as the API server does: an Added event
// per pod, then a bookmark marking their end. client-go's fake serves it as a plain
// watch, which never ends the initial events.
func Clientset(objects ...runtime.Object) *fake.Clientset {
	c := fake.NewClientset(objects...)
	c.PrependWatchReactor("pods", func(action k8stesting.Action) (bool, watch.Interface, error) {
		a, ok := action.(k8stesting.WatchActionImpl)
		if !ok || !ptr.Deref(a.ListOptions.SendInitialEvents, false) {
			return false, nil, nil
		}
		obj, err := c.Tracker().List(corev1.SchemeGroupVersion.WithResource("pods"), corev1.SchemeGroupVersion.WithKind("Pod"), a.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		pods := obj.(*corev1.PodList).Items
		w := watch.NewFakeWithChanSize(len(pods)+1, false)
		for i := range pods {
			w.Add(&pods[i])
		}
		w.Action(watch.Bookmark, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"},
		}})
		return true, w, nil
	})
	return c
}
