package validation

import (
	"encoding/asn1"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
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
		renewal(p("renewal"), s.Renewal),
		revisionHistoryLimit(p("revisionHistoryLimit"), s.RevisionHistoryLimit),
		// Key and signature.
		privateKey(p("privateKey"), s.PrivateKey),
		signatureAlgorithm(p("signatureAlgorithm"), s),
		usages(p("usages"), s.Usages),
		nameConstraints(p("nameConstraints"), s),
		// Outputs.
		secretTemplate(p("secretTemplate"), s.SecretTemplate),
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

// subject checks the identity of the spec at path as a whole, as
// cert-manager: at least one of a common name (commonName, or the CN of
// literalSubject), dnsNames, ipAddresses, uris, emailAddresses or
// otherNames (reported at path); the common name's length; and
// literalSubject, an RFC 4514 name that replaces subject and commonName.
func subject(path string, s *api.CertificateSpec) ErrorList {
	var errs ErrorList
	p := func(f string) string { return path + "." + f }
	cn := s.CommonName
	if s.LiteralSubject != "" {
		if s.CommonName != "" {
			errs.addValue(p("commonName"), s.CommonName, "must not be set together with literalSubject (put CN= in literalSubject)")
		}
		if subjectSet(s.Subject) {
			errs.add(p("subject"), "must not be set together with literalSubject (no subject properties may be provided)")
		}
		seq, err := pki.ParseLiteralSubject(s.LiteralSubject)
		if err != nil {
			errs.addValue(p("literalSubject"), s.LiteralSubject, "not an RFC 4514 distinguished name: "+err.Error())
			// Its CN is unknown: the identity rule below would only echo this.
			return errs
		}
		for _, rdn := range seq {
			for _, atv := range rdn {
				if v, ok := atv.Value.(string); ok && atv.Type.Equal(oidCommonName) {
					cn = v
				}
			}
		}
	}
	if cn == "" && len(s.DNSNames) == 0 && len(s.IPAddresses) == 0 &&
		len(s.URIs) == 0 && len(s.EmailAddresses) == 0 && len(s.OtherNames) == 0 {
		errs.add(path, "at least one of commonName (from the commonName field or from a literalSubject), dnsNames, emailAddresses, ipAddresses, otherNames or uris must be set")
	}
	if n := utf8.RuneCountInString(cn); n > MaxCommonNameLength {
		errs.addValue(p("commonName"), cn, fmt.Sprintf("must be no more than %d characters (has %d); put long names in dnsNames", MaxCommonNameLength, n))
	} else if err := pki.CheckCommonName(cn); err != nil {
		errs.addValue(p("commonName"), cn, "invalid common name: "+err.Error())
	}
	return errs
}

// oidCommonName is the commonName attribute type (2.5.4.3).
var oidCommonName = asn1.ObjectIdentifier{2, 5, 4, 3}

// subjectSet reports whether any subject property is set.
func subjectSet(x *api.X509Subject) bool {
	return x != nil && (len(x.Organizations) > 0 || len(x.Countries) > 0 || len(x.OrganizationalUnits) > 0 ||
		len(x.Localities) > 0 || len(x.Provinces) > 0 || len(x.StreetAddresses) > 0 || len(x.PostalCodes) > 0 ||
		x.SerialNumber != "")
}

// dnsNames checks each spec.dnsNames entry is a DNS name (wildcards
// allowed) of the characters the approval step accepts in the CSR
// (pki.CheckDNSName: LDH labels, valid IDNA A-labels). A label longer
// than 63 octets is accepted here, as cert-manager does; the approval
// step refuses to sign it (docs/guide/migrating.md).
func dnsNames(path string, names []string) ErrorList {
	var errs ErrorList
	for i, n := range names {
		if msg := dnsSAN(n); msg != "" {
			errs.addValue(idx(path, i), n, "invalid DNS name: "+msg)
		} else if err := pki.CheckDNSName(shortLabels(n), true); err != nil {
			errs.addValue(idx(path, i), n, "invalid DNS name: "+err.Error())
		}
	}
	return errs
}

// shortLabels replaces each label of n longer than 63 octets (already
// checked by dnsLabel) by a 63-octet stand-in, so that pki.CheckDNSName
// judges the rest of the name.
func shortLabels(n string) string {
	labels := strings.Split(n, ".")
	for i, l := range labels {
		if len(l) > 63 {
			labels[i] = strings.Repeat("a", 63)
		}
	}
	return strings.Join(labels, ".")
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

// uris checks each spec.uris entry is a URI of the characters the
// approval step accepts in the CSR (pki.CheckURI). A URI without a scheme
// ("foo.bar") is accepted here, as cert-manager does, and checked as if
// it had one; the approval step refuses to sign it (docs/guide/migrating.md).
func uris(path string, us []string) ErrorList {
	var errs ErrorList
	for i, n := range us {
		u, err := url.Parse(n)
		switch {
		case n == "":
			errs.add(idx(path, i), "invalid URI: must not be empty")
		case err != nil:
			errs.addValue(idx(path, i), n, "invalid URI")
		case u.Scheme == "":
			if err := pki.CheckURI("x://" + n); err != nil {
				errs.addValue(idx(path, i), n, "invalid URI: "+err.Error())
			}
		default:
			if err := pki.CheckURI(n); err != nil {
				errs.addValue(idx(path, i), n, "invalid URI: "+err.Error())
			}
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

// MinimumRenewBefore is cert-manager's smallest renewBefore (and
// smallest renewBefore a renewBeforePercentage may come to).
const MinimumRenewBefore = 5 * time.Minute

// MinimumLifetimeBeforeRenewal is the least time a Certificate of
// duration must have between its issuance and its renewal point:
// max(MinimumRenewBefore, duration/10). A renewBefore closer to the
// duration would re-issue (a signature, secret writes, a deploy hook)
// every few seconds for ever.
func MinimumLifetimeBeforeRenewal(duration time.Duration) time.Duration {
	return max(MinimumRenewBefore, duration/10)
}

// lifetime checks the duration of the spec at path (at least
// api.MinimumDuration, certfn's 600 s) and its renewal, as cert-manager's
// ValidateDuration: renewBefore or renewBeforePercentage, not both (an
// error at each); renewBefore at least MinimumRenewBefore and shorter
// than the duration (defaulted), and leaving at least
// MinimumLifetimeBeforeRenewal of it before the renewal (certfn's rule,
// stricter than cert-manager's); a renewBeforePercentage that comes to a
// renewBefore of at least MinimumRenewBefore and shorter than the
// duration. The percentage's renewBefore is computed as cert-manager's
// webhook computes it, duration × (100 − percentage) / 100, so that the
// same manifests are accepted.
func lifetime(path string, s *api.CertificateSpec) ErrorList {
	var errs ErrorList
	p := func(f string) string { return path + "." + f }
	duration := s.DurationOrDefault()
	if s.Duration != nil && s.Duration.Duration < api.MinimumDuration {
		errs.addValue(p("duration"), s.Duration.Duration.String(), fmt.Sprintf("must be at least %s", api.MinimumDuration))
	}
	if s.RenewBefore != nil && s.RenewBeforePercentage != nil {
		const both = "renewBefore and renewBeforePercentage are mutually exclusive and cannot both be set"
		errs.add(p("renewBefore"), both)
		errs.add(p("renewBeforePercentage"), both)
	}
	if rb := s.RenewBefore; rb != nil {
		if rb.Duration < MinimumRenewBefore {
			errs.addValue(p("renewBefore"), rb.Duration.String(), fmt.Sprintf("must be at least %s", MinimumRenewBefore))
		}
		switch floor := MinimumLifetimeBeforeRenewal(duration); {
		case rb.Duration >= duration:
			errs.addValue(p("renewBefore"), rb.Duration.String(), fmt.Sprintf("must be shorter than the duration (%s)", duration))
		case duration-rb.Duration < floor:
			errs.addValue(p("renewBefore"), rb.Duration.String(), fmt.Sprintf(
				"leaves %s between issuance and renewal with a duration of %s; duration - renewBefore must be at least max(5m, duration/10) = %s, so renewBefore may be at most %s",
				duration-rb.Duration, duration, floor, duration-floor))
		}
	}
	if pct := s.RenewBeforePercentage; pct != nil {
		// float64: duration × (100 − pct) overflows int64 for long durations.
		rb := time.Duration(float64(duration) * float64(100-*pct) / 100)
		v := strconv.Itoa(int(*pct))
		if rb < MinimumRenewBefore {
			// rb, as cert-manager's webhook computes it, is also the time
			// between issuance and renewal at run time (the renewal comes
			// percentage × lifetime before expiry): this is the floor.
			errs.addValue(p("renewBeforePercentage"), v, fmt.Sprintf(
				"must result in a renewBefore of at least %s: it leaves %s between issuance and renewal with a duration of %s, at least %s is required",
				MinimumRenewBefore, rb, duration, MinimumRenewBefore))
		}
		if rb >= duration {
			errs.addValue(p("renewBeforePercentage"), v, "must result in a renewBefore shorter than the duration (a percentage between 1 and 99)")
		}
	}
	return errs
}

// renewal checks spec.renewal: the policy is RenewBefore or Disabled;
// Disabled takes no windows; each window has a windowDuration (positive),
// an IANA timezone (or none: UTC) and a cron schedule that parses.
func renewal(path string, r *api.CertificateRenewal) ErrorList {
	if r == nil {
		return nil
	}
	var errs ErrorList
	switch r.Policy {
	case api.RenewalPolicyRenewBefore:
	case api.RenewalPolicyDisabled:
		if len(r.Windows) > 0 {
			errs.add(path+".windows", "windows cannot be set when renewal.policy is Disabled")
		}
		return errs
	default:
		errs.addValue(path+".policy", string(r.Policy), "unsupported value; want Disabled or RenewBefore")
	}
	for i, w := range r.Windows {
		wp := idx(path+".windows", i)
		if w.WindowDuration == nil || w.WindowDuration.Duration <= 0 {
			errs.add(wp+".windowDuration", "windowDuration must be specified and should be greater than 0")
		}
		tzOK := true
		if w.Timezone != "" {
			if _, err := time.LoadLocation(w.Timezone); err != nil {
				tzOK = false
				errs.addValue(wp+".timezone", w.Timezone, "invalid value for timezone; timezone must be an IANA time zone such as America/Denver")
			}
		}
		if tzOK {
			if _, err := pki.ParseRenewalCron(w.Cron, w.Timezone); err != nil {
				errs.addValue(wp+".cron", w.Cron, "invalid cron syntax: "+err.Error()+"; cron needs to follow: minute hour day-of-month month day-of-week")
			}
		}
	}
	return errs
}

// secretTemplate checks spec.secretTemplate as cert-manager: labels are
// Kubernetes labels; annotations are Kubernetes annotations (qualified
// names, at most 256 KiB in total) and none is cert-manager's own
// (cert-manager.io/*, except cert-manager.io/allow-direct-injection).
func secretTemplate(path string, t *api.CertificateSecretTemplate) ErrorList {
	if t == nil {
		return nil
	}
	var errs ErrorList
	if len(t.Labels) > 0 {
		errs = append(errs, k8sLabels(path+".labels", t.Labels)...)
	}
	if len(t.Annotations) > 0 {
		ap := path + ".annotations"
		for _, k := range sortedStringKeys(t.Annotations) {
			if strings.HasPrefix(k, "cert-manager.io/") && k != "cert-manager.io/allow-direct-injection" {
				errs.addValue(ap, k, "cert-manager.io/* annotations are not allowed (cert-manager and certfn set them)")
			}
		}
		errs = append(errs, k8sAnnotations(ap, t.Annotations)...)
		errs = append(errs, SecretFileAnnotations(ap, t.Annotations)...)
	}
	return errs
}

// SecretFileAnnotations checks certfn's secret file annotations
// (api.AnnotationSecretFileMode, …Owner, …Group) in annotations at path:
// a mode no other user can write, user and group names or numbers.
func SecretFileAnnotations(path string, annotations map[string]string) ErrorList {
	var errs ErrorList
	if v, ok := annotations[api.AnnotationSecretFileMode]; ok {
		if _, err := api.ParseSecretFileMode(v); err != nil {
			errs.add(path+"["+api.AnnotationSecretFileMode+"]", err.Error())
		}
	}
	for _, k := range []string{api.AnnotationSecretFileOwner, api.AnnotationSecretFileGroup} {
		if v, ok := annotations[k]; ok {
			if err := api.CheckSecretFileOwner(v); err != nil {
				errs.add(path+"["+k+"]", err.Error())
			}
		}
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
			// cert-manager reports duplicates at additionalOutputFormats[type].
			errs.addValue(path+"[type]", string(f.Type), "duplicate output format")
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
		// Ed25519 keys have no size; a size is ignored, as cert-manager does.
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
