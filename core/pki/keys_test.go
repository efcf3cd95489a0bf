package pki

import (
	"crypto"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
)

func TestGenerateKey(t *testing.T) {
	tests := []struct {
		name     string
		spec     *api.CertificatePrivateKey
		wantAlg  api.PrivateKeyAlgorithm
		wantBits int
		wantErr  string
	}{
		{name: "nil spec is RSA 2048", spec: nil, wantAlg: api.RSAKeyAlgorithm, wantBits: 2048},
		{name: "empty spec is RSA 2048", spec: &api.CertificatePrivateKey{}, wantAlg: api.RSAKeyAlgorithm, wantBits: 2048},
		{name: "RSA 3072", spec: &api.CertificatePrivateKey{Algorithm: api.RSAKeyAlgorithm, Size: 3072}, wantAlg: api.RSAKeyAlgorithm, wantBits: 3072},
		{name: "ECDSA default P-256", spec: &api.CertificatePrivateKey{Algorithm: api.ECDSAKeyAlgorithm}, wantAlg: api.ECDSAKeyAlgorithm, wantBits: 256},
		{name: "ECDSA P-384", spec: &api.CertificatePrivateKey{Algorithm: api.ECDSAKeyAlgorithm, Size: 384}, wantAlg: api.ECDSAKeyAlgorithm, wantBits: 384},
		{name: "ECDSA P-521", spec: &api.CertificatePrivateKey{Algorithm: api.ECDSAKeyAlgorithm, Size: 521}, wantAlg: api.ECDSAKeyAlgorithm, wantBits: 521},
		{name: "Ed25519 ignores size", spec: &api.CertificatePrivateKey{Algorithm: api.Ed25519KeyAlgorithm, Size: 99}, wantAlg: api.Ed25519KeyAlgorithm},
		{name: "RSA too small", spec: &api.CertificatePrivateKey{Algorithm: api.RSAKeyAlgorithm, Size: 1024}, wantErr: "spec.privateKey.size: 1024"},
		{name: "RSA too large", spec: &api.CertificatePrivateKey{Algorithm: api.RSAKeyAlgorithm, Size: 8193}, wantErr: "spec.privateKey.size: 8193"},
		{name: "ECDSA P-224 refused", spec: &api.CertificatePrivateKey{Algorithm: api.ECDSAKeyAlgorithm, Size: 224}, wantErr: "want 256, 384 or 521"},
		{name: "unknown algorithm", spec: &api.CertificatePrivateKey{Algorithm: "DSA"}, wantErr: `spec.privateKey.algorithm: "DSA"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := GenerateKey(tt.spec)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("GenerateKey() error = %v, want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("GenerateKey() error = %v", err)
			}
			alg, bits := describePublicKey(k.Public())
			if alg != tt.wantAlg || bits != tt.wantBits {
				t.Errorf("GenerateKey() = %s %d bits, want %s %d", alg, bits, tt.wantAlg, tt.wantBits)
			}
			if ok, why := KeyMatchesSpec(k, tt.spec); !ok {
				t.Errorf("generated key does not match its own spec: %s", why)
			}
		})
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	rsaKey := testKey(t, "rt", api.RSAKeyAlgorithm, 2048)
	ecKey := testKey(t, "rt", api.ECDSAKeyAlgorithm, 384)
	edKey := testKey(t, "rt", api.Ed25519KeyAlgorithm, 0)
	tests := []struct {
		name     string
		key      crypto.Signer
		enc      api.PrivateKeyEncoding
		wantType string
	}{
		{"RSA default is PKCS1", rsaKey, "", "RSA PRIVATE KEY"},
		{"RSA PKCS1", rsaKey, api.PKCS1, "RSA PRIVATE KEY"},
		{"RSA PKCS8", rsaKey, api.PKCS8, "PRIVATE KEY"},
		{"ECDSA PKCS1 is SEC1", ecKey, api.PKCS1, "EC PRIVATE KEY"},
		{"ECDSA PKCS8", ecKey, api.PKCS8, "PRIVATE KEY"},
		{"Ed25519 PKCS1 falls back to PKCS8", edKey, api.PKCS1, "PRIVATE KEY"},
		{"Ed25519 PKCS8", edKey, api.PKCS8, "PRIVATE KEY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := EncodePrivateKeyPEM(tt.key, tt.enc)
			if err != nil {
				t.Fatalf("EncodePrivateKeyPEM() error = %v", err)
			}
			block, _ := pem.Decode(b)
			if block == nil || block.Type != tt.wantType {
				t.Fatalf("PEM type = %v, want %q", block, tt.wantType)
			}
			back, err := DecodePrivateKeyPEM(b)
			if err != nil {
				t.Fatalf("DecodePrivateKeyPEM() error = %v", err)
			}
			if !PublicKeysEqual(back.Public(), tt.key.Public()) {
				t.Error("decoded key differs from the encoded one")
			}
			p8, err := EncodePKCS8PEM(tt.key)
			if err != nil {
				t.Fatalf("EncodePKCS8PEM() error = %v", err)
			}
			if blk, _ := pem.Decode(p8); blk == nil || blk.Type != "PRIVATE KEY" {
				t.Fatalf("EncodePKCS8PEM type = %v, want PRIVATE KEY", blk)
			}
			back8, err := DecodePrivateKeyPEM(p8)
			if err != nil || !PublicKeysEqual(back8.Public(), tt.key.Public()) {
				t.Errorf("PKCS#8 round trip failed: %v", err)
			}
		})
	}
	if _, err := EncodePrivateKeyPEM(ecKey, "PKCS12"); err == nil || !strings.Contains(err.Error(), "spec.privateKey.encoding") {
		t.Errorf("unknown encoding: error = %v, want spec.privateKey.encoding", err)
	}
	if _, err := EncodePrivateKeyPEM(nil, api.PKCS8); err == nil {
		t.Error("nil key: want an error")
	}
}

func TestDecodePrivateKeyPEM(t *testing.T) {
	ec := ecKey(t, "decode")
	ecSEC1, _ := EncodePrivateKeyPEM(ec, api.PKCS1)
	params := pem.EncodeToMemory(&pem.Block{Type: "EC PARAMETERS", Bytes: []byte{0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07}})
	x, _ := ecdh.X25519().GenerateKey(rand.Reader)
	xDER, err := x509.MarshalPKCS8PrivateKey(x)
	if err != nil {
		t.Fatal(err)
	}
	secretBody := "c2VjcmV0LWtleS1ieXRlcy10aGF0LW11c3Qtbm90LWxlYWs="
	tests := []struct {
		name    string
		in      []byte
		wantErr string
	}{
		{name: "EC PARAMETERS before the key is skipped", in: append(params, ecSEC1...)},
		{name: "empty", in: nil, wantErr: "empty"},
		{name: "not PEM", in: []byte("hello"), wantErr: "no PEM private key block"},
		{name: "certificate block", in: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1}}), wantErr: `"CERTIFICATE"`},
		{name: "encrypted", in: pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Headers: map[string]string{"Proc-Type": "4,ENCRYPTED"}, Bytes: []byte{1}}), wantErr: "encrypted"},
		{name: "garbage PKCS8 body", in: []byte("-----BEGIN PRIVATE KEY-----\n" + secretBody + "\n-----END PRIVATE KEY-----\n"), wantErr: "not a valid key"},
		{name: "garbage RSA body", in: []byte("-----BEGIN RSA PRIVATE KEY-----\n" + secretBody + "\n-----END RSA PRIVATE KEY-----\n"), wantErr: "not a valid key"},
		{name: "garbage EC body", in: []byte("-----BEGIN EC PRIVATE KEY-----\n" + secretBody + "\n-----END EC PRIVATE KEY-----\n"), wantErr: "not a valid key"},
		{name: "X25519 is not a signing key", in: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: xDER}), wantErr: "want RSA, ECDSA or Ed25519"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := DecodePrivateKeyPEM(tt.in)
			if tt.wantErr == "" {
				if err != nil || !PublicKeysEqual(k.Public(), ec.Public()) {
					t.Fatalf("DecodePrivateKeyPEM() = %v, want the EC key", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("DecodePrivateKeyPEM() error = %v, want containing %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), secretBody[:12]) {
				t.Errorf("error %q echoes key bytes", err)
			}
		})
	}
}

func TestKeyMatchesSpec(t *testing.T) {
	rsa2048 := testKey(t, "m", api.RSAKeyAlgorithm, 2048)
	ec256 := testKey(t, "m", api.ECDSAKeyAlgorithm, 256)
	ec384 := testKey(t, "m", api.ECDSAKeyAlgorithm, 384)
	ed := testKey(t, "m", api.Ed25519KeyAlgorithm, 0)
	tests := []struct {
		name    string
		key     crypto.Signer
		spec    *api.CertificatePrivateKey
		wantOK  bool
		wantWhy string
	}{
		{"nil spec wants RSA 2048", rsa2048, nil, true, ""},
		{"RSA size 0 is 2048", rsa2048, &api.CertificatePrivateKey{Algorithm: api.RSAKeyAlgorithm}, true, ""},
		{"RSA wrong size", rsa2048, &api.CertificatePrivateKey{Algorithm: api.RSAKeyAlgorithm, Size: 4096}, false, "spec.privateKey.size: key is RSA 2048 bits, want 4096"},
		{"ECDSA default 256", ec256, &api.CertificatePrivateKey{Algorithm: api.ECDSAKeyAlgorithm}, true, ""},
		{"ECDSA wrong curve", ec384, &api.CertificatePrivateKey{Algorithm: api.ECDSAKeyAlgorithm}, false, "spec.privateKey.size: key is ECDSA 384 bits, want 256"},
		{"ECDSA key, RSA wanted", ec256, nil, false, "spec.privateKey.algorithm: key is ECDSA, want RSA"},
		{"Ed25519", ed, &api.CertificatePrivateKey{Algorithm: api.Ed25519KeyAlgorithm}, true, ""},
		{"RSA key, Ed25519 wanted", rsa2048, &api.CertificatePrivateKey{Algorithm: api.Ed25519KeyAlgorithm}, false, "spec.privateKey.algorithm: key is RSA, want Ed25519"},
		{"unknown algorithm", ec256, &api.CertificatePrivateKey{Algorithm: "DSA"}, false, `spec.privateKey.algorithm: "DSA" is not supported`},
		{"nil key", nil, nil, false, "no private key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, why := KeyMatchesSpec(tt.key, tt.spec)
			if ok != tt.wantOK || !strings.HasPrefix(why, tt.wantWhy) || (tt.wantOK && why != "") {
				t.Errorf("KeyMatchesSpec() = %v, %q; want %v, %q", ok, why, tt.wantOK, tt.wantWhy)
			}
		})
	}
}

func TestPublicKeysEqual(t *testing.T) {
	a, b := ecKey(t, "a"), ecKey(t, "b")
	r := testKey(t, "a", api.RSAKeyAlgorithm, 2048)
	ed := testKey(t, "a", api.Ed25519KeyAlgorithm, 0)
	rsaCopy := &rsa.PublicKey{N: r.Public().(*rsa.PublicKey).N, E: r.Public().(*rsa.PublicKey).E}
	ecCopy := *a.Public().(*ecdsa.PublicKey)
	edCopy := append(ed25519.PublicKey(nil), ed.Public().(ed25519.PublicKey)...)
	tests := []struct {
		name string
		x, y crypto.PublicKey
		want bool
	}{
		{"same EC key", a.Public(), &ecCopy, true},
		{"same RSA key, separate values", r.Public(), rsaCopy, true},
		{"same Ed25519 key", ed.Public(), edCopy, true},
		{"different EC keys", a.Public(), b.Public(), false},
		{"different types", a.Public(), r.Public(), false},
		{"nil", nil, a.Public(), false},
		{"unknown type", "not a key", "not a key", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PublicKeysEqual(tt.x, tt.y); got != tt.want {
				t.Errorf("PublicKeysEqual() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSignatureAlgorithm(t *testing.T) {
	rsa2048 := testKey(t, "s", api.RSAKeyAlgorithm, 2048)
	rsa3072 := testKey(t, "s", api.RSAKeyAlgorithm, 3072)
	ec256 := testKey(t, "s", api.ECDSAKeyAlgorithm, 256)
	ec384 := testKey(t, "s", api.ECDSAKeyAlgorithm, 384)
	ec521 := testKey(t, "s", api.ECDSAKeyAlgorithm, 521)
	ed := testKey(t, "s", api.Ed25519KeyAlgorithm, 0)
	tests := []struct {
		name    string
		alg     string
		key     crypto.Signer
		want    x509.SignatureAlgorithm
		wantErr string
	}{
		{"RSA 2048 default", "", rsa2048, x509.SHA256WithRSA, ""},
		{"RSA 3072 default", "", rsa3072, x509.SHA384WithRSA, ""},
		{"ECDSA P-256 default", "", ec256, x509.ECDSAWithSHA256, ""},
		{"ECDSA P-384 default", "", ec384, x509.ECDSAWithSHA384, ""},
		{"ECDSA P-521 default", "", ec521, x509.ECDSAWithSHA512, ""},
		{"Ed25519 default", "", ed, x509.PureEd25519, ""},
		{"explicit SHA512WithRSA", "SHA512WithRSA", rsa2048, x509.SHA512WithRSA, ""},
		{"explicit ECDSAWithSHA384 on P-256", "ECDSAWithSHA384", ec256, x509.ECDSAWithSHA384, ""},
		{"explicit PureEd25519", "PureEd25519", ed, x509.PureEd25519, ""},
		{"RSA algorithm on EC key", "SHA256WithRSA", ec256, 0, "needs a RSA key, the private key is ECDSA"},
		{"unknown name", "MD5WithRSA", rsa2048, 0, `spec.signatureAlgorithm: "MD5WithRSA" is not supported`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SignatureAlgorithm(tt.alg, tt.key)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("SignatureAlgorithm() error = %v, want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("SignatureAlgorithm() = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}
