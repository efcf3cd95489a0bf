package policy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/rbac"
)

// Transcribed from approver-policy (upstreamCommit): the selection
// predicates (pkg/internal/approver/manager/predicate/predicate_test.go),
// the manager's review (pkg/internal/approver/manager/review_test.go), the
// wildcard (pkg/internal/util/wildcard_test.go) and the plugin registry
// (pkg/registry/registry_test.go).

// applicableNames returns the names of the policies of ps that apply to cr
// (certfn's selection: Ready, bound with `use`, selected), in order.
func applicableNames(t *testing.T, ps []*api.CertificateRequestPolicy, cr *api.CertificateRequest, labels map[string]string, authz *rbac.Authorizer) []string {
	t.Helper()
	in := Input{Request: cr, Policies: ps, NamespaceLabels: labels, Authorizer: authz}
	sc := scan{in: &in, id: identityOf(cr), sel: newSelectorInput(cr, labels)}
	entries := newEvaluator(t).entries(ps)
	var out []string
	for i, p := range ps {
		if sc.applies(p, entries[i]) != nil {
			out = append(out, p.Name)
		}
	}
	return out
}

// named returns policies p0, p1, ... with the given specs (YAML, each a
// selector at least).
func named(t *testing.T, specs ...string) []*api.CertificateRequestPolicy {
	var out []*api.CertificateRequestPolicy
	for i, s := range specs {
		out = append(out, policyYAML(t, fmt.Sprintf("p%d", i), s))
	}
	return out
}

// predicate_test.go: Test_SelectorIssuerRef.
func TestUpstreamSelectorIssuerRef(t *testing.T) {
	base := &api.CertificateRequest{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "r"},
		Spec: api.CertificateRequestSpec{IssuerRef: api.IssuerReference{Name: "test-name", Kind: "test-kind", Group: "test-group"}, Username: "alice"}}
	const none = `selector: {issuerRef: {name: "name", kind: "kind", group: "group"}}`
	const all = `selector: {issuerRef: {name: "*", kind: "*", group: "*"}}`
	const empty = `selector: {issuerRef: {}}`
	const exact = `selector: {issuerRef: {name: "test-name", kind: "test-kind", group: "test-group"}}`
	for _, tc := range []struct {
		name  string
		cr    *api.CertificateRequest
		specs []string
		want  []string
	}{
		{name: "if no policies given, return no policies"},
		{name: "if policy specifies cert-manager defaults and request omits defaults, return policy",
			cr: &api.CertificateRequest{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "r"},
				Spec: api.CertificateRequestSpec{IssuerRef: api.IssuerReference{Name: "my-issuer"}, Username: "alice"}},
			specs: []string{`selector: {issuerRef: {name: "my-issuer", kind: "Issuer", group: "cert-manager.io"}}`}, want: []string{"p0"}},
		{name: "if policy given that doesn't match, return no policies", specs: []string{none}},
		{name: "if two policies given that doesn't match, return no policies",
			specs: []string{none, `selector: {issuerRef: {name: "name-2", kind: "kind-2", group: "group-2"}}`}},
		{name: "if one of two policies match all with all nils, return policy", specs: []string{empty, none}, want: []string{"p0"}},
		{name: "if one of two policies match all with wildcard, return policy", specs: []string{all, none}, want: []string{"p0"}},
		{name: "if both of two policies match all with empty, return policy", specs: []string{empty, empty}, want: []string{"p0", "p1"}},
		{name: "if both of two policies match all with wildcard, return policy", specs: []string{all, all}, want: []string{"p0", "p1"}},
		{name: "if one policy matches with, other doesn't, return 1", specs: []string{exact, none}, want: []string{"p0"}},
		{name: "if some polices match with a mix of exact, just wildcard and mix return policies",
			specs: []string{exact, none, all, `selector: {issuerRef: {name: "test-*", kind: "*-kind", group: "*up"}}`},
			want:  []string{"p0", "p2", "p3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cr := tc.cr
			if cr == nil {
				cr = base
			}
			if got := applicableNames(t, named(t, tc.specs...), cr, nil, bindAll()); !slices.Equal(got, tc.want) {
				t.Fatalf("selected %v, want %v", got, tc.want)
			}
		})
	}
}

// predicate_test.go: Test_SelectorNamespace. The request is in namespace
// test-namespace; labels are its Namespace's (nil: no Namespace object).
func TestUpstreamSelectorNamespace(t *testing.T) {
	cr := &api.CertificateRequest{ObjectMeta: api.ObjectMeta{Namespace: "test-namespace", Name: "r"}, Spec: api.CertificateRequestSpec{Username: "alice"}}
	noLabels := map[string]string{}
	const matchFoo = `selector: {namespace: {matchNames: ["foo"]}}`
	const labelFoo = `selector: {namespace: {matchLabels: {foo: bar}}}`
	const empty = `selector: {namespace: {}}`
	const all = `selector: {namespace: {matchNames: ["*"]}}`
	for _, tc := range []struct {
		name   string
		specs  []string
		labels map[string]string
		want   []string
	}{
		{name: "if namespace for request doesn't exist and using match names, expect no error",
			specs: []string{`selector: {namespace: {matchNames: ["bar"]}}`}},
		// Mapped: approver-policy fails to read the Namespace (an error,
		// retried); certfn reads no Namespace at evaluation, so a
		// namespace without one has no labels and is not selected.
		{name: "if namespace for request doesn't exist and using match labels, expect error", specs: []string{labelFoo}},
		{name: "if no policies given, return no policies", labels: noLabels},
		{name: "if policy given that doesn't match namespace match name, return no policies", specs: []string{matchFoo}, labels: noLabels},
		{name: "if policy given that doesn't match namespace match labels, return no policies", specs: []string{labelFoo},
			labels: map[string]string{"bar": "foo"}},
		{name: "if two policies given that doesn't match, return no policies", specs: []string{matchFoo, labelFoo},
			labels: map[string]string{"bar": "foo"}},
		{name: "if one of two policies match all with all nils, return policy", specs: []string{empty, matchFoo}, labels: noLabels, want: []string{"p0"}},
		{name: "if one of two policies match all with wildcard, return policy", specs: []string{all, matchFoo}, labels: noLabels, want: []string{"p0"}},
		{name: "if one of two policies match with wildcard suffix, return policy",
			specs: []string{`selector: {namespace: {matchNames: ["test-*"]}}`, matchFoo}, labels: noLabels, want: []string{"p0"}},
		{name: "if one of two policies match with wildcard prefix, return policy",
			specs: []string{`selector: {namespace: {matchNames: ["*-namespace"]}}`, matchFoo}, labels: noLabels, want: []string{"p0"}},
		{name: "if both of two policies match all with empty, return policy", specs: []string{empty, empty}, labels: noLabels, want: []string{"p0", "p1"}},
		{name: "if both of two policies match all with wildcard, return policy", specs: []string{all, all}, labels: noLabels, want: []string{"p0", "p1"}},
		{name: "if one policy matches with, other doesn't, return 1",
			specs: []string{`selector: {namespace: {matchNames: ["test-namespace"]}}`, labelFoo}, labels: noLabels, want: []string{"p0"}},
		{name: "if some polices match with a mix of exact, just wildcard and mix return policies",
			specs: []string{`selector: {namespace: {matchNames: ["test-namespace"]}}`, all, labelFoo,
				`selector: {namespace: {matchLabels: {bar: foo}}}`,
				`selector: {namespace: {matchNames: ["test-namespace"], matchLabels: {foo: bar}}}`,
				`selector: {namespace: {matchNames: ["namespace-test"], matchLabels: {bar: foo}}}`},
			labels: map[string]string{"foo": "bar"}, want: []string{"p0", "p1", "p2", "p4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := applicableNames(t, named(t, tc.specs...), cr, tc.labels, bindAll()); !slices.Equal(got, tc.want) {
				t.Fatalf("selected %v, want %v", got, tc.want)
			}
		})
	}
}

// predicate_test.go: Test_Ready. A Ready condition False (for the
// policy's generation) keeps a policy out; True lets it in. (certfn also
// lets in a policy without the condition when it compiles: its Ready
// condition is derived from compiling it; no upstream case has one.)
func TestUpstreamReady(t *testing.T) {
	cr := newCR(t, csr())
	policy := func(conds ...api.Condition) *api.CertificateRequestPolicy {
		return &api.CertificateRequestPolicy{Spec: api.CertificateRequestPolicySpec{Selector: api.CertificateRequestPolicySelector{
			IssuerRef: &api.CertificateRequestPolicySelectorIssuerRef{}}}, Status: api.CertificateRequestPolicyStatus{Conditions: conds}}
	}
	cond := func(typ string, s api.ConditionStatus) api.Condition { return api.Condition{Type: typ, Status: s} }
	readyTrue, readyFalse := cond(api.CertificateRequestPolicyConditionReady, api.ConditionTrue), cond(api.CertificateRequestPolicyConditionReady, api.ConditionFalse)
	for _, tc := range []struct {
		name     string
		policies []*api.CertificateRequestPolicy
		want     []string
	}{
		{name: "no given policies should return no policies"},
		{name: "single policy with no conditions should return no policies", policies: []*api.CertificateRequestPolicy{}},
		{name: "single policy with ready condition false should return no policies", policies: []*api.CertificateRequestPolicy{policy(readyFalse)}},
		{name: "single policy with ready condition true should return policy", policies: []*api.CertificateRequestPolicy{policy(readyTrue)},
			want: []string{"p0"}},
		{name: "one policy which is ready another not, return single policy",
			policies: []*api.CertificateRequestPolicy{policy(readyFalse), policy(readyTrue)}, want: []string{"p1"}},
		{name: "mix of different conditions including ready should return only ready policies",
			policies: []*api.CertificateRequestPolicy{
				policy(readyFalse, cond("C", api.ConditionTrue)), policy(readyTrue, cond("B", api.ConditionTrue)),
				policy(readyTrue, cond("A", api.ConditionTrue)), policy(readyTrue)},
			want: []string{"p1", "p2", "p3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i, p := range tc.policies {
				p.Name = fmt.Sprintf("p%d", i)
			}
			if got := applicableNames(t, tc.policies, cr, nil, bindAll()); !slices.Equal(got, tc.want) {
				t.Fatalf("ready %v, want %v", got, tc.want)
			}
		})
	}
}

// predicate_test.go: Test_RBACBound (upstream runs SubjectAccessReviews
// against an API server; certfn evaluates the same Roles and bindings with
// core/rbac). The requester is user "example" in namespace
// test-namespace.
func TestUpstreamRBACBound(t *testing.T) {
	cr := &api.CertificateRequest{ObjectMeta: api.ObjectMeta{Namespace: "test-namespace", Name: "r"},
		Spec: api.CertificateRequestSpec{Username: "example", IssuerRef: api.IssuerReference{Name: "test-name", Kind: "test-kind", Group: "test-group"}}}
	clusterRole := func(name string, policies ...string) string {
		return fmt.Sprintf(`---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: %s}
rules: [{apiGroups: [policy.cert-manager.io], resources: [certificaterequestpolicies], verbs: [use], resourceNames: [%s]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: test-role}
subjects: [{kind: User, name: example, apiGroup: rbac.authorization.k8s.io}]
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: %s}
`, name, strings.Join(policies, ", "), name)
	}
	role := func(name string, policies ...string) string {
		return fmt.Sprintf(`---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: %s, namespace: test-namespace}
rules: [{apiGroups: [policy.cert-manager.io], resources: [certificaterequestpolicies], verbs: [use], resourceNames: [%s]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: test-role, namespace: test-namespace}
subjects: [{kind: User, name: example, apiGroup: rbac.authorization.k8s.io}]
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: %s}
`, name, strings.Join(policies, ", "), name)
	}
	policies := func(names ...string) []*api.CertificateRequestPolicy {
		var out []*api.CertificateRequestPolicy
		for _, n := range names {
			out = append(out, policyYAML(t, n, `selector: {issuerRef: {}}`))
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		rbac     string
		policies []*api.CertificateRequestPolicy
		want     []string
	}{
		{name: "if no CertificateRequestPolicies exist, return nothing"},
		{name: "if no CertificateRequestPolicies are bound to the user, return ResultUnprocessed"},
		{name: "if single CertificateRequestPolicy exists but not bound, return nothing", policies: policies("test-policy-a")},
		{name: "if multiple CertificateRequestPolicy exists but not bound, return nothing", policies: policies("test-policy-a", "test-policy-b")},
		{name: "if single CertificateRequestPolicy bound at cluster level, return policy",
			rbac: clusterRole("test-binding", "test-policy-a"), policies: policies("test-policy-a"), want: []string{"test-policy-a"}},
		{name: "if single CertificateRequestPolicy bound at namespace, return policy",
			rbac: role("test-binding", "test-policy-a"), policies: policies("test-policy-a"), want: []string{"test-policy-a"}},
		{name: "if two CertificateRequestPolicies bound at cluster level, return policies",
			rbac: clusterRole("test-binding", "test-policy-a", "test-policy-b"), policies: policies("test-policy-a", "test-policy-b"),
			want: []string{"test-policy-a", "test-policy-b"}},
		{name: "if two CertificateRequestPolicies bound at namespace level, return policies",
			rbac: role("test-binding", "test-policy-a", "test-policy-b"), policies: policies("test-policy-a", "test-policy-b"),
			want: []string{"test-policy-a", "test-policy-b"}},
		{name: "if two CertificateRequestPolicies bound at namespace and cluster, return policies",
			rbac:     role("test-binding-namespaced", "test-policy-a") + clusterRole("test-binding-cluster", "test-policy-b"),
			policies: policies("test-policy-a", "test-policy-b"), want: []string{"test-policy-a", "test-policy-b"}},
		{name: "if two CertificateRequestPolicies bound at namespace and cluster and other policies exist, return only bound policies",
			rbac:     role("test-binding-namespaced", "test-policy-a") + clusterRole("test-binding-cluster", "test-policy-b"),
			policies: policies("test-policy-a", "test-policy-b", "test-policy-c", "test-policy-d"), want: []string{"test-policy-a", "test-policy-b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			authz := rbac.NewAuthorizer(rbac.Snapshot{})
			if tc.rbac != "" {
				authz = authorizerFrom(decodeAll(t, tc.rbac))
			}
			if got := applicableNames(t, tc.policies, cr, nil, authz); !slices.Equal(got, tc.want) {
				t.Fatalf("bound %v, want %v", got, tc.want)
			}
		})
	}
}

// review_test.go: Test_Review. Upstream's fake evaluator that denies or
// approves is a policy that allows no DNS name or every one; its fake
// predicate is the selector. "if predicate returns an error" has no
// certfn equivalent (see upstream_test.go).
func TestUpstreamReview(t *testing.T) {
	cr := newCR(t, csr(dns("a.example.com")), byUser("example", rbac.GroupAuthenticated))
	allow := func(name string) *api.CertificateRequestPolicy {
		return policyYAML(t, name, "allowed: {dnsNames: {values: [\"*\"]}}\nselector: {issuerRef: {}}")
	}
	deny := func(name string) *api.CertificateRequestPolicy {
		return policyYAML(t, name, "allowed: {dnsNames: {values: []}}\nselector: {issuerRef: {}}")
	}
	ps := func(p ...*api.CertificateRequestPolicy) []*api.CertificateRequestPolicy { return p }
	const denied = `spec.allowed.dnsNames.values: "a.example.com" is not allowed: the policy allows no DNS names`
	for _, tc := range []struct {
		name     string
		policies []*api.CertificateRequestPolicy
		want     Result
		policy   string
		msg      string
	}{
		{name: "if no CertificateRequestPolicies exist, return ResultUnprocessed", want: Unmatched,
			msg: "no Ready CertificateRequestPolicy selects this request"},
		{name: "if predicate returns no policies, return ResultUnprocessed",
			policies: ps(policyYAML(t, "test-policy-a", "selector: {issuerRef: {name: other}}")), want: Unmatched,
			msg: "no Ready CertificateRequestPolicy selects this request"},
		{name: "if single policy returns but evaluator denies, return ResultDenied", policies: ps(deny("test-policy-a")), want: Denied,
			msg: `no applicable CertificateRequestPolicy allows this request: [policy "test-policy-a": ` + denied + `]`},
		{name: "if single policy returns and evaluator returns not-denied, return ResultApproved", policies: ps(allow("test-policy-a")),
			want: Approved, policy: "test-policy-a", msg: `approved by CertificateRequestPolicy "test-policy-a"`},
		{name: "if two policies returned and evaluator returns one not-denied, return ResultApproved",
			policies: ps(deny("test-policy-a"), allow("test-policy-b")), want: Approved, policy: "test-policy-b",
			msg: `approved by CertificateRequestPolicy "test-policy-b"`},
		{name: "if two policies returned and both return denied, return ResultDenied",
			policies: ps(deny("test-policy-b"), deny("test-policy-a")), want: Denied,
			msg: `[policy "test-policy-a": ` + denied + `] [policy "test-policy-b": ` + denied + `]`},
		// Mapped: approver-policy defers a denial while an applicable
		// policy has no Ready condition yet (not reconciled); certfn judges
		// such a policy by compiling it at once, so the denial stands, and
		// lists it.
		{name: "if evaluator denies but some policies are unreconciled, return ResultUnprocessed",
			policies: ps(ready(deny("test-policy-deny"), api.ConditionTrue, 1), deny("test-policy-unreconciled")), want: Denied,
			msg: `[policy "test-policy-deny": ` + denied + `] [policy "test-policy-unreconciled": ` + denied + `]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A new evaluator: the cases reuse names (and generation 1)
			// for different specs, which its cache takes for one version.
			d := newEvaluator(t).Evaluate(context.Background(), Input{Request: cr, Policies: tc.policies, Authorizer: bindAll()})
			if d.Result != tc.want || d.Policy != tc.policy || !strings.Contains(d.Message(), tc.msg) {
				t.Fatalf("got %s by %q: %s\nwant %s by %q with %q", d.Result, d.Policy, d.Message(), tc.want, tc.policy, tc.msg)
			}
		})
	}
}

// wildcard_test.go: Test_WildcardSubset, Test_WildcardContains and
// Test_WildcardMatches (patterns.matchAny is WildcardContains; a subset is
// every text matched by some pattern, as allowed lists are checked).
func TestUpstreamWildcard(t *testing.T) {
	compile := func(t *testing.T, raw ...string) patterns {
		t.Helper()
		ps := patterns{}
		for _, r := range raw {
			p, err := compilePattern(r)
			if err != nil {
				t.Fatalf("compilePattern(%q): %v", r, err)
			}
			ps = append(ps, p)
		}
		return ps
	}
	t.Run("Test_WildcardSubset", func(t *testing.T) {
		for _, tc := range []struct {
			patterns, texts []string
			want            bool
		}{
			{[]string{}, []string{}, true},
			{[]string{"cert-manager"}, []string{"cert-manager"}, true},
			{[]string{"cert-manager", "foo"}, []string{"cert-manager"}, true},
			{[]string{"cert-manager"}, []string{"cert-manager", "foo"}, false},
			{[]string{"foo", "cert-manager", "bar"}, []string{"cert-manager", "foo"}, true},
			{[]string{"foo", "cert-*", "bar"}, []string{"cert-manager", "foo"}, true},
			{[]string{"*"}, []string{"cert-manager", "foo"}, true},
			{[]string{"foo.*"}, []string{"cert-manager", "foo."}, false},
			{[]string{"foo.*"}, []string{"foo.cert-manager", "foo."}, true},
		} {
			ps := compile(t, tc.patterns...)
			if got := !slices.ContainsFunc(tc.texts, func(s string) bool { return !ps.matchAny(s) }); got != tc.want {
				t.Errorf("subset(%q, %q) = %v, want %v", tc.patterns, tc.texts, got, tc.want)
			}
		}
	})
	t.Run("Test_WildcardContains", func(t *testing.T) {
		for _, tc := range []struct {
			patterns []string
			text     string
			want     bool
		}{
			{[]string{}, "cert-manager", false},
			{[]string{"cert-manager"}, "cert-manager", true},
			{[]string{""}, "", true},
			{[]string{"cert-manager", "foo"}, "cert-manager", true},
			{[]string{"foo", "cert-manager"}, "cert-manager", true},
			{[]string{"foo", "cert-*"}, "cert-manager", true},
			{[]string{"foo", "cert-*manager"}, "cert-manager", true},
			{[]string{"foo", "cert-m*"}, "cert-", false},
			{[]string{"foo", "cert-manager"}, "bar", false},
			{[]string{"foo", "*"}, "bar", true},
			{[]string{"foo", ""}, "bar", false},
		} {
			if got := compile(t, tc.patterns...).matchAny(tc.text); got != tc.want {
				t.Errorf("contains(%q, %q) = %v, want %v", tc.patterns, tc.text, got, tc.want)
			}
		}
	})
	t.Run("Test_WildcardMatches", func(t *testing.T) {
		for name, tc := range map[string]struct {
			pattern, text string
			want          bool
		}{
			"only wildcard pattern: true":                    {"*", "cert-manager", true},
			"empty pattern: false":                           {"", "cert-manager", false},
			"empty pattern and text: true":                   {"", "", true},
			"short parrten with wildcard: true":              {"cert-*", "cert-manager.io", true},
			"bigger pattern: false":                          {"cert-manager-foo", "cert-manager", false},
			"same pattern and text: true":                    {"cert-manager", "cert-manager", true},
			"same pattern with wildcard: true":               {"cert-manager.io*", "cert-manager.io", true},
			"same pattern with wildcard at start: true":      {"*cert-manager.io", "cert-manager.io", true},
			"same pattern with middle wildcard: true":        {"cert-*manager.io", "cert-manager.io", true},
			"wrong pattern with wildcard: false":             {"cert-foo*", "cert-manager.io", false},
			"pattren with wildcards inside: true":            {"ce*t-*ger*io", "cert-manager.io", true},
			"pattern with wildcards inside but short: false": {"ce*t-*ger*.", "cert-manager.io", false},
		} {
			if got := compile(t, tc.pattern).matchAny(tc.text); got != tc.want {
				t.Errorf("%s: match(%q, %q) = %v, want %v", name, tc.pattern, tc.text, got, tc.want)
			}
		}
	})
	// Test_WildcardMatches_BacktrackingDoesNotHang, without its timer (no
	// timed assertions here): pattern.match is linear (greedy leftmost),
	// so this returns at once; an exponential matcher would hang the test
	// binary until its timeout.
	t.Run("Test_WildcardMatches_BacktrackingDoesNotHang", func(t *testing.T) {
		if compile(t, "*a*a*a*a*a*a*a*a*!").matchAny(strings.Repeat("a", 50)) {
			t.Error("matched")
		}
	})
}

// registry_test.go: TestRegistry_Store. approver-policy's registry panics
// on a duplicate name; certfn's plugins are registered explicitly and
// NewEvaluator refuses duplicates with an error.
func TestUpstreamRegistryDuplicates(t *testing.T) {
	for _, tc := range []struct {
		name    string
		plugins []Plugin
		wantErr bool
	}{
		{"storing a single approver should succeed", []Plugin{fakePlugin{name: "a"}}, false},
		{"storing multiple approvers should succeed", []Plugin{fakePlugin{name: "a"}, fakePlugin{name: "b"}}, false},
		{"storing approvers with duplicate names should panic", []Plugin{fakePlugin{name: "a"}, fakePlugin{name: "b"}, fakePlugin{name: "a"}}, true},
		{"storing duplicate names in a single call should panic", []Plugin{fakePlugin{name: "dup"}, fakePlugin{name: "dup"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewEvaluator(Options{Plugins: tc.plugins}); (err != nil) != tc.wantErr {
				t.Fatalf("NewEvaluator: %v, want error %v", err, tc.wantErr)
			}
		})
	}
}
