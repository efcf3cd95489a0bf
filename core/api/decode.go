package api

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
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

// Error renders one line per error.
func (l FieldErrors) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Decode parses one or many manifests: YAML or JSON, documents separated by
// "---" lines (empty documents are skipped), a JSON stream or array, or a
// "kind: List" with items. Every object must be a registered kind with its
// exact apiVersion. Unknown fields and type mismatches are reported with
// their field path; every problem in the input is collected (as FieldErrors)
// before Decode returns. On error no objects are returned.
//
// Namespaced objects without a namespace get DefaultNamespace; a
// cluster-scoped object naming a namespace is an error.
func Decode(data []byte) ([]Object, error) {
	docs, errs := splitDocuments(data)
	var out []Object
	for _, d := range docs {
		objs, derrs := decodeDocument(d)
		out = append(out, objs...)
		errs = append(errs, derrs...)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
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

// document is one parsed input document: a generic JSON value (maps,
// slices, strings, json.Number, bools, nil).
type document struct {
	num   int
	value any
}

// splitDocuments turns the input into generic JSON values, one per
// non-empty document. Parse errors are reported per document.
func splitDocuments(data []byte) ([]document, FieldErrors) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, nil
	}
	if trimmed[0] == '{' || trimmed[0] == '[' {
		if docs, ok := jsonStream(trimmed); ok {
			return docs, nil
		}
		// Not a JSON stream: it may still be flow-style YAML.
	}
	var docs []document
	var errs FieldErrors
	n := 0
	for _, chunk := range yamlChunks(data) {
		if len(bytes.TrimSpace(chunk.text)) == 0 {
			continue
		}
		j, err := yaml.YAMLToJSONStrict(chunk.text)
		if err != nil {
			n++
			errs = append(errs, FieldError{Doc: n, Rule: fmt.Sprintf("invalid YAML (document starts at line %d): %v", chunk.line, err)})
			continue
		}
		v, err := decodeJSONValue(j)
		if err != nil { // cannot happen for YAMLToJSON output; kept for safety
			n++
			errs = append(errs, FieldError{Doc: n, Rule: "invalid document: " + err.Error()})
			continue
		}
		if v == nil {
			continue // empty or comment-only document
		}
		n++
		docs = append(docs, document{num: n, value: v})
	}
	return docs, errs
}

// jsonStream decodes a sequence of JSON values; ok is false when the input
// is not entirely JSON.
func jsonStream(data []byte) ([]document, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var docs []document
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return docs, true
		}
		if err != nil {
			return nil, false
		}
		if v == nil {
			continue
		}
		docs = append(docs, document{num: len(docs) + 1, value: v})
	}
}

func decodeJSONValue(j []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

type yamlChunk struct {
	text []byte
	line int // 1-based line of the chunk's first line
}

// yamlChunks splits YAML text at document separators: a line that is "---",
// optionally followed by spaces and a comment (as Kubernetes' YAML reader).
func yamlChunks(data []byte) []yamlChunk {
	var chunks []yamlChunk
	var cur bytes.Buffer
	start, line := 1, 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), MaxManifestSize+1)
	for sc.Scan() {
		line++
		l := sc.Bytes()
		if isSeparator(l) {
			chunks = append(chunks, yamlChunk{text: append([]byte(nil), cur.Bytes()...), line: start})
			cur.Reset()
			start = line + 1
			continue
		}
		cur.Write(l)
		cur.WriteByte('\n')
	}
	chunks = append(chunks, yamlChunk{text: append([]byte(nil), cur.Bytes()...), line: start})
	return chunks
}

func isSeparator(l []byte) bool {
	if !bytes.HasPrefix(l, []byte("---")) {
		return false
	}
	rest := bytes.TrimSpace(l[3:])
	if len(rest) > 0 && rest[0] != '#' {
		return false
	}
	// "---" must be followed by whitespace or nothing ("----" is not a separator).
	return len(l) == 3 || l[3] == ' ' || l[3] == '\t' || l[3] == '\r'
}

// decodeDocument handles one document: an object, a List, or a JSON/YAML array.
func decodeDocument(d document) ([]Object, FieldErrors) {
	switch v := d.value.(type) {
	case []any:
		return decodeItems(d.num, "", v)
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
			objs, ierrs := decodeItems(d.num, "items", items)
			return objs, append(errs, ierrs...)
		}
		obj, errs := decodeObject(d.num, "", v)
		if obj == nil {
			return nil, errs
		}
		return []Object{obj}, errs
	default:
		return nil, FieldErrors{{Doc: d.num, Rule: fmt.Sprintf("want an object with apiVersion and kind, got %s", jsonKind(d.value))}}
	}
}

func decodeItems(doc int, prefix string, items []any) ([]Object, FieldErrors) {
	var out []Object
	var errs FieldErrors
	for i, it := range items {
		p := fmt.Sprintf("%s[%d]", prefix, i)
		m, ok := it.(map[string]any)
		if !ok {
			errs = append(errs, FieldError{Doc: doc, Path: p, Rule: fmt.Sprintf("want an object with apiVersion and kind, got %s", jsonKind(it))})
			continue
		}
		obj, oerrs := decodeObject(doc, p, m)
		errs = append(errs, oerrs...)
		if obj != nil {
			out = append(out, obj)
		}
	}
	return out, errs
}

// decodeObject checks one object against its kind's Go type and decodes it.
func decodeObject(doc int, prefix string, m map[string]any) (Object, FieldErrors) {
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
		return nil, FieldErrors{fe("metadata.namespace", fmt.Sprintf("kind %s is cluster-scoped and takes no namespace", kind))}
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

type walkError struct{ path, rule string }

// walker checks a generic JSON value against a Go type the way
// encoding/json would decode it, but strictly: object keys must match a
// json tag exactly, and every mismatch is recorded with its path.
type walker struct{ errs []walkError }

func (w *walker) fail(path, rule string) { w.errs = append(w.errs, walkError{path, rule}) }

var (
	jsonUnmarshalerType = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()
	rawMessageType      = reflect.TypeOf(json.RawMessage(nil))
)

func (w *walker) walk(v any, t reflect.Type, path string) {
	if v == nil {
		return // null leaves the zero value, as encoding/json does
	}
	if t == rawMessageType {
		return
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshalerType) || t.Implements(jsonUnmarshalerType) {
		w.unmarshaler(v, t, path)
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		w.walk(v, t.Elem(), path)
	case reflect.Interface:
		// any value is accepted
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			w.fail(path, "want an object, got "+jsonKind(v))
			return
		}
		fields := structFields(t)
		keys := sortedKeys(m)
		for _, k := range keys {
			f, ok := fields[k]
			if !ok {
				w.fail(joinPath(path, k), "unknown field")
				continue
			}
			w.walk(m[k], f, joinPath(path, k))
		}
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			w.fail(path, "want an object, got "+jsonKind(v))
			return
		}
		if t.Key().Kind() != reflect.String {
			w.fail(path, "unsupported map key type")
			return
		}
		for _, k := range sortedKeys(m) {
			w.walk(m[k], t.Elem(), path+"["+k+"]")
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			s, ok := v.(string)
			if !ok {
				w.fail(path, "want a base64-encoded string, got "+jsonKind(v))
				return
			}
			if _, err := base64.StdEncoding.DecodeString(s); err != nil {
				w.fail(path, "want a base64-encoded string: "+err.Error())
			}
			return
		}
		fallthrough
	case reflect.Array:
		arr, ok := v.([]any)
		if !ok {
			w.fail(path, "want a list, got "+jsonKind(v))
			return
		}
		if t.Kind() == reflect.Array && len(arr) > t.Len() {
			w.fail(path, fmt.Sprintf("want at most %d items", t.Len()))
		}
		for i, e := range arr {
			w.walk(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			w.fail(path, "want a string, got "+jsonKind(v)+quoteHint(v))
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			w.fail(path, "want true or false, got "+jsonKind(v))
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			w.fail(path, "want an integer, got "+jsonKind(v))
			return
		}
		if _, err := strconv.ParseInt(string(n), 10, t.Bits()); err != nil {
			w.fail(path, fmt.Sprintf("want an integer that fits in %d bits, got %s", t.Bits(), n))
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := v.(json.Number)
		if !ok {
			w.fail(path, "want a non-negative integer, got "+jsonKind(v))
			return
		}
		if _, err := strconv.ParseUint(string(n), 10, t.Bits()); err != nil {
			w.fail(path, fmt.Sprintf("want a non-negative integer that fits in %d bits, got %s", t.Bits(), n))
		}
	case reflect.Float32, reflect.Float64:
		n, ok := v.(json.Number)
		if !ok {
			w.fail(path, "want a number, got "+jsonKind(v))
			return
		}
		if _, err := strconv.ParseFloat(string(n), t.Bits()); err != nil {
			w.fail(path, "want a number in range, got "+string(n))
		}
	default:
		w.fail(path, "field of unsupported type "+t.String())
	}
}

// unmarshaler decodes v with the type's own UnmarshalJSON and reports its error.
func (w *walker) unmarshaler(v any, t reflect.Type, path string) {
	raw, err := json.Marshal(v)
	if err != nil {
		w.fail(path, err.Error())
		return
	}
	target := reflect.New(t)
	var u json.Unmarshaler
	if t.Kind() == reflect.Pointer {
		target.Elem().Set(reflect.New(t.Elem()))
		u, _ = target.Elem().Interface().(json.Unmarshaler)
	} else {
		u, _ = target.Interface().(json.Unmarshaler)
	}
	if u == nil {
		return
	}
	if err := u.UnmarshalJSON(raw); err != nil {
		w.fail(path, err.Error())
	}
}

// structFields maps JSON names to field types the way encoding/json does:
// json tags name fields, "-" hides them, and anonymous struct fields
// without a name (json:",inline" or no tag) are flattened into the parent.
func structFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	var collect func(t reflect.Type, depth int)
	collect = func(t reflect.Type, depth int) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			if f.Anonymous && name == "" {
				ft := f.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					collect(ft, depth+1)
					continue
				}
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			// A shallower field wins over a promoted one, as in encoding/json.
			if _, dup := out[name]; dup && depth > 0 {
				continue
			}
			out[name] = f.Type
		}
	}
	collect(t, 0)
	return out
}

func joinPath(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func jsonKind(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean (" + strconv.FormatBool(x) + ")"
	case json.Number:
		return "a number (" + string(x) + ")"
	default:
		return fmt.Sprintf("%T", v)
	}
}

func quoteHint(v any) string {
	switch v.(type) {
	case bool, json.Number:
		return `; quote the value in YAML (unquoted yes/no/on/off/true/false and numbers are not strings)`
	}
	return ""
}
