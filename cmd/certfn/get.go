package main

import (
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
	"github.com/certfn/certfn/core/clock"
)

func newGet(g *globals) *cobra.Command {
	var ns, output string
	var all bool
	c := &cobra.Command{
		Use:   "get KIND [NAME]",
		Short: "List or show resources (-o wide|yaml|json)",
		Long: `List or show resources. KIND is a kind, plural or short name: certificates (cert),
certificaterequests (cr), issuers, clusterissuers, orders, challenges,
certificaterequestpolicies, roles, rolebindings, clusterroles, clusterrolebindings, namespaces.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch output {
			case "", "wide", "yaml", "json":
			default:
				return fmt.Errorf("-o %q: want wide, yaml or json", output)
			}
			info, ok := api.KindForName(args[0])
			if !ok {
				return fmt.Errorf("unknown resource type %q", args[0])
			}
			cl, err := g.client(cmd.Context())
			if err != nil {
				return err
			}
			var objs []api.Object
			if len(args) == 2 {
				k, _, _ := resolveKey(args[0], args[1], ns)
				o, err := cl.Get(cmd.Context(), k)
				if err != nil {
					return notFound(k, err)
				}
				objs = []api.Object{o}
			} else {
				listNS := ns
				if all || !info.Namespaced {
					listNS = ""
				}
				if objs, err = cl.List(cmd.Context(), info.Kind, listNS); err != nil {
					return err
				}
			}
			return printObjects(g.stdout, objs, info, output, all, clock.Real{}.Now())
		},
	}
	c.Flags().StringVarP(&ns, "namespace", "n", "default", "namespace")
	c.Flags().BoolVarP(&all, "all-namespaces", "A", false, "list across all namespaces")
	c.Flags().StringVarP(&output, "output", "o", "", "output format: wide, yaml or json")
	return c
}

func printObjects(w io.Writer, objs []api.Object, info api.KindInfo, output string, showNS bool, now time.Time) error {
	switch output {
	case "json":
		var v any = objs
		if len(objs) == 1 {
			v = objs[0]
		} else {
			v = map[string]any{"apiVersion": "v1", "kind": "List", "items": objs}
		}
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(w, string(b))
		return err
	case "yaml":
		for i, o := range objs {
			b, err := yaml.Marshal(o)
			if err != nil {
				return err
			}
			if i > 0 {
				fmt.Fprintln(w, "---")
			}
			fmt.Fprint(w, string(b))
		}
		return nil
	}
	if len(objs) == 0 {
		fmt.Fprintf(w, "No %s found.\n", info.Plural)
		return nil
	}
	sort.Slice(objs, func(i, j int) bool {
		a, b := objs[i].GetObjectMeta(), objs[j].GetObjectMeta()
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	defer tw.Flush()
	cols, row := columns(info.Kind, output == "wide", now)
	if showNS && info.Namespaced {
		cols = append([]string{"NAMESPACE"}, cols...)
	}
	fmt.Fprintln(tw, strings.Join(cols, "\t"))
	for _, o := range objs {
		cells := row(o)
		if showNS && info.Namespaced {
			cells = append([]string{o.GetObjectMeta().Namespace}, cells...)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return nil
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
