package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/util/jsonpath"
	"sigs.k8s.io/yaml"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/clock"
)

func newGet(t *target, std streams) *cobra.Command {
	var ns, output, labels, fieldSel string
	var all bool
	var chunk int
	c := &cobra.Command{
		Use:   "get TYPE[,TYPE...] [NAME...] | get TYPE/NAME...",
		Short: "List or show resources (-o wide|yaml|json|name|jsonpath=TEMPLATE, -l SELECTOR)",
		Long: `List or show resources, as kubectl get does. TYPE is a kind, plural or short name:
certificates (cert), certificaterequests (cr), issuers, clusterissuers, orders, challenges,
certificaterequestpolicies (crp), roles, rolebindings, clusterroles, clusterrolebindings,
namespaces, events; several are separated by commas (get certificates,certificaterequests).
-l selects by labels in Kubernetes' syntax (key=value, key!=value, key, !key, key in (a,b),
key notin (a,b), key>N, key<N); --field-selector by metadata.name and metadata.namespace
(=, ==, !=). The server selects, as the Kubernetes API server does; neither goes with names.
-o json prints the object for one named object, else always a List; -o name prints
kind.group/name; -o jsonpath='{.items[*].metadata.name}' uses kubectl's JSONPath templates.
Lists are read --chunk-size objects at a time, as kubectl does; tables and -o name are
printed chunk by chunk as they arrive (each chunk's columns aligned on their own), so the
first lines come after the first chunk and memory stays bounded; json, yaml and jsonpath
print one List at the end.
Secrets are never read back (their values stay in the secret store).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := parseOutput(output)
			if err != nil {
				return err
			}
			queries, single, err := getQueries(args, ns)
			if err != nil {
				return err
			}
			sel := app.ListOptions{LabelSelector: labels, FieldSelector: fieldSel}
			if err := refuseSelectorsWithNames(queries, sel); err != nil {
				return err
			}
			if chunk < 0 {
				return fmt.Errorf("--chunk-size %d: want 0 (no chunks) or more", chunk)
			}
			cl, err := t.client(cmd.Context(), readsData)
			if err != nil {
				return err
			}
			gt := &getter{ctx: cmd.Context(), cl: cl, ns: ns, all: all, sel: sel, chunk: chunk}
			if out.kind == "" || out.kind == "wide" || out.kind == "name" {
				return gt.stream(std.out, queries, out, clock.Real{}.Now())
			}
			var groups []objectGroup
			for _, q := range queries {
				var objs []api.Object
				err := gt.each(q, func(chunk []api.Object) error {
					objs = append(objs, chunk...)
					return nil
				})
				if err != nil {
					return err
				}
				groups = append(groups, objectGroup{info: q.info, objs: objs})
			}
			return printGroups(std.out, groups, out, single, all, len(queries) > 1, clock.Real{}.Now())
		},
	}
	c.Flags().StringVarP(&ns, "namespace", "n", "default", "namespace")
	c.Flags().BoolVarP(&all, "all-namespaces", "A", false, "list across all namespaces")
	c.Flags().StringVarP(&output, "output", "o", "", "output format: wide, yaml, json, name or jsonpath=TEMPLATE")
	c.Flags().StringVarP(&labels, "selector", "l", "", "label selector, e.g. 'app=web,tier in (frontend)'")
	c.Flags().StringVar(&fieldSel, "field-selector", "", "field selector on metadata.name and metadata.namespace (events also: involvedObject.kind, involvedObject.name, involvedObject.namespace, reason, type, source, ...), e.g. 'metadata.name!=web'")
	c.Flags().IntVar(&chunk, "chunk-size", 500, "return large lists in chunks of this many objects rather than all at once; 0 disables chunks")
	return c
}

// getter reads what a get asks for.
type getter struct {
	ctx   context.Context
	cl    client
	ns    string
	all   bool
	sel   app.ListOptions
	chunk int
}

// refuseSelectorsWithNames refuses selectors with named objects, as
// kubectl does: they select lists only.
func refuseSelectorsWithNames(queries []getQuery, sel app.ListOptions) error {
	for _, q := range queries {
		if len(q.names) == 0 {
			continue
		}
		switch {
		case sel.LabelSelector != "":
			return fmt.Errorf("-l/--selector selects from lists: it cannot be used with names")
		case sel.FieldSelector != "":
			return fmt.Errorf("--field-selector selects from lists: it cannot be used with names")
		}
	}
	return nil
}

// each calls fn with q's objects: the named ones in one call, else the
// list that the selectors select (the server selects) one chunk
// (ListPage of g.chunk) at a time.
func (g *getter) each(q getQuery, fn func([]api.Object) error) error {
	if len(q.names) > 0 {
		var objs []api.Object
		for _, name := range q.names {
			k, _, _ := resolveKey(q.info.Plural, name, g.ns)
			o, err := g.cl.Get(g.ctx, k)
			if err != nil {
				return notFound(k, err)
			}
			objs = append(objs, o)
		}
		return fn(objs)
	}
	listNS := g.ns
	if g.all || !q.info.Namespaced {
		listNS = ""
	}
	cont := ""
	for {
		objs, next, err := g.cl.ListPage(g.ctx, q.info.Kind, listNS, g.sel, g.chunk, cont)
		if err != nil {
			return err
		}
		if err := fn(objs); err != nil {
			return err
		}
		if next == "" {
			return nil
		}
		cont = next
	}
}

// stream prints a table (or -o name) chunk by chunk: one header per kind,
// a blank line between kinds, "No ... found." when nothing matched.
func (g *getter) stream(w io.Writer, queries []getQuery, out outputFormat, now time.Time) error {
	printed := false
	for _, q := range queries {
		header := true
		err := g.each(q, func(objs []api.Object) error {
			if len(objs) == 0 {
				return nil
			}
			if out.kind == "name" {
				sortObjects(objs)
				for _, o := range objs {
					fmt.Fprintln(w, kindName(api.KeyOf(o)))
				}
				return nil
			}
			if header && printed {
				fmt.Fprintln(w)
			}
			if q.info.Kind == api.KindEvent {
				sortEventObjects(objs) // stored by name (a digest): shown oldest first, as kubectl events
			}
			err := printRows(w, objs, q.info, out.kind == "wide", g.all, len(queries) > 1, header, now)
			header, printed = false, true
			return err
		})
		if err != nil {
			return err
		}
	}
	if !printed && out.kind != "name" {
		var names []string
		for _, q := range queries {
			names = append(names, q.info.Plural)
		}
		fmt.Fprintf(w, "No %s found.\n", strings.Join(names, ", "))
	}
	return nil
}

// getQuery is one kind of a get and the names asked for (none: list).
type getQuery struct {
	info  api.KindInfo
	names []string
}

// getQueries parses get's arguments: TYPE[,TYPE...] [NAME...] or
// TYPE/NAME.... single reports one named object (printed bare by -o json
// and -o yaml, as kubectl does).
func getQueries(args []string, ns string) ([]getQuery, bool, error) {
	kindOf := func(name string) (api.KindInfo, error) {
		info, ok := api.KindForName(name)
		if !ok {
			return info, fmt.Errorf("unknown resource type %q (try certificates, certificaterequests, issuers, clusterissuers, orders, challenges)", name)
		}
		return info, nil
	}
	if strings.Contains(args[0], "/") {
		var qs []getQuery
		for _, a := range args {
			kind, name, ok := strings.Cut(a, "/")
			if !ok || kind == "" || name == "" {
				return nil, false, fmt.Errorf("%q: want TYPE/NAME (every argument, once the first is TYPE/NAME)", a)
			}
			info, err := kindOf(kind)
			if err != nil {
				return nil, false, err
			}
			if i := slices.IndexFunc(qs, func(q getQuery) bool { return q.info.Kind == info.Kind }); i >= 0 {
				qs[i].names = append(qs[i].names, name)
			} else {
				qs = append(qs, getQuery{info: info, names: []string{name}})
			}
		}
		return qs, len(args) == 1, nil
	}
	var qs []getQuery
	for _, k := range strings.Split(args[0], ",") {
		info, err := kindOf(strings.TrimSpace(k))
		if err != nil {
			return nil, false, err
		}
		qs = append(qs, getQuery{info: info, names: args[1:]})
	}
	if len(qs) > 1 && len(args) > 1 {
		return nil, false, fmt.Errorf("names need one resource type: use TYPE/NAME to name objects of several types")
	}
	return qs, len(qs) == 1 && len(args) == 2, nil
}

// objectGroup is the objects of one kind a get found.
type objectGroup struct {
	info api.KindInfo
	objs []api.Object
}

// outputFormat is a parsed -o.
type outputFormat struct {
	kind     string // "", wide, yaml, json, name, jsonpath
	jsonpath *jsonpath.JSONPath
}

func parseOutput(o string) (outputFormat, error) {
	switch {
	case o == "" || o == "wide" || o == "yaml" || o == "json" || o == "name":
		return outputFormat{kind: o}, nil
	case strings.HasPrefix(o, "jsonpath="):
		jp := jsonpath.New("output")
		jp.AllowMissingKeys(true)
		if err := jp.Parse(strings.TrimPrefix(o, "jsonpath=")); err != nil {
			return outputFormat{}, fmt.Errorf("-o %s: %w", o, err)
		}
		return outputFormat{kind: "jsonpath", jsonpath: jp}, nil
	}
	return outputFormat{}, fmt.Errorf("-o %q: want wide, yaml, json, name or jsonpath=TEMPLATE", o)
}

// printGroups prints what a get found: one table per kind (objects named
// kind.group/name when several kinds are shown), or every object as one
// List for json, yaml and jsonpath (the object itself when single).
func printGroups(w io.Writer, groups []objectGroup, out outputFormat, single, showNS, manyKinds bool, now time.Time) error {
	var all []api.Object
	for _, gr := range groups {
		all = append(all, gr.objs...)
	}
	var doc any = map[string]any{"apiVersion": "v1", "kind": "List", "items": all, "metadata": map[string]any{}}
	if single && len(all) == 1 {
		doc = all[0]
	}
	switch out.kind {
	case "json":
		b, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(w, string(b))
		return err
	case "yaml":
		b, err := yaml.Marshal(doc)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	case "jsonpath":
		// JSONPath runs on the generic JSON form, as kubectl's does.
		b, err := json.Marshal(doc)
		if err != nil {
			return err
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		if err := out.jsonpath.Execute(w, v); err != nil {
			return fmt.Errorf("-o jsonpath: %w", err)
		}
		return nil
	case "name":
		for _, o := range all {
			fmt.Fprintln(w, kindName(api.KeyOf(o)))
		}
		return nil
	}
	if len(all) == 0 {
		var names []string
		for _, gr := range groups {
			names = append(names, gr.info.Plural)
		}
		fmt.Fprintf(w, "No %s found.\n", strings.Join(names, ", "))
		return nil
	}
	first := true
	for _, gr := range groups {
		if len(gr.objs) == 0 {
			continue
		}
		if !first {
			fmt.Fprintln(w)
		}
		first = false
		if err := printTable(w, gr.objs, gr.info, out.kind == "wide", showNS, manyKinds, now); err != nil {
			return err
		}
	}
	return nil
}

// kindName renders a key as kubectl's -o name does: certificate.cert-manager.io/web.
func kindName(k api.Key) string {
	info, _ := api.KindInfoFor(k.Kind)
	s := strings.ToLower(k.Kind)
	if group, _, ok := strings.Cut(info.APIVersion, "/"); ok {
		s += "." + group
	}
	return s + "/" + k.Name
}

func printTable(w io.Writer, objs []api.Object, info api.KindInfo, wide, showNS, qualified bool, now time.Time) error {
	return printRows(w, objs, info, wide, showNS, qualified, true, now)
}

// sortObjects sorts objs by namespace, then name.
func sortObjects(objs []api.Object) {
	sort.Slice(objs, func(i, j int) bool {
		a, b := objs[i].GetObjectMeta(), objs[j].GetObjectMeta()
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
}

// printRows prints objs as table rows, after the header when header is
// set (the first chunk of a kind).
func printRows(w io.Writer, objs []api.Object, info api.KindInfo, wide, showNS, qualified, header bool, now time.Time) error {
	sortObjects(objs)
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	cols, row := columns(info.Kind, wide, now)
	nameCol := slices.Index(cols, "NAME")
	if showNS && info.Namespaced {
		cols = append([]string{"NAMESPACE"}, cols...)
	}
	if header {
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
	}
	for _, o := range objs {
		cells := row(o)
		if qualified && nameCol >= 0 {
			// With several kinds, names are qualified as kubectl does.
			cells[nameCol] = kindName(api.KeyOf(o))
		}
		if showNS && info.Namespaced {
			cells = append([]string{o.GetObjectMeta().Namespace}, cells...)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

func condStatus(conds []api.Condition, t string) string {
	if c := api.FindCondition(conds, t); c != nil {
		return string(c.Status)
	}
	return ""
}

func condMessage(conds []api.Condition, t string) string {
	if c := api.FindCondition(conds, t); c != nil {
		return c.Message
	}
	return ""
}

func age(m *api.ObjectMeta, now time.Time) string {
	if m.CreationTimestamp == nil {
		return "<unknown>"
	}
	return shortDuration(now.Sub(m.CreationTimestamp.Time))
}

// shortDuration renders like kubectl: 45s, 12m, 5h, 3d.
func shortDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < 2*time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < 2*time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

func ts(t *api.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// columns returns the table header and row renderer for a kind.
func columns(kind string, wide bool, now time.Time) ([]string, func(api.Object) []string) {
	switch kind {
	case api.KindCertificate:
		if wide {
			return []string{"NAME", "READY", "SECRET", "ISSUER", "STATUS", "NOT AFTER", "RENEWAL", "AGE"}, func(o api.Object) []string {
				c := o.(*api.Certificate)
				return []string{c.Name, condStatus(c.Status.Conditions, "Ready"), c.Spec.SecretName, c.Spec.IssuerRef.Name,
					certStatusLine(c), ts(c.Status.NotAfter), ts(c.Status.RenewalTime), age(&c.ObjectMeta, now)}
			}
		}
		return []string{"NAME", "READY", "SECRET", "AGE"}, func(o api.Object) []string {
			c := o.(*api.Certificate)
			return []string{c.Name, condStatus(c.Status.Conditions, "Ready"), c.Spec.SecretName, age(&c.ObjectMeta, now)}
		}
	case api.KindCertificateRequest:
		h := []string{"NAME", "APPROVED", "DENIED", "READY", "ISSUER", "REQUESTER", "AGE"}
		if wide {
			h = append(h, "STATUS")
		}
		return h, func(o api.Object) []string {
			r := o.(*api.CertificateRequest)
			cells := []string{r.Name, condStatus(r.Status.Conditions, "Approved"), condStatus(r.Status.Conditions, "Denied"),
				condStatus(r.Status.Conditions, "Ready"), r.Spec.IssuerRef.Name, r.Spec.Username, age(&r.ObjectMeta, now)}
			if wide {
				cells = append(cells, condMessage(r.Status.Conditions, "Ready"))
			}
			return cells
		}
	case api.KindIssuer, api.KindClusterIssuer:
		h := []string{"NAME", "READY", "AGE"}
		if wide {
			h = append(h, "STATUS")
		}
		return h, func(o api.Object) []string {
			i := o.(api.GenericIssuer)
			conds := i.GetStatus().Conditions
			cells := []string{i.GetObjectMeta().Name, condStatus(conds, "Ready"), age(i.GetObjectMeta(), now)}
			if wide {
				cells = append(cells, condMessage(conds, "Ready"))
			}
			return cells
		}
	case api.KindCertificateSigningRequest:
		return csrColumns(wide, now)
	case api.KindSecret:
		return []string{"NAME", "TYPE", "KEYS", "NOT AFTER"}, func(o api.Object) []string {
			s := o.(*api.Secret)
			keys, notAfter := "", ""
			if s.Summary != nil {
				keys, notAfter = strings.Join(s.Summary.Keys, ","), ts(s.Summary.NotAfter)
			}
			return []string{s.Name, orDefault(s.Type, api.SecretTypeOpaque), keys, notAfter}
		}
	case api.KindEvent:
		return []string{"LAST SEEN", "TYPE", "REASON", "OBJECT", "COUNT", "MESSAGE"}, func(o api.Object) []string {
			e := o.(*api.Event)
			last := "-"
			if e.LastTimestamp != nil {
				last = now.Sub(e.LastTimestamp.Time).Round(time.Second).String()
			}
			return []string{last, e.Type, e.Reason, strings.ToLower(e.InvolvedObject.Kind) + "/" + e.InvolvedObject.Name, fmt.Sprint(e.Count), e.Message}
		}
	}
	return []string{"NAME", "AGE"}, func(o api.Object) []string {
		return []string{o.GetObjectMeta().Name, age(o.GetObjectMeta(), now)}
	}
}

// certStatusLine is the one-line explanation shown by -o wide.
func certStatusLine(c *api.Certificate) string {
	conds := c.Status.Conditions
	if api.IsTrue(conds, "Issuing") {
		return "Issuing: " + condMessage(conds, "Issuing")
	}
	if ic := api.FindCondition(conds, "Issuing"); ic != nil && ic.Status == api.ConditionFalse {
		return ic.Message
	}
	return condMessage(conds, "Ready")
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// sortEventObjects orders a chunk of Events oldest first (by their last
// time), stable for the same instant.
func sortEventObjects(objs []api.Object) {
	sort.SliceStable(objs, func(i, j int) bool {
		a, aok := objs[i].(*api.Event)
		b, bok := objs[j].(*api.Event)
		return aok && bok && api.EventTime(a).Before(api.EventTime(b))
	})
}
