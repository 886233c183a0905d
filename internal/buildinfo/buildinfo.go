// Package buildinfo says which build of holdfast is running. It is apart from the CLI so
// that the operator-only binary, which links none of the CLI, reports its build the same
// way.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Version, Commit and BuildDate describe holdfast's build. The Makefile sets them at link
// time from `git describe --tags --always --dirty`, `git rev-parse HEAD` and the commit's
// date, for example:
//
//	-ldflags "-X github.com/holdfast-dev/holdfast/internal/buildinfo.Version=v0.1.0"
//
// A plain `go build` leaves Version "dev" and takes the commit from the Go build info
// (vcs.revision, unless built with -buildvcs=false); `go install ...@v0.1.0` gives the
// module's version.
var (
	Version   = "dev"
	Commit    = ""
	BuildDate = ""
)

// Info is a build's version, as `holdfast version` reports it.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	BuildDate string `json:"buildDate,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the running binary's version: the link-time values, completed from the Go
// build info where they were not set.
func Get() Info {
	info := Info{Version: Version, Commit: Commit, BuildDate: BuildDate, Platform: runtime.GOOS + "/" + runtime.GOARCH}
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
