// Package apitest holds the fixtures the API's tests share (adapters/httpapi,
// cmd/certfn's remote mode, internal/awsmode's api role): a deployment
// assembled by core/app on in-memory ports, and manifest builders for issuers, certificates,
// requests and bindings.
package apitest

import (
	"context"
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

	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/kernel"
	"github.com/certfn/certfn/core/memory"
)

// T0 is the fake clock's start.
var T0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// Role is the API tests' deployment: one process that approves (by
// policy), signs selfSigned and CA requests and reads secrets, as local
// mode without the ACME issuer.
var Role = app.Role{Name: "apitest", Engine: true, Approves: true, Signs: []string{"selfSigned", "ca"}, Secrets: true}

// Deployment is Role assembled on core/memory's ports with a fake clock.
type Deployment struct {
	*app.App
	Clock *clock.Fake
	Queue *memory.Queue
	// Secrets is the secret store (an operator installs key pairs there
	// with the cloud's own tools, not through the API).
	Secrets *memory.Secrets
}

// Runtime builds a Deployment with a fake clock at T0.
func Runtime(t testing.TB) (*Deployment, *clock.Fake) {
	t.Helper()
	return RuntimeWith(t, app.Settings{})
}

// RuntimeWith is Runtime with settings (e.g. quotas).
func RuntimeWith(t testing.TB, settings app.Settings) (*Deployment, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(T0)
	q := memory.NewQueue(clk, 5*time.Minute)
	secrets := memory.NewSecrets()
	a, err := app.Build(app.Ports{Store: memory.NewStore(), Secrets: secrets, Queue: q, Clock: clk, Logger: Discard()},
		settings, Role)
	if err != nil {
		t.Fatalf("app.Build: %v", err)
	}
	return &Deployment{App: a, Clock: clk, Queue: q, Secrets: secrets}, clk
}

// RunUntilIdle sweeps the due index and handles every visible message
// until none is visible; it never moves the clock. It returns how many
// messages it handled.
func (d *Deployment) RunUntilIdle(ctx context.Context, _ int) (int, error) {
	if _, err := d.Kernel.Sweep(ctx, 10000); err != nil {
		return 0, err
	}
	n := 0
	for {
		ds, err := d.Queue.Receive(ctx, 256)
		if err != nil || len(ds) == 0 {
			return n, err
		}
		for _, m := range ds {
			n++
			disp := d.Kernel.Handle(ctx, kernel.Message{Key: m.Key, Attempt: m.Attempt})
			if disp.Ack {
				err = d.Queue.Ack(ctx, m)
			} else {
				err = d.Queue.Nack(ctx, m, disp.RetryAfter)
			}
			if err != nil {
				return n, err
			}
		}
	}
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

// CAIssuer returns a CA Issuer manifest signing with the key pair in the
// secret secretName.
func CAIssuer(ns, name, secretName string) string {
	return fmt.Sprintf(`apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: %s, namespace: %s}
spec: {ca: {secretName: %s}}
`, name, ns, secretName)
}

// SecretTakeover returns the manifest of a Certificate that names the
// secret secretName it did not write (an Issuer's CA key pair), asks to
// keep the key stored there (rotationPolicy Never) and to make its files
// world-readable: the attack a Certificate must never win.
func SecretTakeover(ns, name, secretName, issuer string) string {
	return fmt.Sprintf(`apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: %s, namespace: %s}
spec:
  secretName: %s
  dnsNames: [%s.example.com]
  privateKey: {algorithm: ECDSA, size: 256, rotationPolicy: Never}
  secretTemplate: {annotations: {certfn.io/secret-file-mode: "0644"}}
  issuerRef: {name: %s}
`, name, ns, secretName, name, issuer)
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
	return RequestWithCSR(ns, name, issuer, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
}

// SigningRequest returns a CertificateSigningRequest manifest carrying
// the PEM csr for signerName, with server-auth usages.
func SigningRequest(name, signerName string, csr []byte) string {
	return fmt.Sprintf(`apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {name: %s}
spec:
  request: %s
  signerName: %s
  usages: [digital signature, key encipherment, server auth]
`, name, base64.StdEncoding.EncodeToString(csr), signerName)
}

// RequestWithCSR returns a CertificateRequest manifest carrying the PEM
// csr, for the Issuer issuer.
func RequestWithCSR(ns, name, issuer string, csr []byte) string {
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
