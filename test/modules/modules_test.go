// Package modules checks that the testbed's module (hack/testbed) builds with the
// versions holdfast's own module requires of every module both use. The Go build cache
// keys a compiled package by the versions of everything it imports, so one module a
// version apart (k8s.io/utils, say) compiles apimachinery, api and client-go a second
// time for the control plane; in step, the unit tests' compile serves it.
package modules

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"
)

const repo = "../.."

func TestTestbedBuildsWithHoldfastsVersions(t *testing.T) {
	own := versions(t, "go.mod")
	testbed := versions(t, filepath.Join("hack", "testbed", "go.mod"))
	shared := 0
	for path, v := range testbed {
		w, ok := own[path]
		if !ok {
			continue
		}
		shared++
		if v != w {
			t.Errorf("%s: hack/testbed builds with %s, holdfast with %s: require one version in both", path, v, w)
		}
	}
	if shared < 50 {
		t.Errorf("only %d modules found in both go.mod files: is `go mod edit -json` read right?", shared)
	}
}

// versions are the versions a go.mod builds with, by module path: each requirement's,
// or its replacement's where a replace names a version.
func versions(t *testing.T, gomod string) map[string]string {
	t.Helper()
	out, err := exec.Command("go", "mod", "edit", "-json", filepath.Join(repo, gomod)).Output()
	if err != nil {
		t.Fatalf("go mod edit -json %s: %v", gomod, err)
	}
	type module struct{ Path, Version string }
	var f struct {
		Require []module
		Replace []struct{ Old, New module }
	}
	if err := json.Unmarshal(out, &f); err != nil {
		t.Fatalf("reading go mod edit -json %s: %v", gomod, err)
	}
	v := map[string]string{}
	for _, r := range f.Require {
		v[r.Path] = r.Version
	}
	for _, r := range f.Replace {
		if r.New.Version != "" && r.New.Path == r.Old.Path {
			v[r.Old.Path] = r.New.Version
		}
	}
	return v
}
