package cli

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"
)

// wide is the output format that adds a table's extra columns, as kubectl's -o wide.
const wide = "wide"

// tableFlags are kubectl's flags for tables, on every command that prints one; the
// command's -o wide sets wide. Tables are metav1.Tables printed by cli-runtime's table
// printer, as kubectl prints them: a column of Priority 1 shows only with -o wide.
type tableFlags struct {
	noHeaders bool
	sortBy    string
	wide      bool
	// columns are those of every table the command prints, which --sort-by may name.
	columns []metav1.TableColumnDefinition
}

func newTableFlags(columns ...[]metav1.TableColumnDefinition) tableFlags {
	return tableFlags{columns: slices.Concat(columns...)}
}

func (t *tableFlags) addFlags(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&t.noHeaders, "no-headers", false, "print tables without their header line")
	cmd.Flags().StringVar(&t.sortBy, "sort-by", "", "sort table rows by a column, named as in the header (ALLOWED, \"managed by\") or as a field (.managedBy)")
	_ = cmd.RegisterFlagCompletionFunc("sort-by", cobra.FixedCompletions(t.names(), cobra.ShellCompDirectiveNoFileComp))
}

// names are the columns' names, each once.
func (t *tableFlags) names() []string {
	var names []string
	for _, c := range t.columns {
		if !slices.Contains(names, c.Name) {
			names = append(names, c.Name)
		}
	}
	return names
}

// validate checks that --sort-by names a column, before anything is printed.
func (t *tableFlags) validate() error {
	if t.sortBy == "" || slices.ContainsFunc(t.columns, t.sorts) {
		return nil
	}
	return fmt.Errorf("--sort-by %q names no column: use one of %s", t.sortBy, strings.Join(t.names(), ", "))
}

// sorts reports whether --sort-by names the column.
func (t *tableFlags) sorts(c metav1.TableColumnDefinition) bool {
	return columnKey(t.sortBy) == columnKey(c.Name)
}

// columnKey is a column's name or a field path without case, spaces, dashes, braces or
// the leading dot: "MANAGED BY", "managed-by", ".managedBy" and "{.managedBy}" are one.
func columnKey(s string) string {
	s = strings.TrimPrefix(strings.Trim(s, "{}"), ".")
	return strings.ToLower(strings.NewReplacer(" ", "", "-", "", "_", "").Replace(s))
}

// print sorts the table's rows by --sort-by and prints it.
func (t *tableFlags) print(w io.Writer, table *metav1.Table) error {
	if i := slices.IndexFunc(table.ColumnDefinitions, t.sorts); t.sortBy != "" && i >= 0 {
		slices.SortStableFunc(table.Rows, func(a, b metav1.TableRow) int { return compareCells(a.Cells[i], b.Cells[i]) })
	}
	return printers.NewTablePrinter(printers.PrintOptions{NoHeaders: t.noHeaders, Wide: t.wide}).PrintObj(table, w)
}

// compareCells orders numbers by value, anything else by its text; numbers before text.
func compareCells(a, b any) int {
	x, xerr := strconv.ParseFloat(fmt.Sprint(a), 64)
	y, yerr := strconv.ParseFloat(fmt.Sprint(b), 64)
	switch {
	case xerr == nil && yerr == nil:
		return cmp.Compare(x, y)
	case xerr == nil:
		return -1
	case yerr == nil:
		return 1
	}
	return cmp.Compare(fmt.Sprint(a), fmt.Sprint(b))
}

// column defines a column; wideOnly ones show with -o wide.
func column(name string, wideOnly bool) metav1.TableColumnDefinition {
	c := metav1.TableColumnDefinition{Name: name, Type: "string"}
	if wideOnly {
		c.Priority = 1
	}
	return c
}
