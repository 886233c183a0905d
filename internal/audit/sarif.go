package audit

import (
	"path/filepath"

	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// SARIF 2.1.0, the subset holdfast writes: one run, the rule catalogue, and one result per
// finding located at the manifest's file and line (or, for live objects, by name only).
// See https://docs.oasis-open.org/sarif/sarif/v2.1.0/sarif-v2.1.0.html.

const (
	sarifVersion = "2.1.0"
	sarifSchema  = "https://json.schemastore.org/sarif-2.1.0.json"
)

// SARIFLog is a SARIF 2.1.0 log.
type SARIFLog struct {
	Version string     `json:"version"`
	Schema  string     `json:"$schema"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool    sarifTool     `json:"tool"`
	Results []sarifResult `json:"results"`
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
	// Properties carry the fix: SARIF's own fixes need byte ranges to replace.
	Properties map[string]string `json:"properties,omitempty"`
}

type sarifLocation struct {
	PhysicalLocation *sarifPhysical `json:"physicalLocation,omitempty"`
	LogicalLocations []sarifLogical `json:"logicalLocations"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           sarifRegion   `json:"region"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine int `json:"startLine"`
}

type sarifLogical struct {
	FullyQualifiedName string `json:"fullyQualifiedName"`
	Kind               string `json:"kind"`
}

func sarifLevel(s Severity) string {
	return [...]string{"note", "warning", "error"}[s]
}

// SARIF renders findings as a SARIF 2.1.0 log; version is holdfast's.
func SARIF(findings []Finding, version string) SARIFLog {
	driver := sarifDriver{Name: "holdfast", InformationURI: "https://github.com/holdfast-dev/holdfast", Version: version}
	index := map[string]int{}
	for i, r := range rules {
		index[r.ID] = i
		driver.Rules = append(driver.Rules, sarifRule{
			ID: r.ID, Name: r.Name,
			ShortDescription:     sarifText{r.Summary},
			FullDescription:      sarifText{r.Rationale},
			DefaultConfiguration: sarifConfig{sarifLevel(r.Severity)},
		})
	}
	results := []sarifResult{}
	for _, f := range findings {
		loc := sarifLocation{LogicalLocations: []sarifLogical{{
			FullyQualifiedName: snapshot.ObjectRef{Kind: f.Kind, Namespace: f.Namespace, Name: f.Name}.String(),
			Kind:               "resource",
		}}}
		if f.File != "" && f.File != snapshot.StdinPath {
			loc.PhysicalLocation = &sarifPhysical{
				ArtifactLocation: sarifArtifact{URI: filepath.ToSlash(f.File)},
				Region:           sarifRegion{StartLine: max(1, f.Line)},
			}
		}
		results = append(results, sarifResult{
			RuleID: f.Rule, RuleIndex: index[f.Rule], Level: sarifLevel(f.Severity),
			Message: sarifText{f.Message}, Locations: []sarifLocation{loc},
			Properties: map[string]string{"fix": f.Fix},
		})
	}
	return SARIFLog{Version: sarifVersion, Schema: sarifSchema, Runs: []sarifRun{{Tool: sarifTool{Driver: driver}, Results: results}}}
}
