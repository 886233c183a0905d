package main

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// refNameAnnotation names the index inside an OCI layout, as `skopeo` and `oras` read it.
const refNameAnnotation = "org.opencontainers.image.ref.name"

// buildIndex writes a multi-platform image index as an OCI layout archive: a tar of the
// layout directory, which `crane push`, `skopeo copy oci-archive:` and this command's
// push accept.
func buildIndex(specs []string, tag, out string, meta metadata) error {
	if len(specs) == 0 {
		return errors.New("no --binary given")
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		return err
	}
	var adds []mutate.IndexAddendum
	for _, spec := range specs {
		img, p, err := image(spec, meta)
		if err != nil {
			return err
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	idx := mutate.IndexMediaType(mutate.AppendManifests(empty.Index, adds...), types.OCIImageIndex)
	dir, err := os.MkdirTemp("", "holdfast-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{refNameAnnotation: ref.String()})); err != nil {
		return err
	}
	if err := tarDir(dir, out); err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s %s (%d platforms) -> %s\n", ref, digest, len(adds), out)
	return nil
}

// tarDir writes dir's files into a tarball with sorted names and fixed times, so that
// the same images give the same archive.
func tarDir(dir, out string) error {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		paths = append(paths, p)
		return nil
	})
	if err != nil {
		return err
	}
	slices.Sort(paths)
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	for _, p := range paths {
		if err := addFile(tw, dir, p); err != nil {
			f.Close()
			return err
		}
	}
	if err := tw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func addFile(tw *tar.Writer, dir, p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(dir, p)
	if err != nil {
		return err
	}
	hdr, err := tar.FileInfoHeader(fi, "")
	if err != nil {
		return err
	}
	hdr.Name, hdr.ModTime, hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = filepath.ToSlash(rel), time.Unix(0, 0), 0, 0, "", ""
	if fi.IsDir() {
		hdr.Name += "/"
		hdr.Mode = 0o755
		return tw.WriteHeader(hdr)
	}
	hdr.Mode = 0o644
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	in, err := os.Open(p)
	if err != nil {
		return err
	}
	defer in.Close()
	_, err = io.Copy(tw, in)
	return err
}

// openIndex unpacks an OCI layout archive into a temporary directory and returns the
// multi-platform index it names, its reference, and a clean-up function.
func openIndex(archive string) (v1.ImageIndex, string, func(), error) {
	dir, err := os.MkdirTemp("", "holdfast-image-")
	if err != nil {
		return nil, "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	fail := func(err error) (v1.ImageIndex, string, func(), error) {
		cleanup()
		return nil, "", nil, fmt.Errorf("%s: %w", archive, err)
	}
	if err := untar(archive, dir); err != nil {
		return fail(err)
	}
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return fail(err)
	}
	im, err := top.IndexManifest()
	if err != nil {
		return fail(err)
	}
	if len(im.Manifests) != 1 || !im.Manifests[0].MediaType.IsIndex() {
		return fail(errors.New("want exactly one image index in the layout"))
	}
	idx, err := top.ImageIndex(im.Manifests[0].Digest)
	if err != nil {
		return fail(err)
	}
	return idx, im.Manifests[0].Annotations[refNameAnnotation], cleanup, nil
}

func untar(archive, dir string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		target, err := filepath.Localize(filepath.Clean(hdr.Name))
		if err != nil {
			return fmt.Errorf("entry %q: %w", hdr.Name, err)
		}
		target = filepath.Join(dir, target)
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			out, err := os.Create(target)
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, tr); err != nil {
				out.Close()
				return err
			}
			if err := out.Close(); err != nil {
				return err
			}
		}
	}
}

// eachPlatform calls fn with each image of an index archive and its platform, in index
// order, and stops at the first error.
func eachPlatform(archive string, fn func(ref string, p v1.Platform, img v1.Image) error) error {
	idx, ref, cleanup, err := openIndex(archive)
	if err != nil {
		return err
	}
	defer cleanup()
	im, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	for _, d := range im.Manifests {
		if d.Platform == nil {
			return fmt.Errorf("manifest %s has no platform", d.Digest)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			return err
		}
		if err := fn(ref, *d.Platform, img); err != nil {
			return err
		}
	}
	return nil
}

// errFound stops eachPlatform once extract has what it wants.
var errFound = errors.New("found")

// extract writes the holdfast binary of a single-platform tarball, or of one platform of
// an index archive, to out: the tests run exactly what the image holds.
func extract(path, archive, platform, out string) error {
	if path != "" {
		img, err := tarball.ImageFromPath(path, nil)
		if err != nil {
			return err
		}
		return writeBinary(img, out)
	}
	want, err := v1.ParsePlatform(platform)
	if err != nil {
		return err
	}
	err = eachPlatform(archive, func(_ string, p v1.Platform, img v1.Image) error {
		if !p.Equals(*want) {
			return nil
		}
		if err := writeBinary(img, out); err != nil {
			return err
		}
		return errFound
	})
	switch {
	case errors.Is(err, errFound):
		return nil
	case err != nil:
		return err
	}
	return fmt.Errorf("%s: no image for %s", archive, platform)
}

func writeBinary(img v1.Image, out string) error {
	data, err := readFile(img, binaryPath)
	if err != nil {
		return err
	}
	return os.WriteFile(out, data, 0o755)
}

// push uploads an index archive to a registry under tag, with the credentials of the
// Docker config (`docker login`, or a CI's login action).
func push(archive, tag string) error {
	ref, err := name.NewTag(tag)
	if err != nil {
		return err
	}
	idx, _, cleanup, err := openIndex(archive)
	if err != nil {
		return err
	}
	defer cleanup()
	if err := remote.WriteIndex(ref, idx, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return fmt.Errorf("pushing %s: %w", ref, err)
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("pushed %s@%s\n", ref, digest)
	return nil
}
