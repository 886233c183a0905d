package cli

import (
	"encoding/json"
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// Version is holdfast's release, set at link time with
// -ldflags "-X github.com/holdfast-dev/holdfast/internal/cli.Version=v0.1.0".
var Version = "dev"

// VersionInfo is what `holdfast version` reports.
type VersionInfo struct {
	Version   string `json:"version"`
	GoVersion string `json:"goVersion"`
	Commit    string `json:"commit,omitempty"`
}

// VersionOptions holds the flags of `holdfast version`.
type VersionOptions struct {
	Output string
	genericiooptions.IOStreams
}

// NewVersionCommand returns `holdfast version`.
func NewVersionCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &VersionOptions{IOStreams: streams}
	cmd := &cobra.Command{
		Use:     "version",
		Short:   "Print holdfast's version",
		Example: "  holdfast version\n  holdfast version -o json",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run()
		},
	}
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "output format: empty for text, or json")
	return cmd
}

// Validate checks the flags.
func (o *VersionOptions) Validate() error {
	if o.Output != "" && o.Output != "json" {
		return fmt.Errorf("unknown output format %q: use json or leave it empty", o.Output)
	}
	return nil
}

// Run prints the version.
func (o *VersionOptions) Run() error {
	info := VersionInfo{Version: Version}
	if bi, ok := debug.ReadBuildInfo(); ok {
		info.GoVersion = bi.GoVersion
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				info.Commit = s.Value
			}
		}
	}
	if o.Output == "json" {
		enc := json.NewEncoder(o.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(info)
	}
	_, err := fmt.Fprintf(o.Out, "holdfast %s (%s)\n", info.Version, info.GoVersion)
	return err
}
