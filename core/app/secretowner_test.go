package app_test

import (
	"bytes"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/app/apptest"
	"github.com/certfn/certfn/core/certificates"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
)

// takeoverYAML is the attack: a Certificate naming a secret it did not
// write, asking to keep its key (rotationPolicy Never) and to make its
// files world-readable.
func takeoverYAML(secretName, issuerName, issuerKind string) string {
	return `apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: grab, namespace: default}
spec:
  secretName: ` + secretName + `
  commonName: grab.example.com
  dnsNames: [grab.example.com]
  privateKey: {algorithm: ECDSA, size: 256, rotationPolicy: Never}
  secretTemplate: {annotations: {certfn.io/secret-file-mode: "0644"}}
  issuerRef: {name: ` + issuerName + `, kind: ` + issuerKind + `}
`
}

var grabKey = api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "grab"}

// A Certificate never takes over a secret it did not write: the CA key
// pair of an Issuer (whatever the secret's annotations say), an ACME
// account key, DNS-01 credentials, another Certificate's keystore
// password, or any secret with data that no Certificate wrote unless an
// operator handed it over. The secret is left byte for byte as it was, the
// Certificate is not Ready with a reason and a message naming the secret
// and the rule, and no key of such a secret is ever reused.
func TestCertificateNeverTakesOverAnotherSecret(t *testing.T) {
	ca := ct.NewCA(t)
	caSecret := func(annotations map[string]string) ports.Secret {
		s := ca.Secret(t, "default", "ca-key-pair")
		s.Annotations = annotations
		return s
	}
	other := ports.Secret{Namespace: "default", Name: "creds", Data: map[string][]byte{"api-token": []byte("s3cr3t")}}
	selfSigned := `apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: self, namespace: default}
spec: {selfSigned: {}}
`
	acmeIssuer := func(field string) string {
		return `apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: le, namespace: default}
spec:
  acme:
    server: https://acme.example/directory
    ` + field + `
`
	}
	for _, tc := range []struct {
		name       string
		bounds     *api.SecretFileBounds
		secret     ports.Secret
		manifests  string
		cert       string
		wantReason string
		wantInMsg  string
	}{
		{"the CA key pair of an Issuer", nil, caSecret(nil), apptest.CAIssuerYAML,
			takeoverYAML("ca-key-pair", "ca", "Issuer"), certificates.ReasonSecretInUse, `Issuer "ca" (spec.ca.secretName)`},
		{"the CA key pair of an Issuer, handed over by annotation", nil, caSecret(map[string]string{api.AnnotationAdoptByCertificate: "grab"}),
			apptest.CAIssuerYAML, takeoverYAML("ca-key-pair", "ca", "Issuer"), certificates.ReasonSecretInUse, `Issuer "ca" (spec.ca.secretName)`},
		{"the CA key pair, with the file mode bounded", &api.SecretFileBounds{}, caSecret(nil), apptest.CAIssuerYAML,
			takeoverYAML("ca-key-pair", "ca", "Issuer"), certificates.ReasonSecretFilePermsNotAllowed,
			`spec.secretTemplate.annotations[certfn.io/secret-file-mode]: "0644" is more permissive than this deployment allows (at most 0640`},
		{"an ACME account key", nil, other, selfSigned + "---\n" + acmeIssuer("privateKeySecretRef: {name: creds}"),
			takeoverYAML("creds", "self", "Issuer"), certificates.ReasonSecretInUse, `Issuer "le" (spec.acme.privateKeySecretRef)`},
		{"DNS-01 credentials", nil, other, selfSigned + "---\n" + acmeIssuer(`privateKeySecretRef: {name: le-account}
    solvers: [{dns01: {cloudflare: {apiTokenSecretRef: {name: creds, key: api-token}}}}]`),
			takeoverYAML("creds", "self", "Issuer"), certificates.ReasonSecretInUse,
			`Issuer "le" (spec.acme.solvers[0].dns01.cloudflare.apiTokenSecretRef)`},
		{"another Certificate's keystore password", nil, other, selfSigned + "---\n" + `apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: java, namespace: default}
spec:
  secretName: java-tls
  dnsNames: [java.example.com]
  keystores: {pkcs12: {create: true, passwordSecretRef: {name: creds, key: api-token}}}
  issuerRef: {name: self}
`, takeoverYAML("creds", "self", "Issuer"), certificates.ReasonSecretInUse, `Certificate "java" (spec.keystores.pkcs12.passwordSecretRef)`},
		{"a secret with data no Certificate wrote", nil, caSecret(nil), selfSigned,
			takeoverYAML("ca-key-pair", "self", "Issuer"), certificates.ReasonSecretNotOwned,
			`Secret "ca-key-pair" holds data that no Certificate wrote (it has no cert-manager.io/certificate-name annotation)`},
		{"a secret handed over to another Certificate", nil, caSecret(map[string]string{api.AnnotationAdoptByCertificate: "someone-else"}), selfSigned,
			takeoverYAML("ca-key-pair", "self", "Issuer"), certificates.ReasonSecretNotOwned, "certfn.io/adopt-by-certificate: grab"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := apptest.NewReadingRig(t, func(s *app.Settings) { s.SecretFileBounds = tc.bounds })
			if err := r.Secrets.Put(r.Ctx, tc.secret); err != nil {
				t.Fatal(err)
			}
			r.Apply(tc.manifests)
			r.Drain()
			r.Apply(tc.cert)
			r.Drain()
			got, err := r.Secrets.Get(r.Ctx, "default", tc.secret.Name)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.EqualFunc(got.Data, tc.secret.Data, bytes.Equal) || !maps.Equal(got.Annotations, tc.secret.Annotations) {
				t.Fatalf("secret %s was changed: annotations %v", tc.secret.Name, got.Annotations)
			}
			crt := r.Get(grabKey).(*api.Certificate)
			ready := api.FindCondition(crt.Status.Conditions, api.CertificateConditionReady)
			if ready == nil || ready.Status != api.ConditionFalse || ready.Reason != tc.wantReason || !strings.Contains(ready.Message, tc.wantInMsg) {
				t.Fatalf("Ready = %+v, want False, reason %s, message containing %q", ready, tc.wantReason, tc.wantInMsg)
			}
			if tc.bounds == nil && !strings.Contains(ready.Message, tc.secret.Name) {
				t.Fatalf("Ready message %q does not name the secret", ready.Message)
			}
			if crt.Status.Revision != nil || len(crt.Status.Conditions) == 0 {
				t.Fatalf("status %+v: the Certificate issued", crt.Status)
			}
			// Naming a secret is no way to read it: status shows none of
			// what a secret the Certificate did not write holds.
			rep, err := r.Service.Status(r.Ctx, apptest.Caller, grabKey)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Secret.State != app.StateNotOwned || rep.Secret.Subject != "" || rep.Secret.Issuer != "" || rep.Secret.NotAfter != (time.Time{}) {
				t.Fatalf("status shows the secret %+v, want state %s and nothing of it", rep.Secret, app.StateNotOwned)
			}
		})
	}
}

// An operator hands an existing secret over with
// certfn.io/adopt-by-certificate: the Certificate then issues into it,
// but with a key of its own even with rotationPolicy Never (a key it did
// not write is never signed for it). Once written, the secret is the
// Certificate's: a CA bootstrapped from a self-signed Certificate that a
// CA Issuer then uses stays renewable by that Certificate.
func TestCertificateAdoptsOnlyWhatAnOperatorHandsOver(t *testing.T) {
	r := apptest.NewRig(t)
	ca := ct.NewCA(t)
	old := ca.Secret(t, "default", "ca-key-pair")
	old.Annotations = map[string]string{api.AnnotationAdoptByCertificate: "grab"}
	if err := r.Secrets.Put(r.Ctx, old); err != nil {
		t.Fatal(err)
	}
	r.Apply(`apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: self, namespace: default}
spec: {selfSigned: {}}
`)
	r.Apply(takeoverYAML("ca-key-pair", "self", "Issuer"))
	r.Drain()
	crt := r.Get(grabKey).(*api.Certificate)
	if !api.IsTrue(crt.Status.Conditions, api.CertificateConditionReady) {
		t.Fatalf("not Ready: %+v", crt.Status.Conditions)
	}
	got, err := r.Secrets.Get(r.Ctx, "default", "ca-key-pair")
	if err != nil {
		t.Fatal(err)
	}
	if got.Annotations[api.AnnotationCertificateName] != "grab" {
		t.Fatalf("annotations %v: not written by the Certificate", got.Annotations)
	}
	if bytes.Equal(got.Data["tls.key"], old.Data["tls.key"]) {
		t.Fatal("rotationPolicy Never reused a key the Certificate did not write")
	}
	firstKey := got.Data["tls.key"]

	// Its own key is reused on the next issuance; and now that a CA
	// Issuer uses the secret the Certificate still renews it.
	r.Apply(apptest.CAIssuerYAML)
	r.Drain()
	if _, err := r.Service.Renew(r.Ctx, apptest.Caller, grabKey); err != nil {
		t.Fatal(err)
	}
	r.Drain()
	again, err := r.Secrets.Get(r.Ctx, "default", "ca-key-pair")
	if err != nil {
		t.Fatal(err)
	}
	crt = r.Get(grabKey).(*api.Certificate)
	if crt.Status.Revision == nil || *crt.Status.Revision != 2 || !bytes.Equal(again.Data["tls.key"], firstKey) {
		t.Fatalf("revision %v, same key %v: the owner did not renew with its own key", crt.Status.Revision, bytes.Equal(again.Data["tls.key"], firstKey))
	}
	if _, err := pki.DecodePrivateKeyPEM(again.Data["tls.key"]); err != nil {
		t.Fatal(err)
	}
}
