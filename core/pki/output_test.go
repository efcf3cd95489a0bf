package pki

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"net"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"

	"github.com/certfn/certfn/core/api"
)

// outputInput builds an OutputInput for the test chain: tls.crt is leaf +
// intermediate, ca.crt the root.
func outputInput(t *testing.T, c pkiChain, spec func(*api.CertificateSpec)) OutputInput {
	return OutputInput{
		Key:     c.leafKey,
		CertPEM: EncodeCertificatesPEM(c.leaf, c.inter),
		CAPEM:   EncodeCertificatesPEM(c.root),
		Spec:    &certificate(optional(spec)...).Spec,
	}
}

func optional(f func(*api.CertificateSpec)) []func(*api.CertificateSpec) {
	if f == nil {
		return nil
	}
	return []func(*api.CertificateSpec){f}
}

func TestBuildSecretDataPEM(t *testing.T) {
	c := newChain(t)
	tests := []struct {
		name     string
		spec     func(*api.CertificateSpec)
		noCA     bool
		wantKeys []string
		keyType  string
	}{
		{"default PKCS1", func(*api.CertificateSpec) {}, false, []string{"ca.crt", "tls.crt", "tls.key"}, "EC PRIVATE KEY"},
		{"PKCS8", func(s *api.CertificateSpec) { s.PrivateKey = &api.CertificatePrivateKey{Encoding: api.PKCS8} }, false, []string{"ca.crt", "tls.crt", "tls.key"}, "PRIVATE KEY"},
		{"no CA known", func(*api.CertificateSpec) {}, true, []string{"tls.crt", "tls.key"}, "EC PRIVATE KEY"},
		{"DER and CombinedPEM", func(s *api.CertificateSpec) {
			s.AdditionalOutputFormats = []api.CertificateAdditionalOutputFormat{{Type: api.CertificateOutputFormatDER}, {Type: api.CertificateOutputFormatCombinedPEM}}
		}, false, []string{"ca.crt", "key.der", "tls-combined.pem", "tls.crt", "tls.key"}, "EC PRIVATE KEY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := outputInput(t, c, tt.spec)
			if tt.noCA {
				in.CAPEM = nil
			}
			data, err := BuildSecretData(in)
			if err != nil {
				t.Fatalf("BuildSecretData() error = %v", err)
			}
			var keys []string
			for k := range data {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if !slices.Equal(keys, tt.wantKeys) {
				t.Fatalf("keys = %v, want %v", keys, tt.wantKeys)
			}
			if !bytes.Equal(data["tls.crt"], in.CertPEM) {
				t.Error("tls.crt differs from the issued chain")
			}
			if !tt.noCA && !bytes.Equal(data["ca.crt"], in.CAPEM) {
				t.Error("ca.crt differs from the CA")
			}
			block, _ := pem.Decode(data["tls.key"])
			if block == nil || block.Type != tt.keyType {
				t.Fatalf("tls.key block = %v, want %s", block, tt.keyType)
			}
			key, err := DecodePrivateKeyPEM(data["tls.key"])
			if err != nil || !PublicKeysEqual(key.Public(), c.leafKey.Public()) {
				t.Fatalf("tls.key does not decode to the leaf key: %v", err)
			}
			if der, ok := data["key.der"]; ok && !bytes.Equal(der, block.Bytes) {
				t.Error("key.der is not the DER of tls.key")
			}
			if comb, ok := data["tls-combined.pem"]; ok {
				k, err := DecodePrivateKeyPEM(comb)
				if err != nil || !PublicKeysEqual(k.Public(), c.leafKey.Public()) {
					t.Errorf("tls-combined.pem key: %v", err)
				}
				_, rest := pem.Decode(comb)
				certs, err := ParseChainPEM(rest)
				if err != nil || len(certs) != 2 || !certs[0].Equal(c.leaf) || !certs[1].Equal(c.inter) {
					t.Errorf("tls-combined.pem chain = %d certs, %v", len(certs), err)
				}
			}
		})
	}
}

func TestBuildSecretDataPKCS12(t *testing.T) {
	c := newChain(t)
	for _, profile := range []api.PKCS12Profile{"", api.LegacyRC2PKCS12Profile, api.LegacyDESPKCS12Profile, api.Modern2023PKCS12Profile} {
		t.Run("profile "+string(profile), func(t *testing.T) {
			in := outputInput(t, c, func(s *api.CertificateSpec) {
				s.Keystores = &api.CertificateKeystores{PKCS12: &api.PKCS12Keystore{Create: true, Profile: profile}}
			})
			in.PKCS12Password = []byte("p12-secret")
			data, err := BuildSecretData(in)
			if err != nil {
				t.Fatalf("BuildSecretData() error = %v", err)
			}
			key, leaf, cas, err := pkcs12.DecodeChain(data["keystore.p12"], "p12-secret")
			if err != nil {
				t.Fatalf("decode keystore.p12: %v", err)
			}
			if !leaf.Equal(c.leaf) || !PublicKeysEqual(key.(crypto.Signer).Public(), c.leafKey.Public()) {
				t.Error("keystore.p12 holds another key pair")
			}
			if len(cas) != 2 || !cas[0].Equal(c.inter) || !cas[1].Equal(c.root) {
				t.Errorf("keystore.p12 CA certificates = %d, want intermediate then root", len(cas))
			}
			trust, err := pkcs12.DecodeTrustStore(data["truststore.p12"], "p12-secret")
			if err != nil || len(trust) != 1 || !trust[0].Equal(c.root) {
				t.Errorf("truststore.p12 = %d certs, %v; want the root", len(trust), err)
			}
			if _, _, _, err := pkcs12.DecodeChain(data["keystore.p12"], "wrong"); err == nil {
				t.Error("keystore.p12 opens with a wrong password")
			}
		})
	}
}

func TestBuildSecretDataJKS(t *testing.T) {
	c := newChain(t)
	tests := []struct {
		name      string
		alias     *string
		resolved  []byte
		literal   *string
		wantAlias string
		password  string
		noCA      bool
	}{
		{"default alias, resolved password", nil, []byte("changeit"), nil, "certificate", "changeit", false},
		{"custom alias, literal password", strPtr("web"), nil, strPtr("literal-pw"), "web", "literal-pw", false},
		{"no CA: no truststore", nil, []byte("changeit"), nil, "certificate", "changeit", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := outputInput(t, c, func(s *api.CertificateSpec) {
				s.Keystores = &api.CertificateKeystores{JKS: &api.JKSKeystore{Create: true, Alias: tt.alias, Password: tt.literal}}
			})
			in.JKSPassword = tt.resolved
			if tt.noCA {
				in.CAPEM = nil
			}
			data, err := BuildSecretData(in)
			if err != nil {
				t.Fatalf("BuildSecretData() error = %v", err)
			}
			ks := keystore.New()
			if err := ks.Load(bytes.NewReader(data["keystore.jks"]), []byte(tt.password)); err != nil {
				t.Fatalf("load keystore.jks: %v", err)
			}
			entry, err := ks.GetPrivateKeyEntry(tt.wantAlias, []byte(tt.password))
			if err != nil {
				t.Fatalf("private key entry %q: %v", tt.wantAlias, err)
			}
			k, err := x509.ParsePKCS8PrivateKey(entry.PrivateKey)
			if err != nil || !PublicKeysEqual(k.(crypto.Signer).Public(), c.leafKey.Public()) {
				t.Errorf("keystore.jks key is not the leaf key: %v", err)
			}
			if len(entry.CertificateChain) != 2 || !bytes.Equal(entry.CertificateChain[0].Content, c.leaf.Raw) || !bytes.Equal(entry.CertificateChain[1].Content, c.inter.Raw) {
				t.Errorf("keystore.jks chain has %d certificates, want leaf and intermediate", len(entry.CertificateChain))
			}
			if !entry.CreationTime.Equal(c.leaf.NotBefore) {
				t.Errorf("creation time = %s, want the leaf's notBefore", entry.CreationTime)
			}
			_, hasTrust := data["truststore.jks"]
			if tt.noCA {
				if hasTrust || ks.IsTrustedCertificateEntry("ca") {
					t.Error("truststore.jks or a ca entry without a CA")
				}
				return
			}
			if ca, err := ks.GetTrustedCertificateEntry("ca"); err != nil || !bytes.Equal(ca.Certificate.Content, c.root.Raw) {
				t.Errorf("keystore.jks ca entry: %v", err)
			}
			ts := keystore.New()
			if err := ts.Load(bytes.NewReader(data["truststore.jks"]), []byte(tt.password)); err != nil {
				t.Fatalf("load truststore.jks: %v", err)
			}
			if ca, err := ts.GetTrustedCertificateEntry("ca"); err != nil || !bytes.Equal(ca.Certificate.Content, c.root.Raw) {
				t.Errorf("truststore.jks ca entry: %v", err)
			}
		})
	}
}

func TestBuildSecretDataErrors(t *testing.T) {
	c := newChain(t)
	other := ecKey(t, "other")
	tests := []struct {
		name    string
		mutate  func(*OutputInput)
		wantErr string
	}{
		{"no key", func(in *OutputInput) { in.Key = nil }, "no private key"},
		{"no spec", func(in *OutputInput) { in.Spec = nil }, "no certificate spec"},
		{"bad tls.crt", func(in *OutputInput) { in.CertPEM = []byte("x") }, "tls.crt:"},
		{"bad ca.crt", func(in *OutputInput) {
			in.CAPEM = []byte("-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n")
		}, "ca.crt:"},
		{"key does not match", func(in *OutputInput) { in.Key = other }, "tls.key: the private key does not match"},
		{"unknown output format", func(in *OutputInput) {
			in.Spec.AdditionalOutputFormats = []api.CertificateAdditionalOutputFormat{{Type: "PFX"}}
		}, `spec.additionalOutputFormats[0].type: "PFX"`},
		{"unknown encoding", func(in *OutputInput) { in.Spec.PrivateKey = &api.CertificatePrivateKey{Encoding: "PEM"} }, "spec.privateKey.encoding"},
		{"PKCS12 without password", func(in *OutputInput) {
			in.Spec.Keystores = &api.CertificateKeystores{PKCS12: &api.PKCS12Keystore{Create: true}}
		}, "spec.keystores.pkcs12: create is true but no password"},
		{"JKS without password", func(in *OutputInput) {
			in.Spec.Keystores = &api.CertificateKeystores{JKS: &api.JKSKeystore{Create: true}}
		}, "spec.keystores.jks: create is true but no password"},
		{"unknown PKCS12 profile", func(in *OutputInput) {
			in.Spec.Keystores = &api.CertificateKeystores{PKCS12: &api.PKCS12Keystore{Create: true, Profile: "Modern2030"}}
			in.PKCS12Password = []byte("hunter22")
		}, `spec.keystores.pkcs12.profile: "Modern2030"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := outputInput(t, c, nil)
			tt.mutate(&in)
			_, err := BuildSecretData(in)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("BuildSecretData() error = %v, want containing %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "hunter22") || strings.Contains(err.Error(), "PRIVATE KEY") {
				t.Errorf("error %q leaks secret material", err)
			}
		})
	}
	if _, err := BuildSecretData(OutputInput{Key: c.leafKey, CertPEM: EncodeCertificatesPEM(c.leaf),
		Spec: &certificate(func(s *api.CertificateSpec) { s.Keystores = &api.CertificateKeystores{} }).Spec}); err != nil {
		t.Errorf("keystores without create: error = %v", err)
	}
}

func TestSecretMetadata(t *testing.T) {
	key := ecKey(t, "meta")
	u, _ := url.Parse("spiffe://cluster.local/web")
	cert := issueCert(t, key.Public(), nil, key, withCN("web.example.com"), withDNS("web.example.com", "www.example.com"), func(c *x509.Certificate) {
		c.IPAddresses = []net.IP{net.ParseIP("10.0.0.1"), net.ParseIP("2001:db8::1")}
		c.URIs = []*url.URL{u}
		c.EmailAddresses = []string{"a@example.com", "b@example.com"}
	})
	crt := certificate(func(s *api.CertificateSpec) { s.IssuerRef = api.IssuerReference{Name: "ca"} })
	tests := []struct {
		name string
		cert *x509.Certificate
		want map[string]string
	}{
		{"with certificate", cert, map[string]string{
			api.AnnotationCertificateName: "web",
			api.AnnotationIssuerName:      "ca",
			api.AnnotationIssuerKind:      "Issuer",
			api.AnnotationIssuerGroup:     "",
			api.AnnotationCommonName:      "web.example.com",
			api.AnnotationAltNames:        "web.example.com,www.example.com",
			api.AnnotationIPSANs:          "10.0.0.1,2001:db8::1",
			api.AnnotationURISANs:         "spiffe://cluster.local/web",
			api.AnnotationEmailSANs:       "a@example.com,b@example.com",
		}},
		{"without certificate", nil, map[string]string{
			api.AnnotationCertificateName: "web",
			api.AnnotationIssuerName:      "ca",
			api.AnnotationIssuerKind:      "Issuer",
			api.AnnotationIssuerGroup:     "",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SecretMetadata(crt, tt.cert)
			if len(got) != len(tt.want) {
				t.Errorf("SecretMetadata() has %d entries, want %d: %v", len(got), len(tt.want), got)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

func TestBuildChain(t *testing.T) {
	c := newChain(t)
	other := ecKey(t, "unrelated")
	unrelated := issueCert(t, other.Public(), nil, other, withCA(), withCN("unrelated"))
	leafOfRoot := issueCert(t, c.leafKey.Public(), c.root, c.rootKey, withCN("direct"))
	tests := []struct {
		name      string
		leaf      *x509.Certificate
		issuers   []*x509.Certificate
		wantChain []*x509.Certificate
		wantCA    *x509.Certificate
		wantErr   string
	}{
		{"root omitted from chain, shuffled input", c.leaf, []*x509.Certificate{c.root, c.inter}, []*x509.Certificate{c.leaf, c.inter}, c.root, ""},
		{"duplicates dropped", c.leaf, []*x509.Certificate{c.inter, c.root, c.inter, c.leaf}, []*x509.Certificate{c.leaf, c.inter}, c.root, ""},
		{"signed by a root: leaf only", leafOfRoot, []*x509.Certificate{c.root}, []*x509.Certificate{leafOfRoot}, c.root, ""},
		{"no root: CA is the highest intermediate", c.leaf, []*x509.Certificate{c.inter}, []*x509.Certificate{c.leaf, c.inter}, c.inter, ""},
		{"lone self-signed is its own CA", c.root, nil, []*x509.Certificate{c.root}, c.root, ""},
		{"lone leaf has no CA", c.leaf, nil, []*x509.Certificate{c.leaf}, nil, ""},
		{"unrelated certificate", c.leaf, []*x509.Certificate{c.inter, unrelated}, nil, nil, "do not belong"},
		{"nil leaf", nil, nil, nil, nil, "no leaf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := BuildChain(tt.leaf, tt.issuers)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("BuildChain() error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("BuildChain() error = %v", err)
			}
			if !bytes.Equal(b.ChainPEM, EncodeCertificatesPEM(tt.wantChain...)) {
				t.Error("ChainPEM differs")
			}
			var wantCA []byte
			if tt.wantCA != nil {
				wantCA = EncodeCertificatesPEM(tt.wantCA)
			}
			if !bytes.Equal(b.CAPEM, wantCA) {
				t.Error("CAPEM differs")
			}
		})
	}
}
