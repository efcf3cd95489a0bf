package main

import (
	"strings"
	"testing"
)

// apply --dry-run validates, stores nothing, and says which policy would
// approve or deny each Certificate's request.
func TestApplyDryRun(t *testing.T) {
	dir := t.TempDir()
	ok(t, dir, "apply", "-f", "../../examples/04-policy.yaml")
	leaf := func(name, dns string) string {
		return `apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: ` + name + `}
spec:
  secretName: ` + name + `-tls
  dnsNames: [` + dns + `]
  duration: 720h
  privateKey: {algorithm: ECDSA, size: 256}
  issuerRef: {name: demo-ca, kind: ClusterIssuer}
`
	}
	in := leaf("good", "app.example.internal") + "---\n" + leaf("evil", "evil.example.com") + "---\n" +
		strings.Replace(leaf("other", "a.example.com"), "demo-ca", "other-ca", 1)
	r := cli(t, dir, in, "apply", "-f", "-", "--dry-run")
	if r.code != 0 {
		t.Fatalf("dry run: %d %s", r.code, r.stderr)
	}
	for _, want := range []string{
		"certificate.cert-manager.io/good (default) created (dry run)",
		`request: would be approved by CertificateRequestPolicy "example-internal"`,
		"certificate.cert-manager.io/evil (default) created (dry run)",
		"request: would be denied: ",
		"evil.example.com",
		"certificate.cert-manager.io/other (default) created (dry run)",
		"request: no CertificateRequestPolicy applies",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, r.stdout)
		}
	}
	if got := ok(t, dir, "get", "certificates"); !strings.Contains(got, "No certificates found") {
		t.Fatalf("the dry run stored something:\n%s", got)
	}
	// An invalid manifest fails the dry run as it fails apply.
	if r := cli(t, dir, strings.Replace(leaf("bad", "x.example.internal"), "size: 256", "size: 255", 1), "apply", "-f", "-", "--dry-run"); r.code == 0 ||
		!strings.Contains(r.stderr, "spec.privateKey.size") {
		t.Fatalf("invalid dry run: %d %s", r.code, r.stderr)
	}
	if r := cli(t, dir, in, "apply", "-f", "-", "--dry-run=maybe"); r.code == 0 || !strings.Contains(r.stderr, `--dry-run="maybe": want none, client or server`) {
		t.Fatalf("bad --dry-run: %d %s", r.code, r.stderr)
	}
	// Applied for real, a second dry run reports the objects unchanged.
	if r := cli(t, dir, in, "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("apply: %d %s", r.code, r.stderr)
	}
	if r := cli(t, dir, in, "apply", "-f", "-", "--dry-run"); r.code != 0 || strings.Count(r.stdout, "unchanged (dry run)") != 3 {
		t.Fatalf("dry run after apply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
