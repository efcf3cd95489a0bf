package policy

import (
	"context"
	"crypto/x509/pkix"
	"encoding/asn1"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/rbac"
)

func ready(p *api.CertificateRequestPolicy, status api.ConditionStatus, gen int64) *api.CertificateRequestPolicy {
	p.Status.Conditions = []api.Condition{{Type: api.CertificateRequestPolicyConditionReady, Status: status, ObservedGeneration: gen}}
	return p
}

func TestEvaluateSemantics(t *testing.T) {
	exampleCom := policyYAML(t, "a-example-com", `
allowed:
  dnsNames: {values: ["*.example.com"]}
selector: {issuerRef: {}}
`)
	exampleOrg := policyYAML(t, "b-example-org", `
allowed:
  dnsNames: {values: ["*.example.org"]}
selector: {issuerRef: {}}
`)
	other := policyYAML(t, "c-other-issuer", `
allowed:
  dnsNames: {values: ["*"]}
selector: {issuerRef: {name: "other"}}
`)
	badCEL := policyYAML(t, "d-bad-cel", `
allowed:
  dnsNames:
    values: ["*"]
    validations: [{rule: "self.startsWith("}]
selector: {issuerRef: {}}
`)
	markedNotReady := ready(policyYAML(t, "e-not-ready", `
allowed:
  dnsNames: {values: ["*"]}
selector: {issuerRef: {}}
`), api.ConditionFalse, 1)
	staleNotReady := ready(policyYAML(t, "f-stale-status", `
allowed:
  dnsNames: {values: ["*.stale.test"]}
selector: {issuerRef: {}}
`), api.ConditionFalse, 0) // about generation 0; the policy is at 1 and compiles

	ev := newEvaluator(t)
	set := func(ps ...*api.CertificateRequestPolicy) []*api.CertificateRequestPolicy { return ps }
	tests := []struct {
		name     string
		policies []*api.CertificateRequestPolicy
		cr       *api.CertificateRequest
		want     Result
		policy   string
		msg      []string
	}{
		{"one of two applicable policies allows", set(exampleCom, exampleOrg), newCR(t, csr(dns("www.example.org"))), Approved, "b-example-org", nil},
		{"first allowing policy in order approves", set(exampleCom, exampleOrg), newCR(t, csr(dns("www.example.com"))), Approved, "a-example-com", nil},
		{"none of the applicable allows: each listed, sorted", set(exampleOrg, exampleCom), newCR(t, csr(dns("www.example.net"))), Denied, "",
			[]string{`no applicable CertificateRequestPolicy allows this request: [policy "a-example-com": spec.allowed.dnsNames.values: "www.example.net" is not allowed (allowed: "*.example.com")] [policy "b-example-org": spec.allowed.dnsNames.values: "www.example.net" is not allowed (allowed: "*.example.org")]`}},
		{"a policy for another issuer is not listed in a denial", set(exampleCom, other), newCR(t, csr(dns("x.net"))), Denied, "", nil},
		{"policy for another issuer never applies", set(other), newCR(t, csr(dns("x.net"))), Unmatched, "",
			[]string{"of 1 policies, 1 not selecting this request"}},
		{"a policy with invalid CEL never approves", set(badCEL), newCR(t, csr(dns("x.net"))), Unmatched, "", []string{"1 not Ready"}},
		{"a policy marked not Ready never approves", set(markedNotReady), newCR(t, csr(dns("x.net"))), Unmatched, "", []string{"1 not Ready"}},
		{"a stale not-Ready status is ignored when the policy compiles", set(staleNotReady), newCR(t, csr(dns("a.stale.test"))), Approved, "f-stale-status", nil},
		{"not-ready policies do not count for denial", set(markedNotReady, exampleCom), newCR(t, csr(dns("x.net"))), Denied, "", []string{`policy "a-example-com"`}},
		{"no policies", nil, newCR(t, csr(dns("x"))), Unmatched, "",
			[]string{`no policy applies to requester "alice" for issuer Issuer "ca" (group cert-manager.io) in namespace "default": there are no CertificateRequestPolicies`}},
		{"nil entries are skipped", set(nil, exampleCom), newCR(t, csr(dns("a.example.com"))), Approved, "a-example-com", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := ev.Evaluate(context.Background(), Input{Request: tc.cr, Policies: tc.policies, Authorizer: bindAll()})
			if d.Result != tc.want || d.Policy != tc.policy {
				t.Fatalf("got %s by %q (%s), want %s by %q", d.Result, d.Policy, d.Message(), tc.want, tc.policy)
			}
			for _, m := range tc.msg {
				// An Unmatched request's reasons are in the operator's
				// detail, not in the message the requester reads.
				if !strings.Contains(d.Message()+"\n"+d.Detail, m) {
					t.Errorf("message %q (detail %q) lacks %q", d.Message(), d.Detail, m)
				}
			}
			if tc.want == Denied && strings.Contains(d.Message(), "c-other-issuer") {
				t.Errorf("denial lists a policy that does not apply: %s", d.Message())
			}
		})
	}
}

func TestEvaluateRBAC(t *testing.T) {
	objs := decodeAll(t, `
apiVersion: policy.cert-manager.io/v1alpha1
kind: CertificateRequestPolicy
metadata: {name: team-a-names}
spec:
  allowed:
    dnsNames: {values: ["*.team-a.example.com"]}
  selector: {issuerRef: {}}
---
apiVersion: policy.cert-manager.io/v1alpha1
kind: CertificateRequestPolicy
metadata: {name: anything}
spec:
  allowed:
    dnsNames: {values: ["*"]}
  selector: {issuerRef: {}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: use-team-a-names}
rules:
- {apiGroups: [policy.cert-manager.io], resources: [certificaterequestpolicies], verbs: [use], resourceNames: [team-a-names]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: team-a-uses, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: use-team-a-names}
subjects:
- {kind: Group, name: team-a, apiGroup: rbac.authorization.k8s.io}
- {kind: ServiceAccount, name: cert-manager, namespace: cert-manager}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: use-anything, namespace: sandbox}
rules:
- {apiGroups: ["*"], resources: [certificaterequestpolicies], verbs: ["*"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: sandbox, namespace: sandbox}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: use-anything}
subjects:
- {kind: User, name: "arn:aws:iam::123456789012:role/sandbox-ci", apiGroup: rbac.authorization.k8s.io}
`)
	authz := authorizerFrom(objs)
	if w := authz.Warnings(); len(w) > 0 {
		t.Fatal(w)
	}
	runEvalCases(t, newEvaluator(t), policiesFrom(objs), authz, []evalCase{
		{name: "team-a member in team-a", cr: newCR(t, csr(dns("web.team-a.example.com")), inNamespace("team-a"), byUser("bob", "team-a")),
			want: Approved, policy: "team-a-names"},
		{name: "team-a member asks beyond its policy: denied by the one bound policy only",
			cr: newCR(t, csr(dns("web.example.com")), inNamespace("team-a"), byUser("bob", "team-a")), want: Denied,
			msg: []string{`[policy "team-a-names": spec.allowed.dnsNames.values: "web.example.com" is not allowed`}, noMatch: []string{"anything"}},
		{name: "the RoleBinding only holds in its namespace", cr: newCR(t, csr(dns("web.team-a.example.com")), inNamespace("team-b"), byUser("bob", "team-a")),
			want: Unmatched, msg: []string{`requester "bob"`, `2 selecting it but not bound to the requester with "use"`}},
		{name: "not a team-a member", cr: newCR(t, csr(dns("web.team-a.example.com")), inNamespace("team-a"), byUser("carol", "team-b")), want: Unmatched},
		{name: "certfn's controller ServiceAccount in team-a", cr: newCR(t, csr(dns("web.team-a.example.com")), inNamespace("team-a"),
			byUser("system:serviceaccount:cert-manager:cert-manager")), want: Approved},
		{name: "IAM role with a Role on every policy in sandbox", cr: newCR(t, csr(dns("anything.test")), inNamespace("sandbox"),
			byUser("arn:aws:iam::123456789012:role/sandbox-ci")), want: Approved, policy: "anything"},
	})
	d := newEvaluator(t).Evaluate(context.Background(), Input{Request: newCR(t, csr(dns("x"))), Policies: policiesFrom(objs)})
	if d.Result != Unmatched {
		t.Errorf("nil Authorizer: %s (%s), want Unmatched", d.Result, d.Message())
	}
}

func TestEvaluateCELIdentity(t *testing.T) {
	p := policyYAML(t, "identity", `
allowed:
  dnsNames:
    values: ["*.example.com"]
    validations:
      - rule: "self.startsWith(cr.namespace + '.')"
        message: "DNS names must start with the request's namespace"
      - rule: "'dns-admins' in cr.groups || !self.startsWith(cr.namespace + '.admin.')"
  commonName:
    validations:
      - rule: "self == cr.username"
        message: "the common name must be the requester"
  emailAddresses:
    validations:
      - rule: "cr.extra['team'][0] + '@example.com' == self"
selector: {issuerRef: {}}
`)
	withExtra := func(cr *api.CertificateRequest) { cr.Spec.Extra = map[string][]string{"team": {"ops"}} }
	runEvalCases(t, newEvaluator(t), []*api.CertificateRequestPolicy{p}, bindAll(), []evalCase{
		{name: "namespace prefix", cr: newCR(t, csr(dns("team-a.web.example.com")), inNamespace("team-a")), want: Approved},
		{name: "wrong namespace prefix", cr: newCR(t, csr(dns("team-b.web.example.com")), inNamespace("team-a")), want: Denied,
			msg: []string{`spec.allowed.dnsNames.validations[0]: "team-b.web.example.com": DNS names must start with the request's namespace`}},
		{name: "default message names the rule", cr: newCR(t, csr(dns("team-a.admin.example.com")), inNamespace("team-a")), want: Denied,
			msg: []string{`spec.allowed.dnsNames.validations[1]: "team-a.admin.example.com": failed rule: 'dns-admins' in cr.groups`}},
		{name: "group membership from spec.groups", cr: newCR(t, csr(dns("team-a.admin.example.com")), inNamespace("team-a"),
			byUser("alice", "dns-admins")), want: Approved},
		{name: "common name equals username", cr: newCR(t, csr(cn("alice"))), want: Approved},
		{name: "common name of someone else", cr: newCR(t, csr(cn("bob"))), want: Denied, msg: []string{"the common name must be the requester"}},
		{name: "extra values", cr: newCR(t, csr(emails("ops@example.com")), withExtra), want: Approved},
		{name: "missing extra key is a rule error, denied", cr: newCR(t, csr(emails("ops@example.com"))), want: Denied,
			msg: []string{"spec.allowed.emailAddresses.validations[0]", "rule error: no such key: team"}},
	})
}

func TestEvaluateRequestContents(t *testing.T) {
	open := policyYAML(t, "open", `
allowed:
  commonName: {value: "*"}
  dnsNames: {values: ["*"]}
  ipAddresses: {values: ["*"]}
  uris: {values: ["*"]}
  emailAddresses: {values: ["*"]}
  isCA: true
  usages: ["*"]
  subject:
    organizations: {values: ["*"]}
    countries: {values: ["*"]}
    organizationalUnits: {values: ["*"]}
    localities: {values: ["*"]}
    provinces: {values: ["*"]}
    streetAddresses: {values: ["*"]}
    postalCodes: {values: ["*"]}
    serialNumber: {value: "*"}
selector: {issuerRef: {}}
`)
	onlyCN := policyYAML(t, "cn", `
allowed:
  commonName: {value: "good.example.com"}
selector: {issuerRef: {}}
`)
	otherName := pkix.Extension{Id: asn1.ObjectIdentifier{2, 5, 29, 17}, Value: mustMarshal(t, asn1.RawValue{
		Class: asn1.ClassUniversal, Tag: asn1.TagSequence, IsCompound: true,
		Bytes: append(mustMarshal(t, asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 2, Bytes: []byte("a.example.com")}),
			mustMarshal(t, asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 0, IsCompound: true,
				Bytes: mustMarshal(t, asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 311, 20, 2, 3})})...),
	})}
	ev := newEvaluator(t)
	runEvalCases(t, ev, []*api.CertificateRequestPolicy{open}, bindAll(), []evalCase{
		{name: "everything allowed", cr: newCR(t, csr(cn("x"), dns("a"), ips("10.1.1.1"), uris("https://x/"), emails("a@b"), orgs("o")),
			isCA(), usages("cert sign")), want: Approved},
		{name: "subject e-mail attribute is not allowed by any field", cr: newCR(t, csr(cn("x"),
			extraSubject(asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}, "a@example.com"))), want: Denied,
			msg: []string{`spec.allowed.subject.otherAttributes[1.2.840.113549.1.9.1]: "a@example.com" is not allowed: the policy allows no subject attributes with OID 1.2.840.113549.1.9.1`}},
		{name: "a malformed otherName SAN (no value) fails every policy", cr: newCR(t, csr(extension(otherName))), want: Denied,
			msg: []string{"spec.allowed.subjectAltName: the CSR's subjectAltName extension could not be decoded"}},
	})
	runEvalCases(t, ev, []*api.CertificateRequestPolicy{onlyCN}, bindAll(), []evalCase{
		{name: "single common name", cr: newCR(t, csr(cn("good.example.com"))), want: Approved},
		{name: "a second CN is checked too", cr: newCR(t, csr(cn("good.example.com"), extraSubject(oidCommonName, "evil.example.com"))), want: Denied,
			msg: []string{`spec.allowed.commonName.value: "evil.example.com" is not allowed`}},
	})
}

func mustMarshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := asn1.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEvaluateBadCSR(t *testing.T) {
	p := policyYAML(t, "any", `
allowed:
  commonName: {value: "*"}
selector: {issuerRef: {name: "ca"}}
`)
	ev := newEvaluator(t)
	garbage := newCR(t, csr(), csrPEM([]byte("-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n")))
	d := ev.Evaluate(context.Background(), Input{Request: garbage, Policies: []*api.CertificateRequestPolicy{p}, Authorizer: bindAll()})
	if d.Result != Denied || !strings.HasPrefix(d.Message(), "spec.request: not a valid PKCS#10 request") {
		t.Errorf("garbage CSR: %s %q", d.Result, d.Message())
	}
	// Nothing applies: the CSR is not even parsed.
	garbage.Spec.IssuerRef.Name = "other"
	if d := ev.Evaluate(context.Background(), Input{Request: garbage, Policies: []*api.CertificateRequestPolicy{p}, Authorizer: bindAll()}); d.Result != Unmatched {
		t.Errorf("garbage CSR, no policy applies: %s %q", d.Result, d.Message())
	}
	if d := ev.Evaluate(context.Background(), Input{}); d.Result != Unmatched {
		t.Errorf("no request: %s", d.Result)
	}
	// A caller's already-parsed CSR is used instead of spec.request.
	parsed, _ := buildCSR(t, cn("x"))
	garbage.Spec.IssuerRef.Name = "ca"
	if d := ev.Evaluate(context.Background(), Input{Request: garbage, CSR: parsed, Policies: []*api.CertificateRequestPolicy{p}, Authorizer: bindAll()}); d.Result != Approved {
		t.Errorf("pre-parsed CSR: %s %q", d.Result, d.Message())
	}
}

func TestCompileCache(t *testing.T) {
	ev := newEvaluator(t)
	p := policyYAML(t, "p", `
allowed:
  commonName: {value: "a"}
selector: {issuerRef: {}}
`)
	c1, err := ev.Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	c2, _ := ev.Compile(p)
	if c1 != c2 {
		t.Errorf("same version compiled twice")
	}
	// A new generation is recompiled (and the old one forgotten).
	q := policyYAML(t, "p", `
allowed:
  commonName: {value: "b"}
selector: {issuerRef: {}}
`)
	q.Generation = 2
	c3, _ := ev.Compile(q)
	if c3 == c1 || c3.Generation != 2 {
		t.Errorf("new generation served from cache")
	}
	// resourceVersion counts too.
	q.ResourceVersion = "7"
	c4, _ := ev.Compile(q)
	if c4 == c3 {
		t.Errorf("new resourceVersion served from cache")
	}
	// A policy deleted and created again (new UID) with the same name,
	// generation and resourceVersion is recompiled.
	q.UID = "recreated"
	if c5, _ := ev.Compile(q); c5 == c4 || c5 == nil {
		t.Errorf("recreated policy served from cache")
	}
	// Unversioned policies are cached by their spec.
	u := policyYAML(t, "u", `
allowed:
  commonName: {value: "a"}
selector: {issuerRef: {}}
`)
	u.Generation = 0
	u1, _ := ev.Compile(u)
	u2, _ := ev.Compile(u)
	*u.Spec.Allowed.CommonName.Value = "changed"
	u3, _ := ev.Compile(u)
	if u1 != u2 || u3 == u1 {
		t.Errorf("unversioned cache: same spec reused=%v, changed spec recompiled=%v", u1 == u2, u3 != u1)
	}
	// Errors are cached as well, and Forget drops an entry.
	bad := policyYAML(t, "bad", "selector: {}")
	if _, err := ev.Compile(bad); err == nil {
		t.Fatal("bad policy compiled")
	}
	ev.Forget("bad")
	_, still := (*ev.cache.Load())["bad"]
	if still {
		t.Errorf("Forget kept the entry")
	}
}

func TestEvaluateConcurrent(t *testing.T) {
	ev := newEvaluator(t)
	var ps []*api.CertificateRequestPolicy
	for i := range 10 {
		ps = append(ps, policyYAML(t, fmt.Sprintf("p%d", i), fmt.Sprintf(`
allowed:
  dnsNames:
    values: ["*.t%d.test"]
    validations: [{rule: "self.endsWith('.test')"}]
selector: {issuerRef: {}}
`, i)))
	}
	authz := bindAll()
	cr := newCR(t, csr(dns("a.t9.test")))
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				d := ev.Evaluate(context.Background(), Input{Request: cr, Policies: ps, Authorizer: authz})
				if d.Result != Approved || d.Policy != "p9" {
					errs <- fmt.Sprintf("%s %s %s", d.Result, d.Policy, d.Message())
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestReadyCondition(t *testing.T) {
	ev := newEvaluator(t)
	good := policyYAML(t, "good", "selector: {issuerRef: {}}")
	good.Generation = 3
	c := ev.ReadyCondition(good)
	if c.Type != "Ready" || c.Status != api.ConditionTrue || c.Reason != "Ready" || c.ObservedGeneration != 3 {
		t.Errorf("good: %+v", c)
	}
	bad := policyYAML(t, "bad", `
allowed:
  uris:
    validations: [{rule: "self.startsWith("}]
selector: {}
`)
	c = ev.ReadyCondition(bad)
	if c.Status != api.ConditionFalse || c.Reason != "NotReady" ||
		!strings.Contains(c.Message, "spec.selector: required") ||
		!strings.Contains(c.Message, "spec.allowed.uris.validations[0]: invalid CEL") ||
		strings.Contains(c.Message, "CertificateRequestPolicy bad:") {
		t.Errorf("bad: %+v", c)
	}
	// The condition is what SetCondition stores; once stored as False for
	// the current generation the policy is skipped without compiling.
	api.SetCondition(&bad.Status.Conditions, c, time.Unix(0, 0))
	if !notReadyByStatus(bad) {
		t.Errorf("stored NotReady condition not honoured")
	}
}

type fakeMetrics struct {
	mu     sync.Mutex
	counts map[string]int
}

func (m *fakeMetrics) Inc(name string, labels ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.counts[name+"{"+strings.Join(labels, ",")+"}"]++
}

func (m *fakeMetrics) Observe(string, float64, ...string) {}

func TestMetricsAndApprover(t *testing.T) {
	m := &fakeMetrics{counts: map[string]int{}}
	ev, err := NewEvaluator(Options{Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	p := policyYAML(t, "p", `
allowed:
  dnsNames: {values: ["*.example.com"]}
selector: {issuerRef: {kind: Issuer}}
`)
	ap, err := NewApprover(ev, []string{"clusterissuers.cert-manager.io/selfsigned", "issuers.cert-manager.io/team-a.ca"})
	if err != nil {
		t.Fatal(err)
	}
	in := func(cr *api.CertificateRequest) Input {
		return Input{Request: cr, Policies: []*api.CertificateRequestPolicy{p}, Authorizer: bindAll()}
	}
	tests := []struct {
		name string
		cr   *api.CertificateRequest
		want Result
		msg  string
	}{
		{"listed ClusterIssuer is auto-approved", newCR(t, csr(dns("anything.test")), issuer("selfsigned", "ClusterIssuer", "")), Approved,
			`auto-approved: signer "clusterissuers.cert-manager.io/selfsigned" is in certfn's approveSignerNames list`},
		{"listed namespaced Issuer", newCR(t, csr(dns("x.test")), inNamespace("team-a")), Approved, `"issuers.cert-manager.io/team-a.ca"`},
		{"same issuer name, other namespace: policies decide", newCR(t, csr(dns("x.test")), inNamespace("team-b")), Denied, `policy "p"`},
		{"policies approve", newCR(t, csr(dns("a.example.com")), inNamespace("team-b")), Approved, `approved by CertificateRequestPolicy "p"`},
		{"unmatched", newCR(t, csr(dns("a.example.com")), issuer("le", "ClusterIssuer", "")), Unmatched, "no policy applies"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := ap.Decide(context.Background(), in(tc.cr))
			if d.Result != tc.want || !strings.Contains(d.Message(), tc.msg) {
				t.Fatalf("got %s %q, want %s containing %q", d.Result, d.Message(), tc.want, tc.msg)
			}
		})
	}
	want := map[string]int{
		MetricApprovalOutcomes + "{namespace,default,status,approved}":  1,
		MetricApprovalOutcomes + "{namespace,team-a,status,approved}":   1,
		MetricApprovalOutcomes + "{namespace,team-b,status,denied}":     1,
		MetricApprovalOutcomes + "{namespace,team-b,status,approved}":   1,
		MetricApprovalOutcomes + "{namespace,default,status,unmatched}": 1,
	}
	if fmt.Sprint(m.counts) != fmt.Sprint(want) {
		t.Errorf("metrics = %v, want %v", m.counts, want)
	}

	// An empty list approves nothing by itself.
	none, err := NewApprover(ev, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := none.Decide(context.Background(), in(newCR(t, csr(dns("x.test")), issuer("selfsigned", "ClusterIssuer", "")))); d.Result != Unmatched {
		t.Errorf("empty approveSignerNames: %s", d.Result)
	}
	for _, bad := range []string{"selfsigned", "clusterissuers/x", "issuers.cert-manager.io/", "issuers.cert-manager.io/a/b"} {
		if _, err := NewApprover(ev, []string{bad}); err == nil || !strings.Contains(err.Error(), "approveSignerNames[0]") {
			t.Errorf("NewApprover(%q): err %v", bad, err)
		}
	}
	if _, err := NewApprover(nil, nil); err == nil {
		t.Errorf("NewApprover(nil evaluator) accepted")
	}
}

func TestPlugins(t *testing.T) {
	if _, err := NewEvaluator(Options{Plugins: []Plugin{fakePlugin{"x"}, fakePlugin{"x"}}}); err == nil {
		t.Errorf("duplicate plugin names accepted")
	}
	if _, err := NewEvaluator(Options{Plugins: []Plugin{fakePlugin{""}}}); err == nil {
		t.Errorf("empty plugin name accepted")
	}
	p := policyYAML(t, "with-plugin", `
allowed:
  dnsNames: {values: ["*"]}
plugins:
  fake: {values: {deny: "blocked.example.com"}}
selector: {issuerRef: {}}
`)
	withPlugin := newEvaluator(t, fakePlugin{"fake"})
	runEvalCases(t, withPlugin, []*api.CertificateRequestPolicy{p}, bindAll(), []evalCase{
		{name: "plugin allows", cr: newCR(t, csr(dns("ok.example.com"))), want: Approved},
		{name: "plugin denies", cr: newCR(t, csr(dns("ok.example.com", "blocked.example.com"))), want: Denied,
			msg: []string{"spec.plugins.fake: DNS name blocked.example.com is denied by the fake plugin"}},
	})
	// Without the plugin registered the policy is not Ready.
	runEvalCases(t, newEvaluator(t), []*api.CertificateRequestPolicy{p}, bindAll(), []evalCase{
		{name: "unregistered plugin", cr: newCR(t, csr(dns("ok.example.com"))), want: Unmatched, msg: []string{"1 not Ready"}},
	})
}

// TestShortAndFullModesAgree checks that the fast approval path (bit masks,
// patterns before rules, stop at the first violation) fails exactly the
// requests the full, message-collecting path fails.
func TestShortAndFullModesAgree(t *testing.T) {
	keys(t)
	policies := []*api.CertificateRequestPolicy{
		policyYAML(t, "all", seedAllAllowed),
		policyYAML(t, "cn-required", "allowed:\n  commonName: {value: \"*.com\", required: true}\nselector: {issuerRef: {}}"),
		policyYAML(t, "rules-only", `
allowed:
  dnsNames:
    validations: [{rule: "self.endsWith('.example.com')"}]
  uris:
    required: true
    validations: [{rule: "self.startsWith('spiffe://')"}]
selector: {issuerRef: {}}
`),
		policyYAML(t, "empty", "selector: {issuerRef: {}}"),
		policyYAML(t, "constraints", "allowed:\n  dnsNames: {values: [\"*\"]}\n  isCA: true\nconstraints: {maxDuration: 1h, privateKey: {algorithm: RSA}}\nselector: {issuerRef: {}}"),
	}
	requests := []*api.CertificateRequest{
		newCR(t, csr()),
		newCR(t, csr(cn("example.com"))),
		newCR(t, csr(cn("x.com"), dns("a.example.com"))),
		newCR(t, csr(dns("a.example.com"), uris("spiffe://x/y"))),
		newCR(t, csr(dns("a.example.org"), uris("https://x/y"))),
		newCR(t, csr(emails("a@example.com"), orgs("hello-world"), ips("10.0.1.2")), usages("server auth")),
		newCR(t, csr(emails("a@example.com")), isCA()),
		newCR(t, csr(withKey(rsaKey2048), dns("a")), duration(30*time.Minute), isCA()),
		newCR(t, csr(dns("a")), duration(2*time.Hour)),
	}
	for _, p := range policies {
		c, err := Compile(p)
		if err != nil {
			t.Fatal(err)
		}
		for i, cr := range requests {
			parsed, err := pkiParse(cr)
			if err != nil {
				t.Fatal(err)
			}
			short := c.review(context.Background(), newRequest(cr, parsed, nil), quick)
			long := c.review(context.Background(), newRequest(cr, parsed, nil), full)
			if shortFailed, fullFailed := short != nil, len(long) > 0; shortFailed != fullFailed {
				t.Errorf("policy %s, request %d: short failed=%v, full failed=%v %q", p.Name, i, shortFailed, fullFailed, long)
			}
		}
	}
}

func TestPolicyListChanges(t *testing.T) {
	// The evaluator reuses the previous list's entries only while names and
	// versions are unchanged.
	ev := newEvaluator(t)
	v1 := policyYAML(t, "p", "allowed:\n  dnsNames: {values: [\"a.test\"]}\nselector: {issuerRef: {}}")
	v2 := policyYAML(t, "p", "allowed:\n  dnsNames: {values: [\"b.test\"]}\nselector: {issuerRef: {}}")
	v2.Generation = 2
	other := policyYAML(t, "q", "allowed:\n  dnsNames: {values: [\"b.test\"]}\nselector: {issuerRef: {}}")
	cr := newCR(t, csr(dns("b.test")))
	steps := []struct {
		policies []*api.CertificateRequestPolicy
		want     Result
	}{
		{[]*api.CertificateRequestPolicy{v1}, Denied},
		{[]*api.CertificateRequestPolicy{v1}, Denied},
		{[]*api.CertificateRequestPolicy{v2}, Approved},
		{[]*api.CertificateRequestPolicy{v1}, Denied},
		{[]*api.CertificateRequestPolicy{v1, other}, Approved},
		{[]*api.CertificateRequestPolicy{other, v1}, Approved},
		{[]*api.CertificateRequestPolicy{nil, v1}, Denied},
		{nil, Unmatched},
	}
	for i, s := range steps {
		if d := ev.Evaluate(context.Background(), Input{Request: cr, Policies: s.policies, Authorizer: bindAll()}); d.Result != s.want {
			t.Errorf("step %d: %s (%s), want %s", i, d.Result, d.Message(), s.want)
		}
	}
}

// The message stored on a request no policy applies to is the same
// whether there are no policies or many that do not apply for different
// reasons: a requester learns nothing about the policies from it (the
// operator's Detail says why).
func TestUnmatchedMessageIsNoOracle(t *testing.T) {
	ev := newEvaluator(t)
	other := policyYAML(t, "c-other-issuer", `
allowed:
  dnsNames: {values: ["*"]}
selector: {issuerRef: {name: other-ca}}
`)
	notBound := policyYAML(t, "d-everything", `
allowed:
  dnsNames: {values: ["*"]}
selector: {issuerRef: {}}
`)
	cr := newCR(t, csr(dns("x.example.com")))
	none := ev.Evaluate(context.Background(), Input{Request: cr, Authorizer: bindAll()})
	many := ev.Evaluate(context.Background(), Input{Request: cr, Policies: []*api.CertificateRequestPolicy{other, notBound, other}, Authorizer: rbac.NewAuthorizer(rbac.Snapshot{})})
	if none.Result != Unmatched || many.Result != Unmatched {
		t.Fatalf("results %s, %s; want Unmatched", none.Result, many.Result)
	}
	if none.Message() != many.Message() || strings.ContainsAny(none.Message(), "0123456789") {
		t.Fatalf("the message tells the policies apart:\n%q\n%q", none.Message(), many.Message())
	}
	if none.Detail == many.Detail || !strings.Contains(many.Detail, "of 3 policies") {
		t.Fatalf("operator detail %q / %q", none.Detail, many.Detail)
	}
}

// The external probe's names, under a policy allowing
// "*.team-a.example.com": the evaluator denies them on its own (the
// approval step also denies them before any policy is consulted).
func TestEvaluateWildcardsDoNotMatchInvalidNames(t *testing.T) {
	p := policyYAML(t, "team-a", `
allowed:
  commonName: {value: "*.team-a.example.com"}
  dnsNames: {values: ["*.team-a.example.com"]}
  emailAddresses: {values: ["*@team-a.example.com"]}
selector: {issuerRef: {}}
`)
	var cases []evalCase
	for _, n := range []string{"evil.com\x00.team-a.example.com", "evil.org/.team-a.example.com", "evil.org .team-a.example.com"} {
		cases = append(cases,
			evalCase{name: "DNS " + n, cr: newCR(t, csr(dns("www.team-a.example.com", n))), want: Denied,
				msg: []string{fmt.Sprintf("spec.allowed.dnsNames.values: %q is not allowed", n)}, noMatch: []string{`"www.team-a.example.com" is not allowed`}},
			evalCase{name: "CN " + n, cr: newCR(t, csr(cn(n))), want: Denied,
				msg: []string{fmt.Sprintf("spec.allowed.commonName.value: %q is not allowed", n)}},
		)
	}
	cases = append(cases,
		evalCase{name: "valid names", cr: newCR(t, csr(cn("www.team-a.example.com"),
			dns("www.team-a.example.com", "*.team-a.example.com", "a.b.team-a.example.com", "xn--bcher-kva.team-a.example.com"),
			emails("alice@team-a.example.com"))), want: Approved},
		evalCase{name: "e-mail across '/'", cr: newCR(t, csr(emails("x@evil.org/@team-a.example.com"))), want: Denied,
			msg: []string{`spec.allowed.emailAddresses.values: "x@evil.org/@team-a.example.com" is not allowed`}},
	)
	runEvalCases(t, newEvaluator(t), []*api.CertificateRequestPolicy{p}, bindAll(), cases)
}
