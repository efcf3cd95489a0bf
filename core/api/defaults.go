package api

import "time"

// Defaults. As in cert-manager they are never written into the spec: the
// accessors below apply them when a field is unset, so a stored manifest
// stays what the user wrote.
const (
	// DefaultCertificateDuration is spec.duration when unset (90 days).
	DefaultCertificateDuration = 90 * 24 * time.Hour
	// MinimumDuration is the shortest lifetime a Certificate or a
	// CertificateRequest may ask for (docs/design/request-duration.md's expirationSeconds minimum,
	// 600 s; cert-manager's own minimum is 1 h).
	MinimumDuration = 600 * time.Second
	// DefaultRSAKeySize and DefaultECDSAKeySize apply when privateKey.size is unset.
	DefaultRSAKeySize   = 2048
	DefaultECDSAKeySize = 256
	// DefaultRevisionHistoryLimit is how many CertificateRequests certfn
	// keeps per Certificate when revisionHistoryLimit is unset.
	DefaultRevisionHistoryLimit int32 = 1
)

// DefaultKeyUsages returns cert-manager's default usages: digital signature
// and key encipherment.
func DefaultKeyUsages() []KeyUsage {
	return []KeyUsage{UsageDigitalSignature, UsageKeyEncipherment}
}

// DurationOrDefault returns spec.duration, or 90 days.
func (s *CertificateSpec) DurationOrDefault() time.Duration {
	if s.Duration != nil {
		return s.Duration.Duration
	}
	return DefaultCertificateDuration
}

// RotationPolicyOrDefault returns privateKey.rotationPolicy, or Always
// (cert-manager's default since v1.18).
func (s *CertificateSpec) RotationPolicyOrDefault() PrivateKeyRotationPolicy {
	if s.PrivateKey != nil && s.PrivateKey.RotationPolicy != "" {
		return s.PrivateKey.RotationPolicy
	}
	return RotationPolicyAlways
}

// KeyAlgorithmOrDefault returns privateKey.algorithm, or RSA.
func (s *CertificateSpec) KeyAlgorithmOrDefault() PrivateKeyAlgorithm {
	if s.PrivateKey != nil && s.PrivateKey.Algorithm != "" {
		return s.PrivateKey.Algorithm
	}
	return RSAKeyAlgorithm
}

// KeySizeOrDefault returns privateKey.size, or the default for the
// algorithm: 2048 for RSA, 256 for ECDSA, 0 for Ed25519 (which has no size).
func (s *CertificateSpec) KeySizeOrDefault() int {
	alg := s.KeyAlgorithmOrDefault()
	if alg == Ed25519KeyAlgorithm {
		return 0
	}
	if s.PrivateKey != nil && s.PrivateKey.Size != 0 {
		return s.PrivateKey.Size
	}
	switch alg {
	case RSAKeyAlgorithm:
		return DefaultRSAKeySize
	case ECDSAKeyAlgorithm:
		return DefaultECDSAKeySize
	}
	return 0
}

// KeyEncodingOrDefault returns privateKey.encoding, or PKCS1 (as cert-manager).
func (s *CertificateSpec) KeyEncodingOrDefault() PrivateKeyEncoding {
	if s.PrivateKey != nil && s.PrivateKey.Encoding != "" {
		return s.PrivateKey.Encoding
	}
	return PKCS1
}

// RevisionHistoryLimitOrDefault returns revisionHistoryLimit, or 1.
func (s *CertificateSpec) RevisionHistoryLimitOrDefault() int32 {
	if s.RevisionHistoryLimit != nil {
		return *s.RevisionHistoryLimit
	}
	return DefaultRevisionHistoryLimit
}

// UsagesOrDefault returns spec.usages, or DefaultKeyUsages. The result is a
// fresh slice the caller may modify.
func (s *CertificateSpec) UsagesOrDefault() []KeyUsage {
	if len(s.Usages) > 0 {
		return append([]KeyUsage(nil), s.Usages...)
	}
	return DefaultKeyUsages()
}

// IssuerKindOrDefault returns issuerRef.kind, or "Issuer".
func (s *CertificateSpec) IssuerKindOrDefault() string {
	return s.IssuerRef.KindOrDefault()
}

// KindOrDefault returns the reference's kind, or "Issuer".
func (r IssuerReference) KindOrDefault() string {
	if r.Kind != "" {
		return r.Kind
	}
	return KindIssuer
}

// RequestedDuration returns the lifetime the request asks for: duration
// when set, else expirationSeconds (docs/design/request-duration.md); ok is false when neither is
// set (the issuer then uses its default).
func (s *CertificateRequestSpec) RequestedDuration() (d time.Duration, ok bool) {
	if s.Duration != nil {
		return s.Duration.Duration, true
	}
	if s.ExpirationSeconds != nil {
		return time.Duration(*s.ExpirationSeconds) * time.Second, true
	}
	return 0, false
}
