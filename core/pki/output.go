package pki

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"

	"github.com/certfn/certfn/core/api"
)

// Keys of a stored certificate secret (cert-manager's names).
const (
	SecretKeyTLSCert        = "tls.crt"
	SecretKeyTLSKey         = "tls.key"
	SecretKeyCACert         = "ca.crt"
	SecretKeyDER            = "key.der"
	SecretKeyCombinedPEM    = "tls-combined.pem"
	SecretKeyPKCS12         = "keystore.p12"
	SecretKeyPKCS12Trust    = "truststore.p12"
	SecretKeyJKS            = "keystore.jks"
	SecretKeyJKSTrust       = "truststore.jks"
	DefaultJKSAlias         = "certificate"
	jksCAAlias              = "ca"
	x509CertificateTypeName = "X509"
)

// OutputInput is what BuildSecretData encodes. The caller resolves the
// keystore passwords (spec.keystores.*.passwordSecretRef, read from the
// secret store); when a resolved password is nil the literal
// spec.keystores.*.password is used.
type OutputInput struct {
	Key            crypto.Signer
	CertPEM, CAPEM []byte
	Spec           *api.CertificateSpec
	JKSPassword    []byte
	PKCS12Password []byte
}

// BuildSecretData encodes the issued key pair into the data of the
// Certificate's secret, as cert-manager's issuing controller:
//   - tls.crt: CertPEM as issued (leaf first); tls.key: the key in
//     spec.privateKey.encoding (PKCS1 by default; Ed25519 always PKCS8);
//     ca.crt: CAPEM when known;
//   - additionalOutputFormats: DER writes key.der (the DER of tls.key),
//     CombinedPEM writes tls-combined.pem (tls.key, a newline, tls.crt);
//   - keystores.pkcs12 (create): keystore.p12 with the key, leaf and chain
//     (plus ca.crt's certificates) in the profile's encryption (LegacyRC2 by
//     default, LegacyDES, Modern2023), and truststore.p12 with ca.crt when
//     known;
//   - keystores.jks (create): keystore.jks with one private key entry (alias
//     spec.keystores.jks.alias, default "certificate"; the chain of tls.crt)
//     plus ca.crt as trusted entries "ca", "ca-1", ...; truststore.jks with
//     ca.crt when known. Entry creation times are the leaf's notBefore (core
//     reads no clock).
//
// The key must match the leaf certificate. Errors name the field or secret
// key at fault and never carry key material or passwords.
func BuildSecretData(in OutputInput) (map[string][]byte, error) {
	if in.Key == nil {
		return nil, errors.New("secret data: no private key")
	}
	if in.Spec == nil {
		return nil, errors.New("secret data: no certificate spec")
	}
	chain, err := ParseChainPEM(in.CertPEM)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", SecretKeyTLSCert, err)
	}
	if !PublicKeysEqual(in.Key.Public(), chain[0].PublicKey) {
		return nil, fmt.Errorf("%s: the private key does not match the certificate's public key", SecretKeyTLSKey)
	}
	var cas []*x509.Certificate
	if len(in.CAPEM) > 0 {
		if cas, err = ParseChainPEM(in.CAPEM); err != nil {
			return nil, fmt.Errorf("%s: %w", SecretKeyCACert, err)
		}
	}
	var enc api.PrivateKeyEncoding
	if in.Spec.PrivateKey != nil {
		enc = in.Spec.PrivateKey.Encoding
	}
	keyPEM, err := EncodePrivateKeyPEM(in.Key, enc)
	if err != nil {
		return nil, err
	}
	data := map[string][]byte{
		SecretKeyTLSCert: bytes.Clone(in.CertPEM),
		SecretKeyTLSKey:  keyPEM,
	}
	if len(in.CAPEM) > 0 {
		data[SecretKeyCACert] = bytes.Clone(in.CAPEM)
	}
	for i, f := range in.Spec.AdditionalOutputFormats {
		switch f.Type {
		case api.CertificateOutputFormatDER:
			block, _ := pem.Decode(keyPEM)
			data[SecretKeyDER] = block.Bytes
		case api.CertificateOutputFormatCombinedPEM:
			combined := append(append(bytes.Clone(keyPEM), '\n'), in.CertPEM...)
			data[SecretKeyCombinedPEM] = combined
		default:
			return nil, fmt.Errorf("spec.additionalOutputFormats[%d].type: %q is not supported: want DER or CombinedPEM", i, f.Type)
		}
	}
	if ks := in.Spec.Keystores; ks != nil {
		if ks.PKCS12 != nil && ks.PKCS12.Create {
			pw, err := keystorePassword(in.PKCS12Password, ks.PKCS12.Password, "spec.keystores.pkcs12")
			if err != nil {
				return nil, err
			}
			if err := encodePKCS12(data, ks.PKCS12.Profile, string(pw), in.Key, chain, cas); err != nil {
				return nil, err
			}
		}
		if ks.JKS != nil && ks.JKS.Create {
			pw, err := keystorePassword(in.JKSPassword, ks.JKS.Password, "spec.keystores.jks")
			if err != nil {
				return nil, err
			}
			alias := DefaultJKSAlias
			if ks.JKS.Alias != nil && *ks.JKS.Alias != "" {
				alias = *ks.JKS.Alias
			}
			if err := encodeJKS(data, alias, pw, in.Key, chain, cas); err != nil {
				return nil, err
			}
		}
	}
	return data, nil
}

func keystorePassword(resolved []byte, literal *string, field string) ([]byte, error) {
	if resolved != nil {
		return resolved, nil
	}
	if literal != nil {
		return []byte(*literal), nil
	}
	return nil, fmt.Errorf("%s: create is true but no password was resolved (set passwordSecretRef or password)", field)
}

func pkcs12Encoder(profile api.PKCS12Profile) (*pkcs12.Encoder, error) {
	switch profile {
	case "", api.LegacyRC2PKCS12Profile:
		return pkcs12.LegacyRC2, nil
	case api.LegacyDESPKCS12Profile:
		return pkcs12.LegacyDES, nil
	case api.Modern2023PKCS12Profile:
		return pkcs12.Modern2023, nil
	}
	return nil, fmt.Errorf("spec.keystores.pkcs12.profile: %q is not supported: want LegacyRC2, LegacyDES or Modern2023", profile)
}

func encodePKCS12(data map[string][]byte, profile api.PKCS12Profile, password string, key crypto.Signer, chain, cas []*x509.Certificate) error {
	enc, err := pkcs12Encoder(profile)
	if err != nil {
		return err
	}
	// The library takes one certificate and a list of others: the rest of
	// the issued chain, then the CA certificates (as cert-manager).
	others := append(append([]*x509.Certificate(nil), chain[1:]...), cas...)
	ks, err := enc.Encode(key, chain[0], others, password)
	if err != nil {
		return fmt.Errorf("%s: encode: %w", SecretKeyPKCS12, err)
	}
	data[SecretKeyPKCS12] = ks
	if len(cas) > 0 {
		ts, err := enc.EncodeTrustStore(cas, password)
		if err != nil {
			return fmt.Errorf("%s: encode: %w", SecretKeyPKCS12Trust, err)
		}
		data[SecretKeyPKCS12Trust] = ts
	}
	return nil
}

func addJKSCAs(ks keystore.KeyStore, cas []*x509.Certificate, created *x509.Certificate) error {
	for i, ca := range cas {
		alias := jksCAAlias
		if i > 0 {
			alias = fmt.Sprintf("%s-%d", jksCAAlias, i)
		}
		err := ks.SetTrustedCertificateEntry(alias, keystore.TrustedCertificateEntry{
			CreationTime: created.NotBefore,
			Certificate:  keystore.Certificate{Type: x509CertificateTypeName, Content: ca.Raw},
		})
		if err != nil {
			return fmt.Errorf("add CA certificate %d: %w", i+1, err)
		}
	}
	return nil
}

func encodeJKS(data map[string][]byte, alias string, password []byte, key crypto.Signer, chain, cas []*x509.Certificate) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("%s: unsupported key type %T", SecretKeyJKS, key)
	}
	certs := make([]keystore.Certificate, len(chain))
	for i, c := range chain {
		certs[i] = keystore.Certificate{Type: x509CertificateTypeName, Content: c.Raw}
	}
	ks := keystore.New()
	if err := ks.SetPrivateKeyEntry(alias, keystore.PrivateKeyEntry{
		CreationTime:     chain[0].NotBefore,
		PrivateKey:       der,
		CertificateChain: certs,
	}, password); err != nil {
		return fmt.Errorf("%s: add private key entry: %w", SecretKeyJKS, err)
	}
	if err := addJKSCAs(ks, cas, chain[0]); err != nil {
		return fmt.Errorf("%s: %w", SecretKeyJKS, err)
	}
	var buf bytes.Buffer
	if err := ks.Store(&buf, password); err != nil {
		return fmt.Errorf("%s: encode: %w", SecretKeyJKS, err)
	}
	data[SecretKeyJKS] = buf.Bytes()
	if len(cas) > 0 {
		ts := keystore.New()
		if err := addJKSCAs(ts, cas, chain[0]); err != nil {
			return fmt.Errorf("%s: %w", SecretKeyJKSTrust, err)
		}
		var tbuf bytes.Buffer
		if err := ts.Store(&tbuf, password); err != nil {
			return fmt.Errorf("%s: encode: %w", SecretKeyJKSTrust, err)
		}
		data[SecretKeyJKSTrust] = tbuf.Bytes()
	}
	return nil
}

// SecretMetadata returns cert-manager's annotations for the secret of crt:
// certificate-name and issuer-name/kind/group (kind defaults to Issuer), and,
// when cert is not nil, common-name, alt-names (DNS names), ip-sans,
// uri-sans and email-sans, lists joined with ",". The Certificate's
// secretTemplate is the caller's to merge.
func SecretMetadata(crt *api.Certificate, cert *x509.Certificate) map[string]string {
	out := map[string]string{}
	if crt != nil {
		out[api.AnnotationCertificateName] = crt.Name
		out[api.AnnotationIssuerName] = crt.Spec.IssuerRef.Name
		out[api.AnnotationIssuerKind] = issuerKind(crt.Spec.IssuerRef)
		out[api.AnnotationIssuerGroup] = crt.Spec.IssuerRef.Group
	}
	if cert != nil {
		out[api.AnnotationCommonName] = cert.Subject.CommonName
		out[api.AnnotationAltNames] = strings.Join(cert.DNSNames, ",")
		out[api.AnnotationIPSANs] = strings.Join(ipStrings(cert.IPAddresses), ",")
		out[api.AnnotationURISANs] = strings.Join(uriStrings(SANs{URIs: cert.URIs}), ",")
		out[api.AnnotationEmailSANs] = strings.Join(cert.EmailAddresses, ",")
	}
	return out
}
