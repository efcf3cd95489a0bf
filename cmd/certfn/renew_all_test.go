package main

import (
	"strings"
	"testing"
)

// renew --all goes on past a Certificate already being issued, reports it,
// and renews the others (certbot's renew does not stop at the first).
func TestRenewAllSkipsCertificatesBeingIssued(t *testing.T) {
	dir := t.TempDir()
	manifests := selfSignedIssuer + `---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: one, namespace: default}
spec: {secretName: one-tls, dnsNames: [one.example.com], issuerRef: {name: selfsigned}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: two, namespace: default}
spec: {secretName: two-tls, dnsNames: [two.example.com], issuerRef: {name: selfsigned}}
`
	if r := cli(t, dir, manifests, "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("apply: %d %s", r.code, r.stderr)
	}
	if r := cli(t, dir, "", "serve", "--until-idle", "--auto-approve", "*"); r.code != 0 {
		t.Fatalf("serve: %d %s", r.code, r.stderr)
	}
	if r := cli(t, dir, "", "renew", "one"); r.code != 0 {
		t.Fatalf("renew one: %d %s", r.code, r.stderr)
	}
	r := cli(t, dir, "", "renew", "--all")
	if r.code != 0 || !strings.Contains(r.stdout, "Skipped certificate.cert-manager.io/one (default): already being issued") ||
		!strings.Contains(r.stdout, "Manually triggered issuance of certificate.cert-manager.io/two (default)") {
		t.Fatalf("renew --all: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// A single name still fails when it is already being issued.
	if r := cli(t, dir, "", "renew", "one"); r.code == 0 || !strings.Contains(r.stderr, "already being issued") {
		t.Fatalf("renew one again: %d %s", r.code, r.stderr)
	}
}
