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
// Each section of the spec has its own function returning the errors under
// its path (the field's, or the spec's for a section that spans fields);
// they run in spec order, which fixes the order of the list a user sees.
// The list is nil when the spec is valid.
func CertificateSpec(s *api.CertificateSpec, path string) ErrorList {
	p := func(f string) string { return path + "." + f }
	return concat(
		secretName(p("secretName"), s.SecretName),
		issuerRef(p("issuerRef"), s.IssuerRef),
		// Identity.
		subject(path, s),
		dnsNames(p("dnsNames"), s.DNSNames),
		ipAddresses(p("ipAddresses"), s.IPAddresses),
		uris(p("uris"), s.URIs),
		emailAddresses(p("emailAddresses"), s.EmailAddresses),
		otherNames(p("otherNames"), s.OtherNames),
		// Lifetime and renewal.
		lifetime(path, s),
		revisionHistoryLimit(p("revisionHistoryLimit"), s.RevisionHistoryLimit),
		// Key and signature.
		privateKey(p("privateKey"), s.PrivateKey),
		signatureAlgorithm(p("signatureAlgorithm"), s),
		usages(p("usages"), s.Usages),
		nameConstraints(p("nameConstraints"), s),
		// Outputs.
		keystores(p("keystores"), s.Keystores),
		additionalOutputFormats(p("additionalOutputFormats"), s.AdditionalOutputFormats),
	)
}

// concat joins lists in order; it is nil when all are empty.
func concat(lists ...ErrorList) ErrorList {
	var out ErrorList
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// secretName checks spec.secretName: required, a DNS-1123 subdomain.
func secretName(path, name string) ErrorList {
	var errs ErrorList
	if name == "" {
		errs.add(path, "required")
	} else if msg := dns1123Subdomain(name); msg != "" {
		errs.addValue(path, name, msg)
	}
	return errs
}

// subject checks the identity of the spec at path as a whole (at least
// one name or subject, reported at path), commonName's length, and
// literalSubject: an RFC 4514 name that replaces subject and commonName.
func subject(path string, s *api.CertificateSpec) ErrorList {
	var errs ErrorList
	p := func(f string) string { return path + "." + f }
	if s.CommonName == "" && s.LiteralSubject == "" && len(s.DNSNames) == 0 && len(s.IPAddresses) == 0 &&
		len(s.URIs) == 0 && len(s.EmailAddresses) == 0 && len(s.OtherNames) == 0 {
		errs.add(path, "at least one of commonName, literalSubject, dnsNames, ipAddresses, uris, emailAddresses or otherNames must be set")
	}
	if n := utf8.RuneCountInString(s.CommonName); n > MaxCommonNameLength {
		errs.addValue(p("commonName"), s.CommonName, fmt.Sprintf("must be no more than %d characters (has %d); put long names in dnsNames", MaxCommonNameLength, n))
	} else if err := pki.CheckCommonName(s.CommonName); err != nil {
		errs.addValue(p("commonName"), s.CommonName, "invalid common name: "+err.Error())
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
	return errs
}

// dnsNames checks each spec.dnsNames entry is a DNS name (wildcards
// allowed) that the approval step will accept in the CSR
// (pki.CheckDNSName: LDH labels, valid IDNA A-labels).
func dnsNames(path string, names []string) ErrorList {
	var errs ErrorList
	for i, n := range names {
		if msg := dnsName(n); msg != "" {
			errs.addValue(idx(path, i), n, "invalid DNS name: "+msg)
		} else if err := pki.CheckDNSName(n, true); err != nil {
			errs.addValue(idx(path, i), n, "invalid DNS name: "+err.Error())
		}
	}
	return errs
}

// ipAddresses checks each spec.ipAddresses entry is an IP address.
func ipAddresses(path string, addrs []string) ErrorList {
	var errs ErrorList
	for i, n := range addrs {
		if msg := ipAddress(n); msg != "" {
			errs.addValue(idx(path, i), n, msg)
		}
	}
	return errs
}

// uris checks each spec.uris entry is an absolute URI that the approval
// step will accept in the CSR (pki.CheckURI).
func uris(path string, us []string) ErrorList {
	var errs ErrorList
	for i, n := range us {
		if msg := uriSAN(n); msg != "" {
			errs.addValue(idx(path, i), n, msg)
		} else if err := pki.CheckURI(n); err != nil {
			errs.addValue(idx(path, i), n, "invalid URI: "+err.Error())
		}
	}
	return errs
}

// emailAddresses checks each spec.emailAddresses entry is an address that
// the approval step will accept in the CSR (pki.CheckEmailAddress).
func emailAddresses(path string, addrs []string) ErrorList {
	var errs ErrorList
	for i, n := range addrs {
		if msg := emailAddress(n); msg != "" {
			errs.addValue(idx(path, i), n, msg)
		} else if err := pki.CheckEmailAddress(n); err != nil {
			errs.addValue(idx(path, i), n, "invalid e-mail address: "+err.Error())
		}
	}
	return errs
}

// otherNames checks each spec.otherNames entry: an OID and a UTF-8 value,
// both required.
func otherNames(path string, ons []api.OtherName) ErrorList {
	var errs ErrorList
	for i, on := range ons {
		ip := idx(path, i)
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
	return errs
}

// lifetime checks the duration of the spec at path (at least
// api.MinimumDuration) and its renewal: renewBefore or
// renewBeforePercentage, not both; renewBefore positive and shorter than
// the duration (defaulted); the percentage within 1..99.
func lifetime(path string, s *api.CertificateSpec) ErrorList {
	var errs ErrorList
	p := func(f string) string { return path + "." + f }
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
	return errs
}

// revisionHistoryLimit checks spec.revisionHistoryLimit is at least 1 when set.
func revisionHistoryLimit(path string, limit *int32) ErrorList {
	var errs ErrorList
	if limit != nil && *limit < 1 {
		errs.addValue(path, strconv.Itoa(int(*limit)), "must be at least 1")
	}
	return errs
}

// signatureAlgorithm checks spec.signatureAlgorithm is known and fits the
// private key algorithm (defaulted).
func signatureAlgorithm(path string, s *api.CertificateSpec) ErrorList {
	if s.SignatureAlgorithm == "" {
		return nil
	}
	var errs ErrorList
	alg := s.KeyAlgorithmOrDefault()
	want, known := signatureKeyAlgorithm[s.SignatureAlgorithm]
	switch {
	case !known:
		errs.addValue(path, s.SignatureAlgorithm,
			"unknown; want SHA256WithRSA, SHA384WithRSA, SHA512WithRSA, ECDSAWithSHA256, ECDSAWithSHA384, ECDSAWithSHA512 or PureEd25519")
	case want != alg:
		errs.addValue(path, s.SignatureAlgorithm, fmt.Sprintf("needs a %s key, but the private key algorithm is %s", want, alg))
	}
	return errs
}

// nameConstraints checks spec.nameConstraints: only on a CA, with
// permitted or excluded set, each item well formed.
func nameConstraints(path string, s *api.CertificateSpec) ErrorList {
	nc := s.NameConstraints
	if nc == nil {
		return nil
	}
	var errs ErrorList
	if !s.IsCA {
		errs.add(path, "only allowed with isCA: true")
	}
	if nc.Permitted == nil && nc.Excluded == nil {
		errs.add(path, "at least one of permitted or excluded must be set")
	}
	return concat(errs,
		nameConstraintItem(path+".permitted", nc.Permitted),
		nameConstraintItem(path+".excluded", nc.Excluded))
}

// keystores checks spec.keystores: each keystore's password source and the
// PKCS#12 profile.
func keystores(path string, ks *api.CertificateKeystores) ErrorList {
	if ks == nil {
		return nil
	}
	var errs ErrorList
	if j := ks.JKS; j != nil {
		errs = append(errs, keystorePassword(path+".jks", j.Password, j.PasswordSecretRef)...)
	}
	if k := ks.PKCS12; k != nil {
		errs = append(errs, keystorePassword(path+".pkcs12", k.Password, k.PasswordSecretRef)...)
		switch k.Profile {
		case "", api.LegacyRC2PKCS12Profile, api.LegacyDESPKCS12Profile, api.Modern2023PKCS12Profile:
		default:
			errs.addValue(path+".pkcs12.profile", string(k.Profile), "unknown; want LegacyRC2, LegacyDES or Modern2023")
		}
	}
	return errs
}

// additionalOutputFormats checks each spec.additionalOutputFormats entry
// is a known type, named once.
func additionalOutputFormats(path string, fs []api.CertificateAdditionalOutputFormat) ErrorList {
	var errs ErrorList
	seen := map[api.CertificateOutputFormatType]bool{}
	for i, f := range fs {
		fp := idx(path, i) + ".type"
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

// privateKey checks spec.privateKey: rotationPolicy, encoding, and a size
// that fits the algorithm.
func privateKey(path string, k *api.CertificatePrivateKey) ErrorList {
	if k == nil {
		return nil
	}
	var errs ErrorList
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
	return errs
}

// keystorePassword checks that a keystore names exactly one password
// source, and that an inline password is not empty.
func keystorePassword(path string, password *string, ref api.SecretKeySelector) ErrorList {
	var errs ErrorList
	switch {
	case password != nil && ref.Name != "":
		errs.add(path, "only one of password or passwordSecretRef may be set")
	case password == nil && ref.Name == "":
		errs.add(path, "one of password or passwordSecretRef.name must be set")
	case password != nil && *password == "":
		errs.add(path+".password", "must not be empty")
	}
	secretRef(&errs, path+".passwordSecretRef.name", ref.Name)
	return errs
}

// nameConstraintItem checks one of nameConstraints.permitted or excluded:
// DNS domains, CIDR ranges, e-mail addresses or domains, URI domains.
func nameConstraintItem(path string, it *api.NameConstraintItem) ErrorList {
	if it == nil {
		return nil
	}
	var errs ErrorList
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
	return errs
}

func trimLeadingDot(s string) string {
	if len(s) > 1 && s[0] == '.' {
		return s[1:]
	}
	return s
}
