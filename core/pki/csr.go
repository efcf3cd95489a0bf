package pki

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"

	"github.com/certfn/certfn/core/api"
)

// subjectOfSpec returns the subject name of spec, or the raw DER subject when
// literalSubject is set.
func subjectOfSpec(spec *api.CertificateSpec) (pkix.Name, []byte, error) {
	if spec.LiteralSubject != "" {
		seq, err := ParseLiteralSubject(spec.LiteralSubject)
		if err != nil {
			return pkix.Name{}, nil, fmt.Errorf("spec.literalSubject: %w", err)
		}
		raw, err := asn1.Marshal(seq)
		if err != nil {
			return pkix.Name{}, nil, fmt.Errorf("spec.literalSubject: encode: %w", err)
		}
		return pkix.Name{}, raw, nil
	}
	name := pkix.Name{CommonName: spec.CommonName}
	if s := spec.Subject; s != nil {
		name.Organization = s.Organizations
		name.Country = s.Countries
		name.OrganizationalUnit = s.OrganizationalUnits
		name.Locality = s.Localities
		name.Province = s.Provinces
		name.StreetAddress = s.StreetAddresses
		name.PostalCode = s.PostalCodes
		name.SerialNumber = s.SerialNumber
	}
	return name, nil, nil
}

// isEmptySubject reports whether a DER Name has no attributes.
func isEmptySubject(der []byte) bool {
	var seq pkix.RDNSequence
	rest, err := asn1.Unmarshal(der, &seq)
	return err == nil && len(rest) == 0 && len(seq) == 0
}

// GenerateCSR builds and signs with key a PKCS#10 request for crt, as
// cert-manager's GenerateCSR, and returns it PEM-encoded ("CERTIFICATE
// REQUEST"). It carries:
//   - the subject from spec.literalSubject (RFC 4514, encoded as written) or
//     from spec.subject plus spec.commonName;
//   - every SAN kind (DNS, email, IP, URI, otherName) in one subjectAltName
//     extension, critical when the subject is empty (RFC 5280 4.2.1.6);
//   - keyUsage (critical, when any bit is set) and extKeyUsage from spec.usages (default digital
//     signature + key encipherment; "cert sign" added for isCA) unless
//     spec.encodeUsagesInRequest is false;
//   - basicConstraints CA:true (critical) when spec.isCA, and
//     nameConstraints when spec.isCA and spec.nameConstraints is set;
//   - the signature algorithm from spec.signatureAlgorithm or the key's default.
//
// At least one of the subject or a SAN must be set. Errors name the field.
func GenerateCSR(crt *api.Certificate, key crypto.Signer) ([]byte, error) {
	if crt == nil {
		return nil, errors.New("generate CSR: no certificate")
	}
	if key == nil {
		return nil, errors.New("generate CSR: no private key")
	}
	spec := &crt.Spec
	name, rawSubject, err := subjectOfSpec(spec)
	if err != nil {
		return nil, err
	}
	sans, err := sansOfSpec(spec)
	if err != nil {
		return nil, err
	}
	subjectDER := rawSubject
	if subjectDER == nil {
		if subjectDER, err = asn1.Marshal(name.ToRDNSequence()); err != nil {
			return nil, fmt.Errorf("spec.subject: encode: %w", err)
		}
	}
	emptySubject := isEmptySubject(subjectDER)
	if emptySubject && sans.Empty() {
		return nil, errors.New("spec: no commonName, literalSubject, subject or subject alternative name (dnsNames, ipAddresses, uris, emailAddresses, otherNames) is set")
	}
	sigAlg, err := SignatureAlgorithm(spec.SignatureAlgorithm, key)
	if err != nil {
		return nil, err
	}

	var exts []pkix.Extension
	if !sans.Empty() {
		v, err := MarshalSANs(sans)
		if err != nil {
			return nil, err
		}
		exts = append(exts, pkix.Extension{Id: OIDExtensionSubjectAltName, Critical: emptySubject, Value: v})
	}
	if spec.EncodeUsagesInRequest == nil || *spec.EncodeUsagesInRequest {
		ku, eku, err := KeyUsages(spec.Usages, spec.IsCA)
		if err != nil {
			return nil, err
		}
		if ku != 0 {
			v, err := marshalKeyUsage(ku)
			if err != nil {
				return nil, fmt.Errorf("spec.usages: encode keyUsage: %w", err)
			}
			exts = append(exts, pkix.Extension{Id: OIDExtensionKeyUsage, Critical: true, Value: v})
		}
		if len(eku) > 0 {
			v, err := marshalExtKeyUsage(eku)
			if err != nil {
				return nil, fmt.Errorf("spec.usages: encode extKeyUsage: %w", err)
			}
			exts = append(exts, pkix.Extension{Id: OIDExtensionExtendedKeyUsage, Value: v})
		}
	}
	if spec.IsCA {
		v, err := asn1.Marshal(basicConstraints{IsCA: true, MaxPathLen: -1})
		if err != nil {
			return nil, fmt.Errorf("spec.isCA: encode basicConstraints: %w", err)
		}
		exts = append(exts, pkix.Extension{Id: OIDExtensionBasicConstraints, Critical: true, Value: v})
		if spec.NameConstraints != nil {
			v, err := marshalNameConstraints(spec.NameConstraints)
			if err != nil {
				return nil, err
			}
			if v != nil {
				exts = append(exts, pkix.Extension{Id: OIDExtensionNameConstraints, Critical: spec.NameConstraints.Critical, Value: v})
			}
		}
	}

	tmpl := &x509.CertificateRequest{
		SignatureAlgorithm: sigAlg,
		Subject:            name,
		RawSubject:         rawSubject,
		ExtraExtensions:    exts,
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		return nil, fmt.Errorf("sign certificate request: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), nil
}
