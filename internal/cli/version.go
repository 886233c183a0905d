package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
)

// Version, Commit and BuildDate describe holdfast's build. The Makefile sets them at link
// time from `git describe --tags --always --dirty`, `git rev-parse HEAD` and the commit's
// date, for example:
//
//	-ldflags "-X github.com/holdfast-dev/holdfast/internal/cli.Version=v0.1.0"
//
// A plain `go build` leaves Version "dev" and takes the commit from the Go build info
// (vcs.revision, unless built with -buildvcs=false); `go install ...@v0.1.0` gives the
// module's version.
var (
	Version   = "dev"
	Commit    = ""
	BuildDate = ""
)

// VersionInfo is what `holdfast version` reports.
type VersionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	BuildDate string `json:"buildDate,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// GetVersionInfo returns the running binary's version: the link-time values, completed
// from the Go build info where they were not set.
func GetVersionInfo() VersionInfo {
	info := VersionInfo{Version: Version, Commit: Commit, BuildDate: BuildDate, Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	info.GoVersion = bi.GoVersion
	if info.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		info.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			if info.Commit == "" {
				info.Commit = s.Value
			}
		case "vcs.time":
			if info.BuildDate == "" {
				info.BuildDate = s.Value
			}
		}
	}
	return info
}

// VersionOptions holds the flags of `holdfast version`.
type VersionOptions struct {
	// Info is the version to print; Complete reads the running binary's.
	Info VersionInfo

	output  *outputFlags
	printer printers.ResourcePrinter
	genericiooptions.IOStreams
}

// NewVersionCommand returns `holdfast version`.
func NewVersionCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &VersionOptions{IOStreams: streams, output: newOutputFlags("text")}
	cmd := &cobra.Command{
		Use:     "version",
		Short:   "Print holdfast's version, commit, build date and Go version",
		Example: "  holdfast version\n  holdfast version -o json\n  holdfast version -o jsonpath='{.commit}'",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			o.Complete()
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run()
		},
	}
	o.output.addFlags(cmd)
	return cmd
}

// Complete reads the running binary's version.
func (o *VersionOptions) Complete() {
	o.Info = GetVersionInfo()
}

// Validate checks the flags.
func (o *VersionOptions) Validate() error {
	var err error
	o.printer, err = o.output.printer()
	return err
}

// Run prints the version.
func (o *VersionOptions) Run() error {
	if o.printer != nil {
		return printValue(o.printer, o.Info, o.Out)
	}
	_, err := fmt.Fprintf(o.Out, "holdfast %s\n  commit:     %s\n  build date: %s\n  go:         %s\n  platform:   %s\n",
		o.Info.Version, orUnknown(o.Info.Commit), orUnknown(o.Info.BuildDate), o.Info.GoVersion, o.Info.Platform)
	return err
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
