package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// metadata is recorded in each image's config as OCI labels.
type metadata struct {
	version, revision, created string
	// licenses are the files put under /licenses beside the binary: the LICENSE and
	// NOTICE its Apache-2.0 label and dependencies ask every copy to carry, and the
	// licence texts of the modules it links.
	licenses multiFlag
}

func (m metadata) labels() map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":    "holdfast",
		"org.opencontainers.image.source":   "https://github.com/holdfast-dev/holdfast",
		"org.opencontainers.image.licenses": "Apache-2.0",
	}
	for k, v := range map[string]string{
		"org.opencontainers.image.version":  m.version,
		"org.opencontainers.image.revision": m.revision,
		"org.opencontainers.image.created":  m.created,
	} {
		if v != "" {
			l[k] = v
		}
	}
	return l
}

// image builds one platform's image from "os/arch=path".
func image(spec string, meta metadata) (v1.Image, v1.Platform, error) {
	plat, bin, ok := strings.Cut(spec, "=")
	if !ok || bin == "" {
		return nil, v1.Platform{}, fmt.Errorf("binary %q: want os/arch=path", spec)
	}
	p, err := v1.ParsePlatform(plat)
	if err != nil {
		return nil, v1.Platform{}, fmt.Errorf("platform %q: %w", plat, err)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, v1.Platform{}, err
	}
	if err := checkBinary(data, p.Architecture); err != nil {
		return nil, v1.Platform{}, fmt.Errorf("%s: %w", bin, err)
	}
	layerTar, err := layerOf(data, meta.licenses)
	if err != nil {
		return nil, v1.Platform{}, err
	}
	layer, err := tarball.LayerFromReader(bytes.NewReader(layerTar))
	if err != nil {
		return nil, v1.Platform{}, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, v1.Platform{}, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, v1.Platform{}, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Config = v1.Config{Entrypoint: []string{"/" + binaryPath}, User: nonRoot, Labels: meta.labels()}
	if meta.created != "" {
		t, err := time.Parse(time.RFC3339, meta.created)
		if err != nil {
			return nil, v1.Platform{}, fmt.Errorf("created %q: %w", meta.created, err)
		}
		cf.Created = v1.Time{Time: t}
	}
	img, err = mutate.ConfigFile(img, cf)
	return img, *p, err
}

// layerOf is the image's one layer: the binary, and the license files under
// licensesDir.
func layerOf(binary []byte, licenses []string) ([]byte, error) {
	if len(licenses) == 0 {
		return nil, errors.New("no --license given: the image must carry its LICENSE and NOTICE")
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	// A fixed time keeps the image digest reproducible.
	epoch := time.Unix(0, 0)
	write := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(data)), ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := write(binaryPath, 0o755, binary); err != nil {
		return nil, err
	}
	if err := tw.WriteHeader(&tar.Header{Name: licensesDir + "/", Mode: 0o755, ModTime: epoch, Typeflag: tar.TypeDir}); err != nil {
		return nil, err
	}
	for _, path := range licenses {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		if err := write(licensesDir+"/"+filepath.Base(path), 0o644, data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// buildTarball writes one platform's image as a `docker load`-able tarball.
func buildTarball(spec, tag, out string, meta metadata) error {
	img, p, err := image(spec, meta)
	if err != nil {
		return err
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		return err
	}
	if err := tarball.WriteToFile(out, ref, img); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s %s %s -> %s\n", ref, p, digest, out)
	return nil
}
