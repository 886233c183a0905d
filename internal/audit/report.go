package audit

import (
	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// ReportAPIVersion and ReportKind name the format of audit's JSON and YAML reports, and
// of the SARIF log's property bag, so that a reader can tell a report it knows from a
// later one (docs/api-stability.md).
const (
	ReportAPIVersion = "holdfast.dev/v1alpha1"
	ReportKind       = "AuditReport"
)

// Report is what `holdfast audit -o json|yaml` prints.
type Report struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Source is "live" or "manifests".
	Source   string         `json:"source"`
	Findings []Finding      `json:"findings"`
	Budgets  []BudgetReport `json:"budgets"`
	// Suppressed are the findings the user accepted, each with its Suppression.
	Suppressed []Finding `json:"suppressed,omitempty"`
	// Problems are the pieces of input that could not be read; the rest was audited.
	Problems []string `json:"problems,omitempty"`
	// Warnings are things read but probably not as meant: unknown fields, suppressions
	// naming unknown rules.
	Warnings []string `json:"warnings,omitempty"`
	// Skipped are the documents not audited, and why: files that are not Kubernetes
	// objects, kustomizations, custom resources.
	Skipped []string `json:"skipped,omitempty"`
}

// BudgetReport is holdfast's own computation of one PodDisruptionBudget's status: the four
// numbers the disruption controller writes, from the objects, never copied from the status.
type BudgetReport struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	availability.Status
	// DisruptionsAllowedAtFullHealth is what the budget would allow with every pod healthy.
	DisruptionsAllowedAtFullHealth int32 `json:"disruptionsAllowedAtFullHealth"`
	// Projected is true when the numbers come from pod templates (manifests).
	Projected bool `json:"projected,omitempty"`
	// SyncError is why the disruption controller cannot compute the budget.
	SyncError string `json:"syncError,omitempty"`
	// ManagedBy names the DisruptionPolicy that keeps the budget, when one does: the
	// budget is the operator's, made or to be made, not one of the input's.
	ManagedBy string `json:"managedBy,omitempty"`
	// File and Line point at the budget's manifest when it was read from one.
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
}

// NewReport starts a report of findings; AddBudget adds the audited budgets.
func NewReport(source snapshot.Source, findings []Finding) Report {
	r := Report{APIVersion: ReportAPIVersion, Kind: ReportKind, Source: string(source), Findings: findings, Budgets: []BudgetReport{}}
	if r.Findings == nil {
		r.Findings = []Finding{}
	}
	return r
}

// AddBudget adds a budget of an audited model, located at its manifest when it came
// from one.
func (r *Report) AddBudget(b *availability.Budget, o snapshot.Origin) {
	r.Budgets = append(r.Budgets, BudgetReport{
		Namespace: b.Namespace, Name: b.Name, Status: b.Status,
		DisruptionsAllowedAtFullHealth: b.AtFullHealth, Projected: b.Projected, SyncError: b.SyncError, ManagedBy: b.Policy(),
		File: o.File, Line: o.Line,
	})
}
