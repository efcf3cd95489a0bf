package validation

import (
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
)

// Transcription of internal/apis/certmanager/validation/certificate_test.go
// (cert-manager at upstreamCommit): TestValidateCertificate,
// TestValidateDuration, Test_validateAdditionalOutputFormats,
// Test_validateLiteralSubject, Test_validateKeystores.

// upCert is upstream's base Certificate spec: commonName "testcn",
// secretName "abc", issuerRef validIssuerRef (name "name", kind
// ClusterIssuer), changed by mods.
func upCert(mods ...func(*api.CertificateSpec)) func() ErrorList {
	return func() ErrorList {
		s := &api.CertificateSpec{CommonName: "testcn", SecretName: "abc",
			IssuerRef: api.IssuerReference{Name: "name", Kind: api.KindClusterIssuer}}
		for _, m := range mods {
			m(s)
		}
		return CertificateSpec(s, "spec")
	}
}

// upDuration runs only the lifetime rules, as upstream's ValidateDuration.
func upDuration(mods ...func(*api.CertificateSpec)) func() ErrorList {
	return func() ErrorList {
		s := &api.CertificateSpec{CommonName: "testcn", SecretName: "abc",
			IssuerRef: api.IssuerReference{Name: "name", Kind: api.KindClusterIssuer}}
		for _, m := range mods {
			m(s)
		}
		return lifetime("spec", s)
	}
}

func key(alg api.PrivateKeyAlgorithm, size int) func(*api.CertificateSpec) {
	return func(s *api.CertificateSpec) { s.PrivateKey = &api.CertificatePrivateKey{Algorithm: alg, Size: size} }
}

func d(x time.Duration) *api.Duration { return api.NewDuration(x) }

const (
	day  = 24 * time.Hour
	year = 365 * day
)

var certificateCases = []upstreamCase{
	// TestValidateCertificate
	{test: "TestValidateCertificate", name: "valid basic certificate", run: upCert()},
	{test: "TestValidateCertificate", name: "valid with blank issuerRef kind and no group", run: upCert(func(s *api.CertificateSpec) { s.IssuerRef = api.IssuerReference{Name: "valid"} })},
	{test: "TestValidateCertificate", name: "valid with 'Issuer' issuerRef kind and no group", run: upCert(func(s *api.CertificateSpec) { s.IssuerRef = api.IssuerReference{Name: "valid", Kind: "Issuer"} })},
	{test: "TestValidateCertificate", name: "valid with org set", run: upCert(func(s *api.CertificateSpec) { s.Subject = &api.X509Subject{Organizations: []string{"testorg"}} })},
	{test: "TestValidateCertificate", name: "valid with 'Issuer' issuerRef kind and explicit internal group", run: upCert(func(s *api.CertificateSpec) {
		s.IssuerRef = api.IssuerReference{Name: "valid", Kind: "Issuer", Group: "cert-manager.io"}
	})},
	{test: "TestValidateCertificate", name: "invalid with external issuerRef kind and empty group", run: upCert(func(s *api.CertificateSpec) {
		s.IssuerRef = api.IssuerReference{Name: "abc", Kind: "AWSPCAClusterIssuer"}
	}), paths: []string{"spec.issuerRef.kind"}},
	{test: "TestValidateCertificate", name: "valid with external issuerRef kind and external group", run: upCert(func(s *api.CertificateSpec) {
		s.IssuerRef = api.IssuerReference{Name: "abc", Kind: "AWSPCAClusterIssuer", Group: "awspca.cert-manager.io"}
	})},
	{test: "TestValidateCertificate", name: "certificate missing secretName", run: upCert(func(s *api.CertificateSpec) { s.SecretName = "" }), paths: []string{"spec.secretName"}},
	{test: "TestValidateCertificate", name: "certificate invalid secretName", run: upCert(func(s *api.CertificateSpec) { s.SecretName = "testFoo" }), paths: []string{"spec.secretName"}},
	{test: "TestValidateCertificate", name: "certificate with no domains, URIs or common name", run: upCert(func(s *api.CertificateSpec) { s.CommonName = "" }), paths: []string{"spec"}},
	{test: "TestValidateCertificate", name: "invalid with no issuerRef", run: upCert(func(s *api.CertificateSpec) { s.IssuerRef = api.IssuerReference{} }), paths: []string{"spec.issuerRef.name"}},
	{test: "TestValidateCertificate", name: "valid certificate with only dnsNames", run: upCert(func(s *api.CertificateSpec) { s.CommonName, s.DNSNames = "", []string{"validdnsname"} })},
	{test: "TestValidateCertificate", name: "valid certificate with rsa keyAlgorithm specified and no keySize", run: upCert(key(api.RSAKeyAlgorithm, 0))},
	{test: "TestValidateCertificate", name: "valid certificate with rsa keyAlgorithm specified with keySize 2048", run: upCert(key(api.RSAKeyAlgorithm, 2048))},
	{test: "TestValidateCertificate", name: "valid certificate with rsa keyAlgorithm specified with keySize 4096", run: upCert(key(api.RSAKeyAlgorithm, 4096))},
	{test: "TestValidateCertificate", name: "valid certificate with rsa keyAlgorithm specified with keySize 8192", run: upCert(key(api.RSAKeyAlgorithm, 8192))},
	{test: "TestValidateCertificate", name: "valid certificate with ecdsa keyAlgorithm specified and no keySize", run: upCert(key(api.ECDSAKeyAlgorithm, 0))},
	{test: "TestValidateCertificate", name: "valid certificate with ecdsa keyAlgorithm specified with keySize 256", run: upCert(key(api.ECDSAKeyAlgorithm, 256))},
	{test: "TestValidateCertificate", name: "valid certificate with ecdsa keyAlgorithm specified with keySize 384", run: upCert(key(api.ECDSAKeyAlgorithm, 384))},
	{test: "TestValidateCertificate", name: "valid certificate with ecdsa keyAlgorithm specified with keySize 521", run: upCert(key(api.ECDSAKeyAlgorithm, 521))},
	{test: "TestValidateCertificate", name: "valid certificate with ed25519 keyAlgorithm", run: upCert(key(api.Ed25519KeyAlgorithm, 521))},
	{test: "TestValidateCertificate", name: "valid certificate with keyAlgorithm not specified and keySize specified", run: upCert(key("", 2048))},
	{test: "TestValidateCertificate", name: "certificate with rsa keyAlgorithm specified and invalid keysize 1024", run: upCert(key(api.RSAKeyAlgorithm, 1024)), paths: []string{"spec.privateKey.size"}},
	{test: "TestValidateCertificate", name: "certificate with rsa keyAlgorithm specified and invalid keysize 8196", run: upCert(key(api.RSAKeyAlgorithm, 8196)), paths: []string{"spec.privateKey.size"}},
	{test: "TestValidateCertificate", name: "certificate with ecdsa keyAlgorithm specified and invalid keysize", run: upCert(key(api.ECDSAKeyAlgorithm, 100)), paths: []string{"spec.privateKey.size"}},
	{test: "TestValidateCertificate", name: "certificate with invalid keyAlgorithm", run: upCert(key("blah", 0)), paths: []string{"spec.privateKey.algorithm"}},
	{test: "TestValidateCertificate", name: "valid certificate with ipAddresses", run: upCert(func(s *api.CertificateSpec) { s.IPAddresses = []string{"127.0.0.1"} })},
	{test: "TestValidateCertificate", name: "certificate with invalid ipAddresses", run: upCert(func(s *api.CertificateSpec) { s.IPAddresses = []string{"blah"} }), paths: []string{"spec.ipAddresses[0]"}},
	{test: "TestValidateCertificate", name: "valid certificate with commonName exactly 64 bytes", run: upCert(func(s *api.CertificateSpec) {
		s.CommonName = "this-is-a-big-long-string-which-is-exactly-sixty-four-characters"
	})},
	{test: "TestValidateCertificate", name: "invalid certificate with commonName longer than 64 bytes", run: upCert(func(s *api.CertificateSpec) {
		s.CommonName = "this-is-a-big-long-string-which-has-exactly-sixty-five-characters"
	}), paths: []string{"spec.commonName"}},
	{test: "TestValidateCertificate", name: "valid certificate with no commonName and second dnsName longer than 64 bytes", run: upCert(func(s *api.CertificateSpec) {
		s.CommonName, s.DNSNames = "", []string{"dnsName", "this-is-a-big-long-string-which-has-exactly-sixty-five-characters"}
	})},
	{test: "TestValidateCertificate", name: "valid certificate with commonName and first dnsName longer than 64 bytes", run: upCert(func(s *api.CertificateSpec) {
		s.DNSNames = []string{"this-is-a-big-long-string-which-has-exactly-sixty-five-characters", "dnsName"}
	})},
	{test: "TestValidateCertificate", name: "valid certificate with basic keyusage", run: upCert(func(s *api.CertificateSpec) { s.Usages = []api.KeyUsage{"signing"} })},
	{test: "TestValidateCertificate", name: "valid certificate with multiple keyusage", run: upCert(func(s *api.CertificateSpec) { s.Usages = []api.KeyUsage{"signing", "s/mime"} })},
	{test: "TestValidateCertificate", name: "invalid certificate with nonexistent keyusage", run: upCert(func(s *api.CertificateSpec) { s.Usages = []api.KeyUsage{"nonexistent"} }), paths: []string{"spec.usages[0]"}},
	{test: "TestValidateCertificate", name: "valid certificate with only URI SAN name", run: upCert(func(s *api.CertificateSpec) { s.CommonName, s.URIs = "", []string{"foo.bar"} })},
	{test: "TestValidateCertificate", name: "valid certificate with only email SAN", run: upCert(func(s *api.CertificateSpec) { s.CommonName, s.EmailAddresses = "", []string{"alice@example.com"} })},
	{test: "TestValidateCertificate", name: "invalid certificate with incorrect email", run: upCert(func(s *api.CertificateSpec) { s.CommonName, s.EmailAddresses = "", []string{"alice.example.com"} }), paths: []string{"spec.emailAddresses[0]"}},
	{test: "TestValidateCertificate", name: "invalid certificate with email formatted with name", run: upCert(func(s *api.CertificateSpec) {
		s.CommonName, s.EmailAddresses = "", []string{"Alice <alice@example.com>"}
	}), paths: []string{"spec.emailAddresses[0]"}},
	{test: "TestValidateCertificate", name: "invalid certificate with email formatted with mailto", run: upCert(func(s *api.CertificateSpec) {
		s.CommonName, s.EmailAddresses = "", []string{"mailto:alice@example.com"}
	}), paths: []string{"spec.emailAddresses[0]"}},
	{test: "TestValidateCertificate", name: "valid certificate with revision history limit == 1", run: upCert(func(s *api.CertificateSpec) { s.RevisionHistoryLimit = ptr(int32(1)) })},
	{test: "TestValidateCertificate", name: "invalid certificate with revision history limit < 1", run: upCert(func(s *api.CertificateSpec) { s.RevisionHistoryLimit = ptr(int32(0)) }), paths: []string{"spec.revisionHistoryLimit"}},
	{test: "TestValidateCertificate", name: "valid with empty secretTemplate", run: upCert(func(s *api.CertificateSpec) {
		s.SecretTemplate = &api.CertificateSecretTemplate{Annotations: map[string]string{}, Labels: map[string]string{}}
	})},
	{test: "TestValidateCertificate", name: "valid with 'CertificateSecretTemplate' labels and annotations", run: upCert(func(s *api.CertificateSpec) {
		s.SecretTemplate = &api.CertificateSecretTemplate{Annotations: map[string]string{"my-annotation.com/foo": "app=bar"},
			Labels: map[string]string{"my-label.com/foo": "evn-production"}}
	})},
	{test: "TestValidateCertificate", name: "invalid with disallowed 'CertificateSecretTemplate' annotations", run: upCert(func(s *api.CertificateSpec) {
		s.SecretTemplate = &api.CertificateSecretTemplate{Annotations: map[string]string{"app.com/valid": "valid",
			"cert-manager.io/alt-names": "example.com", "cert-manager.io/certificate-name": "selfsigned-cert",
			"cert-manager.io/allow-direct-injection": "true"}}
	}), paths: []string{"spec.secretTemplate.annotations", "spec.secretTemplate.annotations"}},
	{test: "TestValidateCertificate", name: "invalid due to too long 'CertificateSecretTemplate' annotations", run: upCert(func(s *api.CertificateSpec) {
		s.SecretTemplate = &api.CertificateSecretTemplate{Annotations: map[string]string{"app.com/invalid": strings.Repeat("0", 256*(1<<10))}}
	}), paths: []string{"spec.secretTemplate.annotations"}},
	{test: "TestValidateCertificate", name: "invalid due to not allowed 'CertificateSecretTemplate' labels", run: upCert(func(s *api.CertificateSpec) {
		s.SecretTemplate = &api.CertificateSecretTemplate{Labels: map[string]string{"app.com/invalid-chars": "invalid=chars"}}
	}), paths: []string{"spec.secretTemplate.labels"}},
	{test: "TestValidateCertificate", name: "valid with name constraints", run: upCert(func(s *api.CertificateSpec) {
		s.IsCA, s.NameConstraints = true, &api.NameConstraints{Permitted: &api.NameConstraintItem{DNSDomains: []string{"example.com"}}}
	})},
	{test: "TestValidateCertificate", name: "invalid with name constraints", run: upCert(func(s *api.CertificateSpec) {
		s.IsCA, s.NameConstraints = true, &api.NameConstraints{}
	}), paths: []string{"spec.nameConstraints"}},
	{test: "TestValidateCertificate", name: "valid with name constraints ipRanges", run: upCert(func(s *api.CertificateSpec) {
		s.IsCA, s.NameConstraints = true, &api.NameConstraints{
			Permitted: &api.NameConstraintItem{IPRanges: []string{"10.0.0.0/8", "192.168.0.0/16", "2001:db8::/32"}},
			Excluded:  &api.NameConstraintItem{IPRanges: []string{"172.16.0.0/12", "fd00::/8"}}}
	})},
	{test: "TestValidateCertificate", name: "invalid with name constraints ipRanges", run: upCert(func(s *api.CertificateSpec) {
		s.IsCA, s.NameConstraints = true, &api.NameConstraints{
			Permitted: &api.NameConstraintItem{IPRanges: []string{"10.0.0.0", "10.0.0.0/8", "not-a-cidr"}},
			Excluded:  &api.NameConstraintItem{IPRanges: []string{"2001:db8::/32", "192.168.0.1"}}}
	}), paths: []string{"spec.nameConstraints.permitted.ipRanges[0]", "spec.nameConstraints.permitted.ipRanges[2]", "spec.nameConstraints.excluded.ipRanges[1]"}},
	{test: "TestValidateCertificate", name: "signature algorithm SHA+RSA allowed for empty key (RSA)", run: upCert(func(s *api.CertificateSpec) { s.SignatureAlgorithm = api.SignatureSHA256WithRSA })},
	{test: "TestValidateCertificate", name: "signature algorithm SHA+RSA allowed for RSA key", run: upCert(key(api.RSAKeyAlgorithm, 3072), func(s *api.CertificateSpec) { s.SignatureAlgorithm = api.SignatureSHA256WithRSA })},
	{test: "TestValidateCertificate", name: "signature algorithm SHA+RSA not allowed for ECDSA key", run: upCert(key(api.ECDSAKeyAlgorithm, 0), func(s *api.CertificateSpec) { s.SignatureAlgorithm = api.SignatureSHA256WithRSA }), paths: []string{"spec.signatureAlgorithm"}},
	{test: "TestValidateCertificate", name: "signature algorithm SHA+ECDSA allowed for ECDSA key", run: upCert(key(api.ECDSAKeyAlgorithm, 0), func(s *api.CertificateSpec) { s.SignatureAlgorithm = api.SignatureECDSAWithSHA256 })},
	{test: "TestValidateCertificate", name: "signature algorithm SHA+ECDSA not allowed for RSA key", run: upCert(key(api.RSAKeyAlgorithm, 0), func(s *api.CertificateSpec) { s.SignatureAlgorithm = api.SignatureECDSAWithSHA256 }), paths: []string{"spec.signatureAlgorithm"}},
	{test: "TestValidateCertificate", name: "signature algorithm Ed25519 not allowed for RSA key", run: upCert(key(api.RSAKeyAlgorithm, 0), func(s *api.CertificateSpec) { s.SignatureAlgorithm = api.SignaturePureEd25519 }), paths: []string{"spec.signatureAlgorithm"}},
	{test: "TestValidateCertificate", name: "signature algorithm Ed25519 not allowed for ECDSA key", run: upCert(key(api.ECDSAKeyAlgorithm, 0), func(s *api.CertificateSpec) { s.SignatureAlgorithm = api.SignaturePureEd25519 }), paths: []string{"spec.signatureAlgorithm"}},
	{test: "TestValidateCertificate", name: "signature algorithm Ed25519 allowed for Ed25519 key", run: upCert(key(api.Ed25519KeyAlgorithm, 0), func(s *api.CertificateSpec) { s.SignatureAlgorithm = api.SignaturePureEd25519 })},
	{test: "TestValidateCertificate", name: "explicit rotation policy", run: upCert(func(s *api.CertificateSpec) {
		s.PrivateKey = &api.CertificatePrivateKey{RotationPolicy: api.RotationPolicyNever}
	})},
	{test: "TestValidateCertificate", name: "invalid windows when renewal policy is disabled", run: upCert(func(s *api.CertificateSpec) {
		s.PrivateKey = &api.CertificatePrivateKey{RotationPolicy: api.RotationPolicyNever}
		s.Renewal = &api.CertificateRenewal{Policy: api.RenewalPolicyDisabled, Windows: []api.CertificateRenewalWindows{{WindowDuration: d(2 * time.Hour), Cron: "0 12 * * *"}}}
	}), paths: []string{"spec.renewal.windows"}},
	{test: "TestValidateCertificate", name: "valid renewal config with single window", run: upCert(func(s *api.CertificateSpec) {
		s.PrivateKey = &api.CertificatePrivateKey{RotationPolicy: api.RotationPolicyNever}
		s.Renewal = &api.CertificateRenewal{Policy: api.RenewalPolicyRenewBefore, Windows: []api.CertificateRenewalWindows{{WindowDuration: d(2 * time.Hour), Cron: "0 12 * * *"}}}
	})},
	{test: "TestValidateCertificate", name: "invalid renewal cron with timezone prefix and no schedule", run: upCert(func(s *api.CertificateSpec) {
		s.PrivateKey = &api.CertificatePrivateKey{RotationPolicy: api.RotationPolicyNever}
		s.Renewal = &api.CertificateRenewal{Policy: api.RenewalPolicyRenewBefore, Windows: []api.CertificateRenewalWindows{{WindowDuration: d(2 * time.Hour), Cron: "CRON_TZ=UTC"}}}
	}), paths: []string{"spec.renewal.windows[0].cron"}},

	// TestValidateDuration
	{test: "TestValidateDuration", name: "default duration and renewBefore", run: upDuration()},
	{test: "TestValidateDuration", name: "valid duration and renewBefore", run: upDuration(func(s *api.CertificateSpec) { s.Duration, s.RenewBefore = d(year), d(180*day) })},
	{test: "TestValidateDuration", name: "unset duration, valid renewBefore for default", run: upDuration(func(s *api.CertificateSpec) { s.RenewBefore = d(30 * day) })},
	{test: "TestValidateDuration", name: "unset renewBefore, valid duration for default", run: upDuration(func(s *api.CertificateSpec) { s.Duration = d(year) })},
	{test: "TestValidateDuration", name: "renewBefore is bigger than the default duration", run: upDuration(func(s *api.CertificateSpec) { s.RenewBefore = d(10 * year) }), paths: []string{"spec.renewBefore"}},
	{test: "TestValidateDuration", name: "renewBefore is bigger than the duration", run: upDuration(func(s *api.CertificateSpec) { s.Duration, s.RenewBefore = d(30*day), d(year) }), paths: []string{"spec.renewBefore"}},
	{test: "TestValidateDuration", name: "renewBefore is less than the minimum permitted value", run: upDuration(func(s *api.CertificateSpec) { s.RenewBefore = d(time.Second) }), paths: []string{"spec.renewBefore"}},
	{test: "TestValidateDuration", name: "renewBefore and renewBeforePercentage both set", run: upDuration(func(s *api.CertificateSpec) {
		s.RenewBefore, s.RenewBeforePercentage = d(30*day), ptr(int32(95))
	}), paths: []string{"spec.renewBefore", "spec.renewBeforePercentage"}},
	{test: "TestValidateDuration", name: "valid duration and renewBeforePercentage", run: upDuration(func(s *api.CertificateSpec) { s.Duration, s.RenewBeforePercentage = d(year), ptr(int32(95)) })},
	{test: "TestValidateDuration", name: "unset duration, valid renewBeforePercentage for default", run: upDuration(func(s *api.CertificateSpec) { s.RenewBeforePercentage = ptr(int32(95)) })},
	{test: "TestValidateDuration", name: "renewBeforePercentage is equal to duration", run: upDuration(func(s *api.CertificateSpec) { s.RenewBeforePercentage = ptr(int32(0)) }), paths: []string{"spec.renewBeforePercentage"}},
	{test: "TestValidateDuration", name: "renewBeforePercentage results in less than the minimum permitted value", run: upDuration(func(s *api.CertificateSpec) { s.RenewBeforePercentage = ptr(int32(100)) }), paths: []string{"spec.renewBeforePercentage"}},
	{test: "TestValidateDuration", name: "duration is less than the minimum permitted value", run: upDuration(func(s *api.CertificateSpec) { s.Duration, s.RenewBefore = d(30*time.Minute), d(10*time.Minute) }),
		paths:  []string{"spec.duration"},
		certfn: &divergence{why: "certfn's minimum duration is 600 s (KEP-2784), cert-manager's 1 h: a 30-minute certificate is valid"}},
	{test: "TestValidateDuration", name: "renewBeforePercentage=1 with 10-year duration does not overflow int64", run: upDuration(func(s *api.CertificateSpec) { s.Duration, s.RenewBeforePercentage = d(10*year), ptr(int32(1)) })},
	{test: "TestValidateDuration", name: "renewBeforePercentage=1 with 3-year duration does not overflow int64", run: upDuration(func(s *api.CertificateSpec) { s.Duration, s.RenewBeforePercentage = d(3*year), ptr(int32(1)) })},

	// Test_validateAdditionalOutputFormats: upstream calls the function
	// with made-up types ("foo"); the CRD's enum refuses those before the
	// webhook in a cluster, and certfn refuses them too, so the cases use
	// the two real types where they test uniqueness.
	{test: "Test_validateAdditionalOutputFormats", name: "if no formats defined, expect no error", run: upCert(func(s *api.CertificateSpec) { s.AdditionalOutputFormats = []api.CertificateAdditionalOutputFormat{} })},
	{test: "Test_validateAdditionalOutputFormats", name: "if single format defined, expect no error", run: upCert(outputs("DER"))},
	{test: "Test_validateAdditionalOutputFormats", name: "if multiple unique formats defined, expect no error", run: upCert(outputs("DER", "CombinedPEM"))},
	{test: "Test_validateAdditionalOutputFormats", name: "if multiple formats defined but 2 non-unique, expect error", run: upCert(outputs("DER", "CombinedPEM", "DER")), paths: []string{"spec.additionalOutputFormats[type]"}},
	{test: "Test_validateAdditionalOutputFormats", name: "if multiple formats defined but multiple non-unique, expect error", run: upCert(outputs("DER", "CombinedPEM", "CombinedPEM", "DER", "DER")), paths: []string{"spec.additionalOutputFormats[type]"}},

	// Test_validateLiteralSubject (feature gate on; see notTranscribed)
	{test: "Test_validateLiteralSubject", name: "valid with only `literalSubject` and no `Subject`  or `CommonName` provided", run: upCert(literal("CN=testcn"))},
	{test: "Test_validateLiteralSubject", name: "valid with only `literalSubject` and only a `Subject.SerialNumber` provided", run: upCert(literal("CN=testcn"), func(s *api.CertificateSpec) { s.Subject = &api.X509Subject{SerialNumber: "1"} }), paths: []string{"spec.subject"}},
	{test: "Test_validateLiteralSubject", name: "valid with a `literalSubject` containing CN with special characters, multiple DC and well-known rfc4514 and rfc5280 RDN OIDs", run: upCert(literal(`CN=James \"Jim\" Smith\, III,DC=dc,DC=net,UID=jamessmith,STREET=La Rambla,L=Barcelona,C=Spain,O=Acme,OU=IT,OU=Admins`))},
	{test: "Test_validateLiteralSubject", name: "invalid with a `literalSubject` without CN and no dnsNames, ipAddresses, or emailAddress", run: upCert(literal("O=SomeCorp")), paths: []string{"spec"}},
	{test: "Test_validateLiteralSubject", name: "invalid with a `literalSubject` and any `Subject` other than serialNumber", run: upCert(literal("CN=testcn"), func(s *api.CertificateSpec) { s.Subject = &api.X509Subject{Organizations: []string{"US"}} }), paths: []string{"spec.subject"}},
	{test: "Test_validateLiteralSubject", name: "invalid with a `literalSubject` and a `commonName`", run: upCert(func(s *api.CertificateSpec) { s.LiteralSubject = "CN=testcn" }), paths: []string{"spec.commonName"}},
	{test: "Test_validateLiteralSubject", name: "invalid with an unknown OID", run: upCert(literal("C=O,B=TX,CN=foo")), paths: []string{"spec.literalSubject"}},

	// Test_validateKeystores
	{test: "Test_validateKeystores", name: "JKS PasswordSecretRef and Password are mutually exclusive", run: upCert(func(s *api.CertificateSpec) {
		s.Keystores = &api.CertificateKeystores{JKS: &api.JKSKeystore{PasswordSecretRef: secretKey("secret", ""), Password: ptr("changeit")}}
	}), paths: []string{"spec.keystores.jks"}},
	{test: "Test_validateKeystores", name: "JKS one of PasswordSecretRef / Password is required (nil password)", run: upCert(func(s *api.CertificateSpec) {
		s.Keystores = &api.CertificateKeystores{JKS: &api.JKSKeystore{}}
	}), paths: []string{"spec.keystores.jks"}},
	{test: "Test_validateKeystores", name: "JKS one of PasswordSecretRef / Password is required (empty strings)", run: upCert(func(s *api.CertificateSpec) {
		s.Keystores = &api.CertificateKeystores{JKS: &api.JKSKeystore{Password: ptr("")}}
	}), paths: []string{"spec.keystores.jks.password"}},
	{test: "Test_validateKeystores", name: "PKCS12 PasswordSecretRef and Password are mutually exclusive", run: upCert(func(s *api.CertificateSpec) {
		s.Keystores = &api.CertificateKeystores{PKCS12: &api.PKCS12Keystore{PasswordSecretRef: secretKey("secret", ""), Password: ptr("changeit")}}
	}), paths: []string{"spec.keystores.pkcs12"}},
	{test: "Test_validateKeystores", name: "PKCS12 one of PasswordSecretRef / Password is required (nil password)", run: upCert(func(s *api.CertificateSpec) {
		s.Keystores = &api.CertificateKeystores{PKCS12: &api.PKCS12Keystore{}}
	}), paths: []string{"spec.keystores.pkcs12"}},
	{test: "Test_validateKeystores", name: "PKCS12 one of PasswordSecretRef / Password is required (empty strings)", run: upCert(func(s *api.CertificateSpec) {
		s.Keystores = &api.CertificateKeystores{PKCS12: &api.PKCS12Keystore{Password: ptr("")}}
	}), paths: []string{"spec.keystores.pkcs12.password"}},
}

// certificateNotTranscribed are the certificate_test.go cases that test a
// Kubernetes feature gate certfn has one fixed setting of.
var certificateNotTranscribed = []notTranscribed{
	{"TestValidateCertificate", "valid name constraints with feature gate disabled",
		"feature gate NameConstraints off: certfn always has name constraints (the gate-on cases are transcribed)"},
	{"Test_validateLiteralSubject", "featureGate should be enabled to use literalSubject",
		"feature gate LiteralCertificateSubject off: certfn always has literalSubject (the gate-on cases are transcribed)"},
}

func literal(s string) func(*api.CertificateSpec) {
	return func(c *api.CertificateSpec) { c.CommonName, c.LiteralSubject = "", s }
}

func outputs(types ...string) func(*api.CertificateSpec) {
	return func(s *api.CertificateSpec) {
		for _, t := range types {
			s.AdditionalOutputFormats = append(s.AdditionalOutputFormats, api.CertificateAdditionalOutputFormat{Type: api.CertificateOutputFormatType(t)})
		}
	}
}

func secretKey(name, key string) api.SecretKeySelector {
	return api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: name}, Key: key}
}

func TestUpstreamCertificate(t *testing.T) {
	runUpstream(t, "internal/apis/certmanager/validation/certificate_test.go", "", certificateCases)
	countCases(t, "certificate_test.go", certificateCases, certificateNotTranscribed)
}
