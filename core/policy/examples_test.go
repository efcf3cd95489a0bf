package policy_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app/apptest"
	"github.com/certfn/certfn/core/policy"
)

// approver-policy's example policies (docs/examples at the commit named in
// each testdata file's header; its README at that commit holds none),
// through the path `certfn apply` takes: api.Decode, then
// app.Service.Apply (validation.Object and the evaluator's Compile), then
// the policy's reconcile, which sets Ready.
//
// Three of the five are refused by approver-policy itself, and certfn
// refuses them at the same field paths:
//   - example.com.yaml writes `rule: !self.contains('*')` unquoted, which
//     YAML reads as a tag on an empty value: the rule is "" (CEL: a syntax
//     error; certfn: "empty rule");
//   - all-options.yaml writes `self.matches('\d+\.\d+\.\d+\.\d+')`, and
//     `\d` is not an escape a CEL string accepts;
//   - all-options.yaml and plugin.yaml name the plugin "rego", which
//     neither a default approver-policy build nor certfn registers.
//
// With those corrected (quoting, `\\d`, a plugin named rego registered)
// each compiles.

// regoStub is a test stub standing in for a plugin registered as "rego"
// (not approver-policy's rego plugin): it accepts any values and allows
// every request.
type regoStub struct{}

func (regoStub) Name() string { return "rego" }

func (regoStub) Compile(map[string]string) (policy.PluginCheck, error) { return regoCheck{}, nil }

type regoCheck struct{}

func (regoCheck) Check(context.Context, *policy.Request) []string { return nil }

func TestApproverPolicyExamples(t *testing.T) {
	const unsupportedRego = `spec.plugins: Unsupported value: "rego"`
	const badEscape = `spec.allowed.ipAddresses.validations[0]: invalid CEL: ERROR: <input>:1:14: Syntax error: token recognition error at: ''\d'`
	const emptyRule = "spec.allowed.dnsNames.validations[0]: empty rule"
	fixes := strings.NewReplacer(`rule: !self.contains('*')`, `rule: "!self.contains('*')"`, `\d+\.\d+\.\d+\.\d+`, `\\d+\\.\\d+\\.\\d+\\.\\d+`)
	for _, tc := range []struct {
		file string
		// refused lists what Service.Apply reports (nil: applied);
		// withRego what Validate reports with a plugin "rego" registered.
		refused, withRego []string
	}{
		{file: "allow-all.yaml"},
		{file: "default-deny-all.yaml"},
		{file: "all-options.yaml", refused: []string{unsupportedRego, badEscape}, withRego: []string{badEscape}},
		{file: "example.com.yaml", refused: []string{emptyRule}, withRego: []string{emptyRule}},
		{file: "plugin.yaml", refused: []string{unsupportedRego}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", "approver-policy", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			objs, err := api.Decode(raw)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			p, ok := objs[0].(*api.CertificateRequestPolicy)
			if len(objs) != 1 || !ok {
				t.Fatalf("decoded %d objects, the first a %T", len(objs), objs[0])
			}
			applied(t, objs, tc.refused)

			errs := policy.Validate(p, regoStub{})
			if len(errs) != len(tc.withRego) {
				t.Fatalf("with a rego plugin registered: %v, want %q", errs, tc.withRego)
			}
			for i, w := range tc.withRego {
				if got := errs[i].Path + ": " + errs[i].Rule; !strings.HasPrefix(got, w) {
					t.Errorf("with a rego plugin registered, error %d is %q, want %q", i, got, w)
				}
			}
			// Corrected, it compiles (and applies when it names no plugin).
			fixed, err := api.Decode([]byte(fixes.Replace(string(raw))))
			if err != nil {
				t.Fatalf("decode corrected: %v", err)
			}
			if errs := policy.Validate(fixed[0].(*api.CertificateRequestPolicy), regoStub{}); errs != nil {
				t.Fatalf("corrected: %v", errs)
			}
			if len(p.Spec.Plugins) == 0 {
				applied(t, fixed, nil)
			}
		})
	}
}

// applied applies objs (one policy) through the application service of a
// fresh local deployment; with refused nil, the apply succeeds and the
// policy's reconcile marks it Ready, else the apply is refused with each
// text of refused.
func applied(t *testing.T, objs []api.Object, refused []string) {
	t.Helper()
	r := apptest.NewPolicyRig(t)
	_, err := r.Service.Apply(r.Ctx, apptest.Caller, objs)
	if refused != nil {
		if err == nil {
			t.Fatalf("applied; want refused with %q", refused)
		}
		for _, w := range refused {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("apply refused with\n%v\nwhich lacks %q", err, w)
			}
		}
		return
	}
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	key := api.KeyOf(objs[0])
	r.Reconcile(key)
	p := r.Get(key).(*api.CertificateRequestPolicy)
	if c := api.FindCondition(p.Status.Conditions, api.CertificateRequestPolicyConditionReady); c == nil || c.Status != api.ConditionTrue {
		t.Fatalf("after its reconcile the policy's Ready condition is %+v", c)
	}
}
