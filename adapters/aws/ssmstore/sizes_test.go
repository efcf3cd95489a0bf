package ssmstore

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/certfn/certfn/adapters/secretpayload"
	"github.com/certfn/certfn/core/ports"
)

// The tier a typical certificate lands in decides what it costs
// (standard: free; advanced: $0.05 a month): docs/deploy/aws.md states these
// sizes. Certificates are made here with the shape of real ones: three
// DNS names, AIA and CRL URLs, and for publicly trusted leaves about 250
// bytes of embedded SCTs. Every one of them, RSA included (cert-manager's
// default RSA 2048), is kept in standard parameters (one, or two when the
// key is split off: split.go) except an RSA 4096 leaf with its chain,
// whose certificates alone exceed 4 KB.
func TestTypicalPayloadTiers(t *testing.T) {
	ec := func(c elliptic.Curve) crypto.Signer {
		k, err := ecdsa.GenerateKey(c, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	rsaKey := func(bits int) crypto.Signer {
		k, err := rsa.GenerateKey(rand.Reader, bits)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	tests := []struct {
		name       string
		leafKey    crypto.Signer
		chainKey   crypto.Signer // the intermediate's key (nil: signed by the root directly)
		rootKey    crypto.Signer
		caCrt, sct bool
		parameters int // parameters written
		advanced   int // of them in the advanced tier
	}{
		{"private CA, ECDSA P-256 leaf, ca.crt", ec(elliptic.P256()), nil, ec(elliptic.P256()), true, false, 1, 0},
		{"private CA, RSA 2048 leaf, ca.crt", rsaKey(2048), nil, rsaKey(2048), true, false, 2, 0},
		{"ACME, ECDSA P-256 leaf, ECDSA P-384 intermediate", ec(elliptic.P256()), ec(elliptic.P384()), ec(elliptic.P384()), false, true, 1, 0},
		{"ACME, RSA 2048 leaf, RSA 2048 intermediate", rsaKey(2048), rsaKey(2048), rsaKey(4096), false, true, 2, 0},
		{"ACME, RSA 4096 leaf, RSA 2048 intermediate", rsaKey(4096), rsaKey(2048), rsaKey(4096), false, true, 2, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := makeCert(t, "Root", tc.rootKey.Public(), tc.rootKey, nil, true, false)
			issuer, issuerKey := root, tc.rootKey
			var chain []byte
			if tc.chainKey != nil {
				issuer = makeCert(t, "Intermediate", tc.chainKey.Public(), tc.rootKey, root, true, false)
				issuerKey = tc.chainKey
				chain = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: issuer.Raw})
			}
			leaf := makeCert(t, "www.example.com", tc.leafKey.Public(), issuerKey, issuer, false, tc.sct)
			keyDER, err := x509.MarshalPKCS8PrivateKey(tc.leafKey)
			if err != nil {
				t.Fatal(err)
			}
			sec := ports.Secret{Namespace: "default", Name: "web-tls", Data: map[string][]byte{
				"tls.crt": append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Raw}), chain...),
				"tls.key": pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
			}, Annotations: map[string]string{
				"cert-manager.io/certificate-name": "web", "cert-manager.io/issuer-name": "letsencrypt",
				"cert-manager.io/issuer-kind": "ClusterIssuer", "cert-manager.io/issuer-group": "cert-manager.io",
				"cert-manager.io/common-name": "www.example.com", "cert-manager.io/alt-names": "www.example.com,example.com,api.example.com",
				"cert-manager.io/certificate-revision": "1",
			}}
			if tc.caCrt {
				sec.Data["ca.crt"] = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: root.Raw})
			}
			payload, err := secretpayload.Encode(sec, 4*MaxAdvancedBytes, "t")
			if err != nil {
				t.Fatal(err)
			}
			a := newStub()
			st, err := New(a, Options{Prefix: "p"})
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Create(context.Background(), sec); err != nil {
				t.Fatal(err)
			}
			var sizes []string
			advanced := 0
			for _, in := range a.puts {
				sizes = append(sizes, fmt.Sprintf("%s %d bytes %s", aws.ToString(in.Name), len(aws.ToString(in.Value)), in.Tier))
				if in.Tier == types.ParameterTierAdvanced {
					advanced++
				}
			}
			t.Logf("%s: payload %d bytes (tls.crt %d, tls.key %d, ca.crt %d) → %s", tc.name, len(payload),
				len(sec.Data["tls.crt"]), len(sec.Data["tls.key"]), len(sec.Data["ca.crt"]), strings.Join(sizes, "; "))
			if len(a.puts) != tc.parameters || advanced != tc.advanced {
				t.Errorf("%d parameters written, %d advanced; want %d, %d", len(a.puts), advanced, tc.parameters, tc.advanced)
			}
			got, err := st.Get(context.Background(), "default", "web-tls")
			if err != nil || !same(got, sec) {
				t.Errorf("Get: %v, or not the secret written", err)
			}
		})
	}
}

// makeCert makes a certificate for pub signed by key (self-signed when
// parent is nil) with the extensions real ones carry.
func makeCert(t *testing.T, cn string, pub crypto.PublicKey, key crypto.Signer, parent *x509.Certificate, isCA, sct bool) *x509.Certificate {
	t.Helper()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn, Organization: []string{"Example Trust Services"}, Country: []string{"US"}},
		NotBefore: now, NotAfter: now.Add(90 * 24 * time.Hour), IsCA: isCA, BasicConstraintsValid: true,
		IssuingCertificateURL: []string{"http://r11.i.lencr.org/"}, CRLDistributionPoints: []string{"http://r11.c.lencr.org/12.crl"},
		KeyUsage: x509.KeyUsageDigitalSignature}
	if isCA {
		tmpl.KeyUsage |= x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	} else {
		tmpl.DNSNames = []string{"www.example.com", "example.com", "api.example.com"}
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.Subject = pkix.Name{CommonName: cn}
	}
	if sct {
		// Two embedded SCTs take about 250 bytes (1.3.6.1.4.1.11129.2.4.2).
		v := make([]byte, 242)
		tmpl.ExtraExtensions = append(tmpl.ExtraExtensions, pkix.Extension{Id: []int{1, 3, 6, 1, 4, 1, 11129, 2, 4, 2}, Value: append([]byte{0x04, 0x81, 0xf2}, v...)})
	}
	if parent == nil {
		parent = tmpl
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, key)
	if err != nil {
		t.Fatal(fmt.Errorf("%s: %w", cn, err))
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
