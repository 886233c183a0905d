// Command image builds holdfast's OCI image without a Docker engine: the static binary
// in one layer on an empty base (like FROM scratch), run as a non-root user, written as a
// `docker load`-able tarball; and it checks an image tarball holds a runnable binary.
//
//	go run . build --binary ../../bin/linux/holdfast --tag ghcr.io/holdfast-dev/holdfast:dev --out ../../bin/holdfast-image.tar
//	go run . check --image ../../bin/holdfast-image.tar
//
// It is a module of its own so that holdfast never depends on go-containerregistry.
package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// binaryPath is where the image keeps holdfast; the Deployment runs it as the entrypoint.
const binaryPath = "holdfast"

// nonRoot is the distroless "nonroot" user: the operator Deployment sets runAsNonRoot.
const nonRoot = "65532:65532"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: image build|check [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet("image "+os.Args[1], flag.ExitOnError)
	var err error
	switch os.Args[1] {
	case "build":
		bin := fs.String("binary", "", "the static linux binary of holdfast")
		tag := fs.String("tag", "ghcr.io/holdfast-dev/holdfast:dev", "the image reference recorded in the tarball")
		out := fs.String("out", "holdfast-image.tar", "the tarball to write")
		_ = fs.Parse(os.Args[2:])
		err = build(*bin, *tag, *out)
	case "check":
		path := fs.String("image", "holdfast-image.tar", "the image tarball to check")
		_ = fs.Parse(os.Args[2:])
		err = check(*path)
	default:
		err = fmt.Errorf("unknown command %q: use build or check", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func build(bin, tag, out string) error {
	data, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	var layerTar bytes.Buffer
	tw := tar.NewWriter(&layerTar)
	// A fixed time keeps the image digest reproducible.
	hdr := &tar.Header{Name: binaryPath, Mode: 0o755, Size: int64(len(data)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := tw.Write(data); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	layer, err := tarball.LayerFromReader(bytes.NewReader(layerTar.Bytes()))
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	img, err = mutate.Config(img, v1.Config{Entrypoint: []string{"/" + binaryPath}, User: nonRoot})
	if err != nil {
		return err
	}
	img, err = mutate.ConfigFile(img, withPlatform(img))
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
	fmt.Printf("%s %s (%d MiB binary) -> %s\n", ref, digest, len(data)>>20, out)
	return nil
}

func withPlatform(img v1.Image) *v1.ConfigFile {
	cf, err := img.ConfigFile()
	if err != nil || cf == nil {
		cf = &v1.ConfigFile{}
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	return cf
}

// check opens an image tarball and verifies that its entrypoint is a static Linux ELF
// binary in the image, and that it runs as a non-root user.
func check(path string) error {
	img, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	if len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != "/"+binaryPath {
		return fmt.Errorf("entrypoint is %q, want [/%s]", cf.Config.Entrypoint, binaryPath)
	}
	if cf.Config.User == "" || cf.Config.User == "0" || cf.Config.User == "root" {
		return fmt.Errorf("the image runs as %q, want a non-root user", cf.Config.User)
	}
	data, err := readFile(img, binaryPath)
	if err != nil {
		return err
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("/%s is not an ELF binary: %w", binaryPath, err)
	}
	if f.Machine != elf.EM_X86_64 {
		return fmt.Errorf("/%s is built for %s, want x86-64", binaryPath, f.Machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("/%s is dynamically linked: the image has no libc (build with CGO_ENABLED=0)", binaryPath)
		}
	}
	fmt.Printf("%s: /%s is a static x86-64 binary of %d MiB, entrypoint %v, user %s\n", path, binaryPath, len(data)>>20, cf.Config.Entrypoint, cf.Config.User)
	return nil
}

func readFile(img v1.Image, want string) ([]byte, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			return nil, err
		}
		tr := tar.NewReader(rc)
		for {
			hdr, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rc.Close()
				return nil, err
			}
			if hdr.Name == want || hdr.Name == "/"+want || hdr.Name == "./"+want {
				data, err := io.ReadAll(tr)
				rc.Close()
				return data, err
			}
		}
		rc.Close()
	}
	return nil, fmt.Errorf("no /%s in the image", want)
}
