package api

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// The walker: strict checking of a decoded JSON value against the Go type
// it will be decoded into, before encoding/json does it. walk dispatches
// on the type's kind; each kind has its own function below.

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

// walk checks v (maps, slices, strings, json.Number, bools, nil) against
// t at path, recording every mismatch in w. null and json.RawMessage
// accept anything; a type with its own UnmarshalJSON is judged by it;
// every other type is judged by the function for its kind. (A switch, not
// a table: the composite kinds call walk again, and a package-level table
// of functions that refer back to it would be an initialisation cycle.)
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
		w.object(v, t, path)
	case reflect.Map:
		w.mapOf(v, t, path)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			w.bytes(v, path)
		} else {
			w.list(v, t, path)
		}
	case reflect.Array:
		w.list(v, t, path)
	case reflect.String:
		w.str(v, path)
	case reflect.Bool:
		w.boolean(v, path)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		w.integer(v, t, path)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		w.unsigned(v, t, path)
	case reflect.Float32, reflect.Float64:
		w.float(v, t, path)
	default:
		w.fail(path, "field of unsupported type "+t.String())
	}
}

// object checks a struct: v must be an object whose keys are the
// struct's JSON field names (structFields), each value checked against its
// field's type, in key order.
func (w *walker) object(v any, t reflect.Type, path string) {
	m, ok := v.(map[string]any)
	if !ok {
		w.fail(path, "want an object, got "+jsonKind(v))
		return
	}
	fields := structFields(t)
	for _, k := range sortedKeys(m) {
		f, ok := fields[k]
		if !ok {
			w.fail(joinPath(path, k), "unknown field")
			continue
		}
		w.walk(m[k], f, joinPath(path, k))
	}
}

// mapOf checks a map with string keys: v must be an object, each value
// checked against the element type at path[key], in key order.
func (w *walker) mapOf(v any, t reflect.Type, path string) {
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
}

// bytes checks a []byte: v must be a standard base64 string.
func (w *walker) bytes(v any, path string) {
	s, ok := v.(string)
	if !ok {
		w.fail(path, "want a base64-encoded string, got "+jsonKind(v))
		return
	}
	if _, err := base64.StdEncoding.DecodeString(s); err != nil {
		w.fail(path, "want a base64-encoded string: "+err.Error())
	}
}

// list checks a slice or an array: v must be a list (no longer than the
// array), each item checked against the element type at path[i].
func (w *walker) list(v any, t reflect.Type, path string) {
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
}

// str checks a string; a YAML scalar that did not stay a string gets a
// hint to quote it.
func (w *walker) str(v any, path string) {
	if _, ok := v.(string); !ok {
		w.fail(path, "want a string, got "+jsonKind(v)+quoteHint(v))
	}
}

// boolean checks a bool.
func (w *walker) boolean(v any, path string) {
	if _, ok := v.(bool); !ok {
		w.fail(path, "want true or false, got "+jsonKind(v))
	}
}

// integer checks a signed integer that fits t's size.
func (w *walker) integer(v any, t reflect.Type, path string) {
	n, ok := v.(json.Number)
	if !ok {
		w.fail(path, "want an integer, got "+jsonKind(v))
		return
	}
	if _, err := strconv.ParseInt(string(n), 10, t.Bits()); err != nil {
		w.fail(path, fmt.Sprintf("want an integer that fits in %d bits, got %s", t.Bits(), n))
	}
}

// unsigned checks a non-negative integer that fits t's size.
func (w *walker) unsigned(v any, t reflect.Type, path string) {
	n, ok := v.(json.Number)
	if !ok {
		w.fail(path, "want a non-negative integer, got "+jsonKind(v))
		return
	}
	if _, err := strconv.ParseUint(string(n), 10, t.Bits()); err != nil {
		w.fail(path, fmt.Sprintf("want a non-negative integer that fits in %d bits, got %s", t.Bits(), n))
	}
}

// float checks a number within t's range.
func (w *walker) float(v any, t reflect.Type, path string) {
	n, ok := v.(json.Number)
	if !ok {
		w.fail(path, "want a number, got "+jsonKind(v))
		return
	}
	if _, err := strconv.ParseFloat(string(n), t.Bits()); err != nil {
		w.fail(path, "want a number in range, got "+string(n))
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
