package metrics

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the table in docs/reference/metrics.md")

// The source trees whose non-test files emit metrics.
var sourceDirs = []string{"core", "adapters", "internal", "cmd", "functions"}

// metricName is what a metric name looks like (at least one underscore:
// the wrappers' other string arguments, operation names, have none or
// are CamelCase).
var metricName = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-zA-Z0-9]+)+$`)

// emission is one place a metric name is emitted.
type emission struct {
	name, typ string
	labels    []string // nil: not known at the call site
	at        string
}

// scan parses every non-test Go file under root's sourceDirs and returns
// the metric names passed to Inc and Observe (or to a package's inc
// wrapper), resolved through string constants, and the names of string
// constants called Metric*; unresolvable arguments are returned as errors.
func scan(t *testing.T, root string) (calls []emission, consts map[string]string, problems []string) {
	t.Helper()
	fset := token.NewFileSet()
	type file struct {
		f   *ast.File
		pkg string
	}
	var files []file
	for _, d := range sourceDirs {
		err := filepath.WalkDir(filepath.Join(root, d), func(p string, e os.DirEntry, err error) error {
			if os.IsNotExist(err) && p == filepath.Join(root, d) {
				return filepath.SkipDir
			}
			if err != nil {
				return err
			}
			if e.IsDir() && (e.Name() == "testdata" || e.Name() == "node_modules") {
				return filepath.SkipDir
			}
			if e.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, p, nil, 0)
			if err != nil {
				return err
			}
			files = append(files, file{f, f.Name.Name})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// String constants by package name and constant name.
	strConsts := map[string]string{}
	consts = map[string]string{} // Metric* constants: value -> where
	for _, fl := range files {
		for _, decl := range fl.f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					v, _ := strconv.Unquote(lit.Value)
					strConsts[fl.pkg+"."+n.Name] = v
					if strings.HasPrefix(n.Name, "Metric") && metricName.MatchString(v) {
						consts[v] = fset.Position(n.Pos()).String()
					}
				}
			}
		}
	}
	for _, fl := range files {
		var enclosing *ast.FuncDecl
		ast.Inspect(fl.f, func(n ast.Node) bool {
			if fd, ok := n.(*ast.FuncDecl); ok {
				enclosing = fd
			}
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			var fn string
			switch f := call.Fun.(type) {
			case *ast.SelectorExpr:
				fn = f.Sel.Name
			case *ast.Ident:
				fn = f.Name
			}
			if fn != "Inc" && fn != "Observe" && fn != "inc" || fn == "Observe" && len(call.Args) < 2 {
				return true // Observe(name, value, labels...) has two arguments at least
			}
			at := fset.Position(call.Pos()).String()
			var name string
			switch a := call.Args[0].(type) {
			case *ast.BasicLit:
				if a.Kind != token.STRING {
					return true
				}
				name, _ = strconv.Unquote(a.Value)
				if fn == "inc" && !metricName.MatchString(name) {
					return true // a wrapper's operation argument, not a name
				}
			case *ast.Ident:
				if v, ok := strConsts[fl.pkg+"."+a.Name]; ok {
					name = v
				} else if enclosing != nil && (enclosing.Name.Name == "inc" || enclosing.Name.Name == "Inc" || enclosing.Name.Name == "Observe") {
					return true // a wrapper passing its parameter on; its callers are scanned
				} else {
					problems = append(problems, at+": metric name "+a.Name+" is neither a string constant nor a wrapper's parameter")
					return true
				}
			case *ast.SelectorExpr:
				pkg, ok := a.X.(*ast.Ident)
				v, found := "", false
				if ok {
					v, found = strConsts[pkg.Name+"."+a.Sel.Name]
				}
				if !found {
					problems = append(problems, at+": metric name is not a string constant")
					return true
				}
				name = v
			default:
				problems = append(problems, at+": metric name is not a string constant")
				return true
			}
			e := emission{name: name, typ: Counter, at: at}
			rest := call.Args[1:]
			if fn == "Observe" {
				e.typ = Summary
				if len(rest) > 0 {
					rest = rest[1:]
				}
			}
			if fn != "inc" && !call.Ellipsis.IsValid() {
				e.labels = []string{}
				for i := 0; i < len(rest); i += 2 {
					lit, ok := rest[i].(*ast.BasicLit)
					if !ok {
						e.labels = nil
						break
					}
					k, _ := strconv.Unquote(lit.Value)
					e.labels = append(e.labels, k)
				}
			}
			calls = append(calls, e)
			return true
		})
	}
	return calls, consts, problems
}

// Every metric the code emits has its row in Catalog, with the type of
// its call sites (Inc: counter, Observe: summary, a Metric* constant
// never passed to either: gauge) and their labels; every row is emitted
// somewhere; and the scan itself finds names through each of its paths
// (a literal, a constant of the package, another package's constant, a
// wrapper's literal, a gauge's constant).
func TestCatalogCoversEmittedMetrics(t *testing.T) {
	calls, consts, problems := scan(t, "../..")
	for _, p := range problems {
		t.Error(p)
	}
	emitted := map[string]bool{}
	for _, e := range calls {
		emitted[e.name] = true
		d, ok := Lookup(e.name)
		if !ok {
			t.Errorf("%s: %s is emitted but has no row in metrics.Catalog (its HELP text)", e.at, e.name)
			continue
		}
		if d.Type != e.typ {
			t.Errorf("%s: %s is emitted as a %s, the catalog says %s", e.at, e.name, e.typ, d.Type)
		}
		if e.labels != nil {
			got, want := slices.Clone(e.labels), slices.Clone(d.Labels)
			sort.Strings(got)
			sort.Strings(want)
			if !slices.Equal(got, want) {
				t.Errorf("%s: %s is emitted with labels %q, the catalog says %q", e.at, e.name, e.labels, d.Labels)
			}
		}
	}
	for name, at := range consts {
		d, ok := Lookup(name)
		switch {
		case !ok:
			t.Errorf("%s: metric %s has no row in metrics.Catalog", at, name)
		case !emitted[name] && d.Type != Gauge:
			t.Errorf("%s: %s is never passed to Inc or Observe, so it is a gauge; the catalog says %s", at, name, d.Type)
		}
		emitted[name] = true
	}
	for _, d := range Catalog {
		if !emitted[d.Name] {
			t.Errorf("catalog row %s: nothing emits it", d.Name)
		}
		if d.Help == "" || strings.Contains(d.Help, "\n") || d.Where == "" {
			t.Errorf("catalog row %s: help %q, where %q: want one line and the deployments", d.Name, d.Help, d.Where)
		}
		if !metricName.MatchString(d.Name) {
			t.Errorf("catalog row %q is not a metric name", d.Name)
		}
	}
	// The scan's paths, each seen at least once.
	for _, want := range []string{
		"certfn_reconciles_total",             // a literal (core/kernel)
		"certfn_notifications_total",          // a constant of the package (core/certificates)
		"certfn_handoffs_total",               // a wrapper's literal (core/app's inc)
		"certfn_requests_signed_total",        // a literal with labels (core/certificaterequests)
		"policy_approval_outcomes_total",      // a constant (core/policy)
		"certfn_certificate_expiry_seconds",   // Observe
		"certfn_last_sweep_timestamp_seconds", // a gauge's constant (internal/localmode)
	} {
		if !emitted[want] {
			t.Errorf("the scan did not find %s: it misses a path", want)
		}
	}
	if len(calls) < 50 {
		t.Errorf("the scan found %d call sites: the source was not read", len(calls))
	}
}

// A call site whose name the scan cannot resolve, a name missing from the
// catalog and a type mismatch are reported (the scan can fail).
func TestScanReportsProblems(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "core", "x")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := `package x
const MetricGauge = "certfn_reconciles_total"
func f(m interface{ Inc(string, ...string); Observe(string, float64, ...string) }, name string) {
	m.Inc("certfn_not_in_the_catalog_total", "a", "b")
	m.Observe("certfn_sweeps_total", 1)
	m.Inc(name)
}
`
	if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	calls, consts, problems := scan(t, root)
	if len(problems) != 1 || !strings.Contains(problems[0], "neither a string constant nor a wrapper's parameter") {
		t.Errorf("problems %q, want the unresolved name", problems)
	}
	if len(calls) != 2 || calls[0].name != "certfn_not_in_the_catalog_total" || !slices.Equal(calls[0].labels, []string{"a"}) ||
		calls[1].typ != Summary {
		t.Errorf("calls %+v", calls)
	}
	if _, ok := Lookup(calls[0].name); ok {
		t.Error("a made-up name is in the catalog")
	}
	if d, _ := Lookup(calls[1].name); d.Type == calls[1].typ {
		t.Error("the Observe of a counter is not a type mismatch")
	}
	if _, ok := consts["certfn_reconciles_total"]; !ok {
		t.Errorf("consts %v lack MetricGauge's value", consts)
	}
}

const (
	tableBegin = "<!-- metrics table: generated from core/metrics.Catalog; `go test ./core/metrics -update` rewrites it -->\n"
	tableEnd   = "<!-- end of the metrics table -->"
)

// docs/reference/metrics.md holds Markdown() between its markers.
func TestReferencePageMatchesCatalog(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "reference", "metrics.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, tableBegin), strings.Index(doc, tableEnd)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the markers %q … %q", path, tableBegin, tableEnd)
	}
	got, want := doc[i+len(tableBegin):j], Markdown()
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(doc[:i+len(tableBegin)]+want+doc[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's table differs from metrics.Catalog; run `go test ./core/metrics -update`", path)
}
