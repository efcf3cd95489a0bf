package kernel_test

import (
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// generic are the core packages the kernel may depend on, directly or not.
// None knows a kind's rules:
//   - api: the resource types, keys, owners and conditions every kind
//     shares (the kernel decodes records, wakes owners, writes Events);
//   - ports: the Store, Queue, Clock and Metrics it drives;
//   - errs: the one classification of errors (retry, backoff, Events);
//   - repo: the typed reads and the codec of records, itself over api
//     and ports only;
//   - step and clock: what every controller shares, and the clocks.
//
// Every other core package holds a kind's controller or rules (the
// certificates, requests, issuers, policy, rbac, acme, csr packages…),
// or what only some kinds use (pki, signers, validation, memory, app):
// the kernel importing one would make it a controller registry again.
var generic = map[string]bool{
	"api": true, "ports": true, "errs": true, "repo": true, "step": true, "clock": true,
}

func TestKernelImportsNoKindPackage(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "github.com/certfn/certfn/core/kernel").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	const core = "github.com/certfn/certfn/core/"
	var seen int
	for _, dep := range strings.Fields(string(out)) {
		rel, ok := strings.CutPrefix(dep, core)
		if !ok || rel == "kernel" {
			continue
		}
		seen++
		top, _, _ := strings.Cut(rel, "/")
		if !generic[top] || rel != top {
			t.Errorf("core/kernel depends on core/%s, which is not one of the generic packages (%v)", rel, slices.Sorted(maps.Keys(generic)))
		}
	}
	if seen == 0 {
		t.Fatal("go list found no core dependency of core/kernel: the check looked at nothing")
	}
}
