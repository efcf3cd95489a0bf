package pki

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"strings"
	"testing"
)

// Crafted CSRs: GeneralNames whose encoding crypto/x509 skips or reads
// differently from other parsers (OpenSSL concatenates the segments of a
// constructed [7] and reads an IP address), duplicate extensions and
// bytes where none belong. Each is signed and parses with
// x509.ParseCertificateRequest, which is how they reached a signer.

// der encodes one ASN.1 value (test helper).
func der(t testing.TB, v any) []byte {
	t.Helper()
	b, err := asn1.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// prim and cons are a context-specific GeneralName, primitive or
// constructed, with the given content.
func prim(t testing.TB, tag int, content []byte) []byte {
	return der(t, asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: tag, Bytes: content})
}

func cons(t testing.TB, tag int, parts ...[]byte) []byte {
	return der(t, asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: tag, IsCompound: true, Bytes: cat(parts...)})
}

// octets is a primitive OCTET STRING segment; ia5 an IA5String segment.
func octets(t testing.TB, b ...byte) []byte {
	return der(t, asn1.RawValue{Tag: asn1.TagOctetString, Bytes: b})
}
func ia5seg(t testing.TB, s string) []byte {
	return der(t, asn1.RawValue{Tag: asn1.TagIA5String, Bytes: []byte(s)})
}

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// sanValue is a SEQUENCE OF the given encoded GeneralNames.
func sanValue(t testing.TB, gns ...[]byte) []byte {
	return der(t, asn1.RawValue{Tag: asn1.TagSequence, IsCompound: true, Bytes: cat(gns...)})
}

func sanExt(v []byte) pkix.Extension { return pkix.Extension{Id: OIDExtensionSubjectAltName, Value: v} }

// hiddenIP is a constructed [7] of 16 content bytes (so a reader that
// ignores the constructed bit sees an IPv6 address) whose OCTET STRING
// segments concatenate to 127.0.0.1.
func hiddenIP(t testing.TB) []byte {
	return cons(t, gnIP, octets(t, 127, 0), octets(t, 0, 1), octets(t), octets(t), octets(t), octets(t))
}

// craftCSR signs a CSR with the given raw subject (nil: CN
// web.team-a.example.com) and extensions, and parses it as certfn does.
func craftCSR(t testing.TB, rawSubject []byte, exts ...pkix.Extension) *x509.CertificateRequest {
	t.Helper()
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: "web.team-a.example.com"}, RawSubject: rawSubject, ExtraExtensions: exts}
	d, err := x509.CreateCertificateRequest(rand.Reader, tmpl, ecKey(t, "crafted"))
	if err != nil {
		t.Fatal(err)
	}
	csr, err := ParseCSRPEM(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: d}))
	if err != nil && strings.Contains(err.Error(), "duplicate requested extensions") {
		// crypto/x509 refuses duplicate extensions itself; the parsed
		// view is checked as another parser would return it.
		base := craftCSR(t, rawSubject)
		view := *base
		view.Extensions = exts
		return &view
	}
	if err != nil {
		t.Fatalf("the crafted CSR does not parse: %v", err)
	}
	return csr
}

type craftedCase struct {
	name string
	exts func(t testing.TB) []pkix.Extension
	want string
}

func craftedSANCases() []craftedCase {
	upn := asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 311, 20, 2, 3}
	dns := func(t testing.TB) []byte { return prim(t, gnDNS, []byte("web.team-a.example.com")) }
	return []craftedCase{
		{"constructed iPAddress hiding 127.0.0.1", func(t testing.TB) []pkix.Extension {
			return []pkix.Extension{sanExt(sanValue(t, dns(t), hiddenIP(t)))}
		}, "subjectAltName entry 2 (iPAddress): is encoded as constructed"},
		{"constructed dNSName", func(t testing.TB) []pkix.Extension {
			return []pkix.Extension{sanExt(sanValue(t, cons(t, gnDNS, ia5seg(t, "evil."), ia5seg(t, "example.org"))))}
		}, "subjectAltName entry 1 (dNSName): is encoded as constructed"},
		{"constructed rfc822Name", func(t testing.TB) []pkix.Extension {
			return []pkix.Extension{sanExt(sanValue(t, dns(t), cons(t, gnRFC822, ia5seg(t, "root@evil.org"))))}
		}, "subjectAltName entry 2 (rfc822Name): is encoded as constructed"},
		{"constructed URI", func(t testing.TB) []pkix.Extension {
			return []pkix.Extension{sanExt(sanValue(t, cons(t, gnURI, ia5seg(t, "spiffe://evil.org/x"))))}
		}, "subjectAltName entry 1 (uniformResourceIdentifier): is encoded as constructed"},
		{"primitive otherName", func(t testing.TB) []pkix.Extension {
			return []pkix.Extension{sanExt(sanValue(t, dns(t), prim(t, gnOtherName, der(t, upn))))}
		}, "subjectAltName entry 2 (otherName): is encoded as primitive"},
		{"otherName with a constructed UTF8String value", func(t testing.TB) []pkix.Extension {
			val := der(t, asn1.RawValue{Tag: asn1.TagUTF8String, IsCompound: true, Bytes: der(t, asn1.RawValue{Tag: asn1.TagUTF8String, Bytes: []byte("admin@corp")})})
			return []pkix.Extension{sanExt(sanValue(t, cons(t, gnOtherName, der(t, upn), cons(t, 0, val))))}
		}, "subjectAltName entry 1 (otherName): value is a constructed (BER) string"},
		{"otherName with bytes after its value", func(t testing.TB) []pkix.Extension {
			val := der(t, asn1.RawValue{Tag: asn1.TagUTF8String, Bytes: []byte("admin@corp")})
			return []pkix.Extension{sanExt(sanValue(t, cons(t, gnOtherName, der(t, upn), cons(t, 0, val), []byte{0x05, 0x00})))}
		}, "subjectAltName entry 1 (otherName): has bytes after its value"},
		{"unknown GeneralName tag [9]", func(t testing.TB) []pkix.Extension {
			return []pkix.Extension{sanExt(sanValue(t, dns(t), prim(t, 9, []byte{127, 0, 0, 1})))}
		}, "subjectAltName entry 2 (GeneralName [9]): has the unknown tag [9]"},
		{"directoryName", func(t testing.TB) []pkix.Extension {
			return []pkix.Extension{sanExt(sanValue(t, dns(t), cons(t, gnDirectoryName, der(t, pkix.Name{CommonName: "admin"}.ToRDNSequence()))))}
		}, "directoryName (SAN 2): certfn signs no names of this kind"},
		{"primitive directoryName", func(t testing.TB) []pkix.Extension {
			return []pkix.Extension{sanExt(sanValue(t, prim(t, gnDirectoryName, []byte("x"))))}
		}, "subjectAltName entry 1 (directoryName): is encoded as primitive"},
		{"two subjectAltName extensions", func(t testing.TB) []pkix.Extension {
			return []pkix.Extension{sanExt(sanValue(t, dns(t))), sanExt(sanValue(t, prim(t, gnIP, []byte{127, 0, 0, 1})))}
		}, "more than one subjectAltName extension"},
		{"bytes after the SEQUENCE", func(t testing.TB) []pkix.Extension {
			return []pkix.Extension{sanExt(append(sanValue(t, dns(t)), prim(t, gnIP, []byte{127, 0, 0, 1})...))}
		}, "bytes after its SEQUENCE"},
		{"IPv4 address as a DNS name", func(t testing.TB) []pkix.Extension {
			return []pkix.Extension{sanExt(sanValue(t, prim(t, gnDNS, []byte("127.0.0.1"))))}
		}, "all-numeric last label"},
		{"short IPv4 form as a DNS name", func(t testing.TB) []pkix.Extension {
			return []pkix.Extension{sanExt(sanValue(t, dns(t), prim(t, gnDNS, []byte("127.1"))))}
		}, "all-numeric last label"},
		{"URI not in canonical form", func(t testing.TB) []pkix.Extension {
			return []pkix.Extension{sanExt(sanValue(t, prim(t, gnURI, []byte("SPIFFE://team-a.example.com/x"))))}
		}, "canonical form"},
	}
}

// CheckCSRNames, the name check of the approval and signing steps,
// refuses every crafted SAN, naming the entry and the rule.
func TestCheckCSRNamesRefusesCraftedSANs(t *testing.T) {
	for _, tc := range craftedSANCases() {
		t.Run(tc.name, func(t *testing.T) {
			csr := craftCSR(t, nil, tc.exts(t)...)
			err := CheckCSRNames(csr)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CheckCSRNames = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	// Not a CSR crypto/x509 parses (it refuses the length), checked as
	// a parsed view.
	bad := &x509.CertificateRequest{Extensions: []pkix.Extension{sanExt(sanValue(t, prim(t, gnIP, []byte{10, 0, 0, 1, 2})))}}
	if err := CheckCSRNames(bad); err == nil || err.Error() != "subjectAltName entry 1 (iPAddress): is 5 bytes long; an IP address is 4 (IPv4) or 16 (IPv6)" {
		t.Errorf("5-byte IP: %v", err)
	}
}

// ParseCSRExtensions, the reader of the signers and of validation,
// refuses the crafted SANs and every other extension or subject a CA
// must not sign as read.
func TestParseCSRExtensionsRefusesCrafted(t *testing.T) {
	cases := craftedSANCases()
	nc := func(t testing.TB, subtrees ...[]byte) pkix.Extension {
		return pkix.Extension{Id: OIDExtensionNameConstraints, Critical: true, Value: der(t, asn1.RawValue{Tag: asn1.TagSequence, IsCompound: true,
			Bytes: cons(t, 0, subtrees...)})}
	}
	subtree := func(t testing.TB, parts ...[]byte) []byte {
		return der(t, asn1.RawValue{Tag: asn1.TagSequence, IsCompound: true, Bytes: cat(parts...)})
	}
	cases = append(cases,
		craftedCase{"critical extension certfn does not know", func(t testing.TB) []pkix.Extension {
			return []pkix.Extension{{Id: asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 1, 24}, Critical: true, Value: der(t, []int{5})}}
		}, "critical extension 1.3.6.1.5.5.7.1.24, which certfn does not sign"},
		craftedCase{"keyUsage twice", func(t testing.TB) []pkix.Extension {
			ku := pkix.Extension{Id: OIDExtensionKeyUsage, Critical: true, Value: der(t, asn1.BitString{Bytes: []byte{0x80}, BitLength: 1})}
			return []pkix.Extension{ku, ku}
		}, "more than one keyUsage extension (2.5.29.15)"},
		craftedCase{"nameConstraints with a constructed dNSName base", func(t testing.TB) []pkix.Extension {
			return []pkix.Extension{nc(t, subtree(t, cons(t, gnDNS, ia5seg(t, "example.com"))))}
		}, "nameConstraints permittedSubtrees entry 1 (dNSName): is encoded as constructed"},
		craftedCase{"nameConstraints with a maximum", func(t testing.TB) []pkix.Extension {
			return []pkix.Extension{nc(t, subtree(t, prim(t, gnDNS, []byte("example.com")), prim(t, 1, []byte{1})))}
		}, "minimum or maximum"},
		craftedCase{"nameConstraints with a directoryName base", func(t testing.TB) []pkix.Extension {
			return []pkix.Extension{nc(t, subtree(t, cons(t, gnDirectoryName, der(t, pkix.Name{CommonName: "x"}.ToRDNSequence()))))}
		}, "certfn signs constraints on DNS names, IP ranges"},
		craftedCase{"nameConstraints with a non-prefix mask", func(t testing.TB) []pkix.Extension {
			return []pkix.Extension{nc(t, subtree(t, prim(t, gnIP, []byte{10, 0, 0, 0, 255, 0, 255, 0})))}
		}, "not a prefix"},
	)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			csr := craftCSR(t, nil, tc.exts(t)...)
			_, err := ParseCSRExtensions(csr)
			want := tc.want
			if want == "directoryName (SAN 2): certfn signs no names of this kind" || want == "all-numeric last label" {
				// Parsed (the syntax of names is CheckCSRNames's), and
				// refused by every signer (Signable) and name check.
				if err != nil {
					t.Fatalf("ParseCSRExtensions = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("ParseCSRExtensions = %v, want an error containing %q", err, want)
			}
		})
	}
}

// A subject value crypto/x509 does not decode (a constructed UTF8String,
// whose segments other parsers concatenate) is refused; RawSubject is
// signed only when it is the DER of what was judged.
func TestParseCSRExtensionsRefusesCraftedSubjects(t *testing.T) {
	cnOID := asn1.ObjectIdentifier{2, 5, 4, 3}
	atv := func(t testing.TB, value []byte) []byte {
		return der(t, asn1.RawValue{Tag: asn1.TagSequence, IsCompound: true, Bytes: cat(der(t, cnOID), value)})
	}
	name := func(t testing.TB, atvs ...[]byte) []byte {
		set := der(t, asn1.RawValue{Tag: asn1.TagSet, IsCompound: true, Bytes: cat(atvs...)})
		return der(t, asn1.RawValue{Tag: asn1.TagSequence, IsCompound: true, Bytes: set})
	}
	for _, tc := range []struct {
		name    string
		subject func(t testing.TB) []byte
		want    string
	}{
		{"constructed UTF8String commonName", func(t testing.TB) []byte {
			return name(t, atv(t, der(t, asn1.RawValue{Tag: asn1.TagUTF8String, IsCompound: true, Bytes: cat(
				der(t, asn1.RawValue{Tag: asn1.TagUTF8String, Bytes: []byte("admin.")}), der(t, asn1.RawValue{Tag: asn1.TagUTF8String, Bytes: []byte("victim.corp")}))})))
		}, "not a primitive universal type"},
		{"context-tagged commonName value", func(t testing.TB) []byte {
			return name(t, atv(t, prim(t, 0, []byte("admin.victim.corp"))))
		}, "not a primitive universal type"},
		{"UniversalString commonName (not decoded)", func(t testing.TB) []byte {
			return name(t, atv(t, der(t, asn1.RawValue{Tag: 28, Bytes: []byte{0, 0, 0, 'a'}})))
		}, "unsupported ASN.1 type or string encoding"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			csr := craftCSR(t, tc.subject(t), sanExt(sanValue(t, prim(t, gnDNS, []byte("web.team-a.example.com")))))
			_, err := ParseCSRExtensions(csr)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseCSRExtensions = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if err := CheckRawSubject(craftCSR(t, nil).RawSubject); err != nil {
		t.Errorf("an ordinary subject: %v", err)
	}
}
