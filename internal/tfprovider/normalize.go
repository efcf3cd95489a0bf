package tfprovider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"reflect"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"sigs.k8s.io/yaml"

	"github.com/certfn/certfn/core/api"
)

// doc is one manifest as generic JSON (what the user wrote, status
// removed).
type doc = map[string]any

// identity is what a manifest names: kind, namespace ("" for
// cluster-scoped kinds) and name.
type identity struct {
	APIVersion, Kind, Namespace, Name string
	Namespaced                        bool
}

// ID is the Terraform ID and import ID: kind/namespace/name, or kind/name
// for cluster-scoped kinds.
func (id identity) ID() string {
	if id.Namespaced {
		return id.Kind + "/" + id.Namespace + "/" + id.Name
	}
	return id.Kind + "/" + id.Name
}

func (id identity) key() api.Key {
	return api.Key{Kind: id.Kind, Namespace: id.Namespace, Name: id.Name}
}

// parseImportID parses kind/namespace/name (kind/name for cluster-scoped kinds).
func parseImportID(s string) (identity, error) {
	parts := strings.Split(s, "/")
	var kind string
	if len(parts) > 0 {
		kind = parts[0]
	}
	info, ok := api.KindInfoFor(kind)
	if !ok {
		return identity{}, fmt.Errorf("import ID %q: want kind/namespace/name (kind/name for cluster-scoped kinds) with a certfn kind such as Certificate, Issuer or ClusterIssuer", s)
	}
	id := identity{Kind: info.Kind, Namespaced: info.Namespaced}
	switch {
	case info.Namespaced && len(parts) == 3 && parts[1] != "" && parts[2] != "":
		id.Namespace, id.Name = parts[1], parts[2]
	case !info.Namespaced && len(parts) == 2 && parts[1] != "":
		id.Name = parts[1]
	case info.Namespaced:
		return identity{}, fmt.Errorf("import ID %q: %s is namespaced: want %s/<namespace>/<name>", s, info.Kind, info.Kind)
	default:
		return identity{}, fmt.Errorf("import ID %q: %s is cluster-scoped: want %s/<name>", s, info.Kind, info.Kind)
	}
	return id, nil
}

// parseManifest decodes one YAML or JSON document. status is dropped (it
// is certfn's, never the user's); a namespaced kind without a namespace
// gets "default", as the CLI does.
func parseManifest(text string) (doc, error) {
	var d doc
	trimmed := strings.TrimSpace(text)
	if trimmed == "" {
		return nil, errors.New("the manifest is empty")
	}
	if n := countDocuments(trimmed); n > 1 {
		return nil, fmt.Errorf("the manifest holds %d YAML documents: one certfn_manifest declares one object", n)
	}
	if err := yaml.Unmarshal([]byte(trimmed), &d); err != nil {
		return nil, fmt.Errorf("the manifest is not YAML or JSON: %w", err)
	}
	if d == nil {
		return nil, errors.New("the manifest is empty")
	}
	return d, nil
}

// countDocuments counts the YAML documents of text (--- separators).
func countDocuments(text string) int {
	n := 1
	for i, line := range strings.Split(text, "\n") {
		if strings.TrimRight(line, " \t\r") == "---" {
			if i == 0 {
				continue
			}
			n++
		}
	}
	if strings.HasSuffix(strings.TrimSpace(text), "\n---") {
		n--
	}
	return n
}

// check validates the parts of d the provider needs itself (the server
// validates the rest), fills a namespaced kind's default namespace, drops
// status and returns what d names.
func check(d doc) (identity, error) {
	delete(d, "status")
	kind, _ := d["kind"].(string)
	info, ok := api.KindInfoFor(kind)
	if !ok {
		if kind == "" {
			return identity{}, errors.New("kind: required (Certificate, Issuer, ClusterIssuer, CertificateRequestPolicy, Role, …)")
		}
		return identity{}, fmt.Errorf("kind: %q is not a certfn kind", kind)
	}
	if info.InSecretStore {
		// Its values would be in the plan and the state.
		return identity{}, fmt.Errorf("kind: %s manifests are not managed by certfn_manifest: their values (keys, credentials) would be stored in Terraform's plan and state; "+
			"put them into the secret store with its own tools or `certfn apply`", info.Kind)
	}
	av, _ := d["apiVersion"].(string)
	if av == "" {
		return identity{}, errors.New("apiVersion: required")
	}
	meta, _ := d["metadata"].(map[string]any)
	if meta == nil {
		return identity{}, errors.New("metadata.name: required")
	}
	name, _ := meta["name"].(string)
	if name == "" {
		return identity{}, errors.New("metadata.name: required (generateName cannot be tracked by Terraform)")
	}
	ns, _ := meta["namespace"].(string)
	if info.Namespaced && ns == "" {
		ns = "default"
		meta["namespace"] = ns
	}
	if !info.Namespaced {
		if ns != "" {
			return identity{}, fmt.Errorf("metadata.namespace: %s is cluster-scoped: remove the namespace", info.Kind)
		}
		ns = ""
	}
	return identity{APIVersion: av, Kind: info.Kind, Namespace: ns, Name: name, Namespaced: info.Namespaced}, nil
}

// serverManaged are the metadata fields certfn sets itself: never part of
// what Terraform manages, even when a manifest carries them (kubectl
// output).
var serverManaged = []string{"uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp", "managedFields", "ownerReferences", "finalizers", "generateName"}

// managed returns the part of a stored object Terraform manages when it
// has no shape yet (import): apiVersion, kind, metadata name, namespace,
// labels and annotations, and every other top-level field but status.
func managed(obj doc) doc {
	out := doc{}
	for k, v := range obj {
		if k != "status" {
			out[k] = v
		}
	}
	if meta, ok := obj["metadata"].(map[string]any); ok {
		m := maps.Clone(meta)
		for _, f := range serverManaged {
			delete(m, f)
		}
		out["metadata"] = m
	}
	return out
}

// stripServerManaged removes server-managed metadata from a user's manifest.
func stripServerManaged(d doc) {
	if meta, ok := d["metadata"].(map[string]any); ok {
		for _, f := range serverManaged {
			delete(meta, f)
		}
	}
}

// project returns the fields of obj at the paths shape has: what the user
// specified, as the server holds it. Maps are projected key by key; lists
// element by element when both are lists of the same length (else the
// server's list whole); a path obj lacks is left out.
func project(obj any, shape any) any {
	switch s := shape.(type) {
	case map[string]any:
		o, ok := obj.(map[string]any)
		if !ok {
			return obj
		}
		out := map[string]any{}
		for k, sv := range s {
			if ov, ok := o[k]; ok {
				out[k] = project(ov, sv)
			}
		}
		return out
	case []any:
		o, ok := obj.([]any)
		if !ok || len(o) != len(s) {
			return obj
		}
		out := make([]any, len(o))
		for i := range o {
			out[i] = project(o[i], s[i])
		}
		return out
	}
	return obj
}

// roundTrip decodes d into certfn's type for its kind and encodes it
// again, so that values the server stores in another spelling (a
// duration "90d" vs "2160h0m0s", an omitted empty field) compare equal.
// A document the type refuses is returned as it is.
func roundTrip(kind string, d doc) doc {
	info, ok := api.KindInfoFor(kind)
	if !ok {
		return d
	}
	b, err := json.Marshal(d)
	if err != nil {
		return d
	}
	o := info.New()
	if json.Unmarshal(b, o) != nil {
		return d
	}
	b, err = json.Marshal(o)
	if err != nil {
		return d
	}
	var out doc
	if json.Unmarshal(b, &out) != nil {
		return d
	}
	return out
}

// sameManaged reports whether the stored object obj holds what the user's
// document d says: d's paths projected from both, after both went through
// certfn's types.
func sameManaged(kind string, d, obj doc) bool {
	want := project(roundTrip(kind, d), d)
	got := project(roundTrip(kind, obj), d)
	return reflect.DeepEqual(normalizeNumbers(want), normalizeNumbers(got))
}

// normalizeNumbers turns every number into float64 (JSON decoding and
// Terraform's numbers disagree on integers).
func normalizeNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalizeNumbers(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalizeNumbers(e)
		}
		return out
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case json.Number:
		f, _ := x.Float64()
		return f
	}
	return v
}

// canonical is d as JSON with sorted keys and two-space indentation:
// Terraform shows changes of a JSON string field by field.
func canonical(d doc) (string, error) {
	b, err := json.Marshal(d) // sorts map keys
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return "", err
	}
	return out.String(), nil
}

// parseCanonical decodes a canonical document (the fields attribute).
func parseCanonical(s string) (doc, error) {
	var d doc
	if err := json.Unmarshal([]byte(s), &d); err != nil {
		return nil, err
	}
	return d, nil
}

// errUnknown: the value is not known until apply.
var errUnknown = errors.New("unknown until apply")

// fromValue converts a Terraform value (an HCL object) into generic JSON.
// It returns errUnknown when any part is unknown.
func fromValue(v attr.Value) (any, error) {
	if v == nil || v.IsNull() {
		return nil, nil
	}
	if v.IsUnknown() {
		return nil, errUnknown
	}
	switch x := v.(type) {
	case basetypes.DynamicValue:
		if x.IsUnderlyingValueUnknown() {
			return nil, errUnknown
		}
		return fromValue(x.UnderlyingValue())
	case basetypes.ObjectValue:
		return fromMap(x.Attributes())
	case basetypes.MapValue:
		return fromMap(x.Elements())
	case basetypes.ListValue:
		return fromList(x.Elements())
	case basetypes.TupleValue:
		return fromList(x.Elements())
	case basetypes.SetValue:
		return fromList(x.Elements())
	case basetypes.StringValue:
		return x.ValueString(), nil
	case basetypes.BoolValue:
		return x.ValueBool(), nil
	case basetypes.NumberValue:
		return fromNumber(x.ValueBigFloat()), nil
	case basetypes.Int64Value:
		return float64(x.ValueInt64()), nil
	case basetypes.Float64Value:
		return x.ValueFloat64(), nil
	}
	return nil, fmt.Errorf("unsupported value of type %s", v.Type(context.Background()))
}

func fromMap(m map[string]attr.Value) (any, error) {
	out := make(map[string]any, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		e, err := fromValue(m[k])
		if err != nil {
			if errors.Is(err, errUnknown) {
				return nil, err
			}
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		if m[k].IsNull() {
			continue // an attribute the HCL object leaves null is not specified
		}
		out[k] = e
	}
	return out, nil
}

func fromList(l []attr.Value) (any, error) {
	out := make([]any, 0, len(l))
	for i, v := range l {
		e, err := fromValue(v)
		if err != nil {
			if errors.Is(err, errUnknown) {
				return nil, err
			}
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		out = append(out, e)
	}
	return out, nil
}

func fromNumber(f *big.Float) any {
	if f == nil {
		return nil
	}
	if f.IsInt() {
		if i, acc := f.Int64(); acc == big.Exact {
			return float64(i)
		}
	}
	v, _ := f.Float64()
	return v
}
