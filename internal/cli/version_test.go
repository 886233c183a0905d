package cli

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func TestVersionOutput(t *testing.T) {
	info := VersionInfo{Version: "v0.2.0", Commit: "0123abc", BuildDate: "2026-11-23T15:40:00Z", GoVersion: "go1.26.1", Platform: "linux/arm64"}
	for name, tc := range map[string]struct {
		output string
		want   string
	}{
		"text": {want: "holdfast v0.2.0\n  commit:     0123abc\n  build date: 2026-11-23T15:40:00Z\n  go:         go1.26.1\n  platform:   linux/arm64\n"},
		"json": {output: "json", want: `{
    "version": "v0.2.0",
    "commit": "0123abc",
    "buildDate": "2026-11-23T15:40:00Z",
    "goVersion": "go1.26.1",
    "platform": "linux/arm64"
}
`},
		"yaml":     {output: "yaml", want: "buildDate: \"2026-11-23T15:40:00Z\"\ncommit: 0123abc\ngoVersion: go1.26.1\nplatform: linux/arm64\nversion: v0.2.0\n"},
		"jsonpath": {output: "jsonpath={.commit}", want: "0123abc"},
	} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			o := &VersionOptions{Info: info, output: newOutputFlags("text"), IOStreams: genericiooptions.IOStreams{Out: &out}}
			if tc.output != "" {
				o.output.format = tc.output
			}
			if err := o.Validate(); err != nil {
				t.Fatal(err)
			}
			if err := o.Run(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("holdfast version -o %q (-want +got):\n%s", tc.output, diff)
			}
		})
	}
}

// The link-time values win over the build info, which only fills in what they leave out.
func TestGetVersionInfoLinkTime(t *testing.T) {
	defer func(v, c, d string) { Version, Commit, BuildDate = v, c, d }(Version, Commit, BuildDate)
	Version, Commit, BuildDate = "v9.9.9", "feedbeef", "2026-01-02T03:04:05Z"
	got := GetVersionInfo()
	if got.Version != Version || got.Commit != Commit || got.BuildDate != BuildDate || got.GoVersion == "" {
		t.Errorf("GetVersionInfo() = %+v", got)
	}
	var back VersionInfo
	data, _ := json.Marshal(got)
	if err := json.Unmarshal(data, &back); err != nil || back != got {
		t.Errorf("JSON round trip: %+v, %v", back, err)
	}
}
