package audit

import (
	"path/filepath"
	"strings"

	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// SARIF 2.1.0, the subset holdfast writes: one run, the rule catalogue, and one result per
// finding located at the manifest's file and line (or, for live objects, by name only).
// Standard input is the artifact "stdin". A fix is a SARIF fix that inserts the YAML to
// merge, as a comment, above the object: holdfast does not rewrite manifests, and a
// comment keeps the file valid. Suppressed findings are results with a suppression.
// See https://docs.oasis-open.org/sarif/sarif/v2.1.0/sarif-v2.1.0.html.

const (
	sarifVersion = "2.1.0"
	sarifSchema  = "https://json.schemastore.org/sarif-2.1.0.json"
	// sarifStdin is the artifact URI of standard input: a relative reference, as SARIF
	// asks of artifacts that have no file.
	sarifStdin = "stdin"
	// informationURI is holdfast's home; rules' help pages are under it.
	informationURI = "https://github.com/holdfast-dev/holdfast"
)

// SARIFLog is a SARIF 2.1.0 log.
type SARIFLog struct {
	Version string     `json:"version"`
	Schema  string     `json:"$schema"`
	Runs    []sarifRun `json:"runs"`
	// Properties is the log's property bag, where SARIF allows a producer's own fields:
	// the report's apiVersion and kind, as in audit's JSON report.
	Properties sarifLogProperties `json:"properties"`
}

type sarifLogProperties struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

type sarifRun struct {
	Tool        sarifTool         `json:"tool"`
	Invocations []sarifInvocation `json:"invocations"`
	Results     []sarifResult     `json:"results"`
}

// sarifInvocation is the run itself: whether all the input was read, and a notification
// for each piece of input not read, not audited, or read with a warning.
type sarifInvocation struct {
	ExecutionSuccessful        bool                `json:"executionSuccessful"`
	ToolExecutionNotifications []sarifNotification `json:"toolExecutionNotifications"`
}

type sarifNotification struct {
	Level     string          `json:"level"`
	Message   sarifText       `json:"message"`
	Locations []sarifLocation `json:"locations,omitempty"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	InformationURI string      `json:"informationUri"`
	Version        string      `json:"version"`
	Rules          []sarifRule `json:"rules"`
}

type sarifText struct {
	Text string `json:"text"`
}

type sarifRule struct {
	ID                   string      `json:"id"`
	Name                 string      `json:"name"`
	ShortDescription     sarifText   `json:"shortDescription"`
	FullDescription      sarifText   `json:"fullDescription"`
	HelpURI              string      `json:"helpUri"`
	DefaultConfiguration sarifConfig `json:"defaultConfiguration"`
}

type sarifConfig struct {
	Level string `json:"level"`
}

type sarifResult struct {
	RuleID    string          `json:"ruleId"`
	RuleIndex int             `json:"ruleIndex"`
	Level     string          `json:"level"`
	Message   sarifText       `json:"message"`
	Locations []sarifLocation `json:"locations"`
	Fixes     []sarifFix      `json:"fixes,omitempty"`
	// Suppressions, when set, say the user accepted the result.
	Suppressions []sarifSuppression `json:"suppressions,omitempty"`
	// Properties carry the fix as text too, for readers of live findings, which have no
	// file to change.
	Properties map[string]string `json:"properties,omitempty"`
}

type sarifFix struct {
	Description     sarifText             `json:"description"`
	ArtifactChanges []sarifArtifactChange `json:"artifactChanges"`
}

type sarifArtifactChange struct {
	ArtifactLocation sarifArtifact      `json:"artifactLocation"`
	Replacements     []sarifReplacement `json:"replacements"`
}

type sarifReplacement struct {
	DeletedRegion   sarifRegion  `json:"deletedRegion"`
	InsertedContent sarifContent `json:"insertedContent"`
}

type sarifContent struct {
	Text string `json:"text"`
}

type sarifSuppression struct {
	// Kind is inSource (an annotation in the manifest) or external (--ignore).
	Kind          string `json:"kind"`
	Justification string `json:"justification,omitempty"`
}

type sarifLocation struct {
	PhysicalLocation *sarifPhysical `json:"physicalLocation,omitempty"`
	LogicalLocations []sarifLogical `json:"logicalLocations,omitempty"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           sarifRegion   `json:"region"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

// sarifRegion is a line, or with columns an empty region: the point a fix inserts at.
type sarifRegion struct {
	StartLine   int `json:"startLine"`
	StartColumn int `json:"startColumn,omitempty"`
	EndLine     int `json:"endLine,omitempty"`
	EndColumn   int `json:"endColumn,omitempty"`
}

type sarifLogical struct {
	FullyQualifiedName string `json:"fullyQualifiedName"`
	Kind               string `json:"kind"`
}

func sarifLevel(s Severity) string {
	return [...]string{"note", "warning", "error"}[s]
}

// Input is what an audit could not read, did not audit, or read with a warning; SARIF
// lists it as the invocation's notifications.
type Input struct {
	Problems, Warnings, Skipped []snapshot.Problem
}

// SARIF renders findings as a SARIF 2.1.0 log; version is holdfast's.
func SARIF(findings []Finding, version string, input Input) SARIFLog {
	driver := sarifDriver{Name: "holdfast", InformationURI: informationURI, Version: version}
	index := map[string]int{}
	for i, r := range rules {
		index[r.ID] = i
		driver.Rules = append(driver.Rules, sarifRule{
			ID: r.ID, Name: r.Name,
			ShortDescription:     sarifText{r.Summary},
			FullDescription:      sarifText{r.Rationale},
			HelpURI:              r.HelpURI(),
			DefaultConfiguration: sarifConfig{sarifLevel(r.Severity)},
		})
	}
	results := []sarifResult{}
	for _, f := range findings {
		loc := sarifLocation{LogicalLocations: []sarifLogical{{
			FullyQualifiedName: snapshot.ObjectRef{Kind: f.Kind, Namespace: f.Namespace, Name: f.Name}.String(),
			Kind:               "resource",
		}}}
		res := sarifResult{
			RuleID: f.Rule, RuleIndex: index[f.Rule], Level: sarifLevel(f.Severity),
			Message:    sarifText{f.Message},
			Properties: map[string]string{"fix": f.Fix},
		}
		if f.File != "" {
			artifact := sarifArtifactOf(f.File)
			line := max(1, f.Line)
			loc.PhysicalLocation = &sarifPhysical{ArtifactLocation: artifact, Region: sarifRegion{StartLine: line}}
			if f.Fix != "" {
				res.Fixes = []sarifFix{{
					Description: sarifText{fixSummary(f.Fix)},
					ArtifactChanges: []sarifArtifactChange{{ArtifactLocation: artifact, Replacements: []sarifReplacement{{
						DeletedRegion:   sarifRegion{StartLine: line, StartColumn: 1, EndLine: line, EndColumn: 1},
						InsertedContent: sarifContent{asComment(f.Fix)},
					}}}},
				}}
			}
		}
		res.Locations = []sarifLocation{loc}
		if s := f.Suppression; s != nil {
			kind := "inSource"
			if s.By == SuppressedByFlag {
				kind = "external"
			}
			res.Suppressions = []sarifSuppression{{Kind: kind, Justification: s.Reason}}
		}
		results = append(results, res)
	}
	run := sarifRun{Tool: sarifTool{Driver: driver}, Invocations: []sarifInvocation{input.invocation()}, Results: results}
	return SARIFLog{Version: sarifVersion, Schema: sarifSchema, Runs: []sarifRun{run},
		Properties: sarifLogProperties{APIVersion: ReportAPIVersion, Kind: ReportKind}}
}

// invocation is the run's one invocation: successful when every input was read.
func (in Input) invocation() sarifInvocation {
	inv := sarifInvocation{ExecutionSuccessful: len(in.Problems) == 0, ToolExecutionNotifications: []sarifNotification{}}
	for _, group := range []struct {
		level    string
		problems []snapshot.Problem
	}{{"error", in.Problems}, {"warning", in.Warnings}, {"note", in.Skipped}} {
		for _, p := range group.problems {
			n := sarifNotification{Level: group.level, Message: sarifText{p.Detail()}}
			if p.File != "" {
				n.Locations = []sarifLocation{{PhysicalLocation: &sarifPhysical{
					ArtifactLocation: sarifArtifactOf(p.File), Region: sarifRegion{StartLine: max(1, p.Line)}}}}
			}
			inv.ToolExecutionNotifications = append(inv.ToolExecutionNotifications, n)
		}
	}
	return inv
}

// sarifArtifactOf is a file's artifact location; standard input is "stdin".
func sarifArtifactOf(file string) sarifArtifact {
	if file == snapshot.StdinPath {
		return sarifArtifact{URI: sarifStdin}
	}
	return sarifArtifact{URI: filepath.ToSlash(file)}
}

// fixSummary is a fix's first comment, which says what to change.
func fixSummary(fix string) string {
	first, _, _ := strings.Cut(fix, "\n")
	return strings.TrimPrefix(first, "# ")
}

// asComment turns a fix into YAML comment lines, to insert above an object.
func asComment(fix string) string {
	var b strings.Builder
	b.WriteString("# holdfast:\n")
	for line := range strings.SplitSeq(fix, "\n") {
		if strings.HasPrefix(line, "#") {
			b.WriteString(line + "\n")
		} else {
			b.WriteString("#   " + line + "\n")
		}
	}
	return b.String()
}
