package policy

import (
	"context"
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
)

// TestEvaluateReusedViewsDoNotLeak checks that the pooled request views
// of earlier evaluations (approved ones, with IP, URI and e-mail SANs and
// CEL values) leave nothing in a later request's decision, and that a
// Denied decision's message is the same whenever it is rendered (after
// other evaluations reused the views).
func TestEvaluateReusedViewsDoNotLeak(t *testing.T) {
	ev := newEvaluator(t)
	ps := []*api.CertificateRequestPolicy{policyYAML(t, "wide", `
allowed:
  commonName: {value: "*"}
  dnsNames: {values: ["*"], validations: [{rule: "self.endsWith('.example.com')"}]}
  ipAddresses: {values: ["*"]}
  uris: {values: ["*"]}
  emailAddresses: {values: ["*"]}
selector: {issuerRef: {}}
`)}
	authz := bindAll()
	wide := newCR(t, csr(cn("a.example.com"), dns("a.example.com"), ips("10.0.0.1"), uris("spiffe://a/b"), emails("a@example.com")))
	narrow := newCR(t, csr(cn("b.example.org"), dns("b.example.org")))

	denied := ev.Evaluate(context.Background(), Input{Request: narrow, Policies: ps, Authorizer: authz})
	if denied.Result != Denied {
		t.Fatalf("narrow: got %s (%s), want Denied", denied.Result, denied.Message())
	}
	for range 3 {
		if d := ev.Evaluate(context.Background(), Input{Request: wide, Policies: ps, Authorizer: authz}); d.Result != Approved {
			t.Fatalf("wide: got %s (%s), want Approved", d.Result, d.Message())
		}
	}
	msg := denied.Message()
	again := ev.Evaluate(context.Background(), Input{Request: narrow, Policies: ps, Authorizer: authz}).Message()
	if msg != again || msg != denied.Message() {
		t.Fatalf("denial message changed between renderings:\n%s\n%s", msg, again)
	}
	for _, leaked := range []string{"a.example.com", "10.0.0.1", "spiffe://a/b", "a@example.com"} {
		if strings.Contains(msg, leaked) {
			t.Errorf("denial of b.example.org mentions %q of an earlier request: %s", leaked, msg)
		}
	}
	if !strings.Contains(msg, `[policy "wide": spec.allowed.dnsNames`) || !strings.Contains(msg, "b.example.org") {
		t.Errorf("denial message %q does not name the policy, the field and the value", msg)
	}
}
