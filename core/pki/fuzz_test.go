package pki

import (
	"bytes"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
)

// FuzzParseCSRPEM: ParseCSRPEM never panics, and whatever it accepts has a
// verifying signature and decodable certfn extensions or a clear error.
func FuzzParseCSRPEM(f *testing.F) {
	csr, err := GenerateCSR(certificate(func(s *api.CertificateSpec) {
		s.OtherNames = []api.OtherName{{OID: "1.2.3.4", UTF8Value: "x"}}
		s.IsCA = true
		s.NameConstraints = &api.NameConstraints{Permitted: &api.NameConstraintItem{DNSDomains: []string{"example.com"}}}
	}), ecKey(f, "fuzz"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(csr)
	f.Add(bytes.Replace(csr, []byte("CERTIFICATE REQUEST"), []byte("NEW CERTIFICATE REQUEST"), 2))
	f.Add(append(append([]byte{}, csr...), csr...))
	f.Add([]byte("-----BEGIN CERTIFICATE REQUEST-----\nMAA=\n-----END CERTIFICATE REQUEST-----\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ParseCSRPEM(b)
		if err != nil {
			if got != nil {
				t.Fatal("ParseCSRPEM returned a request together with an error")
			}
			return
		}
		if err := got.CheckSignature(); err != nil {
			t.Fatalf("accepted a CSR whose signature does not verify: %v", err)
		}
		_, _ = ParseCSRExtensions(got)
	})
}

// FuzzParseChainPEM: ParseChainPEM never panics and returns at least one
// certificate whenever it succeeds.
func FuzzParseChainPEM(f *testing.F) {
	c := newChain(f)
	f.Add(EncodeCertificatesPEM(c.leaf, c.inter, c.root))
	f.Add(append([]byte("explanatory text\n"), EncodeCertificatesPEM(c.leaf)...))
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n"))
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nProc-Type: 4,ENCRYPTED\n\nAA==\n-----END CERTIFICATE-----\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		certs, err := ParseChainPEM(b)
		if err != nil {
			return
		}
		if len(certs) == 0 {
			t.Fatal("ParseChainPEM succeeded with no certificate")
		}
		for i, c := range certs {
			if c == nil || len(c.Raw) == 0 {
				t.Fatalf("certificate %d is empty", i)
			}
		}
		_, _ = BuildChain(certs[0], certs[1:])
	})
}

// FuzzParseLiteralSubject: never panics, and an accepted subject encodes.
func FuzzParseLiteralSubject(f *testing.F) {
	for _, s := range []string{"CN=a,O=b", `CN=a\,b+OU=c;C=GB`, "1.2.3=#0c0161", `CN=\C3\A9`, "CN=", " ", `CN=a\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		seq, err := ParseLiteralSubject(s)
		if err != nil {
			return
		}
		der, err := asn1.Marshal(seq)
		if err != nil {
			t.Fatalf("accepted subject %q does not encode: %v", s, err)
		}
		var back pkix.RDNSequence
		if _, err := asn1.Unmarshal(der, &back); err != nil {
			t.Fatalf("encoded subject %q does not decode: %v", s, err)
		}
	})
}

// FuzzDecodePrivateKeyPEM: never panics, and a rejected input's error never
// echoes the input's PEM body.
func FuzzDecodePrivateKeyPEM(f *testing.F) {
	k, _ := EncodePrivateKeyPEM(ecKey(f, "fuzz"), api.PKCS1)
	p8, _ := EncodePKCS8PEM(ecKey(f, "fuzz"))
	f.Add(k)
	f.Add(p8)
	f.Add([]byte("-----BEGIN PRIVATE KEY-----\nc2VjcmV0c2VjcmV0c2VjcmV0\n-----END PRIVATE KEY-----\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		key, err := DecodePrivateKeyPEM(b)
		if err == nil {
			if key == nil {
				t.Fatal("nil key without an error")
			}
			return
		}
		for rest := b; ; {
			var block *pem.Block
			if block, rest = pem.Decode(rest); block == nil {
				break
			}
			if len(block.Bytes) < 8 {
				continue
			}
			if strings.Contains(err.Error(), string(block.Bytes)) || strings.Contains(err.Error(), base64.StdEncoding.EncodeToString(block.Bytes)[:8]) {
				t.Fatalf("error %q echoes key bytes", err)
			}
		}
	})
}

// FuzzParseGeneralNames: the GeneralName reader never panics; whatever it
// accepts has the constructed bit its kind requires, and the names a
// signer signs encode back to exactly the bytes read (the reader accepts
// DER only, so what was judged is what is signed) and read again the
// same; CheckCSRNames and the policy read the same names.
func FuzzParseGeneralNames(f *testing.F) {
	seed := func(gns ...asn1.RawValue) {
		b, err := asn1.Marshal(gns)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	on, err := marshalOtherName(asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 311, 20, 2, 3}, "alice@example.com")
	if err != nil {
		f.Fatal(err)
	}
	seed(contextValue(gnDNS, false, []byte("a.example.com")), contextValue(gnIP, false, []byte{10, 0, 0, 1}), on,
		contextValue(gnURI, false, []byte("spiffe://example.com/x")), contextValue(gnRFC822, false, []byte("a@example.com")))
	seed(contextValue(gnIP, true, []byte{4, 2, 127, 0, 4, 2, 0, 1, 4, 0, 4, 0, 4, 0, 4, 0}))
	seed(contextValue(gnDirectoryName, true, []byte{0x30, 0x00}), contextValue(gnRegisteredID, false, []byte{0x2a}))
	f.Add([]byte{0x30, 0x03, 0x82, 0x01, 0x61, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		names, err := ParseGeneralNames(b)
		if err != nil {
			if names != nil {
				t.Fatal("names returned with an error")
			}
			return
		}
		signable := true
		for _, g := range names {
			signable = signable && g.Signable()
		}
		if !signable {
			return
		}
		out, err := MarshalGeneralNames(names)
		if err != nil {
			t.Fatalf("accepted names do not encode: %v", err)
		}
		if !bytes.Equal(out, b) {
			t.Fatalf("accepted %x, which encodes back as %x", b, out)
		}
		again, err := ParseGeneralNames(out)
		if err != nil || len(again) != len(names) {
			t.Fatalf("re-encoded names read back as %d names, %v", len(again), err)
		}
		var seq asn1.RawValue
		if _, err := asn1.Unmarshal(b, &seq); err != nil {
			t.Fatal(err)
		}
		for rest := seq.Bytes; len(rest) > 0; {
			var rv asn1.RawValue
			if rest, err = asn1.Unmarshal(rest, &rv); err != nil {
				t.Fatal(err)
			}
			if rv.IsCompound != (rv.Tag == gnOtherName) {
				t.Fatalf("accepted a [%d] with constructed=%t", rv.Tag, rv.IsCompound)
			}
		}
		_ = CheckCSRNames(&x509.CertificateRequest{Extensions: []pkix.Extension{{Id: OIDExtensionSubjectAltName, Value: b}}})
	})
}
