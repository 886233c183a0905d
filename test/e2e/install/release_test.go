//go:build e2e

package install_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/config"
	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

// The operator binary taken out of the image that `make image` builds (or of the image
// tarball or OCI archive HOLDFAST_IMAGE names, such as make release's) runs against the
// testbed: it is the operator alone, reports the version, commit and build date it was
// built with, serves /metrics over HTTPS only to
// a ServiceAccount holding holdfast-metrics-reader, and its policies and companions
// become Ready for `kubectl wait`.
func TestReleasedImage(t *testing.T) {
	f := framework.New(t)
	bin, wantVersion := imageBinary(f)

	out, err := exec.CommandContext(f.Ctx, bin, "--version").Output()
	if want := "holdfast " + wantVersion + "\n"; err != nil || string(out) != want {
		t.Errorf("the image's holdfast --version = %q, %v, want %q", out, err, want)
	}
	// The image holds the operator alone (cmd/holdfast-operator), not the CLI.
	if out, err := exec.CommandContext(f.Ctx, bin, "audit", "--help").CombinedOutput(); err == nil {
		t.Errorf("the image's holdfast runs audit, want the operator alone:\n%s", out)
	}

	c := f.HoldfastClient()
	f.InstallCRDs(c, &holdfastv1alpha1.DisruptionPolicyList{}, &holdfastv1alpha1.ClusterDisruptionPolicyList{}, &holdfastv1alpha1.NodeCompanionList{})
	metricsAddr, probeAddr := freeAddr(t), freeAddr(t)
	logs := runOperator(f, bin, "--leader-elect=false", "--log-level=debug", "--logging-format=json",
		"--metrics-bind-address="+metricsAddr, "--health-probe-bind-address="+probeAddr)
	f.Eventually(time.Minute, "the operator ready", func(ctx context.Context) (bool, error) {
		resp, err := http.Get("http://" + probeAddr + "/readyz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	checkJSONLog(t, logs.String(), wantVersion)

	t.Run("metrics", func(t *testing.T) { secureMetrics(f, metricsAddr, wantVersion) })
	t.Run("kubectl wait Ready", func(t *testing.T) { waitReady(f, c) })
	if t.Failed() {
		t.Logf("operator log:\n%s", logs.String())
	}
}

// imageBinary returns the holdfast binary inside the image under test and the version
// it must report.
func imageBinary(f *framework.Framework) (bin, version string) {
	f.T.Helper()
	root := framework.RepoRoot()
	image := os.Getenv("HOLDFAST_IMAGE")
	version = os.Getenv("HOLDFAST_IMAGE_VERSION")
	if image == "" {
		cmd := exec.CommandContext(f.Ctx, "make", "image")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			f.T.Fatalf("make image: %v\n%s", err, out)
		}
		image = filepath.Join(root, "bin", "holdfast-image.tar")
	}
	if version == "" {
		cmd := exec.CommandContext(f.Ctx, "git", "describe", "--tags", "--always", "--dirty")
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			f.T.Fatalf("git describe: %v", err)
		}
		version = strings.TrimSpace(string(out))
	}
	image, err := filepath.Abs(image)
	if err != nil {
		f.T.Fatal(err)
	}
	bin = filepath.Join(f.T.TempDir(), "holdfast")
	source := "--image"
	if strings.HasSuffix(image, ".oci.tar") {
		source = "--index"
	}
	cmd := exec.CommandContext(f.Ctx, "go", "run", ".", "extract", source, image, "--platform", "linux/amd64", "--out", bin)
	cmd.Dir = filepath.Join(root, "hack", "image")
	if out, err := cmd.CombinedOutput(); err != nil {
		f.T.Fatalf("extracting holdfast from %s: %v\n%s", image, err, out)
	}
	return bin, version
}

// syncBuffer collects a process's output while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// runOperator starts `holdfast operator` with the testbed's kubeconfig until the test
// ends, when it is stopped as a kubelet would, with SIGTERM.
func runOperator(f *framework.Framework, bin string, args ...string) *syncBuffer {
	f.T.Helper()
	logs := &syncBuffer{}
	cmd := exec.Command(bin, append([]string{"operator", "--kubeconfig", f.Kubeconfig}, args...)...)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		f.T.Fatal(err)
	}
	f.T.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return logs
}

// checkJSONLog checks that every line of the operator's log, controller-runtime's
// included, is a JSON object with a message, and that one says the version.
func checkJSONLog(t *testing.T, logs, version string) {
	t.Helper()
	said := false
	for line := range strings.Lines(logs) {
		var entry struct {
			Msg       string `json:"msg"`
			Version   string `json:"version"`
			Commit    string `json:"commit"`
			BuildDate string `json:"buildDate"`
		}
		if err := json.Unmarshal([]byte(line), &entry); err != nil || entry.Msg == "" {
			t.Errorf("--logging-format=json wrote a line that is not a JSON log entry (%v): %s", err, line)
			continue
		}
		said = said || entry.Msg == "Starting holdfast operator" && entry.Version == version && entry.Commit != "" && entry.BuildDate != ""
	}
	if !said {
		t.Errorf("the operator's log does not say its version %s, with a commit and a build date:\n%s", version, logs)
	}
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	port, err := framework.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", port)
}

// secureMetrics scrapes /metrics without a token (401), as a ServiceAccount without the
// reader role (403) and as one bound to holdfast-metrics-reader (200).
func secureMetrics(f *framework.Framework, addr, version string) {
	f.T.Helper()
	found := false
	objs, err := config.Objects()
	if err != nil {
		f.T.Fatal(err)
	}
	for _, u := range objs {
		if u.GetKind() == "ClusterRole" && u.GetName() == "holdfast-metrics-reader" {
			apply(f, mustJSON(f, u.Object), "--force-conflicts")
			found = true
		}
	}
	if !found {
		f.T.Fatal("config/default has no ClusterRole holdfast-metrics-reader")
	}
	tokenOf := func(name string) string {
		f.Create(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.Namespace}})
		tr, err := f.Clientset.CoreV1().ServiceAccounts(f.Namespace).CreateToken(f.Ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			f.T.Fatal(err)
		}
		return tr.Status.Token
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: f.Namespace + "-metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "holdfast-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "prometheus", Namespace: f.Namespace}},
	}
	if _, err := f.Clientset.RbacV1().ClusterRoleBindings().Create(f.Ctx, binding, metav1.CreateOptions{}); err != nil {
		f.T.Fatal(err)
	}
	f.T.Cleanup(func() {
		_ = f.Clientset.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
	})
	prometheus, stranger := tokenOf("prometheus"), tokenOf("stranger")

	httpc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		// The operator's certificate is self-signed, as a ServiceMonitor expects.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	}}
	scrape := func(token string) (int, string, error) {
		req, err := http.NewRequestWithContext(f.Ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
		if err != nil {
			return 0, "", err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := httpc.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	// /readyz answers before the metrics server has made its certificate and bound its
	// port: wait for the port, then judge the answers.
	f.Eventually(time.Minute, "the metrics server listening", func(ctx context.Context) (bool, error) {
		_, _, err := scrape("")
		return err == nil, nil
	})
	if code, _, err := scrape(""); err != nil || code != http.StatusUnauthorized {
		f.T.Errorf("a scrape without a token: %d, %v; want 401", code, err)
	}
	if code, _, err := scrape(stranger); err != nil || code != http.StatusForbidden {
		f.T.Errorf("a scrape by a ServiceAccount without the reader role: %d, %v; want 403", code, err)
	}
	// RBAC takes a moment to see the new binding.
	var body string
	f.Eventually(time.Minute, "the reader's scrape to succeed", func(context.Context) (bool, error) {
		code, b, err := scrape(prometheus)
		body = b
		return err == nil && code == http.StatusOK, err
	})
	if want := fmt.Sprintf(`version=%q`, version); !strings.Contains(body, "holdfast_build_info{") || !strings.Contains(body, want) {
		f.T.Errorf("/metrics has no holdfast_build_info with %s", want)
	}
}

// waitReady creates one object of each holdfast kind that the operator can satisfy and
// waits for each with `kubectl wait --for=condition=Ready`, as a GitOps tool would.
func waitReady(f *framework.Framework, c client.Client) {
	f.T.Helper()
	web := f.Deployment("web", 2)
	f.Create(web)
	create := func(obj client.Object) {
		f.T.Helper()
		if err := c.Create(f.Ctx, obj); err != nil {
			f.T.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
	create(&holdfastv1alpha1.DisruptionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: f.Namespace},
		Spec: holdfastv1alpha1.DisruptionPolicySpec{
			Selector:       metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
		},
	})
	cluster := &holdfastv1alpha1.ClusterDisruptionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: f.Namespace},
		Spec: holdfastv1alpha1.ClusterDisruptionPolicySpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: f.Namespace}},
			Template: holdfastv1alpha1.DisruptionPolicySpec{
				Selector:       metav1.LabelSelector{MatchLabels: map[string]string{"tier": "batch"}},
				MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			},
		},
	}
	create(cluster)
	f.T.Cleanup(func() { _ = c.Delete(context.Background(), cluster) })
	create(&holdfastv1alpha1.NodeCompanion{
		ObjectMeta: metav1.ObjectMeta{Name: "guard", Namespace: f.Namespace},
		Spec: holdfastv1alpha1.NodeCompanionSpec{
			NodeSelector: map[string]string{corev1.LabelHostname: f.Nodes[0]},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "guard", Image: "registry.example/guard:1",
			}}}},
		},
	})
	kubectl, err := framework.Kubectl()
	if err != nil {
		f.T.Fatal(err)
	}
	for _, obj := range []string{"disruptionpolicy/web", "clusterdisruptionpolicy/" + cluster.Name, "nodecompanion/guard"} {
		cmd := exec.CommandContext(f.Ctx, kubectl, "--kubeconfig", f.Kubeconfig, "-n", f.Namespace, "wait", "--for=condition=Ready", "--timeout=2m", obj)
		if out, err := cmd.CombinedOutput(); err != nil {
			get, _ := exec.CommandContext(f.Ctx, kubectl, "--kubeconfig", f.Kubeconfig, "-n", f.Namespace, "get", obj, "-o", "yaml").CombinedOutput()
			f.T.Errorf("kubectl wait --for=condition=Ready %s: %v\n%s\n%s", obj, err, out, get)
		}
	}
	// The READY column shows the condition.
	out, err := exec.CommandContext(f.Ctx, kubectl, "--kubeconfig", f.Kubeconfig, "-n", f.Namespace, "get", "disruptionpolicy/web").CombinedOutput()
	if rows := strings.Split(strings.TrimSpace(string(out)), "\n"); err != nil || len(rows) != 2 ||
		!slices.Equal(strings.Fields(rows[0])[:2], []string{"NAME", "READY"}) || strings.Fields(rows[1])[1] != "True" {
		f.T.Errorf("kubectl get disruptionpolicy: %v\n%s", err, out)
	}
}

// TestHelmInstall installs the chart as a release packages it with helm itself, with
// values other than the defaults, and uninstalls it.
func TestHelmInstall(t *testing.T) {
	f := framework.New(t)
	release := "hf-" + f.Namespace[len(f.Namespace)-5:]
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte(`
replicas: 1
leaderElection: false
logLevel: debug
logFormat: json
image: {tag: v0.0.0-e2e}
serviceAccount: {name: holdfast-e2e, annotations: {example.com/role: operator}}
podLabels: {team: platform}
podAnnotations: {example.com/scrape: "true"}
tolerations: [{key: dedicated, operator: Exists}]
podDisruptionBudget: {enabled: false}
monitoring: {prometheusServiceAccount: {name: prometheus, namespace: monitoring}}
drainerRole: {slotNamespace: `+release+`-drain}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	// The CRDs are the same for every test: installed once, as holdfast install does, and
	// left out of the release (test/e2e/upgrade installs them with the chart).
	f.InstallCRDs(f.HoldfastClient(), &holdfastv1alpha1.DisruptionPolicyList{})
	chart := f.Chart()
	out, err := f.Helm(f.Ctx, "install", release, chart, "--namespace", f.Namespace,
		"--set", "crds.install=false", "-f", values, "--wait", "--timeout", "2m")
	if err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "kubectl wait --for=condition=Ready") {
		t.Errorf("helm install printed no NOTES:\n%s", out)
	}
	uninstalled := false
	t.Cleanup(func() {
		if !uninstalled {
			_, _ = f.Helm(context.Background(), "uninstall", release, "--namespace", f.Namespace)
		}
	})
	// What helm install applied is what helm template renders with the same values: the
	// chart asks the cluster nothing, so a GitOps tool that renders it applies the same.
	manifest, err := f.Helm(f.Ctx, "get", "manifest", release, "--namespace", f.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	installed := map[string]any{}
	for _, u := range decode(t, manifest) {
		installed[u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName()] = u.Object
	}
	templated := map[string]any{}
	for _, u := range decode(t, helmTemplateRelease(f, release, "--set", "crds.install=false", "-f", values)) {
		templated[u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName()] = u.Object
	}
	if diff := cmp.Diff(installed, templated); diff != "" {
		t.Errorf("helm template renders other objects than helm install applied (-install +template):\n%s", diff)
	}
	ns, err := f.Clientset.CoreV1().Namespaces().Get(f.Ctx, release+"-drain", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the drain slots' namespace: %v", err)
	}
	if got := ns.Labels["pod-security.kubernetes.io/enforce"]; got != "restricted" {
		t.Errorf("the drain slots' namespace: pod-security.kubernetes.io/enforce %q, want restricted", got)
	}
	d, err := f.Clientset.AppsV1().Deployments(f.Namespace).Get(f.Ctx, release+"-holdfast-operator", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := d.Spec.Template
	got := fmt.Sprintf("replicas=%d ready=%d sa=%s image=%s team=%s priority=%s args=%v",
		*d.Spec.Replicas, d.Status.ReadyReplicas, pod.Spec.ServiceAccountName, pod.Spec.Containers[0].Image,
		pod.Labels["team"], pod.Spec.PriorityClassName, pod.Spec.Containers[0].Args)
	want := "replicas=1 ready=1 sa=holdfast-e2e image=ghcr.io/holdfast-dev/holdfast:v0.0.0-e2e team=platform priority=system-cluster-critical " +
		"args=[operator --leader-elect=false --metrics-bind-address=:8443 --metrics-secure=true --health-probe-bind-address=:8081 --log-level=debug --logging-format=json --kube-api-qps=50 --kube-api-burst=100]"
	if got != want {
		t.Errorf("the installed Deployment:\n got %s\nwant %s", got, want)
	}
	sa, err := f.Clientset.CoreV1().ServiceAccounts(f.Namespace).Get(f.Ctx, "holdfast-e2e", metav1.GetOptions{})
	if err != nil || sa.Annotations["example.com/role"] != "operator" {
		t.Errorf("ServiceAccount holdfast-e2e: %v %v", sa, err)
	}
	for _, name := range []string{release + "-holdfast-operator", release + "-holdfast-metrics-reader"} {
		if _, err := f.Clientset.RbacV1().ClusterRoles().Get(f.Ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("ClusterRole %s: %v", name, err)
		}
	}
	if _, err := f.Clientset.RbacV1().ClusterRoleBindings().Get(f.Ctx, release+"-holdfast-metrics-reader", metav1.GetOptions{}); err != nil {
		t.Errorf("the metrics reader binding: %v", err)
	}
	// The schema refuses two replicas without leader election before anything is sent.
	if out, err := f.Helm(f.Ctx, "upgrade", release, chart, "--namespace", f.Namespace, "--set", "crds.install=false",
		"-f", values, "--set", "replicas=2"); err == nil || !strings.Contains(err.Error(), "replicas") {
		t.Errorf("helm upgrade to 2 replicas without leader election: %v\n%s", err, out)
	}
	// Uninstalling removes the cluster-wide objects too.
	if out, err := f.Helm(f.Ctx, "uninstall", release, "--namespace", f.Namespace, "--wait"); err != nil {
		t.Fatalf("helm uninstall: %v\n%s", err, out)
	}
	uninstalled = true
	if _, err := f.Clientset.RbacV1().ClusterRoles().Get(f.Ctx, release+"-holdfast-operator", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the ClusterRole after helm uninstall: %v", err)
	}
}

func mustJSON(f *framework.Framework, obj map[string]any) []byte {
	f.T.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		f.T.Fatal(err)
	}
	return data
}
