package main

import (
	"strings"
	"testing"
)

// renew --all goes on past a Certificate already being issued, reports it
// and wakes its issuance, and renews the others (certbot's renew does not
// stop at the first).
func TestRenewAllWakesCertificatesBeingIssued(t *testing.T) {
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
	if r.code != 0 || !strings.Contains(r.stdout, "certificate.cert-manager.io/one (default) is already being issued: woke Certificate/default/one to run now") ||
		!strings.Contains(r.stdout, "Manually triggered issuance of certificate.cert-manager.io/two (default)") {
		t.Fatalf("renew --all: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The wake-ups went to the inbox: serve takes them and both renew.
	if r := cli(t, dir, "", "serve", "--until-idle", "--auto-approve", "*"); r.code != 0 || !strings.Contains(r.stderr, "2 renewed") {
		t.Fatalf("serve: %d %s", r.code, r.stderr)
	}
}
