package main

import (
	"strings"
	"testing"
)

// A Certificate that cannot be written (its keystore password secret is
// missing) shows why in `get events` and in `status`.
func TestEventsShowWhyAStepFails(t *testing.T) {
	dir := setupEnv(t)
	r := cli(t, dir, `apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: ss, namespace: default}
spec: {selfSigned: {}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: ks, namespace: default}
spec:
  secretName: ks-tls
  dnsNames: [ks.example.com]
  issuerRef: {name: ss}
  keystores:
    pkcs12:
      create: true
      passwordSecretRef: {name: missing-pw, key: password}
`, "apply", "-f", "-")
	if r.code != 0 {
		t.Fatalf("apply: %d %s", r.code, r.stderr)
	}
	if r := cli(t, dir, "", "serve", "--until-idle", "--auto-approve", "*"); r.code != 1 || !strings.Contains(r.stderr, "1 certificates not ready after serve --until-idle: default/ks: ") {
		t.Fatalf("serve --until-idle with a failing certificate: %d\n%s", r.code, r.stderr)
	}
	out := ok(t, dir, "get", "events", "-A")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "REASON") || !strings.Contains(lines[1], "certificate/ks") ||
		!strings.Contains(lines[1], "Warning") || !strings.Contains(lines[1], "missing-pw") {
		t.Fatalf("get events:\n%s", out)
	}
	if st := ok(t, dir, "status", "certificate", "ks"); !strings.Contains(st, "Recorded failures:") || !strings.Contains(st, "missing-pw") {
		t.Fatalf("status:\n%s", st)
	}
}
