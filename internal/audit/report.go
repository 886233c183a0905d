package audit

import (
	"github.com/holdfast-dev/holdfast/internal/availability"
)

// Report is what `holdfast audit -o json|yaml` prints.
type Report struct {
	// Source is "live" or "manifests".
	Source   string         `json:"source"`
	Findings []Finding      `json:"findings"`
	Budgets  []BudgetReport `json:"budgets"`
	// Problems are the pieces of input that could not be read; the rest was audited.
	Problems []string `json:"problems,omitempty"`
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
}

// NewReport gathers findings and the model's budgets into a Report.
func NewReport(m *availability.Model, findings []Finding, problems []string) Report {
	r := Report{Source: string(m.Source), Findings: findings, Budgets: []BudgetReport{}, Problems: problems}
	if r.Findings == nil {
		r.Findings = []Finding{}
	}
	for _, b := range m.Budgets {
		r.Budgets = append(r.Budgets, BudgetReport{
			Namespace: b.Namespace, Name: b.Name, Status: b.Status,
			DisruptionsAllowedAtFullHealth: b.AtFullHealth, Projected: b.Projected, SyncError: b.SyncError, ManagedBy: b.Policy(),
		})
	}
	return r
}
