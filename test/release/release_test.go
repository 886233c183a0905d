// Package release checks what hack/release.sh publishes without building a release:
// hack/archive.sh packs stand-in binaries, and hack/krew-manifest.sh points at them.
package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

const repo = "../.."

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

// thirdPartyLicenses stands in for hack/licenses.sh's output.
const thirdPartyLicenses = "the licences of the modules linked"

// archive runs hack/archive.sh on a stand-in binary holding content, and stand-in
// licence texts, and returns the archive's path.
func archive(t *testing.T, dir, name, content string) string {
	t.Helper()
	bin, licenses := filepath.Join(t.TempDir(), "holdfast"), filepath.Join(t.TempDir(), "licenses")
	if err := os.WriteFile(bin, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(licenses, []byte(thirdPartyLicenses), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, name)
	if msg, err := exec.Command("bash", filepath.Join(repo, "hack", "archive.sh"), bin, licenses, out).CombinedOutput(); err != nil {
		t.Fatalf("archive.sh: %v\n%s", err, msg)
	}
	return out
}

// entry is a file of an archive as tar stores it.
type entry struct {
	Mode          int64
	UID, GID      int
	Uname, Gname  string
	ModTime       int64
	ContentSHA256 string
}

// entries reads the regular files of a gzipped tarball.
func entries(t *testing.T, path string) map[string]entry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if !gz.ModTime.IsZero() {
		t.Errorf("%s: gzip header time %s, want none", path, gz.ModTime)
	}
	files := map[string]entry{}
	r := tar.NewReader(gz)
	for {
		h, err := r.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		sum := sha256.New()
		if _, err := io.Copy(sum, r); err != nil {
			t.Fatal(err)
		}
		files[filepath.Clean(h.Name)] = entry{h.Mode & 0o111, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime.Unix(), hex.EncodeToString(sum.Sum(nil))}
	}
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// An archive holds the binary, the README, the LICENSE (which krew-index asks for), the
// NOTICE of the Apache-2.0 modules the binary links and the licence texts of them all,
// owned by root at time 0, and the same inputs give the same bytes.
func TestArchive(t *testing.T) {
	dir := t.TempDir()
	first := archive(t, dir, "first.tar.gz", "a binary")
	second := archive(t, dir, "second.tar.gz", "a binary")
	if fileSHA256(t, first) != fileSHA256(t, second) {
		t.Error("two archives of the same binary differ")
	}
	sum, licenses := sha256.Sum256([]byte("a binary")), sha256.Sum256([]byte(thirdPartyLicenses))
	want := map[string]entry{
		"THIRD_PARTY_LICENSES": {ContentSHA256: hex.EncodeToString(licenses[:])},
		"holdfast":             {Mode: 0o111, ContentSHA256: hex.EncodeToString(sum[:])},
		"README.md":            {ContentSHA256: fileSHA256(t, filepath.Join(repo, "README.md"))},
		"LICENSE":              {ContentSHA256: fileSHA256(t, filepath.Join(repo, "LICENSE"))},
		"NOTICE":               {ContentSHA256: fileSHA256(t, filepath.Join(repo, "NOTICE"))},
	}
	if diff := cmp.Diff(want, entries(t, first)); diff != "" {
		t.Errorf("archive entries (-want +got):\n%s", diff)
	}
}

func TestManifest(t *testing.T) {
	const version = "v1.2.3"
	dist := t.TempDir()
	sums, contents := map[string]string{}, map[string]map[string]entry{}
	for _, p := range []string{"linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64"} {
		name := "holdfast_" + version + "_" + p + ".tar.gz"
		path := archive(t, dist, name, "holdfast for "+p)
		sums[name], contents[name] = fileSHA256(t, path), entries(t, path)
	}
	var stderr bytes.Buffer
	cmd := exec.Command("bash", filepath.Join(repo, "hack", "krew-manifest.sh"), version, dist)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("krew-manifest.sh: %v\n%s", err, stderr.String())
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
		name := filepath.Base(p.URI)
		var files string
		for _, f := range p.Files {
			files += f.From + ">" + f.To + " "
			if _, ok := contents[name][f.From]; !ok {
				t.Errorf("%s: krew copies %s, which the archive lacks", name, f.From)
			}
		}
		got = append(got, platform{p.Selector.MatchLabels["os"], p.Selector.MatchLabels["arch"], p.URI, p.SHA256, p.Bin, files})
	}
	var want []platform
	for _, p := range [][2]string{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}} {
		name := "holdfast_" + version + "_" + p[0] + "_" + p[1] + ".tar.gz"
		want = append(want, platform{p[0], p[1], "https://github.com/holdfast-dev/holdfast/releases/download/" + version + "/" + name,
			sums[name], "holdfast", "holdfast>. README.md>. LICENSE>. NOTICE>. THIRD_PARTY_LICENSES>. "})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("platforms (-want +got):\n%s", diff)
	}
}
