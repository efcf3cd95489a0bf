package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeCA writes a self-signed CA certificate and its PKCS#8 key as PEM files.
func writeCA(t *testing.T, dir string) (crtPath, keyPath string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "imported CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalPKCS8PrivateKey(key)
	crtPath, keyPath = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca-key.pem")
	_ = os.WriteFile(crtPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	_ = os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), 0o600)
	return crtPath, keyPath
}

// An existing CA key pair imported with `create secret` backs a ca issuer
// that then signs a leaf; values are never printed.
func TestCreateSecretImportsACAForACAIssuer(t *testing.T) {
	dir := t.TempDir()
	crt, key := writeCA(t, t.TempDir())
	r := cli(t, dir, "", "create", "secret", "imported-ca", "-n", "cert-manager", "--from-file", "tls.crt="+crt, "--from-file", "tls.key="+key)
	if r.code != 0 || !strings.Contains(r.stdout, "created with keys tls.crt, tls.key") {
		t.Fatalf("create secret: %+v", r)
	}
	keyPEM, _ := os.ReadFile(key)
	if strings.Contains(r.stdout+r.stderr, string(keyPEM)) {
		t.Fatal("the key was printed")
	}
	if r := cli(t, dir, "", "create", "secret", "imported-ca", "-n", "cert-manager", "--from-literal", "x=y"); r.code == 0 || !strings.Contains(r.stderr, "already exists") {
		t.Fatalf("second create without --overwrite: %+v", r)
	}
	manifests := `apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: imported}
spec: {ca: {secretName: imported-ca}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: leaf, namespace: default}
spec:
  secretName: leaf-tls
  dnsNames: [leaf.example.internal]
  privateKey: {algorithm: ECDSA}
  issuerRef: {name: imported, kind: ClusterIssuer}
`
	if r := cli(t, dir, manifests, "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	if r := cli(t, dir, "", "serve", "--until-idle", "--auto-approve", "*"); r.code != 0 {
		t.Fatalf("serve: %+v", r)
	}
	r = cli(t, dir, "", "inspect", "secret", "leaf-tls", "--verify")
	if r.code != 0 || !strings.Contains(r.stdout, "Issuer:       CN=imported CA") || !strings.Contains(r.stdout, "Verified") {
		t.Fatalf("leaf not signed by the imported CA: %+v", r)
	}
}

func TestCreateSecretBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"create", "secret", "s"}, "at least one --from-file or --from-literal"},
		{[]string{"create", "secret", "s", "--from-file", "nokey"}, "want KEY=PATH"},
		{[]string{"create", "secret", "s", "--from-file", "k=/does/not/exist"}, "--from-file k"},
		{[]string{"create", "secret", "s", "--from-literal", "novalue"}, "want KEY=VALUE"},
		{[]string{"--as", "alice", "create", "secret", "s", "--from-literal", "k=v"}, "may not create secrets"},
		{[]string{"create", "secret", "../evil", "--from-literal", "k=v"}, "name"},
	} {
		r := cli(t, dir, "", tc.args...)
		if r.code == 0 || !strings.Contains(r.stderr, tc.want) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%v: code %d stderr %q; want one error line containing %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}
