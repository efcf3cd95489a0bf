package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/rbac"
)

// TestMain makes every evaluation in this package's tests use its list's
// index (built on the first evaluation of a list rather than the second),
// so that the tables of the other test files check the indexed path; the
// path without an index is checked against it by
// TestIndexedAgreesWithEach.
func TestMain(m *testing.M) {
	indexAtUse = 1
	os.Exit(m.Run())
}

// filterValues are values the filter tests try against every pattern and
// rule: approver-policy's wildcard edge cases (a '*' spans dots and
// matches the empty string) and values with characters names cannot hold.
var filterValues = []string{
	"", "a", "example.com", ".example.com", "a.example.com", "a.b.example.com", "aexample.com",
	"www.team-1.example.com", "team-1.example.com", "x.team-1.example.org", "foo", "foobar", "barfoo",
	"evil.org/.team-1.example.com", "evil.org .example.com", "EXAMPLE.COM", "*.example.com", "10.0.0.1",
}

func TestPatternAtom(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		want    atom
		ok      bool
	}{
		{"*", atom{}, false},
		{"*a*", atom{}, false},
		{"*a*b*", atom{}, false},
		{"", atom{atomExact, ""}, true},
		{"example.com", atom{atomExact, "example.com"}, true},
		{"*.example.com", atom{atomSuffix, ".example.com"}, true},
		{"*example.com", atom{atomSuffix, "example.com"}, true},
		{"www.*", atom{atomPrefix, "www."}, true},
		{"www.*.example.com", atom{atomSuffix, ".example.com"}, true},
		{"a*b*c", atom{atomSuffix, "c"}, true},
		{"a*b*", atom{atomPrefix, "a"}, true},
		{"*a*b", atom{atomSuffix, "b"}, true},
	} {
		t.Run(tc.pattern, func(t *testing.T) {
			p, err := compilePattern(tc.pattern)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := patternAtom(&p)
			if ok != tc.ok || got != tc.want {
				t.Fatalf("patternAtom = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
			// Necessary: every value the pattern matches meets the atom.
			for _, v := range filterValues {
				if ok && p.match(v) && !got.holds(v) {
					t.Errorf("%q matches %q but fails its atom %+v", v, tc.pattern, got)
				}
			}
		})
	}
}

func TestRuleAtoms(t *testing.T) {
	for _, tc := range []struct {
		rule  string
		want  []atom // nil: the shape says nothing
		exact bool   // the rule is exactly its atoms
	}{
		{"self.endsWith('.example.com')", []atom{{atomSuffix, ".example.com"}}, true},
		{"self.startsWith('www.')", []atom{{atomPrefix, "www."}}, true},
		{"self == 'example.com'", []atom{{atomExact, "example.com"}}, true},
		{"'example.com' == self", []atom{{atomExact, "example.com"}}, true},
		{"self == 'team-1.example.com' || self.endsWith('.team-1.example.com')",
			[]atom{{atomExact, "team-1.example.com"}, {atomSuffix, ".team-1.example.com"}}, true},
		{"self == '' || (self.startsWith('a') || self.endsWith('.com'))",
			[]atom{{atomExact, ""}, {atomPrefix, "a"}, {atomSuffix, ".com"}}, true},
		{"self.endsWith('.team-1.example.com') && cr.namespace.startsWith('team-')", []atom{{atomSuffix, ".team-1.example.com"}}, false},
		{"cr.namespace.startsWith('team-') && self.endsWith('.a.com')", []atom{{atomSuffix, ".a.com"}}, false},
		{"self.size() < 30 && (self == 'a' || self == 'b')", []atom{{atomExact, "a"}, {atomExact, "b"}}, false},
		// An error on the other side of && cannot make the rule true.
		{"self.endsWith('.com') && int(self) > 0", []atom{{atomSuffix, ".com"}}, false},
		{"self.endsWith('')", nil, false},
		{"self.endsWith('a') || cr.namespace == 'x'", nil, false},
		{"!self.endsWith('.org')", nil, false},
		{"self != 'a'", nil, false},
		{"self.contains('team')", nil, false},
		{"self.endsWith(cr.namespace)", nil, false},
		{"self.endsWith('.' + cr.namespace)", nil, false},
		{"cr.namespace.endsWith('a')", nil, false},
		{"cr.namespace == 'a'", nil, false},
		{"['a.com'].exists(self, self.endsWith('a'))", nil, false},
		{"self.matches('^a$')", nil, false},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			r, err := compileCELRule(tc.rule)
			if err != nil {
				t.Fatal(err)
			}
			if r.atomsOK != (tc.want != nil) || !slices.Equal(r.atoms, tc.want) || r.atomsExact != tc.exact {
				t.Fatalf("atoms = %+v, %v, exact %v; want %+v, exact %v", r.atoms, r.atomsOK, r.atomsExact, tc.want, tc.exact)
			}
			// Necessary: a value meeting no atom fails the rule (false or
			// an error), whatever cr is. Exact: the rule run by CEL is
			// true exactly when the value meets an atom, as eval reports.
			inCEL := r
			inCEL.atomsExact = false
			for _, ns := range []string{"team-1", "x", ""} {
				act := &activation{crBounded: true}
				act.cr = &crValue{namespace: ns, name: "req"}
				f := valueFilter{atoms: r.atoms}
				for _, v := range filterValues {
					ok, err := inCEL.eval(act, stringVals([]string{v})[0])
					if ok && r.atomsOK && !f.meets(v) {
						t.Errorf("namespace %q: %q passes the rule but no atom of %+v", ns, v, r.atoms)
					}
					if got, gotErr := r.eval(act, stringVals([]string{v})[0]); got != ok || (gotErr == nil) != (err == nil) {
						t.Errorf("namespace %q: %q: eval %v, %v; CEL %v, %v", ns, v, got, gotErr, ok, err)
					}
				}
			}
		})
	}
}

func TestIndexCandidates(t *testing.T) {
	ps := []*api.CertificateRequestPolicy{
		policyYAML(t, "wild", "selector: {issuerRef: {}}\nallowed:\n  dnsNames: {values: [\"*.example.com\"]}\n"),
		policyYAML(t, "exact", "selector: {issuerRef: {}}\nallowed:\n  dnsNames: {values: [\"example.com\", \"www.*\"]}\n"),
		policyYAML(t, "any", "selector: {issuerRef: {}}\nallowed:\n  dnsNames: {values: [\"a*\", \"*\"]}\n"),
		policyYAML(t, "none", "selector: {issuerRef: {}}\nallowed:\n  dnsNames: {values: []}\n"),
		policyYAML(t, "rule", "selector: {issuerRef: {}}\nallowed:\n  dnsNames:\n    validations: [{rule: \"self.endsWith('.team-1.example.com') || self == 'team-1.example.com'\"}]\n"),
		policyYAML(t, "both", "selector: {issuerRef: {}}\nallowed:\n  commonName: {value: \"*.example.com\", validations: [{rule: \"self.startsWith('www.')\"}]}\n  dnsNames: {values: [\"*\"]}\n"),
		policyYAML(t, "ip", "selector: {issuerRef: {}}\nallowed:\n  ipAddresses: {values: [\"10.0.*\"]}\n"),
		nil,
		policyYAML(t, "broken", "selector: {issuerRef: {name: \"a**\"}}\n"),
	}
	ev := newEvaluator(t)
	idx := buildIndex(ev.entries(ps))
	for _, tc := range []struct {
		name string
		csr  []csrOpt
		want []string
	}{
		{"no names", csr(), []string{"wild", "exact", "any", "none", "rule", "both", "ip"}},
		// "both" allows every DNS name ("*") and "ip" none.
		{"apex is not under the wildcard", csr(dns("example.com")), []string{"exact", "any", "both"}},
		{"a star spans dots", csr(dns("a.b.example.com")), []string{"wild", "any", "both"}},
		{"a star matches the empty label", csr(dns(".example.com")), []string{"wild", "any", "both"}},
		{"every name must pass", csr(dns("a.example.com", "example.com")), []string{"any", "both"}},
		{"prefix", csr(dns("www.other.org")), []string{"exact", "any", "both"}},
		{"rule shape", csr(dns("www.team-1.example.com", "team-1.example.com")), []string{"wild", "any", "rule", "both"}},
		{"rule suffix needs the dot", csr(dns("xteam-1.example.com")), []string{"wild", "any", "both"}},
		{"common name by pattern and rule", csr(cn("www.example.com")), []string{"both"}},
		{"common name failing the rule", csr(cn("api.example.com")), nil},
		{"characters a name cannot hold are the review's", csr(dns("evil.org/.example.com")), []string{"wild", "any", "both"}},
		{"ip", csr(ips("10.0.0.1")), []string{"ip"}},
		{"ip outside", csr(ips("10.1.0.1")), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parsed, _ := buildCSR(t, tc.csr...)
			req := newRequest(newCR(t, tc.csr), parsed, nil)
			defer req.release()
			cand := idx.candidates(req)
			var got []string
			for i := cand.next(0); i >= 0; i = cand.next(i + 1) {
				got = append(got, ps[i].Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("candidates %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPolicySetNext(t *testing.T) {
	s := make(policySet, 3)
	for _, i := range []int{0, 63, 64, 130} {
		s.add(i)
	}
	var got []int
	for i := s.next(0); i >= 0; i = s.next(i + 1) {
		got = append(got, i)
	}
	if want := []int{0, 63, 64, 130}; !slices.Equal(got, want) {
		t.Fatalf("next walks %v, want %v", got, want)
	}
	if s.next(192) != -1 || s.next(131) != -1 || !s.has(63) || s.has(62) {
		t.Fatal("next or has past the last member")
	}
}

// TestIndexLazy: a list builds its index on its second evaluation (the
// tests' default is the first), and a changed policy makes a new list.
func TestIndexLazy(t *testing.T) {
	defer func(n int64) { indexAtUse = n }(indexAtUse)
	indexAtUse = 2
	ev := newEvaluator(t)
	ps := []*api.CertificateRequestPolicy{policyYAML(t, "p", "selector: {issuerRef: {}}\nallowed:\n  dnsNames: {values: [\"*.example.com\"]}\n")}
	l := ev.list(ps)
	if l.index() != nil || l.index() == nil || ev.list(ps) != l {
		t.Fatal("want no index on the first use, an index on the second, the same list for the same policies")
	}
	changed := *ps[0]
	changed.Generation++
	if ev.list([]*api.CertificateRequestPolicy{&changed}) == l {
		t.Fatal("a changed policy kept the list")
	}
}

// TestIndexedAgreesWithEach compares the indexed evaluation with the
// review of every applicable policy on random policy lists and requests:
// the same result, approving policy, message and detail.
func TestIndexedAgreesWithEach(t *testing.T) {
	d := newDifferential(t)
	seen := map[Result]int{}
	for seed := range uint64(400) {
		seen[d.check(t, seed)]++
	}
	// The random lists must reach every outcome, approvals by a policy
	// after others failed included, or the comparison proves little.
	if seen[Approved] < 40 || seen[Denied] < 40 || seen[Unmatched] < 10 || d.approvedLate < 10 {
		t.Fatalf("outcomes %v, %d approvals after a failed policy: the random lists are too narrow", seen, d.approvedLate)
	}
}

// FuzzIndexedAgreesWithEach is TestIndexedAgreesWithEach on fuzzed seeds.
func FuzzIndexedAgreesWithEach(f *testing.F) {
	f.Add(uint64(1))
	d := newDifferential(f)
	f.Fuzz(func(t *testing.T, seed uint64) { d.check(t, seed) })
}

var (
	diffNames = []string{"a.example.com", "example.com", ".example.com", "a.b.example.com", "team-1.example.com",
		"www.team-1.example.com", "www.team-2.example.com", "x.team-1.example.org", "foo", "foo.bar", "www.foo",
		"evil.org/.team-1.example.com", "a-b.example.com"}
	diffPatterns = []string{"*.example.com", "example.com", "*", "a*", "www.*", "*.team-1.example.com",
		"team-1.example.com", "*team*", "www.*.example.com", "foo", "*.org", "*.example.*", "*-*.example.com"}
	diffRules = []string{"self.endsWith('.example.com')", "self == 'example.com' || self.endsWith('.team-1.example.com')",
		"self.startsWith('www.') && cr.namespace.startsWith('team-')", "self.endsWith('.' + cr.namespace + '.example.com')",
		"self.size() < 20", "!self.endsWith('.org')", "self.contains('team')", "'foo' == self",
		"self.startsWith('a') || self.endsWith('com')", "self.endsWith('.com') && int(self) > 0", "cr.namespace == 'team-1'"}
)

type differential struct {
	approvedLate int // approvals after an applicable policy failed
	ev           *Evaluator
	policies     []*api.CertificateRequestPolicy
	requests     []*api.CertificateRequest
}

// newDifferential compiles 40 random policies and builds 30 random
// requests (CSRs are signed once here) and one whose CSR does not parse.
func newDifferential(t testing.TB) *differential {
	r := rand.New(rand.NewPCG(1, 2))
	d := &differential{ev: newEvaluator(t)}
	pick := func(from []string, max int) []string {
		var out []string
		for range r.IntN(max + 1) {
			out = append(out, from[r.IntN(len(from))])
		}
		return out
	}
	quoted := func(l []string) string {
		b, _ := json.Marshal(l)
		return string(b)
	}
	rules := func() string {
		var rs []string
		for _, rule := range pick(diffRules, 2) {
			if !slices.Contains(rs, rule) {
				rs = append(rs, rule)
			}
		}
		var out []string
		for _, rule := range rs {
			out = append(out, fmt.Sprintf(`{"rule":%q}`, rule))
		}
		return "[" + strings.Join(out, ",") + "]"
	}
	for i := range 40 {
		var allowed []string
		if r.IntN(4) > 0 {
			allowed = append(allowed, fmt.Sprintf(`"dnsNames":{"values":%s,"validations":%s}`, quoted(pick(diffPatterns, 3)), rules()))
		}
		if r.IntN(3) > 0 {
			cn := fmt.Sprintf(`"value":%q,`, diffPatterns[r.IntN(len(diffPatterns))])
			if r.IntN(3) == 0 {
				cn = ""
			}
			allowed = append(allowed, fmt.Sprintf(`"commonName":{%s"validations":%s,"required":%v}`, cn, rules(), cn != "" && r.IntN(4) == 0))
		}
		allowed = append(allowed, `"usages":["server auth","digital signature"]`)
		selectors := []string{`{"issuerRef":{}}`, `{"issuerRef":{"name":"other-*"}}`, `{"namespace":{"matchNames":["team-*"]}}`}
		spec := fmt.Sprintf(`{"selector":%s,"allowed":{%s}}`, selectors[r.IntN(len(selectors))], strings.Join(allowed, ","))
		var s api.CertificateRequestPolicySpec
		if err := json.Unmarshal([]byte(spec), &s); err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		p := &api.CertificateRequestPolicy{ObjectMeta: api.ObjectMeta{Name: fmt.Sprintf("p%02d", i), Generation: 1}, Spec: s}
		d.policies = append(d.policies, p)
	}
	for range 30 {
		opts := csr(dns(pick(diffNames, 3)...))
		if r.IntN(3) > 0 {
			opts = append(opts, cn(diffNames[r.IntN(len(diffNames))]))
		}
		ns := []string{"team-1", "team-2", "default"}[r.IntN(3)]
		d.requests = append(d.requests, newCR(t, opts, inNamespace(ns), usages("server auth")))
	}
	// A CSR that does not parse: Denied if a policy applies, else
	// Unmatched.
	d.requests = append(d.requests, newCR(t, csr(), inNamespace("team-1"), csrPEM([]byte("not a CSR"))))
	return d
}

// check evaluates one random list (a subset of the policies in random
// order, some not Ready, bound by name or all) and request both ways.
func (d *differential) check(t *testing.T, seed uint64) Result {
	r := rand.New(rand.NewPCG(seed, 7))
	var ps []*api.CertificateRequestPolicy
	var bound []string
	for _, i := range r.Perm(len(d.policies))[:1+r.IntN(len(d.policies))] {
		p := d.policies[i]
		if r.IntN(8) == 0 {
			nr := *p
			nr.Status.Conditions = []api.Condition{{Type: api.CertificateRequestPolicyConditionReady, Status: api.ConditionFalse, ObservedGeneration: 1}}
			p = &nr
		}
		if r.IntN(10) == 0 {
			p = nil
		}
		ps = append(ps, p)
		if p != nil && r.IntN(4) > 0 {
			bound = append(bound, p.Name)
		}
	}
	authz := bindAll()
	if r.IntN(3) > 0 {
		authz = rbac.NewAuthorizer(rbac.Snapshot{
			ClusterRoles: []api.ClusterRole{{ObjectMeta: api.ObjectMeta{Name: "some"}, Rules: []api.PolicyRule{{
				Verbs: []string{"use"}, APIGroups: []string{api.PolicyGroup}, Resources: []string{"certificaterequestpolicies"}, ResourceNames: append(bound, "absent")}}}},
			ClusterRoleBindings: []api.ClusterRoleBinding{{ObjectMeta: api.ObjectMeta{Name: "some"},
				Subjects: []api.Subject{{Kind: api.SubjectKindGroup, Name: rbac.GroupAuthenticated}},
				RoleRef:  api.RoleRef{APIGroup: api.RBACGroup, Kind: api.KindClusterRole, Name: "some"}}},
		})
	}
	cr := d.requests[r.IntN(len(d.requests))]
	in := Input{Request: cr, Policies: ps, Authorizer: authz}
	entries := d.ev.entries(ps)
	ctx := context.Background()
	sc1 := scan{in: &in, id: identityOf(cr), sel: newSelectorInput(cr, nil)}
	each := evaluateEach(ctx, &sc1, entries)
	sc2 := scan{in: &in, id: identityOf(cr), sel: newSelectorInput(cr, nil)}
	indexed := evaluateIndexed(ctx, &sc2, entries, buildIndex(entries))
	if each.Result != indexed.Result || each.Policy != indexed.Policy || each.Message() != indexed.Message() || each.Detail != indexed.Detail {
		t.Fatalf("seed %d: each: %s %q %q; indexed: %s %q %q", seed, each.Result, each.Policy, each.Message(),
			indexed.Result, indexed.Policy, indexed.Message())
	}
	if each.Result == Approved {
		sc := scan{in: &in, id: identityOf(cr), sel: newSelectorInput(cr, nil)}
		for i, p := range ps {
			if c := sc.applies(p, entries[i]); c != nil {
				if c.Name != each.Policy {
					d.approvedLate++
				}
				break
			}
		}
	}
	return each.Result
}

// BenchmarkBuildIndex100Policies reports what building the index of the
// benchmark's 100 policies costs (once per list, on its second
// evaluation).
func BenchmarkBuildIndex100Policies(b *testing.B) {
	ps, _ := benchPolicies(b)
	entries := newEvaluator(b).entries(ps)
	b.ReportAllocs()
	for b.Loop() {
		buildIndex(entries)
	}
}
