package kubeapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"k8s.io/client-go/util/jsonpath"

	"github.com/certfn/certfn/core/api"
)

// column is one Table column: a JSONPath into the object (as a CRD's
// additionalPrinterColumns), or a function of it; date columns are shown
// as an age.
type column struct {
	name, typ, format, desc string
	priority                int32
	path                    string
	fn                      func(obj map[string]any) any
}

func col(name, typ, path, desc string, priority int32) column {
	c := column{name: name, typ: typ, path: path, desc: desc, priority: priority}
	// The paths are constants of this file: one that does not parse is a
	// programming error, found when the package is loaded.
	if err := jsonpath.New(name).Parse("{" + path + "}"); err != nil {
		panic(fmt.Sprintf("kubeapi: column %s: JSONPath %s: %v", name, path, err))
	}
	return c
}

func fnCol(name, typ, desc string, priority int32, fn func(map[string]any) any) column {
	return column{name: name, typ: typ, desc: desc, priority: priority, fn: fn}
}

func cond(t, field string) string {
	return fmt.Sprintf(`.status.conditions[?(@.type=="%s")].%s`, t, field)
}

var age = col("Age", "date", ".metadata.creationTimestamp",
	"CreationTimestamp is a timestamp representing the server time when this object was created.", 0)

// columnsFor returns a kind's columns after Name: cert-manager's and
// approver-policy's additionalPrinterColumns for their kinds (as in their
// CRDs), the Kubernetes API server's for its own.
func columnsFor(kind string) []column {
	switch kind {
	case api.KindCertificate:
		return []column{
			col("Ready", "string", cond("Ready", "status"), "", 0),
			col("Secret", "string", ".spec.secretName", "", 0),
			col("Issuer", "string", ".spec.issuerRef.name", "", 1),
			col("Status", "string", cond("Ready", "message"), "", 1),
			age}
	case api.KindCertificateRequest:
		return []column{
			col("Approved", "string", cond("Approved", "status"), "", 0),
			col("Denied", "string", cond("Denied", "status"), "", 0),
			col("Ready", "string", cond("Ready", "status"), "", 0),
			col("Issuer", "string", ".spec.issuerRef.name", "", 0),
			col("Requester", "string", ".spec.username", "", 0),
			col("Status", "string", cond("Ready", "message"), "", 1),
			age}
	case api.KindIssuer, api.KindClusterIssuer:
		return []column{
			col("Ready", "string", cond("Ready", "status"), "", 0),
			col("Status", "string", cond("Ready", "message"), "", 1),
			age}
	case api.KindOrder:
		return []column{
			col("State", "string", ".status.state", "", 0),
			col("Issuer", "string", ".spec.issuerRef.name", "", 1),
			col("Reason", "string", ".status.reason", "", 1),
			age}
	case api.KindChallenge:
		return []column{
			col("State", "string", ".status.state", "", 0),
			col("Domain", "string", ".spec.dnsName", "", 0),
			col("Reason", "string", ".status.reason", "", 1),
			age}
	case api.KindCertificateRequestPolicy:
		return []column{col("Ready", "string", cond("Ready", "status"), "", 0), age}
	case api.KindCertificateSigningRequest:
		return []column{age,
			col("SignerName", "string", ".spec.signerName", "", 0),
			col("Requestor", "string", ".spec.username", "", 0),
			col("RequestedDuration", "string", ".spec.expirationSeconds", "", 0),
			fnCol("Condition", "string", "", 0, csrCondition)}
	case api.KindSecret:
		return []column{col("Type", "string", ".type", "", 0), fnCol("Data", "integer", "", 0, secretData), age}
	case api.KindNamespace:
		return []column{col("Status", "string", ".status.phase", "", 0), age}
	case api.KindEvent:
		return []column{col("Last Seen", "date", ".lastTimestamp", "", 0),
			col("Type", "string", ".type", "", 0),
			col("Reason", "string", ".reason", "", 0),
			fnCol("Object", "string", "", 0, eventObject),
			col("Message", "string", ".message", "", 0)}
	case api.KindRoleBinding, api.KindClusterRoleBinding:
		return []column{fnCol("Role", "string", "", 0, bindingRole), age}
	}
	return []column{age}
}

func csrCondition(o map[string]any) any {
	st, _ := o["status"].(map[string]any)
	conds, _ := st["conditions"].([]any)
	var out []string
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["status"] == "True" {
			out = append(out, fmt.Sprint(m["type"]))
		}
	}
	if len(out) == 0 {
		return "Pending"
	}
	return strings.Join(out, ",")
}

// secretData counts a secret's keys: certfn answers a summary (its
// keys, never its values) in place of data.
func secretData(o map[string]any) any {
	sum, _ := o["summary"].(map[string]any)
	keys, _ := sum["keys"].([]any)
	return int64(len(keys))
}

func eventObject(o map[string]any) any {
	io, _ := o["involvedObject"].(map[string]any)
	return strings.ToLower(fmt.Sprint(io["kind"])) + "/" + fmt.Sprint(io["name"])
}

func bindingRole(o map[string]any) any {
	ref, _ := o["roleRef"].(map[string]any)
	return fmt.Sprint(ref["kind"]) + "/" + fmt.Sprint(ref["name"])
}

// table builds the Table of items (JSON objects of res).
func (h *Handler) table(res *resource, f form, items []json.RawMessage, meta ListMeta) (*Table, error) {
	v := f.tableVersion
	if v == "" {
		v = "v1"
	}
	t := &Table{Kind: "Table", APIVersion: "meta.k8s.io/" + v, Metadata: meta, Rows: []TableRow{},
		ColumnDefinitions: []TableColumnDefinition{{Name: "Name", Type: "string", Format: "name",
			Description: "Name must be unique within a namespace."}}}
	for _, c := range res.columns {
		t.ColumnDefinitions = append(t.ColumnDefinitions, TableColumnDefinition{Name: c.name, Type: c.typ,
			Format: c.format, Description: c.desc, Priority: c.priority})
	}
	now := h.cfg.Now()
	for _, raw := range items {
		var obj map[string]any
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, fmt.Errorf("table: %w", err)
		}
		md, _ := obj["metadata"].(map[string]any)
		row := TableRow{Cells: []any{md["name"]}}
		for _, c := range res.columns {
			row.Cells = append(row.Cells, c.cell(obj, now))
		}
		switch f.include {
		case "None":
		case "Object":
			row.Object = raw
		default:
			b, err := json.Marshal(map[string]any{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": md})
			if err != nil {
				return nil, fmt.Errorf("table: %w", err)
			}
			row.Object = b
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

// cell evaluates c on obj: the first JSONPath result, nil when missing.
func (c column) cell(obj map[string]any, now time.Time) any {
	if c.fn != nil {
		return c.fn(obj)
	}
	// A JSONPath keeps state while it runs: one per cell.
	jp := jsonpath.New(c.name).AllowMissingKeys(true)
	if err := jp.Parse("{" + c.path + "}"); err != nil {
		return nil
	}
	results, err := jp.FindResults(obj)
	if err != nil || len(results) == 0 || len(results[0]) == 0 {
		return nil
	}
	v := results[0][0].Interface()
	if c.typ == "date" {
		s, ok := v.(string)
		if !ok {
			return nil
		}
		ts, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return "<invalid>"
		}
		return HumanDuration(now.Sub(ts))
	}
	switch v.(type) {
	case string, bool, float64, int64:
		return v
	}
	var b bytes.Buffer
	_ = json.NewEncoder(&b).Encode(v)
	return strings.TrimSpace(b.String())
}

// HumanDuration renders d as Kubernetes' Age column does
// (k8s.io/apimachinery's duration.HumanDuration): "45s", "3m20s", "5h",
// "12d".
func HumanDuration(d time.Duration) string {
	if seconds := int(d.Seconds()); seconds < -1 {
		return "<invalid>"
	} else if seconds < 0 {
		return "0s"
	} else if seconds < 60*2 {
		return fmt.Sprintf("%ds", seconds)
	}
	minutes := int(d / time.Minute)
	if minutes < 10 {
		if s := int(d/time.Second) % 60; s != 0 {
			return fmt.Sprintf("%dm%ds", minutes, s)
		}
		return fmt.Sprintf("%dm", minutes)
	} else if minutes < 60*3 {
		return fmt.Sprintf("%dm", minutes)
	}
	hours := int(d / time.Hour)
	switch {
	case hours < 8:
		if m := int(d/time.Minute) % 60; m != 0 {
			return fmt.Sprintf("%dh%dm", hours, m)
		}
		return fmt.Sprintf("%dh", hours)
	case hours < 48:
		return fmt.Sprintf("%dh", hours)
	case hours < 24*8:
		if h := hours % 24; h != 0 {
			return fmt.Sprintf("%dd%dh", hours/24, h)
		}
		return fmt.Sprintf("%dd", hours/24)
	case hours < 24*365*2:
		return fmt.Sprintf("%dd", hours/24)
	case hours < 24*365*8:
		if dy := (hours / 24) % 365; dy != 0 {
			return fmt.Sprintf("%dy%dd", hours/24/365, dy)
		}
		return fmt.Sprintf("%dy", hours/24/365)
	}
	return fmt.Sprintf("%dy", hours/24/365)
}
