// Package krew checks the krew manifest hack/release.sh publishes, without building a
// release: hack/krew-manifest.sh runs on stand-in archives.
package krew

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// plugin is the part of krew's Plugin (krew.googlecontainertools.github.com/v1alpha2) that
// krew reads to install holdfast.
type plugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		Homepage         string `json:"homepage"`
		ShortDescription string `json:"shortDescription"`
		Description      string `json:"description"`
		Caveats          string `json:"caveats"`
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			SHA256 string `json:"sha256"`
			Bin    string `json:"bin"`
			Files  []struct {
				From string `json:"from"`
				To   string `json:"to"`
			} `json:"files"`
		} `json:"platforms"`
	} `json:"spec"`
}

func TestManifest(t *testing.T) {
	const version = "v1.2.3"
	dist := t.TempDir()
	sums := map[string]string{}
	for _, p := range []string{"linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64"} {
		archive := "holdfast_" + version + "_" + p + ".tar.gz"
		content := []byte("archive for " + p)
		if err := os.WriteFile(filepath.Join(dist, archive), content, 0o644); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(content)
		sums[archive] = hex.EncodeToString(sum[:])
	}
	out, err := exec.Command("bash", "../../hack/krew-manifest.sh", version, dist).Output()
	if err != nil {
		t.Fatalf("krew-manifest.sh: %v", err)
	}
	var m plugin
	if err := yaml.UnmarshalStrict(out, &m); err != nil {
		t.Fatalf("manifest is not a krew Plugin: %v\n%s", err, out)
	}
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" || m.Metadata.Name != "holdfast" ||
		m.Spec.Version != version || m.Spec.Homepage == "" || m.Spec.ShortDescription == "" || m.Spec.Description == "" {
		t.Errorf("manifest header %+v", m)
	}
	type platform struct{ OS, Arch, URI, SHA256, Bin, Files string }
	var got []platform
	for _, p := range m.Spec.Platforms {
		var files string
		for _, f := range p.Files {
			files += f.From + ">" + f.To + " "
		}
		got = append(got, platform{p.Selector.MatchLabels["os"], p.Selector.MatchLabels["arch"], p.URI, p.SHA256, p.Bin, files})
	}
	var want []platform
	for _, p := range [][2]string{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}} {
		archive := "holdfast_" + version + "_" + p[0] + "_" + p[1] + ".tar.gz"
		want = append(want, platform{p[0], p[1], "https://github.com/holdfast-dev/holdfast/releases/download/" + version + "/" + archive,
			sums[archive], "holdfast", "holdfast>. README.md>. "})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("platforms (-want +got):\n%s", diff)
	}
}
