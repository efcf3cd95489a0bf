package signers

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"net"
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/pki"
)

func der(t *testing.T, v any) []byte {
	t.Helper()
	b, err := asn1.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func gn(t *testing.T, tag int, compound bool, content []byte) []byte {
	return der(t, asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: tag, IsCompound: compound, Bytes: content})
}

func seqOf(t *testing.T, parts ...[]byte) []byte {
	return der(t, asn1.RawValue{Tag: asn1.TagSequence, IsCompound: true, Bytes: bytes.Join(parts, nil)})
}

// rawRequest is a CertificateRequest whose CSR, signed by key, carries
// exactly exts (and the subject CN web.team-a.example.com).
func rawRequest(t *testing.T, key crypto.Signer, isCA bool, exts ...pkix.Extension) *api.CertificateRequest {
	t.Helper()
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: "web.team-a.example.com"}, ExtraExtensions: exts}
	d, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	return &api.CertificateRequest{
		ObjectMeta: api.ObjectMeta{Name: "web-1", Namespace: "team-a"},
		Spec:       api.CertificateRequestSpec{Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: d}), IsCA: isCA},
	}
}

// The certificate's subjectAltName is encoded by the signer from the
// names it read, in the CSR's order: the issued extension is exactly the
// canonical DER of those names (written out here by hand), a strict
// reader reads it back, and a non-critical extension certfn does not
// know is not carried over.
func TestTemplateFromRequestReencodesSAN(t *testing.T) {
	key := mustKey(t)
	upn := asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 311, 20, 2, 3}
	otherName := gn(t, 0, true, append(der(t, upn), gn(t, 0, true, der(t, asn1.RawValue{Tag: asn1.TagUTF8String, Bytes: []byte("alice@team-a.example.com")}))...))
	want := seqOf(t,
		otherName,
		gn(t, 7, false, net.ParseIP("2001:db8::1")),
		gn(t, 2, false, []byte("web.team-a.example.com")),
		gn(t, 6, false, []byte("spiffe://team-a.example.com/ns/a/sa/web")),
		gn(t, 1, false, []byte("alice@team-a.example.com")),
		gn(t, 7, false, []byte{10, 0, 0, 1}),
	)
	mustStaple := pkix.Extension{Id: asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 1, 24}, Value: der(t, []int{5})}
	cr := rawRequest(t, key, false, pkix.Extension{Id: pki.OIDExtensionSubjectAltName, Value: want}, mustStaple)
	tmpl, err := TemplateFromRequest(cr, now)
	if err != nil {
		t.Fatal(err)
	}
	d, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(d)
	if err != nil {
		t.Fatal(err)
	}
	var san *pkix.Extension
	for i, e := range cert.Extensions {
		if e.Id.Equal(pki.OIDExtensionSubjectAltName) {
			if san != nil {
				t.Fatal("two subjectAltName extensions")
			}
			san = &cert.Extensions[i]
		}
		if e.Id.Equal(mustStaple.Id) {
			t.Error("the CSR's unknown non-critical extension was copied into the certificate")
		}
	}
	if san == nil || !bytes.Equal(san.Value, want) || san.Critical {
		t.Fatalf("subjectAltName = %+v\nwant value %x, not critical", san, want)
	}
	names, err := pki.ParseGeneralNames(san.Value)
	if err != nil || len(names) != 6 {
		t.Fatalf("strict reader: %d names, %v", len(names), err)
	}
	if got := cert.IPAddresses; len(got) != 2 || !got[0].Equal(net.ParseIP("2001:db8::1")) || !got[1].Equal(net.ParseIP("10.0.0.1")) {
		t.Errorf("IP addresses = %v", got)
	}
	if !bytes.Equal(cert.RawSubject, der(t, pkix.Name{CommonName: "web.team-a.example.com"}.ToRDNSequence())) {
		t.Errorf("subject = %x", cert.RawSubject)
	}
}

// What approval could not judge is never signed: each request is refused
// with a permanent error naming spec.request and the rule (on the old
// code, each was signed).
func TestTemplateFromRequestRefusesWhatWasNotJudged(t *testing.T) {
	key := mustKey(t)
	rsa1024, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	p224, err := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	san := func(v []byte) pkix.Extension { return pkix.Extension{Id: pki.OIDExtensionSubjectAltName, Value: v} }
	dns := gn(t, 2, false, []byte("web.team-a.example.com"))
	octets := func(b ...byte) []byte { return der(t, asn1.RawValue{Tag: asn1.TagOctetString, Bytes: b}) }
	hiddenIP := gn(t, 7, true, bytes.Join([][]byte{octets(127, 0), octets(0, 1), octets(), octets(), octets(), octets()}, nil))
	nc := pkix.Extension{Id: pki.OIDExtensionNameConstraints, Critical: true, Value: seqOf(t, gn(t, 0, true, seqOf(t, gn(t, 2, false, []byte("team-a.example.com")))))}
	for _, tc := range []struct {
		name string
		cr   *api.CertificateRequest
		want string
	}{
		{"an iPAddress encoded as constructed", rawRequest(t, key, false, san(seqOf(t, dns, hiddenIP))),
			"spec.request: subjectAltName entry 2 (iPAddress): is encoded as constructed"},
		{"a directoryName SAN", rawRequest(t, key, false, san(seqOf(t, dns, gn(t, 4, true, der(t, pkix.Name{CommonName: "admin"}.ToRDNSequence()))))),
			"spec.request: subjectAltName entry 2 is directoryName"},
		{"a critical extension certfn does not know", rawRequest(t, key, false, san(seqOf(t, dns)),
			pkix.Extension{Id: asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 1, 24}, Critical: true, Value: der(t, []int{5})}),
			"spec.request: the CSR carries the critical extension 1.3.6.1.5.5.7.1.24"},
		{"nameConstraints in a request for a leaf", rawRequest(t, key, false, san(seqOf(t, dns)), nc),
			"spec.request: the CSR carries nameConstraints"},
		{"a constructed nameConstraints base", rawRequest(t, key, true, san(seqOf(t, dns)), pkix.Extension{Id: pki.OIDExtensionNameConstraints, Critical: true,
			Value: seqOf(t, gn(t, 0, true, seqOf(t, gn(t, 2, true, der(t, asn1.RawValue{Tag: asn1.TagIA5String, Bytes: []byte("example.com")})))))}),
			"spec.request: nameConstraints permittedSubtrees entry 1 (dNSName): is encoded as constructed"},
		{"an RSA-1024 key", rawRequest(t, rsa1024, false, san(seqOf(t, dns))), "spec.request: the public key is RSA of 1024 bits; certfn signs RSA keys of 2048 to 8192 bits"},
		{"a P-224 key", rawRequest(t, p224, false, san(seqOf(t, dns))), "spec.request: the public key is ECDSA on P-224; certfn signs ECDSA keys on P-256, P-384 or P-521"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, err := TemplateFromRequest(tc.cr, now)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				var exts []string
				if tmpl != nil {
					for _, e := range tmpl.ExtraExtensions {
						exts = append(exts, e.Id.String())
					}
				}
				t.Fatalf("TemplateFromRequest = %v (extensions %v), want an error containing %q", err, exts, tc.want)
			}
			if !errs.IsPermanent(err) {
				t.Errorf("error %v is not permanent", err)
			}
		})
	}
}

// A CA request's name constraints are re-encoded from the parsed view,
// with the CSR's critical bit.
func TestTemplateFromRequestReencodesNameConstraints(t *testing.T) {
	key := mustKey(t)
	v := seqOf(t, gn(t, 0, true, bytes.Join([][]byte{
		seqOf(t, gn(t, 2, false, []byte("team-a.example.com"))),
		seqOf(t, gn(t, 7, false, []byte{10, 0, 0, 0, 255, 0, 0, 0})),
	}, nil)))
	cr := rawRequest(t, key, true, pkix.Extension{Id: pki.OIDExtensionNameConstraints, Critical: true, Value: v})
	cr.Spec.Usages = nil
	tmpl, err := TemplateFromRequest(cr, now)
	if err != nil {
		t.Fatal(err)
	}
	var got *pkix.Extension
	for i, e := range tmpl.ExtraExtensions {
		if e.Id.Equal(pki.OIDExtensionNameConstraints) {
			got = &tmpl.ExtraExtensions[i]
		}
	}
	if got == nil || !got.Critical || !bytes.Equal(got.Value, v) {
		t.Fatalf("nameConstraints = %+v, want critical %x", got, v)
	}
}
