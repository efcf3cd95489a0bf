package policy

import (
	"reflect"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/certfn/certfn/core/api"
)

// Transcribed from approver-policy (upstreamCommit):
// pkg/internal/approver/validation/validator_test.go and
// serviceaccount_test.go, the CEL environment of validations.

// evalRule compiles rule and evaluates it with self = value and cr from
// the request's namespace, name and identity. When the rule has an
// untracked program (its static cost estimate is within the limit), both
// programs run and must agree.
func evalRule(t *testing.T, rule, value string, cr *api.CertificateRequest) (bool, error) {
	t.Helper()
	prg, fast, err := compileRule(rule)
	if err != nil {
		t.Fatalf("compile %q: %v", rule, err)
	}
	act, err := (&Request{CR: cr, Identity: identityOf(cr)}).celActivation()
	if err != nil {
		t.Fatal(err)
	}
	ok, err := (&celRule{rule: rule, prg: prg}).eval(act, types.String(value))
	if fast != nil {
		okFast, errFast := (&celRule{rule: rule, prg: fast}).eval(act, types.String(value))
		if okFast != ok || (errFast == nil) != (err == nil) {
			t.Fatalf("untracked program gives %v, %v; tracked %v, %v", okFast, errFast, ok, err)
		}
	}
	return ok, err
}

func requestIn(namespace string) *api.CertificateRequest {
	return &api.CertificateRequest{ObjectMeta: api.ObjectMeta{Namespace: namespace}}
}

func requestBy(username string, groups ...string) *api.CertificateRequest {
	return &api.CertificateRequest{Spec: api.CertificateRequestSpec{Username: username, Groups: groups}}
}

// validator_test.go: Test_Validator_Compile.
func TestUpstreamValidatorCompile(t *testing.T) {
	for _, tc := range []struct {
		name, expr string
		wantErr    bool
	}{
		{name: "no-var-use", expr: "'www.example.com'.endsWith('.com')"},
		{name: "simple-checks", expr: "size(cr.namespace) < 24"},
		{name: "standard-macros", expr: "[1,2,3].all(i, i % 2 > 0)"},
		{name: "extended-string-function-library", expr: "self.startsWith('spiffe://trust-domain.com/')"},
		{name: "doc-example", expr: "['.svc', '.svc.cluster.local'].exists(d, self.endsWith(cr.namespace + d))"},
		{name: "err-no-expression", wantErr: true},
		{name: "err-undeclared-vars", expr: "foo = bar", wantErr: true},
		{name: "err-must-return-bool", expr: "size('foo')", wantErr: true},
		{name: "err-invalid-property", expr: "size(cr.foo) < 24", wantErr: true},
		{name: "check-username-property", expr: "size(cr.username) > 0"},
		{name: "check-serviceaccount-getname", expr: "self.startsWith(serviceAccount(cr.username).getName())"},
		{name: "check-serviceaccount-getnamespace", expr: "self.startsWith(serviceAccount(cr.username).getNamespace())"},
		{name: "check-serviceaccount-isSA", expr: "isServiceAccount(cr.username)"},
		{name: "check-groups-property", expr: "size(cr.groups) > 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := compileRule(tc.expr); (err != nil) != tc.wantErr {
				t.Fatalf("compile %q: %v, want error %v", tc.expr, err, tc.wantErr)
			}
		})
	}
}

// validator_test.go: Test_Validator_Validate, Test_Validator_Validate_ServiceAccount
// and Test_Validator_Validate_Groups.
func TestUpstreamValidatorValidate(t *testing.T) {
	const nsRule = "self.startsWith('spiffe://acme.com/ns/%s/sa/'.format([cr.namespace]))"
	const saRule = "isServiceAccount(cr.username) && self.startsWith('spiffe://acme.com/ns/%s/sa/%s'.format([serviceAccount(cr.username).getNamespace(),serviceAccount(cr.username).getName()]))"
	const groupRule = "cr.groups.exists(g, self.matches('tool-%s'.format([g])))"
	for _, tc := range []struct {
		test, name, rule, value string
		cr                      *api.CertificateRequest
		want                    bool
	}{
		{"Test_Validator_Validate", "correct-namespace", nsRule, "spiffe://acme.com/ns/foo-ns/sa/bar", requestIn("foo-ns"), true},
		{"Test_Validator_Validate", "wrong-namespace", nsRule, "spiffe://acme.com/ns/foo-ns/sa/bar", requestIn("bar-ns"), false},
		{"Test_Validator_Validate", "unrelated", nsRule, "spiffe://example.com", requestIn("foo-ns"), false},
		{"Test_Validator_Validate_ServiceAccount", "correct-namespace-and-name", saRule, "spiffe://acme.com/ns/foo-ns/sa/bar", requestBy("system:serviceaccount:foo-ns:bar"), true},
		{"Test_Validator_Validate_ServiceAccount", "correct-namespace-and-name2", saRule, "spiffe://acme.com/ns/bar-ns/sa/foo", requestBy("system:serviceaccount:bar-ns:foo"), true},
		{"Test_Validator_Validate_ServiceAccount", "correct-namespace-wrong-name", saRule, "spiffe://acme.com/ns/foo-ns/sa/foo", requestBy("system:serviceaccount:foo-ns:bar"), false},
		{"Test_Validator_Validate_ServiceAccount", "wrong-namespace-correct-name", saRule, "spiffe://acme.com/ns/foo-ns/sa/bar", requestBy("system:serviceaccount:bar-ns:bar"), false},
		{"Test_Validator_Validate_ServiceAccount", "not-serviceaccount", saRule, "spiffe://acme.com/ns/foo-ns/sa/bar", requestBy("bar"), false},
		{"Test_Validator_Validate_ServiceAccount", "unrelated", saRule, "spiffe://example.com", requestBy("system:serviceaccount:foo-ns:bar"), false},
		{"Test_Validator_Validate_Groups", "one-correct-group", groupRule, "tool-team-a", requestBy("", "team-a"), true},
		{"Test_Validator_Validate_Groups", "one-of-many-groups-correct", groupRule, "tool-team-a", requestBy("", "admin", "team-a"), true},
		{"Test_Validator_Validate_Groups", "wrong-group", groupRule, "tool-team-b", requestBy("", "team-a"), false},
		{"Test_Validator_Validate_Groups", "no-groups", groupRule, "tool-team-b", requestBy(""), false},
	} {
		t.Run(tc.test+"/"+tc.name, func(t *testing.T) {
			got, err := evalRule(t, tc.rule, tc.value, tc.cr)
			if err != nil || got != tc.want {
				t.Fatalf("%s with self %q: %v, %v; want %v", tc.rule, tc.value, got, err, tc.want)
			}
		})
	}
}

// validator_test.go: Test_Validator_Validate_CostLimitExceeded. The
// expression (10^8 iterations) is stopped by the cost limit with an error,
// which fails the rule.
func TestUpstreamValidatorCostLimitExceeded(t *testing.T) {
	rule := `
		[0,1,2,3,4,5,6,7,8,9].all(a,
		[0,1,2,3,4,5,6,7,8,9].all(b,
		[0,1,2,3,4,5,6,7,8,9].all(c,
		[0,1,2,3,4,5,6,7,8,9].all(d,
		[0,1,2,3,4,5,6,7,8,9].all(e,
		[0,1,2,3,4,5,6,7,8,9].all(f,
		[0,1,2,3,4,5,6,7,8,9].all(g,
		[0,1,2,3,4,5,6,7,8,9].all(h, self != ""))))))))`
	if _, fast, err := compileRule(rule); err != nil || fast != nil {
		t.Fatalf("compile: %v; untracked program %v (its estimate exceeds the limit: it must always be tracked)", err, fast)
	}
	ok, err := evalRule(t, rule, "anything", &api.CertificateRequest{})
	if ok || err == nil || !strings.Contains(err.Error(), "cost limit exceeded") {
		t.Fatalf("got %v, %v; want a cost limit error", ok, err)
	}
	// Through a policy: the rule fails, with the error in the denial.
	p := policyYAML(t, "costly", "allowed:\n  dnsNames:\n    validations:\n      - rule: '"+strings.Join(strings.Fields(rule), "")+
		"'\n        message: costly\nselector: {issuerRef: {}}\n")
	runEvalCases(t, newEvaluator(t), []*api.CertificateRequestPolicy{p}, bindAll(), []evalCase{
		{name: "denied by the cost limit", cr: newCR(t, csr(dns("a.example.com"))), want: Denied,
			msg: []string{`spec.allowed.dnsNames.validations[0]: "a.example.com": costly (rule error: operation cancelled: actual cost limit exceeded)`}},
	})
}

// A rule whose estimate is within the limit runs untracked only for values
// within the sizes the estimate assumed; a longer value runs tracked (and
// gets the same answer).
func TestCELUntrackedOnlyWithinEstimate(t *testing.T) {
	prg, fast, err := compileRule("self.endsWith('.' + cr.namespace + '.example.com')")
	if err != nil || fast == nil || prg == nil {
		t.Fatalf("compile: %v; want a tracked and an untracked program", err)
	}
	long := strings.Repeat("a", celMaxString) + ".team-a.example.com"
	for _, tc := range []struct {
		value     string
		crBounded bool
		untracked bool
	}{
		{"www.team-a.example.com", true, true},
		{long, true, false},
		{"www.team-a.example.com", false, false},
	} {
		if got := withinEstimate(types.String(tc.value), tc.crBounded); got != tc.untracked {
			t.Errorf("withinEstimate(len %d, cr bounded %v) = %v, want %v", len(tc.value), tc.crBounded, got, tc.untracked)
		}
		ok, err := evalRule(t, "self.endsWith('.' + cr.namespace + '.example.com')", tc.value, requestIn("team-a"))
		if !ok || err != nil {
			t.Errorf("len %d: %v, %v", len(tc.value), ok, err)
		}
	}
	if (identityFields{groups: make([]string, celMaxList+1)}).withinEstimate("ns", "n") {
		t.Error("a request with more groups than the estimate assumes is within it")
	}
}

// serviceaccount_test.go: TestStringToServiceAccount, TestIsServiceAccount,
// TestGetServiceAccountName(_NonServiceAccount),
// TestGetServiceAccountNamespace(_NonServiceAccount),
// TestServiceAccount_Equal(_NonServiceAccount), _Type, _Value,
// _ConvertToNative and _ConvertToType.
func TestUpstreamServiceAccountFunctions(t *testing.T) {
	isErr := func(v ref.Val) bool { return types.IsError(v) }
	t.Run("TestStringToServiceAccount", func(t *testing.T) {
		if sa, ok := celToServiceAccount(types.String("system:serviceaccount:my-namespace:my-sa")).(serviceAccountVal); !ok ||
			sa != (serviceAccountVal{namespace: "my-namespace", name: "my-sa"}) {
			t.Errorf("valid service account username: %v", sa)
		}
		if v := celToServiceAccount(types.String("not-a-service-account")); !isErr(v) {
			t.Errorf("invalid username should return error, got %v", v)
		}
		if v := celToServiceAccount(types.Int(42)); !isErr(v) {
			t.Errorf("non-string input should return error, got %v", v)
		}
	})
	t.Run("TestIsServiceAccount", func(t *testing.T) {
		for in, want := range map[ref.Val]ref.Val{
			types.String("system:serviceaccount:default:my-sa"): types.True,
			types.String("not-valid"):                           types.False,
			types.String(""):                                    types.False,
			// Kubernetes' SplitUsername: a DNS-1123 label namespace and
			// subdomain name, exactly two parts.
			types.String("system:serviceaccount:Default:my-sa"):  types.False,
			types.String("system:serviceaccount:default:my_sa"):  types.False,
			types.String("system:serviceaccount:default:a:b"):    types.False,
			types.String("system:serviceaccount:default:sa.one"): types.True,
		} {
			if got := celIsServiceAccount(in); got != want {
				t.Errorf("isServiceAccount(%v) = %v, want %v", in, got, want)
			}
		}
		if v := celIsServiceAccount(types.Int(42)); !isErr(v) {
			t.Errorf("non-string input should return error, got %v", v)
		}
	})
	sa := serviceAccountVal{namespace: "test-ns", name: "test-sa"}
	t.Run("TestGetServiceAccountName", func(t *testing.T) {
		if got := celServiceAccountName(sa); got != types.String("test-sa") {
			t.Errorf("got %v", got)
		}
		if v := celServiceAccountName(types.String("not-a-sa")); !isErr(v) {
			t.Errorf("non-ServiceAccount input: %v", v)
		}
	})
	t.Run("TestGetServiceAccountNamespace", func(t *testing.T) {
		if got := celServiceAccountNamespace(sa); got != types.String("test-ns") {
			t.Errorf("got %v", got)
		}
		if v := celServiceAccountNamespace(types.String("not-a-sa")); !isErr(v) {
			t.Errorf("non-ServiceAccount input: %v", v)
		}
	})
	t.Run("TestServiceAccount_Equal", func(t *testing.T) {
		a, b, c := serviceAccountVal{"ns", "sa"}, serviceAccountVal{"ns", "sa"}, serviceAccountVal{"ns", "other"}
		if a.Equal(b) != types.True || a.Equal(c) != types.False || !isErr(a.Equal(types.String("not-a-sa"))) {
			t.Errorf("Equal: %v %v %v", a.Equal(b), a.Equal(c), a.Equal(types.String("not-a-sa")))
		}
	})
	t.Run("TestServiceAccount_Type_Value", func(t *testing.T) {
		if sa.Type() != celServiceAccountType || sa.Value() != sa {
			t.Errorf("Type %v, Value %v", sa.Type(), sa.Value())
		}
	})
	t.Run("TestServiceAccount_ConvertToNative", func(t *testing.T) {
		if v, err := sa.ConvertToNative(reflect.TypeFor[serviceAccountVal]()); err != nil || v != sa {
			t.Errorf("to ServiceAccount: %v, %v", v, err)
		}
		if v, err := sa.ConvertToNative(reflect.TypeFor[string]()); err != nil || v != "system:serviceaccount:test-ns:test-sa" {
			t.Errorf("to string: %v, %v", v, err)
		}
		if _, err := sa.ConvertToNative(reflect.TypeFor[int]()); err == nil {
			t.Error("to int: no error")
		}
	})
	t.Run("TestServiceAccount_ConvertToType", func(t *testing.T) {
		if sa.ConvertToType(celServiceAccountType) != sa || sa.ConvertToType(types.TypeType) != celServiceAccountType ||
			!isErr(sa.ConvertToType(types.StringType)) {
			t.Errorf("ConvertToType: %v %v %v", sa.ConvertToType(celServiceAccountType), sa.ConvertToType(types.TypeType), sa.ConvertToType(types.StringType))
		}
	})
}

// serviceaccount_test.go: TestServiceAccountLib_CELIntegration.
func TestUpstreamServiceAccountLibCELIntegration(t *testing.T) {
	env, err := cel.NewEnv(celServiceAccountLib(), cel.Variable("username", cel.StringType))
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		expr, username string
		want           any
	}{
		"isServiceAccount should return true for valid username":    {"isServiceAccount(username)", "system:serviceaccount:default:my-sa", true},
		"isServiceAccount should return false for invalid username": {"isServiceAccount(username)", "not-valid", false},
		"serviceAccount().getName() should return name":             {"serviceAccount(username).getName()", "system:serviceaccount:test-ns:test-sa", "test-sa"},
		"serviceAccount().getNamespace() should return namespace":   {"serviceAccount(username).getNamespace()", "system:serviceaccount:test-ns:test-sa", "test-ns"},
	} {
		t.Run(name, func(t *testing.T) {
			ast, iss := env.Compile(tc.expr)
			if iss.Err() != nil {
				t.Fatal(iss.Err())
			}
			prg, err := env.Program(ast)
			if err != nil {
				t.Fatal(err)
			}
			out, _, err := prg.Eval(map[string]any{"username": tc.username})
			if err != nil || out.Value() != tc.want {
				t.Fatalf("%s = %v, %v; want %v", tc.expr, out, err, tc.want)
			}
		})
	}
}

// The service account functions through a policy: a team's workloads get
// the SPIFFE ID of their own service account only (approver-policy's
// documented use), and has(cr.<field>) is false for an empty field as for
// approver-policy's protobuf message.
func TestServiceAccountRuleThroughPolicy(t *testing.T) {
	p := policyYAML(t, "spiffe", `
allowed:
  uris:
    required: true
    validations:
      - rule: >-
          isServiceAccount(cr.username) &&
          self == 'spiffe://cluster.local/ns/%s/sa/%s'.format([serviceAccount(cr.username).getNamespace(), serviceAccount(cr.username).getName()])
        message: the URI must be the requester's own SPIFFE ID
  dnsNames:
    validations: [{rule: "has(cr.username) && !has(cr.uid) && has(cr.groups) && !has(cr.extra)"}]
selector: {issuerRef: {}}
`)
	runEvalCases(t, newEvaluator(t), []*api.CertificateRequestPolicy{p}, bindAll(), []evalCase{
		{name: "own SPIFFE ID", cr: newCR(t, csr(uris("spiffe://cluster.local/ns/team-a/sa/web"), dns("web.team-a")),
			byUser("system:serviceaccount:team-a:web", "system:authenticated")), want: Approved},
		{name: "another service account's ID", cr: newCR(t, csr(uris("spiffe://cluster.local/ns/team-a/sa/db")),
			byUser("system:serviceaccount:team-a:web", "system:authenticated")), want: Denied,
			msg: []string{`spec.allowed.uris.validations[0]: "spiffe://cluster.local/ns/team-a/sa/db": the URI must be the requester's own SPIFFE ID`}},
		{name: "not a service account", cr: newCR(t, csr(uris("spiffe://cluster.local/ns/team-a/sa/web")), byUser("alice", "system:authenticated")),
			want: Denied, msg: []string{"the URI must be the requester's own SPIFFE ID"}},
	})
}
