package api

// Well-known API versions and kinds.
const (
	CertManagerGroup = "cert-manager.io"
	CertManagerV1    = "cert-manager.io/v1"
	ACMEGroup        = "acme.cert-manager.io"
	ACMEV1           = "acme.cert-manager.io/v1"

	KindCertificate        = "Certificate"
	KindCertificateRequest = "CertificateRequest"
	KindIssuer             = "Issuer"
	KindClusterIssuer      = "ClusterIssuer"
)

// Annotations and labels certfn reads and writes (cert-manager's names).
const (
	// AnnotationRevision is set on a CertificateRequest to the Certificate
	// revision it was created for (docs/design/certificate-controllers.md).
	AnnotationRevision = "cert-manager.io/certificate-revision"
	// AnnotationCertificateName names the owning Certificate on requests and secrets.
	AnnotationCertificateName = "cert-manager.io/certificate-name"
	// AnnotationPrivateKeySecretName names the next-private-key secret on a request.
	AnnotationPrivateKeySecretName = "cert-manager.io/private-key-secret-name"
	// AnnotationIssuerName / Kind / Group record the issuer on secrets and requests.
	AnnotationIssuerName  = "cert-manager.io/issuer-name"
	AnnotationIssuerKind  = "cert-manager.io/issuer-kind"
	AnnotationIssuerGroup = "cert-manager.io/issuer-group"
	// AnnotationCommonName, AltNames, IPSANs, URISANs, EmailSANs describe the stored certificate.
	AnnotationCommonName = "cert-manager.io/common-name"
	AnnotationAltNames   = "cert-manager.io/alt-names"
	AnnotationIPSANs     = "cert-manager.io/ip-sans"
	AnnotationURISANs    = "cert-manager.io/uri-sans"
	AnnotationEmailSANs  = "cert-manager.io/email-sans"
	// LabelNextPrivateKey marks a next-private-key secret (docs/design/certificate-controllers.md).
	LabelNextPrivateKey = "cert-manager.io/next-private-key"
	// AnnotationMaxDuration is certfn's extension on an Issuer: the longest
	// lifetime it signs (docs/design/request-duration.md: honoured = min(requested, maximum)).
	AnnotationMaxDuration = "certfn.io/max-duration"
	// AnnotationACMImport is certfn's extension on a Certificate: "true"
	// imports its key pair into AWS Certificate Manager after each
	// issuance (core/certificates/acmimport.go; docs/deploy/aws.md).
	AnnotationACMImport = "certfn.io/acm-import"
)

// Certificate condition types and reasons.
const (
	CertificateConditionReady   = "Ready"
	CertificateConditionIssuing = "Issuing"
	// CertificateConditionACMImported (certfn extension) says whether the
	// stored certificate is in AWS Certificate Manager; present only while
	// AnnotationACMImport is set.
	CertificateConditionACMImported = "ACMImported"
)

// PrivateKeyAlgorithm is RSA, ECDSA or Ed25519.
type PrivateKeyAlgorithm string

// Private key algorithms, encodings and rotation policies.
const (
	RSAKeyAlgorithm     PrivateKeyAlgorithm = "RSA"
	ECDSAKeyAlgorithm   PrivateKeyAlgorithm = "ECDSA"
	Ed25519KeyAlgorithm PrivateKeyAlgorithm = "Ed25519"

	PKCS1 PrivateKeyEncoding = "PKCS1"
	PKCS8 PrivateKeyEncoding = "PKCS8"

	RotationPolicyAlways PrivateKeyRotationPolicy = "Always"
	RotationPolicyNever  PrivateKeyRotationPolicy = "Never"
)

// PrivateKeyEncoding is PKCS1 or PKCS8.
type PrivateKeyEncoding string

// PrivateKeyRotationPolicy is Always or Never.
type PrivateKeyRotationPolicy string

// KeyUsage is a cert-manager key usage name ("digital signature", "server auth", ...).
type KeyUsage string

// Key usages, as cert-manager names them.
const (
	UsageSigning           KeyUsage = "signing"
	UsageDigitalSignature  KeyUsage = "digital signature"
	UsageContentCommitment KeyUsage = "content commitment"
	UsageKeyEncipherment   KeyUsage = "key encipherment"
	UsageKeyAgreement      KeyUsage = "key agreement"
	UsageDataEncipherment  KeyUsage = "data encipherment"
	UsageCertSign          KeyUsage = "cert sign"
	UsageCRLSign           KeyUsage = "crl sign"
	UsageEncipherOnly      KeyUsage = "encipher only"
	UsageDecipherOnly      KeyUsage = "decipher only"
	UsageAny               KeyUsage = "any"
	UsageServerAuth        KeyUsage = "server auth"
	UsageClientAuth        KeyUsage = "client auth"
	UsageCodeSigning       KeyUsage = "code signing"
	UsageEmailProtection   KeyUsage = "email protection"
	UsageSMIME             KeyUsage = "s/mime"
	UsageIPsecEndSystem    KeyUsage = "ipsec end system"
	UsageIPsecTunnel       KeyUsage = "ipsec tunnel"
	UsageIPsecUser         KeyUsage = "ipsec user"
	UsageTimestamping      KeyUsage = "timestamping"
	UsageOCSPSigning       KeyUsage = "ocsp signing"
	UsageMicrosoftSGC      KeyUsage = "microsoft sgc"
	UsageNetscapeSGC       KeyUsage = "netscape sgc"
)

// KnownKeyUsages lists every usage cert-manager accepts, in its order.
var KnownKeyUsages = []KeyUsage{
	UsageSigning, UsageDigitalSignature, UsageContentCommitment, UsageKeyEncipherment,
	UsageKeyAgreement, UsageDataEncipherment, UsageCertSign, UsageCRLSign, UsageEncipherOnly,
	UsageDecipherOnly, UsageAny, UsageServerAuth, UsageClientAuth, UsageCodeSigning,
	UsageEmailProtection, UsageSMIME, UsageIPsecEndSystem, UsageIPsecTunnel, UsageIPsecUser,
	UsageTimestamping, UsageOCSPSigning, UsageMicrosoftSGC, UsageNetscapeSGC,
}

// Signature algorithms accepted in spec.signatureAlgorithm (cert-manager's names).
const (
	SignatureSHA256WithRSA   = "SHA256WithRSA"
	SignatureSHA384WithRSA   = "SHA384WithRSA"
	SignatureSHA512WithRSA   = "SHA512WithRSA"
	SignatureECDSAWithSHA256 = "ECDSAWithSHA256"
	SignatureECDSAWithSHA384 = "ECDSAWithSHA384"
	SignatureECDSAWithSHA512 = "ECDSAWithSHA512"
	SignaturePureEd25519     = "PureEd25519"
)

// Certificate is cert-manager.io/v1 Certificate.
type Certificate struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       CertificateSpec   `json:"spec"`
	Status     CertificateStatus `json:"status,omitempty"`
}

// CertificateSpec is cert-manager's CertificateSpec, field for field.
type CertificateSpec struct {
	// Subject holds the distinguished name fields other than the common name (organizations, countries, ...).
	Subject *X509Subject `json:"subject,omitempty"`
	// LiteralSubject is the whole subject as an RFC 4514 string; it excludes Subject and CommonName.
	LiteralSubject string `json:"literalSubject,omitempty"`
	// CommonName is the subject's common name; prefer dnsNames, which clients check.
	CommonName string `json:"commonName,omitempty"`
	// Duration is the requested lifetime (default 90 days); the issuer may shorten it.
	Duration *Duration `json:"duration,omitempty"`
	// RenewBefore is how long before expiry renewal starts (default: a third of the lifetime).
	RenewBefore *Duration `json:"renewBefore,omitempty"`
	// RenewBeforePercentage is RenewBefore as a percentage of the lifetime; at most one of the two.
	RenewBeforePercentage *int32              `json:"renewBeforePercentage,omitempty"`
	Renewal               *CertificateRenewal `json:"renewal,omitempty"`
	// DNSNames are the DNS subject alternative names.
	DNSNames []string `json:"dnsNames,omitempty"`
	// IPAddresses are the IP address subject alternative names.
	IPAddresses []string `json:"ipAddresses,omitempty"`
	// URIs are the URI subject alternative names.
	URIs       []string    `json:"uris,omitempty"`
	OtherNames []OtherName `json:"otherNames,omitempty"`
	// EmailAddresses are the email subject alternative names.
	EmailAddresses []string `json:"emailAddresses,omitempty"`
	// SecretName is the secret the key pair and certificate are written to (required).
	SecretName string `json:"secretName"`
	// SecretTemplate holds labels and annotations copied onto the secret.
	SecretTemplate *CertificateSecretTemplate `json:"secretTemplate,omitempty"`
	Keystores      *CertificateKeystores      `json:"keystores,omitempty"`
	// IssuerRef names the Issuer or ClusterIssuer that signs (required).
	IssuerRef IssuerReference `json:"issuerRef"`
	// IsCA requests a CA certificate (basic constraints CA:true, cert sign usage).
	IsCA bool `json:"isCA,omitempty"`
	// Usages are the key usages and extended key usages requested (default digital signature and key encipherment).
	Usages []KeyUsage `json:"usages,omitempty"`
	// PrivateKey sets the key algorithm, size, encoding and rotation policy.
	PrivateKey              *CertificatePrivateKey              `json:"privateKey,omitempty"`
	SignatureAlgorithm      string                              `json:"signatureAlgorithm,omitempty"`
	EncodeUsagesInRequest   *bool                               `json:"encodeUsagesInRequest,omitempty"`
	RevisionHistoryLimit    *int32                              `json:"revisionHistoryLimit,omitempty"`
	AdditionalOutputFormats []CertificateAdditionalOutputFormat `json:"additionalOutputFormats,omitempty"`
	NameConstraints         *NameConstraints                    `json:"nameConstraints,omitempty"`
}

// CertificateRenewal is cert-manager's spec.renewal: the renewal policy
// and, for RenewBefore, the windows renewal may start in.
type CertificateRenewal struct {
	Policy  CertificateRenewalPolicy    `json:"policy,omitempty"`
	Windows []CertificateRenewalWindows `json:"windows,omitempty"`
}

// CertificateRenewalPolicy is RenewBefore or Disabled.
type CertificateRenewalPolicy string

// Renewal policies.
const (
	// RenewalPolicyRenewBefore renews at the renewal time (renewBefore,
	// renewBeforePercentage, 2/3 of the lifetime or the ACME renewal
	// window), moved into the first of the windows, if any, it falls in.
	RenewalPolicyRenewBefore CertificateRenewalPolicy = "RenewBefore"
	// RenewalPolicyDisabled never renews the stored certificate because of
	// time (it may expire); spec changes still cause an issuance.
	RenewalPolicyDisabled CertificateRenewalPolicy = "Disabled"
)

// CertificateRenewalWindows is one renewal window: it opens at each time
// the cron schedule names (five fields: minute hour day-of-month month
// day-of-week, or a descriptor such as @daily) in Timezone (an IANA zone,
// UTC when empty) and stays open for WindowDuration.
type CertificateRenewalWindows struct {
	Timezone       string    `json:"timezone,omitempty"`
	WindowDuration *Duration `json:"windowDuration,omitempty"`
	Cron           string    `json:"cron,omitempty"`
}

// X509Subject is the subject of the certificate.
type X509Subject struct {
	Organizations       []string `json:"organizations,omitempty"`
	Countries           []string `json:"countries,omitempty"`
	OrganizationalUnits []string `json:"organizationalUnits,omitempty"`
	Localities          []string `json:"localities,omitempty"`
	Provinces           []string `json:"provinces,omitempty"`
	StreetAddresses     []string `json:"streetAddresses,omitempty"`
	PostalCodes         []string `json:"postalCodes,omitempty"`
	SerialNumber        string   `json:"serialNumber,omitempty"`
}

// OtherName is an otherName SAN with a UTF-8 string value.
type OtherName struct {
	OID       string `json:"oid,omitempty"`
	UTF8Value string `json:"utf8Value,omitempty"`
}

// CertificateSecretTemplate is copied onto the stored secret as metadata.
type CertificateSecretTemplate struct {
	Annotations map[string]string `json:"annotations,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
}

// CertificateKeystores asks for keystore files next to tls.crt/tls.key.
type CertificateKeystores struct {
	JKS    *JKSKeystore    `json:"jks,omitempty"`
	PKCS12 *PKCS12Keystore `json:"pkcs12,omitempty"`
}

// JKSKeystore writes keystore.jks and truststore.jks.
type JKSKeystore struct {
	Create            bool              `json:"create"`
	PasswordSecretRef SecretKeySelector `json:"passwordSecretRef,omitempty"`
	Password          *string           `json:"password,omitempty"`
	Alias             *string           `json:"alias,omitempty"`
}

// PKCS12Profile selects the PKCS#12 encryption profile.
type PKCS12Profile string

// PKCS#12 profiles.
const (
	LegacyRC2PKCS12Profile  PKCS12Profile = "LegacyRC2"
	LegacyDESPKCS12Profile  PKCS12Profile = "LegacyDES"
	Modern2023PKCS12Profile PKCS12Profile = "Modern2023"
)

// PKCS12Keystore writes keystore.p12 and truststore.p12.
type PKCS12Keystore struct {
	Create            bool              `json:"create"`
	PasswordSecretRef SecretKeySelector `json:"passwordSecretRef,omitempty"`
	Password          *string           `json:"password,omitempty"`
	Profile           PKCS12Profile     `json:"profile,omitempty"`
}

// CertificatePrivateKey describes the key to generate.
type CertificatePrivateKey struct {
	RotationPolicy PrivateKeyRotationPolicy `json:"rotationPolicy,omitempty"`
	Encoding       PrivateKeyEncoding       `json:"encoding,omitempty"`
	Algorithm      PrivateKeyAlgorithm      `json:"algorithm,omitempty"`
	Size           int                      `json:"size,omitempty"`
}

// CertificateOutputFormatType is DER or CombinedPEM.
type CertificateOutputFormatType string

// Additional output formats.
const (
	CertificateOutputFormatDER         CertificateOutputFormatType = "DER"
	CertificateOutputFormatCombinedPEM CertificateOutputFormatType = "CombinedPEM"
)

// CertificateAdditionalOutputFormat adds key.der or tls-combined.pem.
type CertificateAdditionalOutputFormat struct {
	Type CertificateOutputFormatType `json:"type"`
}

// NameConstraints for CA certificates.
type NameConstraints struct {
	Critical  bool                `json:"critical,omitempty"`
	Permitted *NameConstraintItem `json:"permitted,omitempty"`
	Excluded  *NameConstraintItem `json:"excluded,omitempty"`
}

// NameConstraintItem lists constrained names.
type NameConstraintItem struct {
	DNSDomains     []string `json:"dnsDomains,omitempty"`
	IPRanges       []string `json:"ipRanges,omitempty"`
	EmailAddresses []string `json:"emailAddresses,omitempty"`
	URIDomains     []string `json:"uriDomains,omitempty"`
}

// CertificateStatus is cert-manager's status plus certfn's additions
// (ignoredFields, renewal information).
type CertificateStatus struct {
	Conditions               []Condition `json:"conditions,omitempty"`
	LastFailureTime          *Time       `json:"lastFailureTime,omitempty"`
	NotBefore                *Time       `json:"notBefore,omitempty"`
	NotAfter                 *Time       `json:"notAfter,omitempty"`
	RenewalTime              *Time       `json:"renewalTime,omitempty"`
	Revision                 *int        `json:"revision,omitempty"`
	NextPrivateKeySecretName *string     `json:"nextPrivateKeySecretName,omitempty"`
	FailedIssuanceAttempts   *int        `json:"failedIssuanceAttempts,omitempty"`
	// IgnoredFields lists cert-manager fields present in the spec that
	// certfn accepts but does not act on (certfn extension).
	IgnoredFields []string `json:"ignoredFields,omitempty"`
	// ARI (RFC 9773) renewal window, when the issuer offers one (certfn extension).
	RenewalInfo *RenewalInfo `json:"renewalInfo,omitempty"`
	// ACMCertificateARN is the AWS Certificate Manager certificate the key
	// pair was imported into (certfn extension, AnnotationACMImport);
	// renewals are re-imported into the same ARN.
	ACMCertificateARN string `json:"acmCertificateARN,omitempty"`
	// ACMCertificateSerial is the serial number (ACM's colon-separated hex)
	// of the certificate last imported into ACMCertificateARN (certfn
	// extension): an unchanged serial is not imported again.
	ACMCertificateSerial string `json:"acmCertificateSerial,omitempty"`
	// NotifiedRevision is the last revision announced as issued or renewed
	// (certfn extension, core/certificates/notify.go): a later revision is
	// announced, this one is not again. Absent until the first event.
	NotifiedRevision *int `json:"notifiedRevision,omitempty"`
	// NotifiedFailureTime is the lastFailureTime of the last failed
	// issuance announced (certfn extension): each failure is announced
	// once.
	NotifiedFailureTime *Time `json:"notifiedFailureTime,omitempty"`
	// NotifiedExpiryTime is when the last "approaching expiration" event
	// was published (certfn extension): at most one per UTC day.
	NotifiedExpiryTime *Time `json:"notifiedExpiryTime,omitempty"`
	// Revoked is the last certificate of this Certificate revoked through
	// certfn (certfn extension): while the stored certificate is that one,
	// the Certificate is not Ready (reason Revoked) and is re-issued.
	Revoked *RevokedCertificate `json:"revoked,omitempty"`
}

// RevokedCertificate records a revocation: the certificate's serial
// number (lower-case hex), the RFC 5280 reason's name and when.
type RevokedCertificate struct {
	Serial    string `json:"serial"`
	Reason    string `json:"reason"`
	RevokedAt *Time  `json:"revokedAt,omitempty"`
}

// RenewalInfo records the last ACME renewal information fetched.
type RenewalInfo struct {
	WindowStart    *Time  `json:"windowStart,omitempty"`
	WindowEnd      *Time  `json:"windowEnd,omitempty"`
	SelectedTime   *Time  `json:"selectedTime,omitempty"`
	LastChecked    *Time  `json:"lastChecked,omitempty"`
	NextCheck      *Time  `json:"nextCheck,omitempty"`
	ExplanationURL string `json:"explanationURL,omitempty"`
	CertificateID  string `json:"certificateID,omitempty"`
}
