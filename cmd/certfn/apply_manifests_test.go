package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// kubectl habits of apply and delete: repeated -f applied in order, a
// ClusterIssuer copied with a namespace accepted with a warning (as the
// Kubernetes API server does), Secret manifests written into the secret
// store and never printed, and delete of several names.
func TestApplyManifestsAsKubectl(t *testing.T) {
	dir := t.TempDir()
	files := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(files, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	issuer := write("issuer.yaml", `apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: root, namespace: cert-manager}
spec: {selfSigned: {}}
`)
	secret := write("secret.yaml", `apiVersion: v1
kind: Secret
metadata: {name: cloudflare-api-token-secret, namespace: cert-manager}
type: Opaque
stringData: {api-token: never-printed-token}
`)
	certs := write("certs.yaml", `apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: a}
spec: {secretName: a-tls, dnsNames: [a.example.com], issuerRef: {name: root, kind: ClusterIssuer}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: b}
spec: {secretName: b-tls, dnsNames: [b.example.com], issuerRef: {name: root, kind: ClusterIssuer}}
`)
	r := cli(t, dir, "", "apply", "-f", issuer, "-f", secret, "-f", certs)
	if r.code != 0 {
		t.Fatalf("apply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"clusterissuer.cert-manager.io/root created", "secret/cloudflare-api-token-secret (cert-manager) created",
		"certificate.cert-manager.io/a (default) created", "certificate.cert-manager.io/b (default) created"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if want := "Warning: " + issuer + ": document 1 (ClusterIssuer cert-manager/root): metadata.namespace: ignored: kind ClusterIssuer is cluster-scoped"; !strings.Contains(r.stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, "never-printed-token") {
		t.Fatal("a secret value was printed")
	}
	// The secret is in the secret store; reading it back through the API is refused.
	if out := ok(t, dir, "inspect", "secret", "cloudflare-api-token-secret", "-n", "cert-manager"); !strings.Contains(out, "api-token") || strings.Contains(out, "never-printed-token") {
		t.Errorf("inspect secret:\n%s", out)
	}
	// get secrets lists names, types and keys, never values.
	if out := ok(t, dir, "get", "secrets", "-A"); !strings.Contains(out, "cert-manager   cloudflare-api-token-secret   Opaque   api-token") ||
		strings.Contains(out, "never-printed-token") {
		t.Errorf("get secrets -A:\n%s", out)
	}
	if out := ok(t, dir, "get", "secret", "cloudflare-api-token-secret", "-n", "cert-manager", "-o", "json"); !strings.Contains(out, `"keys": [`) ||
		strings.Contains(out, "never-printed-token") || strings.Contains(out, `"data"`) {
		t.Errorf("get secret -o json:\n%s", out)
	}
	// Re-applying the same files changes nothing.
	if out := ok(t, dir, "apply", "-f", secret, "-f", certs); strings.Count(out, "unchanged") != 3 {
		t.Errorf("re-apply:\n%s", out)
	}

	// delete of several names: the missing one is reported, the others deleted, exit 1.
	r = cli(t, dir, "", "delete", "certificate", "a", "missing", "b")
	if r.code != 1 || !strings.Contains(r.stdout, "certificate.cert-manager.io/a (default) deleted") ||
		!strings.Contains(r.stdout, "certificate.cert-manager.io/b (default) deleted") || !strings.Contains(r.stderr, "certificate.cert-manager.io/missing (default) not found") {
		t.Fatalf("delete a missing b: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if out := ok(t, dir, "get", "certificates"); strings.Contains(out, "a-tls") || strings.Contains(out, "b-tls") {
		t.Errorf("still listed:\n%s", out)
	}
	if out := ok(t, dir, "delete", "secret/cloudflare-api-token-secret", "clusterissuer/root", "-n", "cert-manager"); !strings.Contains(out, "secret/cloudflare-api-token-secret (cert-manager) deleted") ||
		!strings.Contains(out, "clusterissuer.cert-manager.io/root deleted") {
		t.Errorf("delete KIND/NAME:\n%s", out)
	}
	if r := cli(t, dir, "", "inspect", "secret", "cloudflare-api-token-secret", "-n", "cert-manager"); r.code == 0 {
		t.Errorf("secret still there after delete:\n%s", r.stdout)
	}
}
