package cli

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"

	"github.com/spf13/pflag"
)

// profiles are the profiles --profile writes, as kubectl's flag of the same name.
var profiles = []string{"none", "cpu", "heap", "allocs", "goroutine", "threadcreate", "block", "mutex"}

// profiling writes a Go profile of one run, for a command slow at thousands of nodes:
// `holdfast plan drain --all --profile=cpu` then `go tool pprof profile.pprof`.
type profiling struct {
	name, output string
	// finish writes the profile; nil when none is being taken.
	finish func() error
}

func (p *profiling) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&p.name, "profile", "none", "Go profile of this run to write: "+strings.Join(profiles, ", "))
	fs.StringVar(&p.output, "profile-output", "profile.pprof", "file --profile writes, read with go tool pprof")
}

// start begins the profile asked for. A CPU profile samples from here; the others are
// taken when the command ends.
func (p *profiling) start() error {
	switch p.name {
	case "none":
		return nil
	case "cpu":
		f, err := os.Create(p.output)
		if err != nil {
			return fmt.Errorf("--profile-output: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("--profile=cpu: %w", err)
		}
		p.finish = func() error {
			pprof.StopCPUProfile()
			return f.Close()
		}
		return nil
	case "block":
		runtime.SetBlockProfileRate(1)
	case "mutex":
		runtime.SetMutexProfileFraction(1)
	}
	prof := pprof.Lookup(p.name)
	if prof == nil {
		return fmt.Errorf("unknown --profile %q: use one of %s", p.name, strings.Join(profiles, ", "))
	}
	p.finish = func() error {
		f, err := os.Create(p.output)
		if err != nil {
			return err
		}
		if p.name == "heap" || p.name == "allocs" {
			runtime.GC() // the heap as of the last collection would miss the end of the run
		}
		return errors.Join(prof.WriteTo(f, 0), f.Close())
	}
	return nil
}

// stop writes the profile, if one is being taken.
func (p *profiling) stop() error {
	if p.finish == nil {
		return nil
	}
	defer func() { p.finish = nil }()
	if err := p.finish(); err != nil {
		return fmt.Errorf("writing the %s profile to %s: %w", p.name, p.output, err)
	}
	return nil
}
