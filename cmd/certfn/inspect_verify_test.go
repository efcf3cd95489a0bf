package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ct "github.com/certfn/certfn/core/certificates/certtest"
)

// inspect --verify on a secret without ca.crt (an ACME certificate, as
// cert-manager stores it) checks against the system's roots, or --ca-file.
func TestInspectVerifyWithoutCACrt(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	ca := ct.NewCAValid(t, now.Add(-time.Hour), now.Add(24*time.Hour), true)
	key := ct.Key(t, nil)
	_, leafPEM := ca.Issue(t, ct.Cert(), key, ct.Leaf{NotBefore: now.Add(-time.Hour), NotAfter: now.Add(12 * time.Hour)})
	files := map[string][]byte{"leaf.pem": leafPEM, "key.pem": ct.KeyPEM(t, key), "root.pem": ca.PEM}
	for n, b := range files {
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if r := cli(t, dir, "", "create", "secret", "acme-tls", "--from-file", "tls.crt="+filepath.Join(dir, "leaf.pem"),
		"--from-file", "tls.key="+filepath.Join(dir, "key.pem")); r.code != 0 {
		t.Fatalf("create secret: %d %s", r.code, r.stderr)
	}
	// The test CA is not among the system's roots: refused, naming them.
	if r := cli(t, dir, "", "inspect", "secret", "acme-tls", "--verify"); r.code == 0 || !strings.Contains(r.stderr, "the system's trusted roots") {
		t.Fatalf("verify against the system roots: %d %s", r.code, r.stderr)
	}
	if r := cli(t, dir, "", "inspect", "secret", "acme-tls", "--verify", "--ca-file", filepath.Join(dir, "root.pem")); r.code != 0 ||
		!strings.Contains(r.stdout, "Verified: tls.crt chains to "+filepath.Join(dir, "root.pem")) {
		t.Fatalf("verify against --ca-file: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := cli(t, dir, "", "inspect", "secret", "acme-tls", "--verify", "--ca-file", filepath.Join(dir, "key.pem")); r.code == 0 ||
		!strings.Contains(r.stderr, "no PEM certificate") {
		t.Fatalf("--ca-file without a certificate: %d %s", r.code, r.stderr)
	}
}
