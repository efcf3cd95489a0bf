package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"

	"github.com/certfn/certfn/core/api"
)

// Key size limits and defaults, as cert-manager's pkg/util/pki.
const (
	// MinRSAKeySize is the smallest RSA key certfn generates or accepts in a spec.
	MinRSAKeySize = 2048
	// MaxRSAKeySize is the largest RSA key certfn generates.
	MaxRSAKeySize = 8192
	// DefaultRSAKeySize is used when spec.privateKey.size is 0 for RSA.
	DefaultRSAKeySize = 2048
	// DefaultECDSAKeySize is used when spec.privateKey.size is 0 for ECDSA (P-256).
	DefaultECDSAKeySize = 256
)

// PEM block types for private keys.
const (
	pemTypePKCS8   = "PRIVATE KEY"
	pemTypeRSA     = "RSA PRIVATE KEY"
	pemTypeEC      = "EC PRIVATE KEY"
	pemTypeECParam = "EC PARAMETERS"
)

// keyAlgorithm returns the spec's algorithm with cert-manager's default (RSA).
func keyAlgorithm(spec *api.CertificatePrivateKey) api.PrivateKeyAlgorithm {
	if spec == nil || spec.Algorithm == "" {
		return api.RSAKeyAlgorithm
	}
	return spec.Algorithm
}

func keySize(spec *api.CertificatePrivateKey) int {
	if spec == nil {
		return 0
	}
	return spec.Size
}

// KeyParams returns the algorithm and size of the key GenerateKey makes
// for spec, with cert-manager's defaults: RSA 2048, ECDSA 256, Ed25519
// size 0 (the key sizes a CertificateRequestPolicy constrains).
func KeyParams(spec *api.CertificatePrivateKey) (api.PrivateKeyAlgorithm, int) {
	alg, size := keyAlgorithm(spec), keySize(spec)
	switch {
	case alg == api.Ed25519KeyAlgorithm:
		size = 0
	case size != 0:
	case alg == api.RSAKeyAlgorithm:
		size = DefaultRSAKeySize
	case alg == api.ECDSAKeyAlgorithm:
		size = DefaultECDSAKeySize
	}
	return alg, size
}

// ExpensiveRSAKeySize is the smallest RSA key size whose generation is
// expensive (about a second of a CPU for 4096 bits, tens of seconds up to
// minutes for 8192): such keys are generated a share per namespace
// (core/certificates/keygen).
const ExpensiveRSAKeySize = 4096

// ExpensiveKey reports whether generating spec's key is expensive: RSA of
// ExpensiveRSAKeySize bits or more (MaxRSAKeySize at most).
func ExpensiveKey(spec *api.CertificatePrivateKey) bool {
	alg, size := KeyParams(spec)
	return alg == api.RSAKeyAlgorithm && size >= ExpensiveRSAKeySize
}

// GenerateKey creates a private key as spec.privateKey asks: RSA (default,
// 2048 bits when size is 0; 2048..8192 allowed), ECDSA (P-256 by default;
// 256, 384 or 521) or Ed25519 (size ignored). A nil spec means RSA 2048.
// Errors name the field and the rule (spec.privateKey.size: ...).
func GenerateKey(spec *api.CertificatePrivateKey) (crypto.Signer, error) {
	size := keySize(spec)
	switch alg := keyAlgorithm(spec); alg {
	case api.RSAKeyAlgorithm:
		if size == 0 {
			size = DefaultRSAKeySize
		}
		if size < MinRSAKeySize || size > MaxRSAKeySize {
			return nil, fmt.Errorf("spec.privateKey.size: %d is not a valid RSA key size: want %d to %d bits", size, MinRSAKeySize, MaxRSAKeySize)
		}
		k, err := rsa.GenerateKey(rand.Reader, size)
		if err != nil {
			return nil, fmt.Errorf("generate RSA %d key: %w", size, err)
		}
		return k, nil
	case api.ECDSAKeyAlgorithm:
		if size == 0 {
			size = DefaultECDSAKeySize
		}
		curve, err := curveForSize(size)
		if err != nil {
			return nil, err
		}
		k, err := ecdsa.GenerateKey(curve, rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("generate ECDSA P-%d key: %w", size, err)
		}
		return k, nil
	case api.Ed25519KeyAlgorithm:
		_, k, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("generate Ed25519 key: %w", err)
		}
		return k, nil
	default:
		return nil, fmt.Errorf("spec.privateKey.algorithm: %q is not supported: want RSA, ECDSA or Ed25519", alg)
	}
}

func curveForSize(size int) (elliptic.Curve, error) {
	switch size {
	case 256:
		return elliptic.P256(), nil
	case 384:
		return elliptic.P384(), nil
	case 521:
		return elliptic.P521(), nil
	}
	return nil, fmt.Errorf("spec.privateKey.size: %d is not a valid ECDSA key size: want 256, 384 or 521", size)
}

// EncodePKCS8PEM encodes key as a PEM "PRIVATE KEY" block (PKCS#8), the
// form docs/design/certificate-controllers.md stores next-private-key secrets in.
func EncodePKCS8PEM(key crypto.Signer) ([]byte, error) {
	if key == nil {
		return nil, errors.New("encode private key: no key")
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode private key as PKCS#8: unsupported key type %T", key)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemTypePKCS8, Bytes: der}), nil
}

// EncodePrivateKeyPEM encodes key as spec.privateKey.encoding asks.
// PKCS1 (also the default when enc is empty, as cert-manager) writes RSA keys
// as "RSA PRIVATE KEY" and ECDSA keys as SEC 1 "EC PRIVATE KEY"; Ed25519 has
// no PKCS#1 form and is always PKCS#8. PKCS8 writes "PRIVATE KEY".
func EncodePrivateKeyPEM(key crypto.Signer, enc api.PrivateKeyEncoding) ([]byte, error) {
	if key == nil {
		return nil, errors.New("encode private key: no key")
	}
	switch enc {
	case "", api.PKCS1:
		switch k := key.(type) {
		case *rsa.PrivateKey:
			return pem.EncodeToMemory(&pem.Block{Type: pemTypeRSA, Bytes: x509.MarshalPKCS1PrivateKey(k)}), nil
		case *ecdsa.PrivateKey:
			der, err := x509.MarshalECPrivateKey(k)
			if err != nil {
				return nil, fmt.Errorf("encode ECDSA private key as SEC 1: unsupported curve")
			}
			return pem.EncodeToMemory(&pem.Block{Type: pemTypeEC, Bytes: der}), nil
		default:
			return EncodePKCS8PEM(key)
		}
	case api.PKCS8:
		return EncodePKCS8PEM(key)
	default:
		return nil, fmt.Errorf("spec.privateKey.encoding: %q is not supported: want PKCS1 or PKCS8", enc)
	}
}

// DecodePrivateKeyPEM decodes the first private key PEM block in b: PKCS#8
// "PRIVATE KEY", PKCS#1 "RSA PRIVATE KEY" or SEC 1 "EC PRIVATE KEY" (an
// "EC PARAMETERS" block before it, as openssl writes, is skipped). The key
// must be RSA, ECDSA or Ed25519. Encrypted PEM is refused. Errors describe
// the structure only and never contain key bytes or parser output.
func DecodePrivateKeyPEM(b []byte) (crypto.Signer, error) {
	if len(b) == 0 {
		return nil, errors.New("private key: empty")
	}
	rest := b
	for i := 1; ; i++ {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, errors.New("private key: no PEM private key block found")
		}
		if block.Type == pemTypeECParam {
			continue
		}
		if _, ok := block.Headers["Proc-Type"]; ok {
			return nil, fmt.Errorf("private key: PEM block %d is encrypted, which is not supported", i)
		}
		var (
			key any
			err error
		)
		switch block.Type {
		case pemTypePKCS8:
			key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		case pemTypeRSA:
			key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
		case pemTypeEC:
			key, err = x509.ParseECPrivateKey(block.Bytes)
		default:
			return nil, fmt.Errorf("private key: PEM block %d is %q, want PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY", i, block.Type)
		}
		if err != nil {
			// The parser's message is dropped on purpose: the rule is that
			// nothing derived from key material reaches an error string.
			return nil, fmt.Errorf("private key: PEM block %d (%s) is not a valid key of that encoding", i, block.Type)
		}
		switch k := key.(type) {
		case *rsa.PrivateKey:
			return k, nil
		case *ecdsa.PrivateKey:
			return k, nil
		case ed25519.PrivateKey:
			return k, nil
		default:
			return nil, fmt.Errorf("private key: PEM block %d holds a %T key: want RSA, ECDSA or Ed25519", i, key)
		}
	}
}

// PublicKeysEqual reports whether a and b are the same public key. Keys of
// different types, nil keys and unknown key types are never equal.
func PublicKeysEqual(a, b crypto.PublicKey) bool {
	if a == nil || b == nil {
		return false
	}
	eq, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && eq.Equal(b)
}

// KeyMatchesSpec reports whether key has the algorithm and size that
// spec.privateKey asks for (cert-manager's PrivateKeyMatchesSpec: RSA 2048
// and ECDSA P-256 are the defaults for a zero size). When it does not, why
// names the field and the difference.
func KeyMatchesSpec(key crypto.Signer, spec *api.CertificatePrivateKey) (ok bool, why string) {
	if key == nil {
		return false, "no private key"
	}
	field, why := publicKeyMismatch(key.Public(), spec)
	if field == "" {
		return true, ""
	}
	return false, why
}

// publicKeyMismatch compares a public key with spec.privateKey and returns
// the mismatching field ("" when it matches) and a human-readable reason.
func publicKeyMismatch(pub crypto.PublicKey, spec *api.CertificatePrivateKey) (field, why string) {
	const algField, sizeField = "spec.privateKey.algorithm", "spec.privateKey.size"
	want := keyAlgorithm(spec)
	size := keySize(spec)
	have, bits := describePublicKey(pub)
	switch want {
	case api.RSAKeyAlgorithm, api.ECDSAKeyAlgorithm, api.Ed25519KeyAlgorithm:
	default:
		return algField, fmt.Sprintf("%s: %q is not supported: want RSA, ECDSA or Ed25519", algField, want)
	}
	if have != want {
		return algField, fmt.Sprintf("%s: key is %s, want %s", algField, orUnknown(have), want)
	}
	switch want {
	case api.RSAKeyAlgorithm:
		if size == 0 {
			size = DefaultRSAKeySize
		}
	case api.ECDSAKeyAlgorithm:
		if size == 0 {
			size = DefaultECDSAKeySize
		}
	case api.Ed25519KeyAlgorithm:
		return "", ""
	}
	if bits != size {
		return sizeField, fmt.Sprintf("%s: key is %s %d bits, want %d", sizeField, have, bits, size)
	}
	return "", ""
}

func orUnknown(a api.PrivateKeyAlgorithm) string {
	if a == "" {
		return "of an unsupported type"
	}
	return string(a)
}

// describePublicKey returns the algorithm and size in bits of pub ("" for
// an unsupported key type).
func describePublicKey(pub crypto.PublicKey) (api.PrivateKeyAlgorithm, int) {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return api.RSAKeyAlgorithm, k.N.BitLen()
	case *ecdsa.PublicKey:
		return api.ECDSAKeyAlgorithm, k.Curve.Params().BitSize
	case ed25519.PublicKey:
		return api.Ed25519KeyAlgorithm, 0
	}
	return "", 0
}

// Signature algorithm names accepted in spec.signatureAlgorithm (cert-manager's).
var signatureAlgorithms = map[string]x509.SignatureAlgorithm{
	"SHA256WithRSA":   x509.SHA256WithRSA,
	"SHA384WithRSA":   x509.SHA384WithRSA,
	"SHA512WithRSA":   x509.SHA512WithRSA,
	"ECDSAWithSHA256": x509.ECDSAWithSHA256,
	"ECDSAWithSHA384": x509.ECDSAWithSHA384,
	"ECDSAWithSHA512": x509.ECDSAWithSHA512,
	"PureEd25519":     x509.PureEd25519,
}

// SignatureAlgorithm returns the algorithm a CSR (or self-signed certificate)
// for key is signed with: spec.signatureAlgorithm when set (it must suit the
// key type), else the key's default as cert-manager: RSA ≥4096 bits SHA-512,
// ≥3072 SHA-384, else SHA-256; ECDSA P-521 SHA-512, P-384 SHA-384, else
// SHA-256; Ed25519 PureEd25519.
func SignatureAlgorithm(name string, key crypto.Signer) (x509.SignatureAlgorithm, error) {
	if key == nil {
		return x509.UnknownSignatureAlgorithm, errors.New("signature algorithm: no key")
	}
	alg, bits := describePublicKey(key.Public())
	if name != "" {
		sa, ok := signatureAlgorithms[name]
		if !ok {
			return x509.UnknownSignatureAlgorithm, fmt.Errorf("spec.signatureAlgorithm: %q is not supported: want one of SHA256WithRSA, SHA384WithRSA, SHA512WithRSA, ECDSAWithSHA256, ECDSAWithSHA384, ECDSAWithSHA512, PureEd25519", name)
		}
		var keyAlg api.PrivateKeyAlgorithm
		switch sa {
		case x509.SHA256WithRSA, x509.SHA384WithRSA, x509.SHA512WithRSA:
			keyAlg = api.RSAKeyAlgorithm
		case x509.ECDSAWithSHA256, x509.ECDSAWithSHA384, x509.ECDSAWithSHA512:
			keyAlg = api.ECDSAKeyAlgorithm
		default:
			keyAlg = api.Ed25519KeyAlgorithm
		}
		if keyAlg != alg {
			return x509.UnknownSignatureAlgorithm, fmt.Errorf("spec.signatureAlgorithm: %s needs a %s key, the private key is %s", name, keyAlg, orUnknown(alg))
		}
		return sa, nil
	}
	switch alg {
	case api.RSAKeyAlgorithm:
		switch {
		case bits >= 4096:
			return x509.SHA512WithRSA, nil
		case bits >= 3072:
			return x509.SHA384WithRSA, nil
		}
		return x509.SHA256WithRSA, nil
	case api.ECDSAKeyAlgorithm:
		switch bits {
		case 521:
			return x509.ECDSAWithSHA512, nil
		case 384:
			return x509.ECDSAWithSHA384, nil
		}
		return x509.ECDSAWithSHA256, nil
	case api.Ed25519KeyAlgorithm:
		return x509.PureEd25519, nil
	}
	return x509.UnknownSignatureAlgorithm, fmt.Errorf("signature algorithm: unsupported key type %T", key)
}

// CheckPublicKey checks that pub is a key certfn signs a certificate for:
// RSA of MinRSAKeySize to MaxRSAKeySize bits, ECDSA on P-256, P-384 or
// P-521, or Ed25519. Anything else (RSA-1024, P-224, DSA, an unknown
// type) is refused with the rule broken; callers prefix the field
// ("spec.request: ").
func CheckPublicKey(pub crypto.PublicKey) error {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		if n := k.N.BitLen(); n < MinRSAKeySize || n > MaxRSAKeySize {
			return fmt.Errorf("the public key is RSA of %d bits; certfn signs RSA keys of %d to %d bits", n, MinRSAKeySize, MaxRSAKeySize)
		}
		return nil
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256(), elliptic.P384(), elliptic.P521():
			return nil
		}
		return fmt.Errorf("the public key is ECDSA on %s; certfn signs ECDSA keys on P-256, P-384 or P-521", k.Curve.Params().Name)
	case ed25519.PublicKey:
		return nil
	}
	return fmt.Errorf("the public key is of type %T; certfn signs RSA, ECDSA and Ed25519 keys", pub)
}
