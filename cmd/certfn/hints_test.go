package main

import (
	"strings"
	"testing"
)

// Common mistakes are named with their fix where the user meets them:
// a ClusterIssuer referenced without kind, and a request waiting while
// --auto-approve lists other signers.
func TestMistakeHints(t *testing.T) {
	dir := setupEnv(t)
	const clusterIssuer = `apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: selfsigned}
spec: {selfSigned: {}}
`
	// appCert's issuerRef has no kind: it names an Issuer of default.
	ok(t, dir, "apply", "-f", writeFile(t, t.TempDir(), "m.yaml", clusterIssuer+"---\n"+appCert))
	serve := []string{"serve", "--until-idle", "--approver", "policy", "--auto-approve", "clusterissuers.cert-manager.io/ca"}
	r := cli(t, dir, "", serve...)
	if r.code != 1 || !strings.Contains(r.stderr, `default/app: Issuer "selfsigned" does not exist in namespace default; a ClusterIssuer "selfsigned" exists: set issuerRef.kind: ClusterIssuer`) {
		t.Fatalf("a ClusterIssuer without kind: %d\n%s", r.code, r.stderr)
	}
	if s := ok(t, dir, "status", "certificate", "app"); !strings.Contains(s, "set issuerRef.kind: ClusterIssuer") {
		t.Fatalf("status:\n%s", s)
	}

	// The namespaced Issuer exists now; --auto-approve lists another signer.
	ok(t, dir, "apply", "-f", writeFile(t, t.TempDir(), "i.yaml", selfSignedIssuer))
	r = cli(t, dir, "", serve...)
	if r.code != 1 || !strings.Contains(r.stderr, "the auto-approve list approves only signers clusterissuers.cert-manager.io/ca, "+
		"and this request's signer (issuers.cert-manager.io/default.selfsigned) is not among them") {
		t.Fatalf("a request outside the auto-approve list: %d\n%s", r.code, r.stderr)
	}
}
