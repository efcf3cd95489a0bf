package policy

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/certfn/certfn/core/api"
)

// FuzzCompileEvaluate feeds arbitrary policy specs (JSON) through Compile
// and, when they compile, through Evaluate: neither may panic, a policy
// that does not compile never approves, Validate agrees with Compile, and
// a quick review (approval) and a full one (the Denied message) agree on
// whether the policy allows each request.
func FuzzCompileEvaluate(f *testing.F) {
	for _, seed := range []string{
		`{"selector":{"issuerRef":{}},"allowed":{"commonName":{"value":"*.com","required":true}}}`,
		`{"selector":{"namespace":{"matchNames":["team-*"]}},"allowed":{"dnsNames":{"values":["*.example.com"],"validations":[{"rule":"self.endsWith(cr.namespace)"}]}}}`,
		`{"selector":{"issuerRef":{"name":"a**"}}}`,
		`{"selector":{"issuerRef":{}},"allowed":{"uris":{"validations":[{"rule":"self.startsWith("}]}}}`,
		`{"selector":{"issuerRef":{}},"constraints":{"minDuration":"1h","maxDuration":"24h","privateKey":{"algorithm":"RSA","minSize":2048}}}`,
		`{"selector":{"issuerRef":{}},"allowed":{"isCA":true,"usages":["*"],"ipAddresses":{"values":["10.0.*"]}}}`,
		`{"selector":{"issuerRef":{}},"allowed":{"otherNames":[{"oid":"1.3.6.1.4.1.311.20.2.3","values":["*@example.com"],"required":true}],"subject":{"otherAttributes":[{"oid":"1.2.840.113549.1.9.1","validations":[{"rule":"self.endsWith('@example.com')"}]}]}}}`,
		`{"selector":{"namespace":{"matchLabels":{"team":"a"}}},"allowed":{"uris":{"validations":[{"rule":"isServiceAccount(cr.username) && self.contains(serviceAccount(cr.username).getName())"}]}}}`,
		`{"selector":{"issuerRef":{}},"allowed":{"commonName":{"value":"*.example.com","validations":[{"rule":"self != ''"},{"rule":"self != ''"}]}},"constraints":{"privateKey":{"algorithm":"Ed25519","minSize":1}}}`,
	} {
		f.Add(seed)
	}
	cr := newCR(f, csr(cn("www.example.com"), dns("www.example.com"), ips("10.0.0.1"), uris("spiffe://x/ns/a")), usages("server auth"))
	// A request with an otherName SAN, an e-mail subject attribute and a
	// repeated common name, by a service account.
	rich := newCR(f, csr(rawSAN(f, dnsGN("a.example.com"), otherNameGN(f, oidUPN, "svc@example.com")),
		rawSubject(f, atv(oidCommonName, "a.example.com"), atv(oidCommonName, "b.example.com"), atv(oidEmailAddress, "ops@example.com"))),
		byUser("system:serviceaccount:team-a:web", "system:authenticated"))
	var reqs []*Request
	for _, c := range []*api.CertificateRequest{cr, rich} {
		parsed, err := pkiParse(c)
		if err != nil {
			f.Fatal(err)
		}
		reqs = append(reqs, newRequest(c, parsed, map[string]string{"team": "a"}))
	}
	authz := bindAll()
	ev := newEvaluator(f)
	f.Fuzz(func(t *testing.T, spec string) {
		var s api.CertificateRequestPolicySpec
		if err := json.Unmarshal([]byte(spec), &s); err != nil {
			return
		}
		p := &api.CertificateRequestPolicy{ObjectMeta: api.ObjectMeta{Name: "fuzz"}, Spec: s}
		c, err := Compile(p)
		if (err == nil) != (len(Validate(p)) == 0) {
			t.Fatalf("Compile and Validate disagree: %v", err)
		}
		if err == nil {
			for _, r := range reqs {
				quickErrs, fullErrs := c.review(context.Background(), r, quick), c.review(context.Background(), r, full)
				if (quickErrs == nil) != (fullErrs == nil) {
					t.Fatalf("quick review %v and full review %v disagree", quickErrs, fullErrs)
				}
			}
		}
		d := ev.Evaluate(context.Background(), Input{Request: cr, Policies: []*api.CertificateRequestPolicy{p}, Authorizer: authz})
		if err != nil && d.Result != Unmatched {
			t.Fatalf("policy that does not compile gave %s: %s", d.Result, d.Message())
		}
	})
}
