package policy

import (
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/rbac"
)

// RefusesKey refuses a key before it exists only when policies apply to
// the requests to come and none allows the key's algorithm and size; no
// applicable policy (the request would wait, Unmatched) and an
// auto-approved signer refuse nothing.
func TestRefusesKey(t *testing.T) {
	small := policyYAML(t, "small", `
allowed: {dnsNames: {values: ["*"]}}
constraints: {privateKey: {algorithm: RSA, maxSize: 4096}}
selector: {issuerRef: {name: ca}}`)
	ec := policyYAML(t, "ec-only", `
allowed: {dnsNames: {values: ["*"]}}
constraints: {privateKey: {algorithm: ECDSA, minSize: 384}}
selector: {issuerRef: {name: ca}}`)
	big := policyYAML(t, "big", `
allowed: {dnsNames: {values: ["*"]}}
constraints: {privateKey: {minSize: 2048, maxSize: 8192}}
selector: {issuerRef: {name: ca}}`)
	other := policyYAML(t, "other-issuer", `
allowed: {dnsNames: {values: ["*"]}}
constraints: {privateKey: {maxSize: 2048}}
selector: {issuerRef: {name: other}}`)
	stub := &api.CertificateRequest{ObjectMeta: api.ObjectMeta{Namespace: "team-a", Name: "web"},
		Spec: api.CertificateRequestSpec{IssuerRef: api.IssuerReference{Name: "ca"}, Username: "certfn", Groups: []string{rbac.GroupAuthenticated}}}
	for _, tc := range []struct {
		name     string
		policies []*api.CertificateRequestPolicy
		authz    *rbac.Authorizer
		auto     []string
		alg      api.PrivateKeyAlgorithm
		size     int
		want     []string // substrings of the refusal; nil: not refused
	}{
		{name: "RSA 8192 above every applicable policy", policies: []*api.CertificateRequestPolicy{small, ec, other}, authz: bindAll(),
			alg: api.RSAKeyAlgorithm, size: 8192, want: []string{
				`[policy "ec-only": spec.constraints.privateKey.algorithm: the request's key is RSA, the policy requires ECDSA]`,
				`[policy "small": spec.constraints.privateKey.maxSize: the request's RSA key has size 8192, the policy allows at most 4096]`}},
		{name: "one applicable policy allows it", policies: []*api.CertificateRequestPolicy{small, big}, authz: bindAll(),
			alg: api.RSAKeyAlgorithm, size: 8192},
		{name: "within the bounds", policies: []*api.CertificateRequestPolicy{small}, authz: bindAll(), alg: api.RSAKeyAlgorithm, size: 4096},
		{name: "Ed25519 has no size for a minSize", policies: []*api.CertificateRequestPolicy{ec}, authz: bindAll(),
			alg: api.Ed25519KeyAlgorithm, want: []string{"the request's key is Ed25519, the policy requires ECDSA", "has no size"}},
		{name: "the only refusing policy selects another issuer", policies: []*api.CertificateRequestPolicy{other}, authz: bindAll(),
			alg: api.RSAKeyAlgorithm, size: 8192},
		{name: "no policy bound to the requester: Unmatched, not refused", policies: []*api.CertificateRequestPolicy{small},
			authz: rbac.NewAuthorizer(rbac.Snapshot{}), alg: api.RSAKeyAlgorithm, size: 8192},
		{name: "no policies", authz: bindAll(), alg: api.RSAKeyAlgorithm, size: 8192},
		{name: "auto-approved signer", policies: []*api.CertificateRequestPolicy{small}, authz: bindAll(),
			auto: []string{"issuers.cert-manager.io/*"}, alg: api.RSAKeyAlgorithm, size: 8192},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ap, err := NewApprover(newEvaluator(t), tc.auto)
			if err != nil {
				t.Fatal(err)
			}
			msg, refused := ap.RefusesKey(Input{Request: stub, Policies: tc.policies, Authorizer: tc.authz}, tc.alg, tc.size)
			if refused != (tc.want != nil) {
				t.Fatalf("refused = %v (%q), want %v", refused, msg, tc.want != nil)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q lacks %q", msg, w)
				}
			}
		})
	}
}
