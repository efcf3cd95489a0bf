package main

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/adapters/httpapi/apitest"
	ct "github.com/certfn/certfn/core/certificates/certtest"
)

// Through serve's TLS API: a tenant (alice, allowed to manage
// Certificates in team-a) names the key pair the operator applied for the
// namespace's CA Issuer as its Certificate's secret, with rotationPolicy
// Never and secretTemplate mode 0644 (serve even allows 0644 here). The
// key pair's files stay as the operator wrote them (content, mode 0600),
// the directories gain no bit for others, and alice reads why her
// Certificate is not Ready.
func TestTenantCannotTakeOverAnIssuersSecretThroughTheLocalAPI(t *testing.T) {
	dir := setupEnv(t)
	if err := os.Chmod(dir, 0o700); err != nil { // as serve creates it
		t.Fatal(err)
	}
	p := newPKIFiles(t)
	adminCrt, adminKey := p.issue(t, "admin", "ops-admin", []string{"system:masters"}, false)
	aliceCrt, aliceKey := p.issue(t, "alice", "alice", []string{"team-a"}, false)
	addr := runTLSAPI(t, p, dir, "--auto-approve", "*", "--secret-file-max-mode", "0644")
	remote := func(crt, key, manifest string, args ...string) result {
		t.Helper()
		base := []string{"--server", "https://" + addr, "--server-ca", filepath.Join(p.dir, "ca.crt"), "--client-cert", crt, "--client-key", key}
		return cli(t, t.TempDir(), manifest, append(base, args...)...)
	}

	ca := ct.NewCA(t).Secret(t, "team-a", "ca-key-pair")
	b64 := base64.StdEncoding.EncodeToString
	operator := apitest.Docs(`apiVersion: v1
kind: Secret
metadata: {name: ca-key-pair, namespace: team-a}
type: kubernetes.io/tls
data: {tls.crt: `+b64(ca.Data["tls.crt"])+`, tls.key: `+b64(ca.Data["tls.key"])+`}
`, apitest.CAIssuer("team-a", "ca", "ca-key-pair"),
		apitest.Grant("team-a-edit", "alice", "team-a", "cert-manager.io", []string{"certificates"}, []string{"create", "update", "get", "list"}))
	if r := remote(adminCrt, adminKey, operator, "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("operator apply: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := remote(adminCrt, adminKey, "", "wait", "issuer", "ca", "-n", "team-a", "--for=condition=Ready", "--timeout", "30s"); r.code != 0 {
		t.Fatalf("issuer ca: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := remote(aliceCrt, aliceKey, apitest.SecretTakeover("team-a", "grab", "ca-key-pair", "ca"), "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("tenant apply: %d %s %s", r.code, r.stdout, r.stderr)
	}
	var out string
	for i := 0; ; i++ {
		r := remote(aliceCrt, aliceKey, "", "get", "certificate", "grab", "-n", "team-a", "-o", "yaml")
		out = r.stdout
		if r.code == 0 && strings.Contains(out, "reason: SecretInUse") {
			break
		}
		if i > 200 {
			t.Fatalf("Certificate grab never refused its secret: %d %s %s", r.code, out, r.stderr)
		}
		time.Sleep(25 * time.Millisecond)
	}
	if !strings.Contains(out, `Issuer \"ca\" (spec.ca.secretName)`) && !strings.Contains(out, `Issuer "ca" (spec.ca.secretName)`) {
		t.Errorf("the condition does not name the Issuer:\n%s", out)
	}
	secretDir := filepath.Join(dir, "secrets", "team-a", "ca-key-pair")
	for _, k := range []string{"tls.crt", "tls.key"} {
		b, err := os.ReadFile(filepath.Join(secretDir, k))
		if err != nil || !bytes.Equal(b, ca.Data[k]) {
			t.Errorf("%s changed: %v", k, err)
		}
		if st, err := os.Stat(filepath.Join(secretDir, k)); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v %v, want 0600", k, st.Mode().Perm(), err)
		}
	}
	for _, d := range []string{dir, filepath.Join(dir, "secrets"), filepath.Join(dir, "secrets", "team-a"), secretDir} {
		if st, err := os.Stat(d); err != nil || st.Mode().Perm()&0o007 != 0 {
			t.Errorf("%s mode %v %v: bits for others", d, st.Mode().Perm(), err)
		}
	}
}
