package snapshot_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/holdfast-dev/holdfast/internal/snapshot"
	"github.com/holdfast-dev/holdfast/internal/snapshot/kustomize"
)

// TestLoadManifestsURL reads manifests from http(s) URLs, as kubectl apply -f does.
func TestLoadManifestsURL(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/web.yaml" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte("# served\n" + deployment))
	}))
	defer srv.Close()
	s, problems := snapshot.LoadManifests([]string{srv.URL + "/web.yaml", srv.URL + "/gone.yaml"}, snapshot.ManifestOptions{})
	want := loaded{
		Origins:  map[string]string{"Deployment/default/web": srv.URL + "/web.yaml:2"},
		Problems: []string{srv.URL + "/gone.yaml: downloading: 404 Not Found"},
	}
	if diff := cmp.Diff(want, summarize(s, problems)); diff != "" {
		t.Errorf("loaded (-want +got):\n%s", diff)
	}
}

// TestLoadKustomization reads what a kustomization builds, as kubectl apply -k does:
// here a base's Deployment with the overlay's prefix and namespace.
func TestLoadKustomization(t *testing.T) {
	dir := t.TempDir()
	for path, content := range map[string]string{
		"base/kustomization.yaml": "resources: [web.yaml]\n",
		"base/web.yaml":           deployment,
		"prod/kustomization.yaml": "resources: [../base]\nnamePrefix: prod-\nnamespace: shop\n",
	} {
		full := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	prod := filepath.Join(dir, "prod")
	s, problems := snapshot.LoadManifests([]string{prod}, snapshot.ManifestOptions{Kustomize: kustomize.Build})
	want := loaded{Origins: map[string]string{"Deployment/shop/prod-web": prod + ":1"}}
	if diff := cmp.Diff(want, summarize(s, problems)); diff != "" {
		t.Errorf("loaded (-want +got):\n%s", diff)
	}
	_, problems = snapshot.LoadManifests([]string{filepath.Join(dir, "base", "web.yaml")}, snapshot.ManifestOptions{Kustomize: kustomize.Build})
	if len(problems) != 1 || !strings.Contains(problems[0].Error(), "kustomize build") {
		t.Errorf("a file for a kustomization: problems %v, want one from kustomize build", problems)
	}
}
