package acmtest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"
)

// TestKeyAlgorithm checks the names and the ValidationExceptions (in ACM's
// wording) an import's private key gets.
func TestKeyAlgorithm(t *testing.T) {
	newKey := func(c elliptic.Curve) *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(c, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	leafFor := func(k crypto.Signer) *x509.Certificate {
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "a"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, k.Public(), k)
		if err != nil {
			t.Fatal(err)
		}
		c, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	keyPEM := func(k crypto.Signer) []byte {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	}
	p256, other, p224 := newKey(elliptic.P256()), newKey(elliptic.P256()), newKey(elliptic.P224())
	for _, tc := range []struct {
		name    string
		key     []byte
		leaf    *x509.Certificate
		wantAlg string
		wantMsg string
	}{
		{"P-256", keyPEM(p256), leafFor(p256), "EC_prime256v1", ""},
		{"not PEM", []byte("garbage"), leafFor(p256), "", "The private key is not PEM"},
		{"other block", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1}}), leafFor(p256), "", "The private key is not supported (CERTIFICATE)"},
		{"invalid", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1}}), leafFor(p256), "", "The private key is invalid"},
		{"mismatch", keyPEM(other), leafFor(p256), "", "The private key does not match the certificate"},
		{"P-224", keyPEM(p224), leafFor(p224), "", "The private key algorithm is not supported"},
	} {
		alg, aerr := keyAlgorithm(tc.key, tc.leaf)
		if tc.wantMsg == "" {
			if aerr != nil || alg != tc.wantAlg {
				t.Errorf("%s: got %q, %+v; want %q", tc.name, alg, aerr, tc.wantAlg)
			}
			continue
		}
		if aerr == nil || aerr.typ != "ValidationException" || aerr.msg != tc.wantMsg || alg != "" {
			t.Errorf("%s: got %q, %+v; want ValidationException %q", tc.name, alg, aerr, tc.wantMsg)
		}
	}
}
