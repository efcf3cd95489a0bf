package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/clock"
)

// newDescribe is `certfn describe TYPE NAME` (or TYPE/NAME), kubectl's
// describe: for a Certificate the whole chain `certfn status` explains,
// then the Events of the Certificate and of the objects of its issuance
// (its CertificateRequests, Order and Challenges); for any other object
// its metadata, spec and status, then its Events: kubectl's Events table
// (Type, Reason, Age, From, Message), oldest first, those the caller may
// read.
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
				if err := rep.Render(std.out); err != nil {
					return err
				}
				evs := eventsOf(cmd.Context(), cl, k)
				for _, r := range issuanceKeys(cmd.Context(), cl, k) {
					evs = append(evs, eventsOf(cmd.Context(), cl, r)...)
				}
				api.SortEvents(evs)
				return eventsTable(std.out, evs, k, clock.Real{}.Now())
			}
			o, err := cl.Get(cmd.Context(), k)
			if err != nil {
				return notFound(k, err)
			}
			return describeObject(std.out, o, eventsOf(cmd.Context(), cl, k), clock.Real{}.Now())
		},
	}
	c.Flags().StringVarP(&ns, "namespace", "n", "default", "namespace")
	return c
}

// describeObject prints kubectl-describe-like sections: Name, Namespace,
// Kind, Labels, Annotations, then every other top-level field as indented
// YAML (Spec, Status, …), then Events.
func describeObject(w io.Writer, o api.Object, evs []api.Event, now time.Time) error {
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
	return eventsTable(w, evs, api.KeyOf(o), now)
}

// eventsOf lists the Events about k with the field selector kubectl
// describe sends (involvedObject.kind, name and namespace), oldest first;
// none when the caller may not read them.
func eventsOf(ctx context.Context, cl client, k api.Key) []api.Event {
	sel := "involvedObject.kind=" + k.Kind + ",involvedObject.name=" + k.Name
	if k.Namespace != "" {
		sel += ",involvedObject.namespace=" + k.Namespace
	}
	objs, err := cl.List(ctx, api.KindEvent, api.EventNamespaceFor(k), app.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil
	}
	var out []api.Event
	for _, o := range objs {
		if e, ok := o.(*api.Event); ok {
			out = append(out, *e)
		}
	}
	api.SortEvents(out)
	return out
}

// issuanceKeys are the objects of a Certificate's issuances the caller
// may list: its CertificateRequests, their Orders and the Orders'
// Challenges.
func issuanceKeys(ctx context.Context, cl client, cert api.Key) []api.Key {
	var out []api.Key
	owned := func(kind string, owners map[string]bool) map[string]bool {
		objs, err := cl.List(ctx, kind, cert.Namespace, app.ListOptions{})
		if err != nil {
			return nil
		}
		names := map[string]bool{}
		for _, o := range objs {
			if ok := api.OwnerKey(o); !ok.IsZero() && owners[ok.Name] {
				names[o.GetObjectMeta().Name] = true
				out = append(out, api.KeyOf(o))
			}
		}
		return names
	}
	crs := owned(api.KindCertificateRequest, map[string]bool{cert.Name: true})
	orders := owned("Order", crs)
	owned("Challenge", orders)
	return out
}

// eventsTable prints kubectl describe's Events section: Type, Reason,
// Age ("<age of the last one>", with "(x<count> over <age of the
// first>)" when repeated), From and Message; an Event about another
// object than self (a Certificate's request) names it first in the
// message.
func eventsTable(w io.Writer, evs []api.Event, self api.Key, now time.Time) error {
	if len(evs) == 0 {
		_, err := fmt.Fprintln(w, "Events:       <none>")
		return err
	}
	fmt.Fprintln(w, "Events:")
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "  Type\tReason\tAge\tFrom\tMessage")
	fmt.Fprintln(tw, "  ----\t------\t----\t----\t-------")
	for _, e := range evs {
		age := shortDuration(now.Sub(api.EventTime(&e)))
		if e.Count > 1 && e.FirstTimestamp != nil {
			age += fmt.Sprintf(" (x%d over %s)", e.Count, shortDuration(now.Sub(e.FirstTimestamp.Time)))
		}
		msg := e.Message
		ref := e.InvolvedObject
		if ref.Kind != self.Kind || ref.Name != self.Name || ref.Namespace != self.Namespace {
			msg = ref.Kind + "/" + ref.Name + ": " + msg
		}
		from := e.Source.Component
		if from == "" {
			from = api.EventComponent
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", e.Type, e.Reason, age, from, strings.ReplaceAll(msg, "\n", " "))
	}
	return tw.Flush()
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
