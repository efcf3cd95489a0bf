package policy

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/certfn/certfn/core/api"
)

// FuzzCompileEvaluate feeds arbitrary policy specs (JSON) through Compile
// and, when they compile, through Evaluate: neither may panic, a policy
// that does not compile never approves, and Validate agrees with Compile.
func FuzzCompileEvaluate(f *testing.F) {
	for _, seed := range []string{
		`{"selector":{"issuerRef":{}},"allowed":{"commonName":{"value":"*.com","required":true}}}`,
		`{"selector":{"namespace":{"matchNames":["team-*"]}},"allowed":{"dnsNames":{"values":["*.example.com"],"validations":[{"rule":"self.endsWith(cr.namespace)"}]}}}`,
		`{"selector":{"issuerRef":{"name":"a**"}}}`,
		`{"selector":{"issuerRef":{}},"allowed":{"uris":{"validations":[{"rule":"self.startsWith("}]}}}`,
		`{"selector":{"issuerRef":{}},"constraints":{"minDuration":"1h","maxDuration":"24h","privateKey":{"algorithm":"RSA","minSize":2048}}}`,
		`{"selector":{"issuerRef":{}},"allowed":{"isCA":true,"usages":["*"],"ipAddresses":{"values":["10.0.*"]}}}`,
	} {
		f.Add(seed)
	}
	cr := newCR(f, csr(cn("www.example.com"), dns("www.example.com"), ips("10.0.0.1"), uris("spiffe://x/ns/a")), usages("server auth"))
	authz := bindAll()
	ev := newEvaluator(f)
	f.Fuzz(func(t *testing.T, spec string) {
		var s api.CertificateRequestPolicySpec
		if err := json.Unmarshal([]byte(spec), &s); err != nil {
			return
		}
		p := &api.CertificateRequestPolicy{ObjectMeta: api.ObjectMeta{Name: "fuzz"}, Spec: s}
		_, err := Compile(p)
		if (err == nil) != (len(Validate(p)) == 0) {
			t.Fatalf("Compile and Validate disagree: %v", err)
		}
		d := ev.Evaluate(context.Background(), Input{Request: cr, Policies: []*api.CertificateRequestPolicy{p}, Authorizer: authz})
		if err != nil && d.Result != Unmatched {
			t.Fatalf("policy that does not compile gave %s: %s", d.Result, d.Message)
		}
	})
}
