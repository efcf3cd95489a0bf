package pki

import (
	"testing"

	"github.com/certfn/certfn/core/api"
)

// BenchmarkGenerateCSR measures building and signing a CSR with an ECDSA
// P-256 key (the key is generated once, outside the loop).
func BenchmarkGenerateCSR(b *testing.B) {
	crt := certificate(fullSpec)
	key := ecKey(b, "bench")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := GenerateCSR(crt, key); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuildSecretData measures encoding every output at once: PEM,
// DER, CombinedPEM, PKCS#12 (Modern2023) and JKS keystores and truststores.
func BenchmarkBuildSecretData(b *testing.B) {
	c := newChain(b)
	in := OutputInput{
		Key: c.leafKey, CertPEM: EncodeCertificatesPEM(c.leaf, c.inter), CAPEM: EncodeCertificatesPEM(c.root),
		Spec: &certificate(func(s *api.CertificateSpec) {
			s.AdditionalOutputFormats = []api.CertificateAdditionalOutputFormat{{Type: api.CertificateOutputFormatDER}, {Type: api.CertificateOutputFormatCombinedPEM}}
			s.Keystores = &api.CertificateKeystores{
				PKCS12: &api.PKCS12Keystore{Create: true, Profile: api.Modern2023PKCS12Profile},
				JKS:    &api.JKSKeystore{Create: true},
			}
		}).Spec,
		JKSPassword: []byte("changeit"), PKCS12Password: []byte("changeit"),
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := BuildSecretData(in); err != nil {
			b.Fatal(err)
		}
	}
}
