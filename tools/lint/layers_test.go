// Package lint holds the repository's structural checks, run by `make lint`
// (and with every other test by `make test`): the layering rule of
// docs/ARCHITECTURE.md, and that no file points at something a reader of
// the repository cannot open (a build machine's path, the numbers of
// documents or issues kept elsewhere).
package lint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// module is the repository's module path.
const module = "github.com/certfn/certfn"

// pkg is what `go list -json` says of one package.
type pkg struct {
	ImportPath string
	Name       string
	Imports    []string
	Deps       []string
}

// listPackages runs `go list -deps=false -json` over the module (the
// production files of each package: what its tests import is not part of
// the layering).
func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Name,Imports,Deps", "./...")
	cmd.Dir = repoRoot(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 50 {
		t.Fatalf("go list found %d packages: is the test running in the repository?", len(pkgs))
	}
	return pkgs
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// rel is path inside the module ("core/api"), or "" for another module.
func rel(path string) string {
	if path == module {
		return "."
	}
	r, ok := strings.CutPrefix(path, module+"/")
	if !ok {
		return ""
	}
	return r
}

// layer is the first folder of a package path inside the module.
func layer(r string) string {
	l, _, _ := strings.Cut(r, "/")
	return l
}

// testSupport reports a package that exists for tests (porttest, certtest,
// awstest, …, and everything under tests/ and tools/): it may start the
// emulators under tests/, which production code never does.
func testSupport(r string) bool {
	last := r[strings.LastIndex(r, "/")+1:]
	return strings.HasSuffix(last, "test") || layer(r) == "tests" || layer(r) == "tools"
}

// mayImport says which layers a layer's production code may import, inward
// only: cmd and functions → internal → adapters → core.
var mayImport = map[string][]string{
	"core":      {"core"},
	"adapters":  {"core", "adapters"},
	"internal":  {"core", "adapters", "internal"},
	"cmd":       {"core", "adapters", "internal", "cmd"},
	"functions": {"core", "adapters", "internal", "functions"},
}

// cloudSDKs are module path prefixes of cloud SDKs, which core must not
// depend on, even indirectly: core is the part every deployment shares.
var cloudSDKs = []string{
	"github.com/aws/", "cloud.google.com/", "google.golang.org/api/", "github.com/googleapis/gax-go",
	"google.golang.org/grpc",
}

// kernel is the package that runs reconciles, and kernelMayImport the core
// packages it may use: the object model, the ports, the error taxonomy,
// the step runner, the clock, and the repository (typed reads over the
// ports, which imports no kind package either: TestLayerRule's kernel
// rule is held for it too). It imports no kind's package (a
// Certificate's, an Order's…): controllers are registered with it, so a
// new kind is its package plus a row in core/app's table.
const kernel = "core/kernel"

var kernelMayImport = []string{"core/api", "core/ports", "core/errs", "core/step", "core/clock", "core/repo"}

// generic are the packages held to the kernel's rule.
var generic = []string{kernel, "core/repo"}

func TestImportLayers(t *testing.T) {
	for _, p := range layerProblems(listPackages(t)) {
		t.Error(p)
	}
}

// layerProblems returns, sorted, every import of pkgs that breaks the
// layering rule, and a problem when the kernel is not among them (the
// kernel rule would then check nothing).
func layerProblems(pkgs []pkg) []string {
	var problems []string
	sawKernel := false
	for _, p := range pkgs {
		from := rel(p.ImportPath)
		l := layer(from)
		allowed, layered := mayImport[l]
		if from == kernel {
			sawKernel = true
		}
		for _, imp := range p.Imports {
			to := rel(imp)
			if to == "" {
				continue
			}
			switch {
			case layer(to) == "tests" || layer(to) == "tools":
				if !testSupport(from) {
					problems = append(problems, fmt.Sprintf("%s imports %s: only test support packages may use tests/ and tools/", from, to))
				}
			case layered && !contains(allowed, layer(to)):
				problems = append(problems, fmt.Sprintf("%s imports %s: %s may import only %s", from, to, l, strings.Join(allowed, ", ")))
			case contains(generic, from) && !contains(kernelMayImport, to):
				problems = append(problems, fmt.Sprintf("%s imports %s: the kernel imports no kind package (allowed: %s)", from, to, strings.Join(kernelMayImport, ", ")))
			}
		}
		if l == "core" && !testSupport(from) {
			for _, d := range p.Deps {
				for _, sdk := range cloudSDKs {
					if strings.HasPrefix(d, sdk) {
						problems = append(problems, fmt.Sprintf("%s depends on %s: core uses no cloud SDK", from, d))
					}
				}
			}
		}
	}
	if !sawKernel {
		problems = append(problems, fmt.Sprintf("no package %s: the kernel rule checks nothing (update the rule if the kernel moved)", kernel))
	}
	sort.Strings(problems)
	return problems
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
