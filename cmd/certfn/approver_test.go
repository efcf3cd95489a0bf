package main

import (
	"strings"
	"testing"
)

// cmChain is cert-manager's own CA chain from its documentation
// (docs/configuration/selfsigned: "Bootstrapping CA Issuers"), with one
// leaf Certificate.
const cmChain = `apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata:
  name: selfsigned-issuer
spec:
  selfSigned: {}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata:
  name: my-selfsigned-ca
  namespace: cert-manager
spec:
  isCA: true
  commonName: my-selfsigned-ca
  secretName: root-secret
  privateKey:
    algorithm: ECDSA
    size: 256
  issuerRef:
    name: selfsigned-issuer
    kind: ClusterIssuer
    group: cert-manager.io
---
apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata:
  name: my-ca-issuer
spec:
  ca:
    secretName: root-secret
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata:
  name: web
spec:
  secretName: web-tls
  dnsNames: [web.example.com]
  issuerRef: {name: my-ca-issuer, kind: ClusterIssuer}
`

// Local mode approves as a plain cert-manager install does (its built-in
// approver) and says so at start; --approver policy leaves approval to
// CertificateRequestPolicies; switching back re-decides the pending
// requests at once, in the same run.
func TestApproverDefaultsAsCertManager(t *testing.T) {
	t.Setenv("CERTFN_APPROVER", "")
	t.Setenv("CERTFN_AUTO_APPROVE", "")
	policyOnly := t.TempDir()
	if r := cli(t, policyOnly, cmChain, "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("apply: %d %s", r.code, r.stderr)
	}
	r := cli(t, policyOnly, "", "serve", "--until-idle", "--approver", "policy")
	if !strings.Contains(r.stderr, "approver: CertificateRequestPolicies only") {
		t.Fatalf("serve --approver policy did not say which approver: %s", r.stderr)
	}
	if s := ok(t, policyOnly, "status", "certificate", "my-selfsigned-ca", "-n", "cert-manager"); !strings.Contains(s, "is waiting for approval") {
		t.Fatalf("policy only, no policy: status\n%s", s)
	}
	// The default approver, restarted: the pending requests are decided at
	// once, and the whole chain issues in this one run.
	r = cli(t, policyOnly, "", "serve", "--until-idle")
	if !strings.Contains(r.stderr, "approver: cert-manager's built-in approver") {
		t.Fatalf("serve did not say which approver: %s", r.stderr)
	}
	for _, c := range []struct{ name, ns string }{{"my-selfsigned-ca", "cert-manager"}, {"web", "default"}} {
		if s := ok(t, policyOnly, "status", "certificate", c.name, "-n", c.ns); !strings.HasPrefix(s, "Ready: ") {
			t.Fatalf("%s after serve with the default approver:\n%s", c.name, s)
		}
	}

	// An approver certfn does not know is refused, naming the flag.
	if r := cli(t, t.TempDir(), "", "serve", "--until-idle", "--approver", "built-in"); r.code == 0 || !strings.Contains(r.stderr, `--approver: "built-in" is not an approver`) {
		t.Fatalf("unknown approver: %d %s", r.code, r.stderr)
	}
	// An explicit list narrows the built-in approver: only the self-signed
	// ClusterIssuer's requests are approved without a policy.
	narrow := t.TempDir()
	if r := cli(t, narrow, cmChain, "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("apply: %d %s", r.code, r.stderr)
	}
	r = cli(t, narrow, "", "serve", "--until-idle", "--auto-approve", "clusterissuers.cert-manager.io/selfsigned-issuer")
	if !strings.Contains(r.stderr, "approver: requests for clusterissuers.cert-manager.io/selfsigned-issuer are approved without a policy") {
		t.Fatalf("serve --auto-approve: %s", r.stderr)
	}
	if s := ok(t, narrow, "status", "certificate", "my-selfsigned-ca", "-n", "cert-manager"); !strings.HasPrefix(s, "Ready: ") {
		t.Fatalf("the listed signer's certificate:\n%s", s)
	}
	if s := ok(t, narrow, "status", "certificate", "web"); !strings.Contains(s, "is waiting for approval") {
		t.Fatalf("another signer's certificate:\n%s", s)
	}
}
