package policy

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
)

// The upstream_*_test.go files transcribe cert-manager/approver-policy's
// own unit tests, at commit upstreamCommit of
// github.com/cert-manager/approver-policy (its main branch when
// transcribed), as tables. Each Go test names the upstream file and test
// function it transcribes; each case carries the upstream case name (for
// upstream tests without case names, a description and the upstream
// position). Field paths are asserted as approver-policy renders them
// (field.Path: "spec.allowed.dnsNames.values",
// "spec.allowed.otherNames[1.3.6.1.4.1.311.20.2.3]",
// "spec.allowed.commonName[1].value"); certfn's sentences after the path
// are its own, so a case checks the paths in order and, where upstream
// asserts on the message, the text it asserts.
//
// Upstream evaluates one evaluator (allowed, constraints) or one webhook in
// isolation; certfn evaluates a policy as a whole, so a transcribed policy
// gets `selector: {issuerRef: {}}` (upstream's evaluator tests have none)
// and nothing else: the other evaluators have nothing to say about it.
//
// Upstream cases about Kubernetes-only machinery are mapped to certfn's
// equivalent where one exists (RBAC `use` bindings → core/rbac, the Ready
// predicate → the Ready condition and compilation, the webhook → Validate)
// or listed here, skipped with the reason:
//
//	upstream test                                                      | why it is not transcribed
//	-------------------------------------------------------------------|----------------------------------------------------------
//	validation/cache_test.go Test_Cache_Get, Test_Cache_Get_Evicts     | certfn has no expression cache: rules compile once per policy version (Evaluator's cache, cache.go), bounded by the stored policies
//	validation/serviceaccount_test.go TestServiceAccountLib_CompileOptions, _ProgramOptions | Go API of the library object (options non-empty / empty); the functions are tested through CEL
//	webhook/validator_test.go "…returns warnings…", "…without further detail…" | certfn plugins return an error or nothing: there are no admission warnings, and a refusal always has a reason
//	manager/review_test.go "if predicate returns an error…"           | certfn's selection cannot fail (no API reads: the namespace labels and bindings are inputs)
//	manager/predicate/predicate_test.go Test_SelectorNamespace "…doesn't exist and using match labels, expect error" | certfn reads no Namespace at evaluation: a namespace without a Namespace object has no labels (mapped: not selected)
//	controllers/certificaterequestpolicies_test.go, certificaterequests_test.go, controllers/test | controller-runtime reconcilers (requeue, SSA patches, events); certfn's policy and approval steps are tested in core/policy (controller.go), core/kernel and core/certificaterequests
//	metrics/metrics_test.go Test_Metrics                               | Prometheus registry of approver-policy; certfn counts policy_approval_outcomes_total through ports.Metrics (evaluate_test.go)
//	registry/registry_test.go                                          | approver-policy's global plugin registry (init-time Store, panics on duplicates); certfn registers plugins explicitly and NewEvaluator refuses duplicates (TestUpstreamRegistryDuplicates)
//	allowed/evaluator_test.go, constraints/evaluator_test.go expErr cases needing a CSR | mapped: certfn denies a request whose spec.request does not parse (Evaluate), it does not return an error
const upstreamCommit = "81ac7e0cf259c6be3fb20c14c03017880b88ef69"

// upstreamEval is one transcribed evaluator case: the policy spec (YAML,
// without selector) and request; want lists approver-policy's field paths
// of the violations in order (nil: NotDenied), with a run of one path
// listed once (upstream reports some values together, certfn one by one);
// contains are texts the denial must hold (what upstream asserts).
type upstreamEval struct {
	name     string
	spec     string
	cr       *api.CertificateRequest
	want     []string
	contains []string
}

// runUpstreamEval reviews each case's policy on its request in full (the
// Denied message) and quickly (approval), which must agree.
func runUpstreamEval(t *testing.T, cases []upstreamEval) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := policyYAML(t, "upstream", tc.spec+"\nselector: {issuerRef: {}}")
			c, err := Compile(p)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			csr, err := pkiParse(tc.cr)
			if err != nil {
				t.Fatalf("CSR: %v", err)
			}
			r := newRequest(tc.cr, csr, nil)
			fullErrs := c.review(context.Background(), r, full)
			quickErrs := c.review(context.Background(), newRequest(tc.cr, csr, nil), quick)
			if (fullErrs == nil) != (quickErrs == nil) {
				t.Fatalf("quick review %v and full review %v disagree", quickErrs, fullErrs)
			}
			if got := violationPaths(fullErrs); !slices.Equal(got, tc.want) {
				t.Errorf("violations at\n  %s\nwant (approver-policy's paths)\n  %s\nmessages:\n  %s",
					strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "), strings.Join(fullErrs, "\n  "))
			}
			all := strings.Join(fullErrs, "\n")
			for _, s := range tc.contains {
				if !strings.Contains(all, s) {
					t.Errorf("denial lacks %q:\n%s", s, all)
				}
			}
		})
	}
}

// violationPaths returns the path each message starts with, a run of one
// path once.
func violationPaths(errs errorList) []string {
	var out []string
	for _, e := range errs {
		p, _, _ := strings.Cut(e, ": ")
		if len(out) == 0 || out[len(out)-1] != p {
			out = append(out, p)
		}
	}
	return out
}

// upstreamValidate is one transcribed admission case: the policy spec
// (YAML; a selector is added when the upstream webhook under test is not
// the selector's) and approver-policy's errors, each its exact field path
// and a text certfn's rule must hold.
type upstreamValidate struct {
	name string
	spec string
	want []pathRule // nil: admitted
}

type pathRule struct{ path, rule string }

// runUpstreamValidate validates each case's policy with plugins registered.
func runUpstreamValidate(t *testing.T, addSelector bool, cases []upstreamValidate, plugins ...Plugin) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec
			if addSelector {
				spec += "\nselector: {issuerRef: {}}"
			}
			errs := Validate(policyYAML(t, "upstream", spec), plugins...)
			var got []string
			for _, e := range errs {
				got = append(got, e.Path+": "+e.Rule)
			}
			if len(errs) != len(tc.want) {
				t.Fatalf("got %d errors, want %d:\n  %s", len(errs), len(tc.want), strings.Join(got, "\n  "))
			}
			for i, w := range tc.want {
				if errs[i].Path != w.path || !strings.Contains(errs[i].Rule, w.rule) {
					t.Errorf("error %d is %q, want path %q with %q", i, got[i], w.path, w.rule)
				}
			}
		})
	}
}

// The copies of approver-policy's examples (examples_test.go) name the
// commit the tests were transcribed at.
func TestUpstreamExamplesAtTranscribedCommit(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "approver-policy", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no example copies: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		header, _, _ := strings.Cut(string(b), "\napiVersion:")
		if !strings.Contains(header, "docs/examples/"+filepath.Base(f)) || !strings.Contains(header, upstreamCommit) {
			t.Errorf("%s: header does not name its source file and commit %s:\n%s", f, upstreamCommit, header)
		}
	}
}
