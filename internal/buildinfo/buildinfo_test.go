package buildinfo

import (
	"encoding/json"
	"testing"
)

// The link-time values win over the build info, which only fills in what they leave out.
func TestGetLinkTime(t *testing.T) {
	defer func(v, c, d string) { Version, Commit, BuildDate = v, c, d }(Version, Commit, BuildDate)
	Version, Commit, BuildDate = "v9.9.9", "feedbeef", "2026-01-02T03:04:05Z"
	got := Get()
	if got.Version != Version || got.Commit != Commit || got.BuildDate != BuildDate || got.GoVersion == "" {
		t.Errorf("Get() = %+v", got)
	}
	var back Info
	data, _ := json.Marshal(got)
	if err := json.Unmarshal(data, &back); err != nil || back != got {
		t.Errorf("JSON round trip: %+v, %v", back, err)
	}
}
