// Package apitest holds the fixtures the API's tests share (adapters/httpapi,
// cmd/certfn's remote mode, functions/aws/api): a local-mode runtime on a
// temporary directory, and manifest builders for issuers, certificates,
// requests and bindings.
package apitest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/internal/localmode"
)

// T0 is the fake clock's start.
var T0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// Runtime opens local mode on a temporary directory with a fake clock at
// T0 and a silent logger, and closes it when the test ends.
func Runtime(t testing.TB) (*localmode.Runtime, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(T0)
	rt, err := localmode.Open(localmode.Options{DataDir: t.TempDir(), Clock: clk, Logger: Discard()})
	if err != nil {
		t.Fatalf("open local mode: %v", err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	return rt, clk
}

// Discard is a logger that drops everything.
func Discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Issuer returns a selfSigned Issuer manifest.
func Issuer(ns, name string) string {
	return fmt.Sprintf(`apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: %s, namespace: %s}
spec: {selfSigned: {}}
`, name, ns)
}

// Certificate returns a Certificate manifest for dnsNames issued by the
// Issuer issuer, with an ECDSA P-256 key.
func Certificate(ns, name, issuer string, dnsNames ...string) string {
	return fmt.Sprintf(`apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: %s, namespace: %s}
spec:
  secretName: %s-tls
  dnsNames: [%s]
  privateKey: {algorithm: ECDSA, size: 256}
  issuerRef: {name: %s}
`, name, ns, name, strings.Join(dnsNames, ", "), issuer)
}

// Request returns a CertificateRequest manifest with a fresh CSR for
// dnsName, for the Issuer issuer. The key is discarded.
func Request(t testing.TB, ns, name, issuer, dnsName string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: dnsName}, DNSNames: []string{dnsName}}, key)
	if err != nil {
		t.Fatal(err)
	}
	csr := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	return fmt.Sprintf(`apiVersion: cert-manager.io/v1
kind: CertificateRequest
metadata: {name: %s, namespace: %s}
spec:
  request: %s
  issuerRef: {name: %s}
  usages: [digital signature, server auth]
`, name, ns, base64.StdEncoding.EncodeToString(csr), issuer)
}

// Grant returns a ClusterRole named name with one rule (verbs on
// resources of group) and a ClusterRoleBinding of it to the User user.
// When ns is not empty the binding is a RoleBinding in ns instead.
func Grant(name, user, ns, group string, resources, verbs []string) string {
	role := fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: %s}
rules:
  - apiGroups: [%q]
    resources: [%s]
    verbs: [%s]
`, name, group, strings.Join(resources, ", "), strings.Join(verbs, ", "))
	kind, meta := "ClusterRoleBinding", fmt.Sprintf("{name: %s}", name)
	if ns != "" {
		kind, meta = "RoleBinding", fmt.Sprintf("{name: %s, namespace: %s}", name, ns)
	}
	return role + fmt.Sprintf(`---
apiVersion: rbac.authorization.k8s.io/v1
kind: %s
metadata: %s
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: %s}
subjects:
  - {apiGroup: rbac.authorization.k8s.io, kind: User, name: %q}
`, kind, meta, name, user)
}

// Docs joins manifests into one multi-document YAML stream.
func Docs(docs ...string) string { return strings.Join(docs, "---\n") }
