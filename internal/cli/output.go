package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
)

// outputFlags are -o, --template and --allow-missing-template-keys, the same on every
// command whose output is structured: the formats of kubectl's PrintFlags (json, yaml,
// kyaml, jsonpath, go-template and their -file forms), and the formats the command
// prints itself (table, sarif, text), the first of which is the default.
type outputFlags struct {
	format string
	own    []string
	print  *genericclioptions.PrintFlags
}

func newOutputFlags(own ...string) *outputFlags {
	o := &outputFlags{own: own}
	if len(own) > 0 {
		o.format = own[0]
	}
	o.print = &genericclioptions.PrintFlags{
		JSONYamlPrintFlags:   genericclioptions.NewJSONYamlPrintFlags(),
		TemplatePrinterFlags: genericclioptions.NewKubeTemplatePrintFlags(),
		OutputFormat:         &o.format,
	}
	// holdfast's reports have no managed fields; the wrapper that drops them only costs.
	o.print.JSONYamlPrintFlags.ShowManagedFields = true
	return o
}

// formats lists every value -o takes, the command's own first.
func (o *outputFlags) formats() []string {
	return append(slices.Clone(o.own), append(o.print.JSONYamlPrintFlags.AllowedFormats(), o.print.TemplatePrinterFlags.AllowedFormats()...)...)
}

func (o *outputFlags) addFlags(cmd *cobra.Command) {
	o.print.TemplatePrinterFlags.AddFlags(cmd)
	cmd.Flags().StringVarP(&o.format, "output", "o", o.format, "output format: "+strings.Join(o.formats(), ", "))
	o.print.OutputFlagSpecified = func() bool { return cmd.Flag("output").Changed }
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(o.formats(), cobra.ShellCompDirectiveNoFileComp))
}

// printer returns the printer of a structured format, or nil for one of the command's
// own; an unknown format is an error that lists them all.
func (o *outputFlags) printer() (printers.ResourcePrinter, error) {
	if slices.Contains(o.own, o.format) && !o.templateOnly() {
		return nil, nil
	}
	p, err := o.print.ToPrinter()
	if genericclioptions.IsNoCompatiblePrinterError(err) {
		return nil, fmt.Errorf("unknown output format %q: use %s", o.format, strings.Join(o.formats(), ", "))
	}
	return p, err
}

// templateOnly is kubectl's shortcut: --template without -o means -o go-template.
func (o *outputFlags) templateOnly() bool {
	t := o.print.TemplatePrinterFlags.TemplateArgument
	return t != nil && *t != "" && !o.print.OutputFlagSpecified()
}

// printValue prints any value that encodes to JSON through a structured printer, as
// kubectl prints objects: JSON and YAML as they are, jsonpath and go-template over the
// JSON form.
func printValue(p printers.ResourcePrinter, v any, w io.Writer) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return p.PrintObj(&runtime.Unknown{Raw: data, ContentType: runtime.ContentTypeJSON}, w)
}
