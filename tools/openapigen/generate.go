package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/certfn/certfn/adapters/kubeapi"
	"github.com/certfn/certfn/core/api"
)

// Schema is the part of OpenAPI's schema object the definitions use.
type Schema struct {
	Type                 string             `json:"type,omitempty"`
	Format               string             `json:"format,omitempty"`
	Description          string             `json:"description,omitempty"`
	Properties           map[string]*Schema `json:"properties,omitempty"`
	Items                *Schema            `json:"items,omitempty"`
	AdditionalProperties *Schema            `json:"additionalProperties,omitempty"`
	PreserveUnknown      bool               `json:"x-kubernetes-preserve-unknown-fields,omitempty"`
	GVK                  []GVK              `json:"x-kubernetes-group-version-kind,omitempty"`
}

// GVK is one x-kubernetes-group-version-kind entry.
type GVK struct {
	Group   string `json:"group"`
	Kind    string `json:"kind"`
	Version string `json:"version"`
}

// File is the generated file: the definition of each kind by its
// Kubernetes definition name (io.cert-manager.v1.Certificate,
// io.k8s.api.core.v1.Secret).
type File struct {
	Definitions map[string]*Schema `json:"definitions"`
}

// notServed are kinds adapters/kubeapi does not serve.
var notServed = map[string]bool{api.KindChallengeLease: true}

// DefinitionName is adapters/kubeapi's name of a kind's schema.
func DefinitionName(apiVersion, kind string) string { return kubeapi.DefinitionName(apiVersion, kind) }

// Generate builds the file's bytes from core/api under root.
func Generate(root string) ([]byte, error) {
	docs, err := readDocs(filepath.Join(root, "core", "api"))
	if err != nil {
		return nil, err
	}
	g := &gen{docs: docs}
	f := File{Definitions: map[string]*Schema{}}
	for _, info := range api.Kinds() {
		if notServed[info.Kind] {
			continue
		}
		t := reflect.TypeOf(info.New()).Elem()
		s := g.schema(t, nil)
		group, version, ok := strings.Cut(info.APIVersion, "/")
		if !ok {
			group, version = "", info.APIVersion
		}
		s.GVK = []GVK{{Group: group, Kind: info.Kind, Version: version}}
		if s.Description == "" {
			return nil, fmt.Errorf("kind %s: type %s has no doc comment", info.Kind, t.Name())
		}
		f.Definitions[DefinitionName(info.APIVersion, info.Kind)] = s
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", " ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(f); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// readDocs returns the doc comments of core/api's types ("Certificate")
// and struct fields ("CertificateSpec.SecretName").
func readDocs(dir string) (map[string]string, error) {
	fset := token.NewFileSet()
	matches, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	sort.Strings(matches)
	docs := map[string]string{}
	for _, path := range matches {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", path, err)
		}
		for _, decl := range file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				doc := ts.Doc
				if doc == nil && len(gd.Specs) == 1 {
					doc = gd.Doc
				}
				docs[ts.Name.Name] = text(doc)
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				for _, fld := range st.Fields.List {
					d := text(fld.Doc)
					if d == "" {
						d = text(fld.Comment)
					}
					for _, n := range fld.Names {
						docs[ts.Name.Name+"."+n.Name] = d
					}
				}
			}
		}
	}
	return docs, nil
}

func text(cg *ast.CommentGroup) string {
	if cg == nil {
		return ""
	}
	return strings.Join(strings.Fields(cg.Text()), " ")
}

type gen struct{ docs map[string]string }

var (
	timeType     = reflect.TypeOf(api.Time{})
	durationType = reflect.TypeOf(api.Duration{})
	rawType      = reflect.TypeOf(json.RawMessage{})
	apiPkg       = reflect.TypeOf(api.Time{}).PkgPath()
	marshaler    = reflect.TypeOf((*json.Marshaler)(nil)).Elem()
)

// schema is t's schema; seen holds the struct types being expanded (a
// recursive type is left open).
func (g *gen) schema(t reflect.Type, seen []reflect.Type) *Schema {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	doc := ""
	if t.PkgPath() == apiPkg {
		doc = g.docs[t.Name()]
	}
	switch t {
	case timeType:
		return &Schema{Type: "string", Format: "date-time", Description: doc}
	case durationType:
		return &Schema{Type: "string", Description: doc}
	case rawType:
		return &Schema{Type: "object", PreserveUnknown: true}
	}
	if t.Implements(marshaler) || reflect.PointerTo(t).Implements(marshaler) {
		// A type with its own JSON form (a boolean or an object, a list
		// or an object): described, not constrained.
		return &Schema{Description: doc, PreserveUnknown: true}
	}
	switch t.Kind() {
	case reflect.String:
		return &Schema{Type: "string", Description: doc}
	case reflect.Bool:
		return &Schema{Type: "boolean", Description: doc}
	case reflect.Int, reflect.Int64, reflect.Uint64, reflect.Uint:
		return &Schema{Type: "integer", Format: "int64", Description: doc}
	case reflect.Int32, reflect.Int16, reflect.Int8, reflect.Uint32, reflect.Uint16, reflect.Uint8:
		return &Schema{Type: "integer", Format: "int32", Description: doc}
	case reflect.Float32, reflect.Float64:
		return &Schema{Type: "number", Format: "double", Description: doc}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return &Schema{Type: "string", Format: "byte", Description: doc}
		}
		return &Schema{Type: "array", Items: g.schema(t.Elem(), seen), Description: doc}
	case reflect.Map:
		return &Schema{Type: "object", AdditionalProperties: g.schema(t.Elem(), seen), Description: doc}
	case reflect.Interface:
		return &Schema{Description: doc, PreserveUnknown: true}
	case reflect.Struct:
		for _, s := range seen {
			if s == t {
				return &Schema{Type: "object", Description: doc, PreserveUnknown: true}
			}
		}
		s := &Schema{Type: "object", Description: doc, Properties: map[string]*Schema{}}
		g.fields(t, s, append(seen, t))
		return s
	}
	return &Schema{Description: doc, PreserveUnknown: true}
}

// fields adds t's JSON fields to s (embedded and inline structs' fields
// flattened, as encoding/json does).
func (g *gen) fields(t reflect.Type, s *Schema, seen []reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && (name == "" || strings.Contains(","+opts+",", ",inline,")) && ft.Kind() == reflect.Struct {
			g.fields(ft, s, seen)
			continue
		}
		if name == "" {
			name = f.Name
		}
		fs := g.schema(f.Type, seen)
		if d := g.docs[t.Name()+"."+f.Name]; d != "" && t.PkgPath() == apiPkg {
			c := *fs
			c.Description = d
			fs = &c
		}
		s.Properties[name] = fs
	}
}
