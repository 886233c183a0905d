package cli

import (
	"bytes"
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/holdfast-dev/holdfast/internal/buildinfo"
)

func TestVersionOutput(t *testing.T) {
	info := buildinfo.Info{Version: "v0.2.0", Commit: "0123abc", BuildDate: "2026-11-23T15:40:00Z", GoVersion: "go1.26.1", Platform: "linux/arm64"}
	for name, tc := range map[string]struct {
		output string
		want   string
	}{
		"text": {want: "holdfast v0.2.0\n  commit:     0123abc\n  build date: 2026-11-23T15:40:00Z\n  go:         go1.26.1\n  platform:   linux/arm64\n"},
		"json": {output: "json", want: `{
    "version": "v0.2.0",
    "commit": "0123abc",
    "buildDate": "2026-11-23T15:40:00Z",
    "goVersion": "go1.26.1",
    "platform": "linux/arm64"
}
`},
		"yaml":     {output: "yaml", want: "buildDate: \"2026-11-23T15:40:00Z\"\ncommit: 0123abc\ngoVersion: go1.26.1\nplatform: linux/arm64\nversion: v0.2.0\n"},
		"jsonpath": {output: "jsonpath={.commit}", want: "0123abc"},
	} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			o := &VersionOptions{Info: VersionReport{Info: info}, output: newOutputFlags("text"), IOStreams: genericiooptions.IOStreams{Out: &out}}
			if tc.output != "" {
				o.output.format = tc.output
			}
			if err := o.Validate(); err != nil {
				t.Fatal(err)
			}
			if err := o.Run(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("holdfast version -o %q (-want +got):\n%s", tc.output, diff)
			}
		})
	}
}

// holdfast --version answers as kubectl plugins and most CLIs do.
func TestVersionFlag(t *testing.T) {
	stdout, stderr, code := runAudit(t, "", "--version")
	if want := "holdfast " + buildinfo.Get().Version + "\n"; stdout != want || code != ExitOK {
		t.Errorf("holdfast --version: exit %d, stdout %q, stderr %q; want %q", code, stdout, stderr, want)
	}
}

// operatorDeployment is the operator's Deployment as the chart makes it.
func operatorDeployment(namespace string, labels map[string]string, image string, ready int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "holdfast", Namespace: namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "operator", Image: image}}}}},
		Status: appsv1.DeploymentStatus{ReadyReplicas: ready},
	}
}

func TestFindOperators(t *testing.T) {
	chart := map[string]string{"app.kubernetes.io/name": "holdfast", "app.kubernetes.io/component": "operator", "app.kubernetes.io/version": "v0.3.0"}
	manifests := map[string]string{"app.kubernetes.io/name": "holdfast", "app.kubernetes.io/component": "operator"}
	forbidden := fake.NewClientset()
	forbidden.PrependReactor("list", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "", nil)
	})
	tests := map[string]struct {
		client *fake.Clientset
		want   []OperatorVersion
	}{
		"installed by the chart": {
			client: fake.NewClientset(operatorDeployment("holdfast-system", chart, "registry.example:5000/holdfast:v0.3.0", 1)),
			want:   []OperatorVersion{{Version: "v0.3.0", Deployment: "holdfast-system/holdfast", Image: "registry.example:5000/holdfast:v0.3.0", Ready: "1/1"}},
		},
		"installed from manifests, version from the image tag": {
			client: fake.NewClientset(operatorDeployment("ops", manifests, "registry.example:5000/holdfast:v0.2.1", 0)),
			want:   []OperatorVersion{{Version: "v0.2.1", Deployment: "ops/holdfast", Image: "registry.example:5000/holdfast:v0.2.1", Ready: "0/1"}},
		},
		"an image without a tag": {
			client: fake.NewClientset(operatorDeployment("ops", manifests, "registry.example:5000/holdfast", 1)),
			want:   []OperatorVersion{{Deployment: "ops/holdfast", Image: "registry.example:5000/holdfast", Ready: "1/1"}},
		},
		"not installed": {
			client: fake.NewClientset(operatorDeployment("ops", map[string]string{"app.kubernetes.io/name": "other"}, "other:v1", 1)),
			want:   []OperatorVersion{{Unknown: "not installed (no Deployment labelled " + operatorSelector + ")"}},
		},
		"no right to list Deployments": {
			client: forbidden,
			want:   []OperatorVersion{{Unknown: "not allowed to list Deployments in all namespaces, where holdfast looks for the operator"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, findOperators(context.Background(), tc.client)); diff != "" {
				t.Errorf("operators (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVersionWithOperator(t *testing.T) {
	info := buildinfo.Info{Version: "v0.3.0", GoVersion: "go1.26.1", Platform: "linux/amd64"}
	var out bytes.Buffer
	o := &VersionOptions{output: newOutputFlags("text"), IOStreams: genericiooptions.IOStreams{Out: &out}, Info: VersionReport{Info: info, Operators: []OperatorVersion{
		{Version: "v0.2.1", Deployment: "ops/holdfast", Image: "holdfast:v0.2.1", Ready: "1/1"},
		{Unknown: "no cluster: no configuration has been provided"},
	}}}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := o.Run(); err != nil {
		t.Fatal(err)
	}
	want := `holdfast v0.3.0
  commit:     unknown
  build date: unknown
  go:         go1.26.1
  platform:   linux/amd64
operator v0.2.1
  deployment: ops/holdfast
  image:      holdfast:v0.2.1
  ready:      1/1
operator: unknown: no cluster: no configuration has been provided
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("holdfast version (-want +got):\n%s", diff)
	}
}
