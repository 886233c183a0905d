package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// machines maps an OCI architecture to its ELF machine.
var machines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// check verifies a single-platform tarball or every platform of an index archive: the
// entrypoint is a static Linux binary of the image's architecture, run as non-root, and
// the image carries its LICENSE and NOTICE.
func check(path, index string) error {
	switch {
	case path != "" && index == "":
		img, err := tarball.ImageFromPath(path, nil)
		if err != nil {
			return err
		}
		return checkImage(path, img)
	case index != "" && path == "":
		return eachPlatform(index, func(ref string, p v1.Platform, img v1.Image) error {
			return checkImage(fmt.Sprintf("%s %s", ref, p), img)
		})
	}
	return errors.New("give one of --image and --index")
}

func checkImage(what string, img v1.Image) error {
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	if len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != "/"+binaryPath {
		return fmt.Errorf("%s: entrypoint is %q, want [/%s]", what, cf.Config.Entrypoint, binaryPath)
	}
	if cf.Config.User == "" || cf.Config.User == "0" || cf.Config.User == "root" {
		return fmt.Errorf("%s: the image runs as %q, want a non-root user", what, cf.Config.User)
	}
	if cf.OS != "linux" {
		return fmt.Errorf("%s: the image is for %q, want linux", what, cf.OS)
	}
	data, err := readFile(img, binaryPath)
	if err != nil {
		return err
	}
	if err := checkBinary(data, cf.Architecture); err != nil {
		return fmt.Errorf("%s: /%s %w", what, binaryPath, err)
	}
	for _, name := range []string{"LICENSE", "NOTICE"} {
		if data, err := readFile(img, licensesDir+"/"+name); err != nil || len(data) == 0 {
			return fmt.Errorf("%s: no /%s/%s: %v", what, licensesDir, name, err)
		}
	}
	fmt.Printf("%s: /%s is a static linux/%s binary of %d MiB, entrypoint %v, user %s, version %q\n", what, binaryPath, cf.Architecture,
		len(data)>>20, cf.Config.Entrypoint, cf.Config.User, cf.Config.Labels["org.opencontainers.image.version"])
	return nil
}

// checkBinary fails unless data is a static ELF binary for arch.
func checkBinary(data []byte, arch string) error {
	want, ok := machines[arch]
	if !ok {
		return fmt.Errorf("architecture %q is not supported", arch)
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("is not an ELF binary: %w", err)
	}
	if f.Machine != want {
		return fmt.Errorf("is built for %s, want %s", f.Machine, want)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("is dynamically linked: the image has no libc (build with CGO_ENABLED=0)")
		}
	}
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
