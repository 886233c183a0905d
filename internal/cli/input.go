package cli

import (
	"fmt"
	"io"

	"github.com/holdfast-dev/holdfast/internal/audit"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// unread is the error that some input could not be read, or nil.
func unread(problems []snapshot.Problem) error {
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%d piece(s) of input could not be read; the rest was audited", len(problems))
}

// reportInput prints on w, for people, what of the input was skipped, could not be read,
// or was read with a warning.
func reportInput(w io.Writer, in audit.Input) {
	for _, group := range []struct {
		label    string
		problems []snapshot.Problem
	}{{"note", in.Skipped}, {"error", in.Problems}, {"warning", in.Warnings}} {
		for _, p := range group.problems {
			fmt.Fprintf(w, "holdfast: %s: %s\n", group.label, inputText(p))
		}
	}
}

// inputText is a problem as printed: without a file when it has none (a suppression
// naming an unknown rule).
func inputText(p snapshot.Problem) string {
	if p.File == "" {
		return p.Detail()
	}
	return p.Error()
}
