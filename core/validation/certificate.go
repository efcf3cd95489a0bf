package validation

import (
	"fmt"
	"net"
	"strconv"
	"unicode/utf8"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/pki"
)

// MaxCommonNameLength is the X.509 upper bound on a common name (ub-common-name).
const MaxCommonNameLength = 64

// Certificate validates a Certificate: metadata and spec.
func Certificate(c *api.Certificate) ErrorList {
	errs := Metadata(&c.ObjectMeta, true)
	errs = append(errs, CertificateSpec(&c.Spec, "spec")...)
	return errs
}

// CertificateSpec validates a Certificate spec at path (normally "spec").
func CertificateSpec(s *api.CertificateSpec, path string) ErrorList {
	var errs ErrorList
	p := func(f string) string { return path + "." + f }

	if s.SecretName == "" {
		errs.add(p("secretName"), "required")
	} else if msg := dns1123Subdomain(s.SecretName); msg != "" {
		errs.addValue(p("secretName"), s.SecretName, msg)
	}
	issuerRef(&errs, p("issuerRef"), s.IssuerRef)

	// Identity.
	if s.CommonName == "" && s.LiteralSubject == "" && len(s.DNSNames) == 0 && len(s.IPAddresses) == 0 &&
		len(s.URIs) == 0 && len(s.EmailAddresses) == 0 && len(s.OtherNames) == 0 {
		errs.add(path, "at least one of commonName, literalSubject, dnsNames, ipAddresses, uris, emailAddresses or otherNames must be set")
	}
	if n := utf8.RuneCountInString(s.CommonName); n > MaxCommonNameLength {
		errs.addValue(p("commonName"), s.CommonName, fmt.Sprintf("must be no more than %d characters (has %d); put long names in dnsNames", MaxCommonNameLength, n))
	}
	if s.LiteralSubject != "" {
		if s.Subject != nil {
			errs.add(p("subject"), "must not be set together with literalSubject")
		}
		if s.CommonName != "" {
			errs.add(p("commonName"), "must not be set together with literalSubject (put CN= in literalSubject)")
		}
		if _, err := pki.ParseLiteralSubject(s.LiteralSubject); err != nil {
			errs.addValue(p("literalSubject"), s.LiteralSubject, "not an RFC 4514 distinguished name: "+err.Error())
		}
	}
	for i, n := range s.DNSNames {
		if msg := dnsName(n); msg != "" {
			errs.addValue(idx(p("dnsNames"), i), n, "invalid DNS name: "+msg)
		}
	}
	for i, n := range s.IPAddresses {
		if msg := ipAddress(n); msg != "" {
			errs.addValue(idx(p("ipAddresses"), i), n, msg)
		}
	}
	for i, n := range s.URIs {
		if msg := uriSAN(n); msg != "" {
			errs.addValue(idx(p("uris"), i), n, msg)
		}
	}
	for i, n := range s.EmailAddresses {
		if msg := emailAddress(n); msg != "" {
			errs.addValue(idx(p("emailAddresses"), i), n, msg)
		}
	}
	for i, on := range s.OtherNames {
		ip := idx(p("otherNames"), i)
		if on.OID == "" {
			errs.add(ip+".oid", "required")
		} else if msg := oid(on.OID); msg != "" {
			errs.addValue(ip+".oid", on.OID, msg)
		}
		if on.UTF8Value == "" {
			errs.add(ip+".utf8Value", "required")
		} else if !validUTF8(on.UTF8Value) {
			errs.add(ip+".utf8Value", "must be valid UTF-8")
		}
	}

	// Lifetime and renewal.
	duration := s.DurationOrDefault()
	if s.Duration != nil && s.Duration.Duration < api.MinimumDuration {
		errs.addValue(p("duration"), s.Duration.Duration.String(), fmt.Sprintf("must be at least %s", api.MinimumDuration))
	}
	if s.RenewBefore != nil && s.RenewBeforePercentage != nil {
		errs.add(p("renewBefore"), "must not be set together with renewBeforePercentage")
	}
	if rb := s.RenewBefore; rb != nil {
		switch {
		case rb.Duration <= 0:
			errs.addValue(p("renewBefore"), rb.Duration.String(), "must be greater than zero")
		case rb.Duration >= duration:
			errs.addValue(p("renewBefore"), rb.Duration.String(), fmt.Sprintf("must be shorter than the duration (%s)", duration))
		}
	}
	if pct := s.RenewBeforePercentage; pct != nil && (*pct < 1 || *pct > 99) {
		errs.addValue(p("renewBeforePercentage"), strconv.Itoa(int(*pct)), "must be between 1 and 99")
	}
	if s.RevisionHistoryLimit != nil && *s.RevisionHistoryLimit < 1 {
		errs.addValue(p("revisionHistoryLimit"), strconv.Itoa(int(*s.RevisionHistoryLimit)), "must be at least 1")
	}

	// Key and signature.
	privateKey(&errs, p("privateKey"), s.PrivateKey)
	if s.SignatureAlgorithm != "" {
		alg := s.KeyAlgorithmOrDefault()
		want, known := signatureKeyAlgorithm[s.SignatureAlgorithm]
		switch {
		case !known:
			errs.addValue(p("signatureAlgorithm"), s.SignatureAlgorithm,
				"unknown; want SHA256WithRSA, SHA384WithRSA, SHA512WithRSA, ECDSAWithSHA256, ECDSAWithSHA384, ECDSAWithSHA512 or PureEd25519")
		case want != alg:
			errs.addValue(p("signatureAlgorithm"), s.SignatureAlgorithm, fmt.Sprintf("needs a %s key, but the private key algorithm is %s", want, alg))
		}
	}
	usages(&errs, p("usages"), s.Usages)

	if nc := s.NameConstraints; nc != nil {
		if !s.IsCA {
			errs.add(p("nameConstraints"), "only allowed with isCA: true")
		}
		if nc.Permitted == nil && nc.Excluded == nil {
			errs.add(p("nameConstraints"), "at least one of permitted or excluded must be set")
		}
		nameConstraintItem(&errs, p("nameConstraints.permitted"), nc.Permitted)
		nameConstraintItem(&errs, p("nameConstraints.excluded"), nc.Excluded)
	}

	// Outputs.
	if ks := s.Keystores; ks != nil {
		if j := ks.JKS; j != nil {
			keystorePassword(&errs, p("keystores.jks"), j.Password, j.PasswordSecretRef)
		}
		if k := ks.PKCS12; k != nil {
			keystorePassword(&errs, p("keystores.pkcs12"), k.Password, k.PasswordSecretRef)
			switch k.Profile {
			case "", api.LegacyRC2PKCS12Profile, api.LegacyDESPKCS12Profile, api.Modern2023PKCS12Profile:
			default:
				errs.addValue(p("keystores.pkcs12.profile"), string(k.Profile), "unknown; want LegacyRC2, LegacyDES or Modern2023")
			}
		}
	}
	seen := map[api.CertificateOutputFormatType]bool{}
	for i, f := range s.AdditionalOutputFormats {
		fp := idx(p("additionalOutputFormats"), i) + ".type"
		switch f.Type {
		case api.CertificateOutputFormatDER, api.CertificateOutputFormatCombinedPEM:
		default:
			errs.addValue(fp, string(f.Type), "unknown; want DER or CombinedPEM")
			continue
		}
		if seen[f.Type] {
			errs.addValue(fp, string(f.Type), "duplicate output format")
		}
		seen[f.Type] = true
	}
	return errs
}

// signatureKeyAlgorithm maps each signature algorithm to the key algorithm it needs.
var signatureKeyAlgorithm = map[string]api.PrivateKeyAlgorithm{
	api.SignatureSHA256WithRSA:   api.RSAKeyAlgorithm,
	api.SignatureSHA384WithRSA:   api.RSAKeyAlgorithm,
	api.SignatureSHA512WithRSA:   api.RSAKeyAlgorithm,
	api.SignatureECDSAWithSHA256: api.ECDSAKeyAlgorithm,
	api.SignatureECDSAWithSHA384: api.ECDSAKeyAlgorithm,
	api.SignatureECDSAWithSHA512: api.ECDSAKeyAlgorithm,
	api.SignaturePureEd25519:     api.Ed25519KeyAlgorithm,
}

func privateKey(errs *ErrorList, path string, k *api.CertificatePrivateKey) {
	if k == nil {
		return
	}
	switch k.RotationPolicy {
	case "", api.RotationPolicyAlways, api.RotationPolicyNever:
	default:
		errs.addValue(path+".rotationPolicy", string(k.RotationPolicy), "unknown; want Always or Never")
	}
	switch k.Encoding {
	case "", api.PKCS1, api.PKCS8:
	default:
		errs.addValue(path+".encoding", string(k.Encoding), "unknown; want PKCS1 or PKCS8")
	}
	size := strconv.Itoa(k.Size)
	switch k.Algorithm {
	case "", api.RSAKeyAlgorithm:
		if k.Size != 0 && (k.Size < 2048 || k.Size > 8192) {
			errs.addValue(path+".size", size, "RSA key size must be between 2048 and 8192")
		}
	case api.ECDSAKeyAlgorithm:
		switch k.Size {
		case 0, 256, 384, 521:
		default:
			errs.addValue(path+".size", size, "ECDSA key size must be 256, 384 or 521")
		}
	case api.Ed25519KeyAlgorithm:
		if k.Size != 0 {
			errs.addValue(path+".size", size, "Ed25519 keys have no size; leave it unset")
		}
	default:
		errs.addValue(path+".algorithm", string(k.Algorithm), "unknown; want RSA, ECDSA or Ed25519")
	}
}

func keystorePassword(errs *ErrorList, path string, password *string, ref api.SecretKeySelector) {
	switch {
	case password != nil && ref.Name != "":
		errs.add(path, "only one of password or passwordSecretRef may be set")
	case password == nil && ref.Name == "":
		errs.add(path, "one of password or passwordSecretRef.name must be set")
	case password != nil && *password == "":
		errs.add(path+".password", "must not be empty")
	}
}

func nameConstraintItem(errs *ErrorList, path string, it *api.NameConstraintItem) {
	if it == nil {
		return
	}
	for i, d := range it.DNSDomains {
		if msg := dnsName(trimLeadingDot(d)); msg != "" {
			errs.addValue(idx(path+".dnsDomains", i), d, "invalid DNS domain: "+msg)
		}
	}
	for i, r := range it.IPRanges {
		if _, _, err := net.ParseCIDR(r); err != nil {
			errs.addValue(idx(path+".ipRanges", i), r, "must be a CIDR range such as 10.0.0.0/8")
		}
	}
	for i, e := range it.EmailAddresses {
		// An address, a host ("example.com") or a domain (".example.com").
		if emailAddress(e) != "" && dnsName(trimLeadingDot(e)) != "" {
			errs.addValue(idx(path+".emailAddresses", i), e, "must be an email address or a (.)domain")
		}
	}
	for i, u := range it.URIDomains {
		if msg := dnsName(trimLeadingDot(u)); msg != "" {
			errs.addValue(idx(path+".uriDomains", i), u, "invalid URI domain: "+msg)
		}
	}
}

func trimLeadingDot(s string) string {
	if len(s) > 1 && s[0] == '.' {
		return s[1:]
	}
	return s
}
