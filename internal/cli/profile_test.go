package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// --profile writes a profile pprof reads (gzipped protobuf) when the command ends, also
// when it ends with findings; an unknown profile is refused before the command runs.
func TestProfile(t *testing.T) {
	for _, name := range []string{"cpu", "heap", "mutex"} {
		t.Run(name, func(t *testing.T) {
			output := filepath.Join(t.TempDir(), name+".pprof")
			var out bytes.Buffer
			prof := &profiling{}
			cmd := newRootCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out}, "holdfast", prof)
			cmd.SetArgs([]string{"audit", "-f", "testdata/shop", "--profile", name, "--profile-output", output})
			_ = cmd.Execute() // the shop's findings end it with exit code 2
			if err := prof.stop(); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(output)
			if err != nil {
				t.Fatal(err)
			}
			if len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
				t.Errorf("%s is not a gzipped profile: % x", output, data[:min(len(data), 8)])
			}
		})
	}
	_, stderr, code := runAudit(t, "", "audit", "-f", "testdata/shop", "--profile", "cpus")
	if code != ExitError || !strings.Contains(stderr, `unknown --profile "cpus"`) {
		t.Errorf("--profile cpus: exit %d, %q; want refused", code, stderr)
	}
}
