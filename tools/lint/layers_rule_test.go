package lint

import (
	"strings"
	"testing"
)

// p builds a package of the module importing imps (paths inside the
// module, standard library packages, or whole paths of other modules) and
// depending on deps.
func p(path string, imps []string, deps ...string) pkg {
	full := func(s string) string {
		if _, ok := mayImport[layer(s)]; ok || layer(s) == "tests" || layer(s) == "tools" {
			return module + "/" + s
		}
		return s
	}
	out := pkg{ImportPath: full(path), Deps: deps}
	for _, i := range imps {
		out.Imports = append(out.Imports, full(i))
	}
	return out
}

// withKernel adds a well-behaved kernel, so that a case shows only its own problem.
func withKernel(pkgs ...pkg) []pkg {
	return append(pkgs, p(kernel, []string{"core/api", "core/ports", "fmt"}))
}

func TestLayerRule(t *testing.T) {
	tests := []struct {
		name string
		pkgs []pkg
		want string // a substring of the one problem expected; "" for none
	}{
		{"inward imports pass", withKernel(
			p("cmd/certfn", []string{"internal/localmode", "core/api"}),
			p("functions/aws/worker", []string{"internal/awsmode"}),
			p("internal/awsmode", []string{"adapters/aws/dynamo", "core/app"}),
			p("adapters/aws/dynamo", []string{"core/ports", "github.com/aws/aws-sdk-go-v2/service/dynamodb"}),
			p("core/app", []string{"core/kernel", "core/certificates"}, "github.com/google/cel-go/cel"),
		), ""},
		{"core importing an adapter", withKernel(p("core/app", []string{"adapters/local"})), "core/app imports adapters/local: core may import only core"},
		{"adapter importing internal", withKernel(p("adapters/httpapi", []string{"internal/awsmode"})), "adapters may import only core, adapters"},
		{"internal importing cmd", withKernel(p("internal/localmode", []string{"cmd/certfn"})), "internal may import only"},
		{"functions importing cmd", withKernel(p("functions/aws/api", []string{"cmd/certfn"})), "functions may import only"},
		{"production code importing tests/", withKernel(p("adapters/local", []string{"tests/emulators"})), "only test support packages"},
		{"test support importing tests/", withKernel(p("internal/awsmode/awstest", []string{"tests/emulators"})), ""},
		{"core depending on a cloud SDK", withKernel(p("core/policy", nil, "cloud.google.com/go/firestore")), "core uses no cloud SDK"},
		{"kernel importing a kind package", []pkg{p(kernel, []string{"core/api", "core/certificates"})}, "the kernel imports no kind package"},
		{"repository importing a kind package", withKernel(p("core/repo", []string{"core/api", "core/policy"})), "core/repo imports core/policy"},
		{"no kernel", []pkg{p("core/api", nil)}, "the kernel rule checks nothing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := layerProblems(tc.pkgs)
			switch {
			case tc.want == "" && len(got) != 0:
				t.Errorf("problems = %q, want none", got)
			case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
				t.Errorf("problems = %q, want one containing %q", got, tc.want)
			}
		})
	}
}
