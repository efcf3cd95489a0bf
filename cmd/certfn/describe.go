package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/certfn/certfn/core/api"
)

// newDescribe is `certfn describe TYPE NAME` (or TYPE/NAME), kubectl's
// describe: for a Certificate the whole chain `certfn status` explains;
// for any other object its metadata, spec and status, then the failure
// recorded about it (its Event), when the caller may read it.
func newDescribe(t *target, std streams) *cobra.Command {
	var ns string
	c := &cobra.Command{
		Use:   "describe TYPE NAME | describe TYPE/NAME",
		Short: "Show an object in detail with the failures recorded about it (a Certificate: its whole chain, as status)",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, name := "", ""
			switch {
			case len(args) == 1 && strings.Contains(args[0], "/"):
				kind, name, _ = strings.Cut(args[0], "/")
			case len(args) == 2:
				kind, name = args[0], args[1]
			default:
				return fmt.Errorf("want TYPE NAME or TYPE/NAME")
			}
			k, _, err := resolveKey(kind, name, ns)
			if err != nil {
				return err
			}
			cl, err := t.client(cmd.Context(), readsData)
			if err != nil {
				return err
			}
			if k.Kind == api.KindCertificate {
				rep, err := cl.Status(cmd.Context(), k)
				if err != nil {
					return notFound(k, err)
				}
				return rep.Render(std.out)
			}
			o, err := cl.Get(cmd.Context(), k)
			if err != nil {
				return notFound(k, err)
			}
			var ev *api.Event
			if eo, err := cl.Get(cmd.Context(), api.EventKeyFor(k)); err == nil {
				ev, _ = eo.(*api.Event)
			}
			return describeObject(std.out, o, ev)
		},
	}
	c.Flags().StringVarP(&ns, "namespace", "n", "default", "namespace")
	return c
}

// describeObject prints kubectl-describe-like sections: Name, Namespace,
// Kind, Labels, Annotations, then every other top-level field as indented
// YAML (Spec, Status, …), then Events.
func describeObject(w io.Writer, o api.Object, ev *api.Event) error {
	m := o.GetObjectMeta()
	fmt.Fprintf(w, "Name:         %s\n", m.Name)
	if m.Namespace != "" {
		fmt.Fprintf(w, "Namespace:    %s\n", m.Namespace)
	}
	fmt.Fprintf(w, "Kind:         %s (%s)\n", o.GetTypeMeta().Kind, o.GetTypeMeta().APIVersion)
	fmt.Fprintf(w, "Labels:       %s\n", keyValues(m.Labels))
	fmt.Fprintf(w, "Annotations:  %s\n", keyValues(m.Annotations))
	if m.CreationTimestamp != nil {
		fmt.Fprintf(w, "Created:      %s\n", ts(m.CreationTimestamp))
	}
	b, err := json.Marshal(o)
	if err != nil {
		return err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return err
	}
	for _, f := range sortedFields(fields) {
		y, err := yaml.JSONToYAML(fields[f])
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s:\n", strings.ToUpper(f[:1])+f[1:])
		for _, line := range strings.Split(strings.TrimRight(string(y), "\n"), "\n") {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
	if ev == nil {
		_, err = fmt.Fprintln(w, "Events:       <none>")
		return err
	}
	_, err = fmt.Fprintf(w, "Events:\n  %s %s ×%d (first %s, last %s): %s\n", ev.Type, ev.Reason, ev.Count, ts(ev.FirstTimestamp), ts(ev.LastTimestamp), ev.Message)
	return err
}

// sortedFields returns the top-level fields other than apiVersion, kind
// and metadata: spec first, status last, the rest (rules, subjects, …) between.
func sortedFields(fields map[string]json.RawMessage) []string {
	var out []string
	if _, ok := fields["spec"]; ok {
		out = append(out, "spec")
	}
	var rest []string
	for f := range fields {
		switch f {
		case "apiVersion", "kind", "metadata", "spec", "status":
		default:
			rest = append(rest, f)
		}
	}
	sortStrings(rest)
	out = append(out, rest...)
	if _, ok := fields["status"]; ok {
		out = append(out, "status")
	}
	return out
}

func keyValues(m map[string]string) string {
	if len(m) == 0 {
		return "<none>"
	}
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sortStrings(out)
	return strings.Join(out, "\n              ")
}

func sortStrings(s []string) { sort.Strings(s) }
