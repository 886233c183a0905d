// Command holdfast-operator is holdfast's operator alone: `holdfast-operator operator`
// runs with the flags and behaviour of `holdfast operator`, and links none of the rest of
// the CLI, so that it is smaller on disk and in memory. It is the entrypoint of holdfast's
// image.
package main

import (
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/holdfast-dev/holdfast/internal/operatorcli"
)

func main() {
	os.Exit(operatorcli.Execute(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}))
}
