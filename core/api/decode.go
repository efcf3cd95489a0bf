package api

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// MaxManifestSize bounds the input DecodeReader reads (all documents together).
const MaxManifestSize = 8 << 20

// DefaultNamespace is given to namespaced objects that name no namespace.
const DefaultNamespace = "default"

// FieldError is one problem found while decoding a manifest.
type FieldError struct {
	// Doc is the 1-based number of the document in the input (empty
	// documents are not counted); 0 when not known.
	Doc int
	// Object describes the object, e.g. "Certificate default/web", when known.
	Object string
	// Path is the field path, e.g. "spec.privateKey.size" or
	// "items[2].spec.dnsNames[0]"; empty for a problem with the whole document.
	Path string
	// Rule says what is wrong ("unknown field", "want a string, got a number").
	Rule string
}

// Error renders "document 2 (Certificate default/web): spec.privateKey.sise: unknown field".
func (e FieldError) Error() string {
	var b strings.Builder
	if e.Doc > 0 {
		fmt.Fprintf(&b, "document %d", e.Doc)
		if e.Object != "" {
			fmt.Fprintf(&b, " (%s)", e.Object)
		}
		b.WriteString(": ")
	} else if e.Object != "" {
		b.WriteString(e.Object + ": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Rule)
	return b.String()
}

// FieldErrors is the error Decode returns: every problem found, in input order.
type FieldErrors []FieldError

// Error renders one line per error, bounded (JoinBounded).
func (l FieldErrors) Error() string {
	return JoinBounded(len(l), func(i int) string { return l[i].Error() })
}

// Decode parses one or many manifests: YAML or JSON, documents separated by
// "---" lines (empty documents are skipped), a JSON stream or array, or a
// "kind: List" with items. Every object must be a registered kind with its
// exact apiVersion. Unknown fields and type mismatches are reported with
// their field path; every problem in the input is collected (as FieldErrors)
// before Decode returns. On error no objects are returned.
//
// Namespaced objects without a namespace get DefaultNamespace; a
// cluster-scoped object naming a namespace is accepted with the namespace
// cleared, as the Kubernetes API server does (DecodeWarnings reports it).
func Decode(data []byte) ([]Object, error) {
	objs, _, err := DecodeWarnings(data)
	return objs, err
}

// DecodeWarnings is Decode that also returns warnings about what it
// changed, one line each, like the Kubernetes API server's Warning
// headers: "document 2 (ClusterIssuer kube-system/ca): metadata.namespace:
// ignored: kind ClusterIssuer is cluster-scoped". Warnings are returned
// only when decoding succeeds.
func DecodeWarnings(data []byte) ([]Object, []string, error) {
	docs, errs := splitDocuments(data)
	var out []Object
	var warns []string
	for _, d := range docs {
		objs, derrs := decodeDocument(d, &warns)
		out = append(out, objs...)
		errs = append(errs, derrs...)
	}
	if len(errs) > 0 {
		return nil, nil, errs
	}
	return out, warns, nil
}

// DecodeReader reads r (at most MaxManifestSize bytes) and decodes it as Decode does.
func DecodeReader(r io.Reader) ([]Object, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxManifestSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxManifestSize {
		return nil, fmt.Errorf("manifest larger than %d bytes", MaxManifestSize)
	}
	return Decode(data)
}

// decodeDocument handles one document: an object, a List, or a JSON/YAML array.
func decodeDocument(d document, warns *[]string) ([]Object, FieldErrors) {
	switch v := d.value.(type) {
	case []any:
		return decodeItems(d.num, "", v, warns)
	case map[string]any:
		if kind, _ := v["kind"].(string); kind == "List" {
			items, ok := v["items"].([]any)
			if !ok && v["items"] != nil {
				return nil, FieldErrors{{Doc: d.num, Object: "List", Path: "items", Rule: "want a list of objects"}}
			}
			var errs FieldErrors
			for k := range v {
				if k != "apiVersion" && k != "kind" && k != "items" && k != "metadata" {
					errs = append(errs, FieldError{Doc: d.num, Object: "List", Path: k, Rule: "unknown field"})
				}
			}
			objs, ierrs := decodeItems(d.num, "items", items, warns)
			return objs, append(errs, ierrs...)
		}
		obj, errs := decodeObject(d.num, "", v, warns)
		if obj == nil {
			return nil, errs
		}
		return []Object{obj}, errs
	default:
		return nil, FieldErrors{{Doc: d.num, Rule: fmt.Sprintf("want an object with apiVersion and kind, got %s", jsonKind(d.value))}}
	}
}

func decodeItems(doc int, prefix string, items []any, warns *[]string) ([]Object, FieldErrors) {
	var out []Object
	var errs FieldErrors
	for i, it := range items {
		p := fmt.Sprintf("%s[%d]", prefix, i)
		m, ok := it.(map[string]any)
		if !ok {
			errs = append(errs, FieldError{Doc: doc, Path: p, Rule: fmt.Sprintf("want an object with apiVersion and kind, got %s", jsonKind(it))})
			continue
		}
		obj, oerrs := decodeObject(doc, p, m, warns)
		errs = append(errs, oerrs...)
		if obj != nil {
			out = append(out, obj)
		}
	}
	return out, errs
}

// decodeObject checks one object against its kind's Go type and decodes it.
func decodeObject(doc int, prefix string, m map[string]any, warns *[]string) (Object, FieldErrors) {
	join := func(p string) string {
		switch {
		case prefix == "":
			return p
		case p == "":
			return prefix
		default:
			return prefix + "." + p
		}
	}
	apiVersion, avOK := m["apiVersion"].(string)
	kind, kOK := m["kind"].(string)
	desc := describe(kind, m)
	fe := func(path, rule string) FieldError {
		return FieldError{Doc: doc, Object: desc, Path: join(path), Rule: rule}
	}
	var errs FieldErrors
	if !kOK || kind == "" {
		errs = append(errs, fe("kind", "required: want a kind such as Certificate"))
	}
	if !avOK || apiVersion == "" {
		errs = append(errs, fe("apiVersion", "required: want an apiVersion such as "+CertManagerV1))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	info, ok := KindInfoFor(kind)
	if !ok {
		return nil, FieldErrors{fe("kind", fmt.Sprintf("unknown kind %q (known: %s)", kind, knownKinds()))}
	}
	if apiVersion != info.APIVersion {
		return nil, FieldErrors{fe("apiVersion", fmt.Sprintf("kind %s is served as %s, not %q", kind, info.APIVersion, apiVersion))}
	}

	obj := info.New()
	w := walker{}
	w.walk(m, reflect.TypeOf(obj).Elem(), "")
	for _, e := range w.errs {
		errs = append(errs, fe(e.path, e.rule))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	raw, err := json.Marshal(m)
	if err == nil {
		err = json.Unmarshal(raw, obj)
	}
	if err != nil { // the walk should have caught it; report rather than panic
		return nil, FieldErrors{fe("", "cannot decode: "+err.Error())}
	}
	meta := obj.GetObjectMeta()
	switch {
	case info.Namespaced && meta.Namespace == "":
		meta.Namespace = DefaultNamespace
	case !info.Namespaced && meta.Namespace != "":
		// As the Kubernetes API server does: the namespace of a
		// cluster-scoped object is dropped, and the caller warned.
		*warns = append(*warns, fe("metadata.namespace", fmt.Sprintf("ignored: kind %s is cluster-scoped", kind)).Error())
		meta.Namespace = ""
	}
	return obj, nil
}

// describe renders "Kind namespace/name" (namespace defaulted) for messages.
func describe(kind string, m map[string]any) string {
	md, _ := m["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	ns, _ := md["namespace"].(string)
	if name == "" {
		return kind
	}
	if kind == "" {
		kind = "object"
	}
	if info, ok := KindInfoFor(kind); ok && info.Namespaced && ns == "" {
		ns = DefaultNamespace
	}
	if ns == "" {
		return kind + " " + name
	}
	return kind + " " + ns + "/" + name
}

func knownKinds() string {
	ks := Kinds()
	names := make([]string, len(ks))
	for i, k := range ks {
		names[i] = k.Kind
	}
	return strings.Join(names, ", ")
}
