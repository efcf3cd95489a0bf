package api

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
)

func TestSignerIssuer(t *testing.T) {
	cases := []struct {
		signer string
		ref    IssuerReference
		ns     string
		ok     bool
	}{
		{"issuers.cert-manager.io/team-a.ca", IssuerReference{Name: "ca", Kind: KindIssuer, Group: CertManagerGroup}, "team-a", true},
		{"issuers.cert-manager.io/team-a.my.ca", IssuerReference{Name: "my.ca", Kind: KindIssuer, Group: CertManagerGroup}, "team-a", true},
		{"clusterissuers.cert-manager.io/ca", IssuerReference{Name: "ca", Kind: KindClusterIssuer, Group: CertManagerGroup}, "", true},
		{"issuers.cert-manager.io/ca", IssuerReference{}, "", false},
		{"issuers.cert-manager.io/.ca", IssuerReference{}, "", false},
		{"clusterissuers.cert-manager.io/", IssuerReference{}, "", false},
		{"kubernetes.io/kube-apiserver-client", IssuerReference{}, "", false},
		{"", IssuerReference{}, "", false},
	}
	for _, tc := range cases {
		ref, ns, ok := SignerIssuer(tc.signer)
		if ref != tc.ref || ns != tc.ns || ok != tc.ok {
			t.Errorf("SignerIssuer(%q) = %+v, %q, %v; want %+v, %q, %v", tc.signer, ref, ns, ok, tc.ref, tc.ns, tc.ok)
		}
	}
}

const csrManifest = `apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata:
  name: web
  namespace: ignored
spec:
  request: %s
  signerName: clusterissuers.cert-manager.io/ca
  expirationSeconds: 600
  usages: [digital signature, server auth]
`

// TestDecodeCSR: spec.request is base64 of the PEM in YAML and JSON, as
// upstream; the kind is cluster-scoped (a namespace is dropped with a
// warning); a request that is not base64 is refused at its field.
func TestDecodeCSR(t *testing.T) {
	pemText := []byte("-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n")
	objs, warns, err := DecodeWarnings([]byte(strings.Replace(csrManifest, "%s", base64.StdEncoding.EncodeToString(pemText), 1)))
	if err != nil {
		t.Fatal(err)
	}
	c, ok := objs[0].(*CertificateSigningRequest)
	if !ok || len(objs) != 1 {
		t.Fatalf("got %T", objs[0])
	}
	if !bytes.Equal(c.Spec.Request, pemText) || c.Spec.SignerName != "clusterissuers.cert-manager.io/ca" || *c.Spec.ExpirationSeconds != 600 ||
		len(c.Spec.Usages) != 2 || c.Namespace != "" || c.APIVersion != CertificatesV1 {
		t.Fatalf("decoded %+v", c)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "cluster-scoped") {
		t.Fatalf("warnings %v", warns)
	}
	_, err = Decode([]byte(strings.Replace(csrManifest, "%s", "not base64!", 1)))
	if err == nil || !strings.Contains(err.Error(), "spec.request: want a base64-encoded string") {
		t.Fatalf("err = %v", err)
	}
	_, err = Decode([]byte(strings.Replace(strings.Replace(csrManifest, "%s", "QQ==", 1), "usages:", "usage:", 1)))
	if err == nil || !strings.Contains(err.Error(), "spec.usage: unknown field") {
		t.Fatalf("err = %v", err)
	}
}

// FuzzCSRManifest: decoding a CertificateSigningRequest manifest never
// panics, and what decodes is a cluster-scoped CSR whose JSON decodes back.
func FuzzCSRManifest(f *testing.F) {
	f.Add([]byte(strings.Replace(csrManifest, "%s", "QUJD", 1)))
	f.Add([]byte(`{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":"x"},"spec":{"request":"QQ==","signerName":"a.b/c","expirationSeconds":-5,"extra":{"a":["b"]}},"status":{"certificate":"QQ==","conditions":[{"type":"Approved","status":"True"}]}}`))
	f.Add([]byte(`{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","spec":{"expirationSeconds":99999999999}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := Decode(data)
		if err != nil {
			return
		}
		for _, o := range objs {
			c, ok := o.(*CertificateSigningRequest)
			if !ok {
				continue
			}
			if c.Namespace != "" {
				t.Fatalf("cluster-scoped CSR decoded with namespace %q", c.Namespace)
			}
		}
	})
}
