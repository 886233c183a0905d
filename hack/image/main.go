// Command image builds holdfast's OCI images without a Docker engine: the static binary
// in one layer on an empty base (like FROM scratch), run as a non-root user. It writes a
// single-platform `docker load`-able tarball for the tests, or a multi-platform image
// index as an OCI layout archive for a release; it checks either holds runnable
// binaries, extracts a platform's binary, and pushes an index to a registry.
//
//	go run . build --binary ../../bin/linux/holdfast-operator --tag ghcr.io/holdfast-dev/holdfast:dev --out ../../bin/holdfast-image.tar
//	go run . index --binary linux/amd64=../../dist/holdfast_linux_amd64/holdfast --binary linux/arm64=... --tag ghcr.io/holdfast-dev/holdfast:v0.1.0 --out ../../dist/holdfast-image.oci.tar
//	go run . check --image ../../bin/holdfast-image.tar
//	go run . check --index ../../dist/holdfast-image.oci.tar
//	go run . extract --index ../../dist/holdfast-image.oci.tar --platform linux/amd64 --out /tmp/holdfast
//	go run . extract --image ../../bin/holdfast-image.tar --out /tmp/holdfast
//	go run . push --index ../../dist/holdfast-image.oci.tar --tag ghcr.io/holdfast-dev/holdfast:v0.1.0
//
// It is a module of its own so that holdfast never depends on go-containerregistry.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

// binaryPath is where the image keeps holdfast; the Deployment runs it as the entrypoint.
const binaryPath = "holdfast"

// licensesDir holds the LICENSE and NOTICE in the image.
const licensesDir = "licenses"

// nonRoot is the distroless "nonroot" user: the operator Deployment sets runAsNonRoot.
const nonRoot = "65532:65532"

// defaultTag is recorded in development tarballs; releases pass the released tag.
const defaultTag = "ghcr.io/holdfast-dev/holdfast:dev"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: image build|index|check|extract|push [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet("image "+os.Args[1], flag.ExitOnError)
	meta := metadata{}
	metaFlags := func() {
		fs.StringVar(&meta.version, "version", "", "the version recorded in the image's labels")
		fs.StringVar(&meta.revision, "revision", "", "the commit recorded in the image's labels")
		fs.StringVar(&meta.created, "created", "", "the build time (RFC 3339) recorded in the image; empty keeps the epoch, for reproducible digests")
		fs.Var(&meta.licenses, "license", "a file to put under /"+licensesDir+" (the LICENSE, the NOTICE), once per file")
	}
	var err error
	switch os.Args[1] {
	case "build":
		bin := fs.String("binary", "", "the static linux binary of holdfast")
		platform := fs.String("platform", "linux/amd64", "the binary's os/arch")
		tag := fs.String("tag", defaultTag, "the image reference recorded in the tarball")
		out := fs.String("out", "holdfast-image.tar", "the tarball to write")
		metaFlags()
		_ = fs.Parse(os.Args[2:])
		err = buildTarball(*platform+"="+*bin, *tag, *out, meta)
	case "index":
		var bins multiFlag
		fs.Var(&bins, "binary", "os/arch=path of a static binary, once per platform")
		tag := fs.String("tag", defaultTag, "the reference recorded in the archive (org.opencontainers.image.ref.name)")
		out := fs.String("out", "holdfast-image.oci.tar", "the OCI layout archive to write")
		metaFlags()
		_ = fs.Parse(os.Args[2:])
		err = buildIndex(bins, *tag, *out, meta)
	case "check":
		path := fs.String("image", "", "a single-platform image tarball to check")
		index := fs.String("index", "", "an OCI layout archive to check, every platform")
		_ = fs.Parse(os.Args[2:])
		err = check(*path, *index)
	case "extract":
		path := fs.String("image", "", "a single-platform image tarball")
		index := fs.String("index", "", "an OCI layout archive")
		platform := fs.String("platform", "linux/amd64", "the os/arch whose binary to extract from --index")
		out := fs.String("out", "holdfast", "where to write the binary")
		_ = fs.Parse(os.Args[2:])
		err = extract(*path, *index, *platform, *out)
	case "push":
		index := fs.String("index", "", "the OCI layout archive")
		tag := fs.String("tag", "", "the reference to push to; credentials come from the Docker config (docker login)")
		_ = fs.Parse(os.Args[2:])
		err = push(*index, *tag)
	default:
		err = fmt.Errorf("unknown command %q: use build, index, check, extract or push", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

// multiFlag collects a repeated flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
