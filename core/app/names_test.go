package app_test

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app/apptest"
	"github.com/certfn/certfn/core/certificaterequests"
	ct "github.com/certfn/certfn/core/certificates/certtest"
)

// teamAPolicy allows DNS names and common names under *.team-a.example.com
// from Issuer "ca", and binds it (`use`) to group team-a, which the rig's
// caller (recorded as the requester) belongs to.
const teamAPolicy = `apiVersion: policy.cert-manager.io/v1alpha1
kind: CertificateRequestPolicy
metadata: {name: team-a}
spec:
  allowed:
    commonName: {value: "*.team-a.example.com"}
    dnsNames: {values: ["*.team-a.example.com"]}
    usages: ["digital signature", "key encipherment", "server auth"]
  selector:
    issuerRef: {name: ca, kind: Issuer}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: use-team-a}
rules:
- apiGroups: [policy.cert-manager.io]
  resources: [certificaterequestpolicies]
  verbs: [use]
  resourceNames: [team-a]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: team-a-uses-team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: use-team-a}
subjects: [{kind: Group, name: team-a}]
`

// requestFor returns a CertificateRequest manifest named name whose CSR
// (fresh key) carries tmpl's names, for Issuer "ca".
func requestFor(t *testing.T, name string, tmpl *x509.CertificateRequest) string {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, ct.Key(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	csr := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	return fmt.Sprintf(`apiVersion: cert-manager.io/v1
kind: CertificateRequest
metadata: {name: %s, namespace: default}
spec:
  request: %s
  duration: 720h
  usages: ["digital signature", "key encipherment", "server auth"]
  issuerRef: {name: ca, kind: Issuer}
`, name, apptest.B64(csr))
}

// End to end through the application service, with certfn's own approver
// and a CA issuer: the external probe's names, which were signed under
// the policy *.team-a.example.com, are Denied before the policy is
// consulted and never signed, in the DNS SAN and in the commonName; a
// valid name is still issued; a request with such a name approved by hand
// fails at signing.
func TestNamesACAMustNotSignAreNeverSigned(t *testing.T) {
	r := apptest.NewPolicyRig(t)
	r.Apply(apptest.CAIssuerYAML)
	if err := r.Secrets.Put(r.Ctx, ct.NewCA(t).Secret(t, "default", "ca-key-pair")); err != nil {
		t.Fatal(err)
	}
	r.Apply(teamAPolicy)
	r.Drain()

	type request struct {
		name string
		tmpl *x509.CertificateRequest
		want string // the Denied message; "" when the request must be issued
	}
	reqs := []request{
		{"valid", &x509.CertificateRequest{Subject: pkix.Name{CommonName: "www.team-a.example.com"},
			DNSNames: []string{"www.team-a.example.com", "*.team-a.example.com", "xn--bcher-kva.team-a.example.com"}}, ""},
	}
	for i, p := range []struct{ name, char string }{
		{"evil.com\x00.team-a.example.com", "NUL"},
		{"evil.org/.team-a.example.com", "'/'"},
		{"evil.org .team-a.example.com", "space"},
	} {
		reqs = append(reqs, request{fmt.Sprintf("dns-%d", i), &x509.CertificateRequest{DNSNames: []string{"ok.team-a.example.com", p.name}},
			fmt.Sprintf("spec.request: DNS name %q (SAN 2): contains a character a DNS name cannot hold (%s)", p.name, p.char)})
	}
	reqs = append(reqs,
		request{"cn-nul", &x509.CertificateRequest{Subject: pkix.Name{CommonName: "evil.com\x00.team-a.example.com"}, DNSNames: []string{"ok.team-a.example.com"}},
			`spec.request: subject commonName "evil.com\x00.team-a.example.com": contains a control character (NUL)`},
		request{"cn-slash", &x509.CertificateRequest{Subject: pkix.Name{CommonName: "evil.org/.team-a.example.com"}, DNSNames: []string{"ok.team-a.example.com"}},
			`spec.request: subject commonName "evil.org/.team-a.example.com": is read as a host name but contains a character a DNS name cannot hold ('/')`},
	)
	for _, rq := range reqs {
		r.Apply(requestFor(t, rq.name, rq.tmpl))
	}
	r.Drain()

	for _, rq := range reqs {
		k := api.Key{Kind: api.KindCertificateRequest, Namespace: "default", Name: rq.name}
		cr := r.Get(k).(*api.CertificateRequest)
		if rq.want == "" {
			if !cr.IsIssued() || !strings.Contains(api.FindCondition(cr.Status.Conditions, "Approved").Message, `"team-a"`) {
				t.Errorf("%s: not issued under policy team-a: %+v", rq.name, cr.Status.Conditions)
			}
			continue
		}
		d := api.FindCondition(cr.Status.Conditions, api.CertificateRequestConditionDenied)
		if d == nil || d.Status != api.ConditionTrue || d.Reason != certificaterequests.ReasonInvalidNames || d.Message != rq.want {
			t.Errorf("%s: Denied = %+v\nwant True/%s/%s", rq.name, d, certificaterequests.ReasonInvalidNames, rq.want)
		}
		ready := api.FindCondition(cr.Status.Conditions, api.CertificateRequestConditionReady)
		if len(cr.Status.Certificate) != 0 || api.FindCondition(cr.Status.Conditions, "Approved") != nil ||
			ready == nil || ready.Reason != api.CertificateRequestReasonDenied || !cr.IsFinal() {
			t.Errorf("%s: signed, approved or not final: certificate %d bytes, conditions %+v", rq.name, len(cr.Status.Certificate), cr.Status.Conditions)
		}
	}

	// Approved by hand before the approval step ran: the signing step
	// refuses it.
	r.Apply(requestFor(t, "by-hand", &x509.CertificateRequest{DNSNames: []string{"evil.org/.team-a.example.com"}}))
	k := api.Key{Kind: api.KindCertificateRequest, Namespace: "default", Name: "by-hand"}
	if _, err := r.Service.Approve(r.Ctx, apptest.Caller, k, true, "", "approved by hand", ""); err != nil {
		t.Fatal(err)
	}
	r.Drain()
	cr := r.Get(k).(*api.CertificateRequest)
	want := `spec.request: DNS name "evil.org/.team-a.example.com" (SAN 1): contains a character a DNS name cannot hold ('/')`
	ready := api.FindCondition(cr.Status.Conditions, api.CertificateRequestConditionReady)
	inv := api.FindCondition(cr.Status.Conditions, api.CertificateRequestConditionInvalidRequest)
	if len(cr.Status.Certificate) != 0 || ready == nil || ready.Status != api.ConditionFalse || ready.Reason != api.CertificateRequestReasonFailed ||
		ready.Message != "Signing failed: "+want || inv == nil || inv.Reason != certificaterequests.ReasonInvalidNames {
		t.Fatalf("hand-approved request: certificate %d bytes, conditions %+v", len(cr.Status.Certificate), cr.Status.Conditions)
	}
}
