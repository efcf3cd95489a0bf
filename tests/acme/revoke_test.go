package acme

import (
	"bytes"
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
)

// A certificate is revoked at Pebble with the issuer's account key and
// replaced: revision 2 with a new key (rotationPolicy Always). Revoking the
// revoked certificate again succeeds (the server's alreadyRevoked); an
// unknown reason, a caller without `update`, keyCompromise with
// rotationPolicy Never and a non-ACME issuer are refused before any ACME
// call.
func TestRevokeAndReplace(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.apply(e.issuerYAML(http01Solvers))
	e.apply(certYAML("rev", []string{"rev.example.test"}, ""))
	e.issue("rev")
	first := e.verify("rev-tls", "rev.example.test")
	key := api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "rev"}
	admin := app.Caller{Username: "admin", Groups: []string{app.SuperuserGroup}}

	if err := e.rt.App.Service.Revoke(e.ctx, admin, key, "stolen"); err == nil || !strings.Contains(err.Error(), "keyCompromise") {
		t.Fatalf("unknown reason: %v", err)
	}
	if err := e.rt.App.Service.Revoke(e.ctx, app.Caller{Username: "mallory"}, key, "keyCompromise"); err == nil || !strings.Contains(err.Error(), "may not update") {
		t.Fatalf("a caller without update: %v", err)
	}
	before := e.cnt.Count()
	if err := e.rt.App.Service.Revoke(e.ctx, admin, key, "keyCompromise"); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	if e.cnt.Count() == before {
		t.Fatal("no ACME request was made")
	}
	c := e.cert("rev")
	if !api.IsTrue(c.Status.Conditions, api.CertificateConditionIssuing) {
		t.Fatalf("not re-issuing after the revocation: %+v", c.Status.Conditions)
	}
	// A revoked certificate is not Ready, at once and after a reconcile
	// (the stored certificate is still the revoked one).
	if rc := api.FindCondition(c.Status.Conditions, api.CertificateConditionReady); rc == nil || rc.Status != api.ConditionFalse || rc.Reason != "Revoked" ||
		c.Status.Revoked == nil || c.Status.Revoked.Serial != first.SerialNumber.Text(16) || c.Status.Revoked.Reason != "keyCompromise" {
		t.Fatalf("after the revocation: Ready %+v, revoked %+v", rc, c.Status.Revoked)
	}
	// certbot's spelling of the reason is the same reason.
	before = e.cnt.Count()
	if err := e.rt.App.Service.Revoke(e.ctx, admin, key, "keycompromise"); err != nil {
		t.Fatalf("revoke with certbot's spelling: %v", err)
	}
	if e.cnt.Count() == before {
		t.Fatal("the revocation with certbot's spelling made no ACME request")
	}
	// The revoked certificate is still in the secret until the new one
	// lands: revoking it again (a retry after a partial failure) is
	// success — the server's alreadyRevoked — and makes one more request.
	before = e.cnt.Count()
	if err := e.rt.App.Service.Revoke(e.ctx, admin, key, "keyCompromise"); err != nil {
		t.Fatalf("second revocation of the same certificate: %v", err)
	}
	if e.cnt.Count() == before {
		t.Fatal("the second revocation made no ACME request")
	}
	e.issue("rev")
	second := e.verify("rev-tls", "rev.example.test")
	if c := e.cert("rev"); !api.IsTrue(c.Status.Conditions, api.CertificateConditionReady) {
		t.Fatalf("the replacement is not Ready: %+v", c.Status.Conditions)
	}
	if c := e.cert("rev"); c.Status.Revision == nil || *c.Status.Revision != 2 {
		t.Fatalf("revision %v after the revocation, want 2", c.Status.Revision)
	}
	if bytes.Equal(first.Raw, second.Raw) || bytes.Equal(first.RawSubjectPublicKeyInfo, second.RawSubjectPublicKeyInfo) {
		t.Fatal("the replacement reuses the revoked certificate or its key")
	}

	// keyCompromise with rotationPolicy Never would re-certify the key.
	e.apply(strings.Replace(certYAML("keep", []string{"keep.example.test"}, ""), "size: 256}", "size: 256, rotationPolicy: Never}", 1))
	if err := e.rt.App.Service.Revoke(e.ctx, admin, api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "keep"}, "keyCompromise"); err == nil ||
		!strings.Contains(err.Error(), "rotationPolicy Never") {
		t.Fatalf("keyCompromise with rotationPolicy Never: %v", err)
	}

	// A selfSigned certificate cannot be revoked.
	e.apply(`apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: ss, namespace: default}
spec: {selfSigned: {}}
`)
	e.apply(`apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: local, namespace: default}
spec:
  secretName: local-tls
  dnsNames: [local.example.test]
  issuerRef: {name: ss}
`)
	if err := e.rt.App.Service.Revoke(e.ctx, admin, api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "local"}, "superseded"); err == nil ||
		!strings.Contains(err.Error(), "not an ACME issuer") {
		t.Fatalf("selfSigned revocation: %v", err)
	}
}
