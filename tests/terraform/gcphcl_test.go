package terraform_test

// A small, offline evaluator of Terraform configurations for the checks of
// infra/terraform/gcp (gcp_test.go): no google provider exists on these
// machines, so `terraform validate` and `plan` cannot run for it. The
// evaluator parses the .tf files with hcl/v2, evaluates variables (defaults
// with optional() attributes, plus overrides), locals, count and for_each,
// attributes and nested and dynamic blocks with the Terraform functions the
// module uses. What only the provider or the cloud knows (resource
// attributes such as a service's uri, data sources) is unknown; the module
// builds every name its IAM grants use from inputs (main.tf), so grants,
// conditions and names evaluate to known values.
//
// It is not Terraform: it checks no provider schema (attribute names,
// nested block shapes and value ranges are the provider's to refuse), and
// it implements only the functions listed in tfFunctions.

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// tfConfig is one parsed Terraform module (the .tf files of a directory).
type tfConfig struct {
	dir       string
	files     map[string]*hclsyntax.Body
	variables map[string]*hclsyntax.Block
	locals    map[string]*hclsyntax.Attribute
	outputs   map[string]*hclsyntax.Block
	resources []*hclsyntax.Block // resource and data blocks
	modules   map[string]*hclsyntax.Block
	other     []*hclsyntax.Block // terraform, provider
}

// topLevelBlocks are the block types a Terraform file may hold, with their
// label counts.
var topLevelBlocks = map[string]int{
	"terraform": 0, "provider": 1, "variable": 1, "output": 1, "locals": 0,
	"module": 1, "resource": 2, "data": 2, "moved": 0, "import": 0, "check": 1, "removed": 0,
}

// parseTF parses every .tf file of dir (not its subdirectories).
func parseTF(t *testing.T, dir string) *tfConfig {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no .tf files in %s (%v)", dir, err)
	}
	sort.Strings(names)
	c := &tfConfig{dir: dir, files: map[string]*hclsyntax.Body{}, variables: map[string]*hclsyntax.Block{},
		locals: map[string]*hclsyntax.Attribute{}, outputs: map[string]*hclsyntax.Block{}, modules: map[string]*hclsyntax.Block{}}
	p := hclparse.NewParser()
	for _, name := range names {
		f, diags := p.ParseHCLFile(name)
		if diags.HasErrors() {
			t.Fatalf("parse %s: %s", name, diags.Error())
		}
		body := f.Body.(*hclsyntax.Body)
		c.files[filepath.Base(name)] = body
		if len(body.Attributes) > 0 {
			for n, a := range body.Attributes {
				t.Errorf("%s: top-level attribute %s (%s) is not Terraform", name, n, a.SrcRange)
			}
		}
		for _, b := range body.Blocks {
			want, ok := topLevelBlocks[b.Type]
			if !ok {
				t.Errorf("%s: unknown top-level block %q", b.DefRange(), b.Type)
				continue
			}
			if len(b.Labels) != want {
				t.Errorf("%s: %s block with %d labels, want %d", b.DefRange(), b.Type, len(b.Labels), want)
				continue
			}
			switch b.Type {
			case "variable":
				if c.variables[b.Labels[0]] != nil {
					t.Errorf("%s: variable %s declared twice", b.DefRange(), b.Labels[0])
				}
				c.variables[b.Labels[0]] = b
			case "output":
				if c.outputs[b.Labels[0]] != nil {
					t.Errorf("%s: output %s declared twice", b.DefRange(), b.Labels[0])
				}
				c.outputs[b.Labels[0]] = b
			case "locals":
				for n, a := range b.Body.Attributes {
					if c.locals[n] != nil {
						t.Errorf("%s: local %s declared twice", a.SrcRange, n)
					}
					c.locals[n] = a
				}
			case "resource", "data":
				for _, r := range c.resources {
					if r.Type == b.Type && r.Labels[0] == b.Labels[0] && r.Labels[1] == b.Labels[1] {
						t.Errorf("%s: %s %s.%s declared twice", b.DefRange(), b.Type, b.Labels[0], b.Labels[1])
					}
				}
				c.resources = append(c.resources, b)
			case "module":
				c.modules[b.Labels[0]] = b
			default:
				c.other = append(c.other, b)
			}
		}
	}
	return c
}

// resource returns the resource (mode "resource" or "data") type.name, or
// nil.
func (c *tfConfig) resource(mode, typ, name string) *hclsyntax.Block {
	for _, r := range c.resources {
		if r.Type == mode && r.Labels[0] == typ && r.Labels[1] == name {
			return r
		}
	}
	return nil
}

// tfFunctions are the Terraform functions the evaluator knows.
func tfFunctions() map[string]function.Function {
	return map[string]function.Function{
		"alltrue":      allTrueFunc,
		"base64encode": base64EncodeFunc,
		"can":          tryfunc.CanFunc,
		"concat":       stdlib.ConcatFunc,
		"contains":     stdlib.ContainsFunc,
		"distinct":     stdlib.DistinctFunc,
		"floor":        stdlib.FloorFunc,
		"join":         stdlib.JoinFunc,
		"jsonencode":   stdlib.JSONEncodeFunc,
		"keys":         stdlib.KeysFunc,
		"length":       lengthFunc,
		"lower":        stdlib.LowerFunc,
		"max":          stdlib.MaxFunc,
		"merge":        stdlib.MergeFunc,
		"min":          stdlib.MinFunc,
		"regex":        stdlib.RegexFunc,
		"replace":      stdlib.ReplaceFunc,
		"split":        stdlib.SplitFunc,
		"templatefile": templateFileUnsupported,
		"tolist":       stdlib.MakeToFunc(cty.List(cty.DynamicPseudoType)),
		"toset":        stdlib.MakeToFunc(cty.Set(cty.DynamicPseudoType)),
		"tostring":     stdlib.MakeToFunc(cty.String),
		"trimspace":    stdlib.TrimSpaceFunc,
		"try":          tryfunc.TryFunc,
		"values":       stdlib.ValuesFunc,
	}
}

var allTrueFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "list", Type: cty.List(cty.Bool)}},
	Type:   function.StaticReturnType(cty.Bool),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		result := cty.True
		for it := args[0].ElementIterator(); it.Next(); {
			_, v := it.Element()
			if !v.IsKnown() {
				return cty.UnknownVal(cty.Bool), nil
			}
			if v.IsNull() || v.False() {
				result = cty.False
			}
		}
		return result, nil
	},
})

// lengthFunc is Terraform's length: characters of a string, elements of a
// collection.
var lengthFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "value", Type: cty.DynamicPseudoType, AllowDynamicType: true, AllowUnknown: true}},
	Type:   function.StaticReturnType(cty.Number),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		if args[0].Type() == cty.String {
			return stdlib.Strlen(args[0])
		}
		return stdlib.Length(args[0])
	},
})

var base64EncodeFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "str", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		return cty.StringVal(base64.StdEncoding.EncodeToString([]byte(args[0].AsString()))), nil
	},
})

// templatefile reads files relative to the module; the example's manifests
// are not what these tests check, so its result is unknown.
var templateFileUnsupported = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "path", Type: cty.String}, {Name: "vars", Type: cty.DynamicPseudoType}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func([]cty.Value, cty.Type) (cty.Value, error) {
		return cty.UnknownVal(cty.String), nil
	},
})

// tfEval is a configuration evaluated with one set of input variables.
type tfEval struct {
	t    *testing.T
	c    *tfConfig
	vars map[string]cty.Value
	// locals holds every local (unknown when it depends on a provider).
	locals map[string]cty.Value
	ctx    *hcl.EvalContext
}

// evaluate evaluates c with the given variables (HCL values, converted to
// each variable's type; variables not given take their default). A
// variable without default that is not given fails the test.
func (c *tfConfig) evaluate(t *testing.T, vars map[string]cty.Value) *tfEval {
	t.Helper()
	for n := range vars {
		if c.variables[n] == nil {
			t.Fatalf("%s: no variable %q", c.dir, n)
		}
	}
	e := &tfEval{t: t, c: c, vars: map[string]cty.Value{}, locals: map[string]cty.Value{}}
	for name, b := range c.variables {
		v, err := c.variableValue(name, b, vars)
		if err != nil {
			t.Fatalf("variable %s: %v", name, err)
		}
		e.vars[name] = v
	}
	// Resources and data sources are unknown: their attributes are the
	// provider's.
	roots := map[string]cty.Value{
		"var":       cty.ObjectVal(e.vars),
		"data":      cty.DynamicVal,
		"module":    cty.DynamicVal,
		"path":      cty.ObjectVal(map[string]cty.Value{"module": cty.StringVal(c.dir), "root": cty.StringVal(c.dir), "cwd": cty.StringVal(c.dir)}),
		"terraform": cty.ObjectVal(map[string]cty.Value{"workspace": cty.StringVal("default")}),
	}
	for _, r := range c.resources {
		if r.Type == "resource" {
			roots[r.Labels[0]] = cty.DynamicVal
		}
	}
	e.ctx = &hcl.EvalContext{Variables: roots, Functions: tfFunctions()}
	e.evalLocals()
	return e
}

// variableValue returns the value of variable name: the given one or the
// default, with optional attributes' defaults applied and converted to the
// variable's type.
func (c *tfConfig) variableValue(name string, b *hclsyntax.Block, given map[string]cty.Value) (cty.Value, error) {
	ty := cty.DynamicPseudoType
	var defaults *typeexpr.Defaults
	if a := b.Body.Attributes["type"]; a != nil {
		var diags hcl.Diagnostics
		ty, defaults, diags = typeexpr.TypeConstraintWithDefaults(a.Expr)
		if diags.HasErrors() {
			return cty.NilVal, fmt.Errorf("type: %s", diags.Error())
		}
	}
	v, ok := given[name]
	if !ok {
		a := b.Body.Attributes["default"]
		if a == nil {
			return cty.NilVal, fmt.Errorf("required (no default) and not given")
		}
		var diags hcl.Diagnostics
		v, diags = a.Expr.Value(nil)
		if diags.HasErrors() {
			return cty.NilVal, fmt.Errorf("default: %s", diags.Error())
		}
	}
	if defaults != nil && !v.IsNull() {
		v = defaults.Apply(v)
	}
	out, err := convert.Convert(v, ty)
	if err != nil {
		return cty.NilVal, fmt.Errorf("value %#v does not convert to %s: %v", v, typeexpr.TypeString(ty), err)
	}
	return out, nil
}

// evalLocals evaluates every local in dependency order.
func (e *tfEval) evalLocals() {
	e.t.Helper()
	pending := map[string]*hclsyntax.Attribute{}
	for n, a := range e.c.locals {
		pending[n] = a
	}
	for len(pending) > 0 {
		progress := false
		names := make([]string, 0, len(pending))
		for n := range pending {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			a := pending[n]
			ready := true
			for _, tr := range a.Expr.Variables() {
				if tr.RootName() != "local" || len(tr) < 2 {
					continue
				}
				attr, ok := tr[1].(hcl.TraverseAttr)
				if !ok {
					continue
				}
				if _, wait := pending[attr.Name]; wait {
					ready = false
				}
				if e.c.locals[attr.Name] == nil {
					e.t.Fatalf("%s: local.%s is not declared", a.SrcRange, attr.Name)
				}
			}
			if !ready {
				continue
			}
			e.ctx.Variables["local"] = cty.ObjectVal(e.locals)
			v, diags := a.Expr.Value(e.ctx)
			if diags.HasErrors() {
				e.t.Fatalf("local.%s: %s", n, diags.Error())
			}
			e.locals[n] = v
			delete(pending, n)
			progress = true
		}
		if !progress {
			e.t.Fatalf("locals depend on each other in a cycle: %v", names)
		}
	}
	e.ctx.Variables["local"] = cty.ObjectVal(e.locals)
}

// local returns local.name.
func (e *tfEval) local(name string) cty.Value {
	e.t.Helper()
	v, ok := e.locals[name]
	if !ok {
		e.t.Fatalf("no local %q", name)
	}
	return v
}

// expr evaluates an expression in the module's context plus extra
// variables.
func (e *tfEval) expr(x hcl.Expression, extra map[string]cty.Value) cty.Value {
	e.t.Helper()
	v, diags := x.Value(e.child(extra))
	if diags.HasErrors() {
		e.t.Fatalf("%s: %s", x.Range(), diags.Error())
	}
	return v
}

func (e *tfEval) child(extra map[string]cty.Value) *hcl.EvalContext {
	if len(extra) == 0 {
		return e.ctx
	}
	ctx := e.ctx.NewChild()
	ctx.Variables = extra
	return ctx
}

// tfBody is an evaluated block body: attributes and nested blocks, with
// dynamic blocks expanded.
type tfBody struct {
	Attrs  map[string]cty.Value
	Exprs  map[string]hcl.Expression // the attributes' expressions
	Blocks []*tfBlock
}

type tfBlock struct {
	Type   string
	Labels []string
	Body   *tfBody
}

// String renders the known attributes and the nested block types (for
// failure messages).
func (b *tfBody) String() string {
	if b == nil {
		return "<absent>"
	}
	names := make([]string, 0, len(b.Attrs))
	for n := range b.Attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		v := b.Attrs[n]
		s := "(unknown)"
		if v.IsWhollyKnown() {
			if str, err := convert.Convert(v, cty.String); err == nil && !str.IsNull() {
				s = fmt.Sprintf("%q", str.AsString())
			} else {
				s = v.GoString()
			}
		}
		parts = append(parts, n+"="+s)
	}
	for _, x := range b.Blocks {
		parts = append(parts, x.Type+"{...}")
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// blocks returns the nested blocks of type typ.
func (b *tfBody) blocks(typ string) []*tfBlock {
	var out []*tfBlock
	for _, x := range b.Blocks {
		if x.Type == typ {
			out = append(out, x)
		}
	}
	return out
}

// block returns the only nested block of type typ, or nil if there is
// none; more than one fails the test.
func (b *tfBody) block(t *testing.T, typ string) *tfBody {
	t.Helper()
	bs := b.blocks(typ)
	switch len(bs) {
	case 0:
		return nil
	case 1:
		return bs[0].Body
	}
	t.Fatalf("%d %s blocks, want at most one", len(bs), typ)
	return nil
}

// str returns a known string attribute ("" when absent or null); an
// unknown one fails the test.
func (b *tfBody) str(t *testing.T, name string) string {
	t.Helper()
	v, ok := b.Attrs[name]
	if !ok || v.IsNull() {
		return ""
	}
	if !v.IsWhollyKnown() {
		t.Fatalf("attribute %s is unknown before apply", name)
	}
	s, err := convert.Convert(v, cty.String)
	if err != nil {
		t.Fatalf("attribute %s: %v", name, err)
	}
	return s.AsString()
}

// metaArguments are the attributes evaluated by Terraform itself, not
// passed to the provider.
var metaArguments = map[string]bool{"count": true, "for_each": true, "depends_on": true, "provider": true}

// evalBody evaluates a block body with extra variables (each, count, a
// dynamic block's iterator).
func (e *tfEval) evalBody(body *hclsyntax.Body, extra map[string]cty.Value) *tfBody {
	e.t.Helper()
	out := &tfBody{Attrs: map[string]cty.Value{}, Exprs: map[string]hcl.Expression{}}
	for n, a := range body.Attributes {
		if metaArguments[n] {
			continue
		}
		out.Attrs[n] = e.expr(a.Expr, extra)
		out.Exprs[n] = a.Expr
	}
	for _, b := range body.Blocks {
		switch b.Type {
		case "lifecycle":
			continue
		case "dynamic":
			out.Blocks = append(out.Blocks, e.expandDynamic(b, extra)...)
		default:
			out.Blocks = append(out.Blocks, &tfBlock{Type: b.Type, Labels: b.Labels, Body: e.evalBody(b.Body, extra)})
		}
	}
	return out
}

// expandDynamic expands a dynamic block: one block per element of its
// for_each, its content evaluated with the iterator (the block's label, or
// its iterator attribute) bound to {key, value}.
func (e *tfEval) expandDynamic(b *hclsyntax.Block, extra map[string]cty.Value) []*tfBlock {
	e.t.Helper()
	if len(b.Labels) != 1 {
		e.t.Fatalf("%s: dynamic block without a label", b.DefRange())
	}
	fe := b.Body.Attributes["for_each"]
	if fe == nil {
		e.t.Fatalf("%s: dynamic %q without for_each", b.DefRange(), b.Labels[0])
	}
	iter := b.Labels[0]
	if a := b.Body.Attributes["iterator"]; a != nil {
		iter = hcl.ExprAsKeyword(a.Expr)
	}
	var content *hclsyntax.Block
	for _, c := range b.Body.Blocks {
		if c.Type == "content" {
			content = c
		}
	}
	if content == nil {
		e.t.Fatalf("%s: dynamic %q without content", b.DefRange(), b.Labels[0])
	}
	coll := e.expr(fe.Expr, extra)
	if !coll.IsWhollyKnown() {
		e.t.Fatalf("%s: dynamic %q: for_each is unknown before apply", b.DefRange(), b.Labels[0])
	}
	var out []*tfBlock
	for it := coll.ElementIterator(); it.Next(); {
		k, v := it.Element()
		if coll.Type().IsSetType() {
			k = v
		}
		vars := map[string]cty.Value{}
		for n, x := range extra {
			vars[n] = x
		}
		vars[iter] = cty.ObjectVal(map[string]cty.Value{"key": k, "value": v})
		out = append(out, &tfBlock{Type: b.Labels[0], Body: e.evalBody(content.Body, vars)})
	}
	return out
}

// tfInstance is one instance of a resource: its key ("" when it has
// neither count nor for_each, the for_each key, or the count index) and
// its evaluated body.
type tfInstance struct {
	Key  string
	Body *tfBody
}

// instances evaluates the resource (mode "resource" or "data") type.name:
// its count or for_each, then each instance's body. A resource that is
// not declared fails the test.
func (e *tfEval) instances(mode, typ, name string) []tfInstance {
	e.t.Helper()
	r := e.c.resource(mode, typ, name)
	if r == nil {
		e.t.Fatalf("%s: no %s %s.%s", e.c.dir, mode, typ, name)
	}
	return e.instancesOf(r)
}

// instancesOf evaluates the instances of resource block r, in key order.
func (e *tfEval) instancesOf(r *hclsyntax.Block) []tfInstance {
	e.t.Helper()
	id := r.Labels[0] + "." + r.Labels[1]
	if a := r.Body.Attributes["count"]; a != nil {
		v := e.expr(a.Expr, nil)
		if !v.IsKnown() || v.IsNull() {
			e.t.Fatalf("%s: count is unknown before apply", id)
		}
		n, _ := v.AsBigFloat().Int64()
		var out []tfInstance
		for i := int64(0); i < n; i++ {
			out = append(out, tfInstance{Key: fmt.Sprint(i), Body: e.evalBody(r.Body, map[string]cty.Value{
				"count": cty.ObjectVal(map[string]cty.Value{"index": cty.NumberIntVal(i)}),
			})})
		}
		return out
	}
	if a := r.Body.Attributes["for_each"]; a != nil {
		coll := e.expr(a.Expr, nil)
		if !coll.IsWhollyKnown() {
			e.t.Fatalf("%s: for_each is unknown before apply (keys must be known at plan time)", id)
		}
		ty := coll.Type()
		if !(ty.IsMapType() || ty.IsObjectType() || (ty.IsSetType() && ty.ElementType() == cty.String)) {
			e.t.Fatalf("%s: for_each must be a map, an object or a set of strings, not %s", id, ty.FriendlyName())
		}
		var out []tfInstance
		for it := coll.ElementIterator(); it.Next(); {
			k, v := it.Element()
			if ty.IsSetType() {
				k = v
			}
			out = append(out, tfInstance{Key: k.AsString(), Body: e.evalBody(r.Body, map[string]cty.Value{
				"each": cty.ObjectVal(map[string]cty.Value{"key": k, "value": v}),
			})})
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
		return out
	}
	return []tfInstance{{Body: e.evalBody(r.Body, nil)}}
}

// byKey returns the instances keyed by their key.
func byKey(insts []tfInstance) map[string]*tfBody {
	out := map[string]*tfBody{}
	for _, i := range insts {
		out[i.Key] = i.Body
	}
	return out
}

// traversalNames returns the references of an expression as strings such
// as "google_cloud_run_v2_service.fn" or "local.push_path" (the first two
// steps).
func traversalNames(x hcl.Expression) []string {
	var out []string
	for _, tr := range x.Variables() {
		s := tr.RootName()
		if len(tr) > 1 {
			if a, ok := tr[1].(hcl.TraverseAttr); ok {
				s += "." + a.Name
			}
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// exprSource returns the source text of an expression.
func exprSource(t *testing.T, x hcl.Expression) string {
	t.Helper()
	r := x.Range()
	b, err := os.ReadFile(r.Filename)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(r.SliceBytes(b)))
}

// ctyStrings returns a known list, set or tuple of strings as a slice.
func ctyStrings(t *testing.T, v cty.Value) []string {
	t.Helper()
	if v.IsNull() {
		return nil
	}
	if !v.IsWhollyKnown() {
		t.Fatalf("value is unknown before apply")
	}
	var out []string
	for it := v.ElementIterator(); it.Next(); {
		_, x := it.Element()
		s, err := convert.Convert(x, cty.String)
		if err != nil {
			t.Fatalf("element %#v: %v", x, err)
		}
		out = append(out, s.AsString())
	}
	return out
}

// ctyStringMap returns a known map or object of strings as a Go map.
func ctyStringMap(t *testing.T, v cty.Value) map[string]string {
	t.Helper()
	if !v.IsWhollyKnown() {
		t.Fatalf("value is unknown before apply")
	}
	out := map[string]string{}
	for it := v.ElementIterator(); it.Next(); {
		k, x := it.Element()
		if x.IsNull() {
			continue
		}
		s, err := convert.Convert(x, cty.String)
		if err != nil {
			t.Fatalf("%s: %v", k.AsString(), err)
		}
		out[k.AsString()] = s.AsString()
	}
	return out
}
