package api

import (
	"strings"
	"time"
)

// The Kubernetes Certificates API (docs/design/certificates-api.md) as certfn serves it.
const (
	CertificatesGroup = "certificates.k8s.io"
	CertificatesV1    = "certificates.k8s.io/v1"

	KindCertificateSigningRequest = "CertificateSigningRequest"

	// CSR condition types (docs/design/certificates-api.md): Approved and Denied are mutually
	// exclusive and set only through the approval path; Failed records a
	// terminal signer error. None can be removed and all are only True.
	CSRConditionApproved = "Approved"
	CSRConditionDenied   = "Denied"
	CSRConditionFailed   = "Failed"

	// MinExpirationSeconds is docs/design/request-duration.md's minimum for spec.expirationSeconds.
	MinExpirationSeconds = 600
)

// cert-manager's annotations for what a CertificateSigningRequest cannot
// say itself (cert-manager's experimental API, read by its CSR signers).
const (
	// AnnotationCSRDuration is the requested lifetime (a Go duration) when
	// spec.expirationSeconds is not set; expirationSeconds wins.
	AnnotationCSRDuration = "experimental.cert-manager.io/request-duration"
	// AnnotationCSRIsCA: "true" asks for a CA certificate.
	AnnotationCSRIsCA = "experimental.cert-manager.io/request-is-ca"
	// AnnotationCSRPrivateKeySecretName names the secret holding the
	// request's private key, for a selfSigned signer; the secret lives where
	// the issuer's secrets live (the Issuer's namespace, or the cluster
	// resource namespace for a ClusterIssuer).
	AnnotationCSRPrivateKeySecretName = "experimental.cert-manager.io/private-key-secret-name"

	// SignerIssuers and SignerClusterIssuers are the domains of the signer
	// names cert-manager answers: issuers.cert-manager.io/<namespace>.<name>
	// and clusterissuers.cert-manager.io/<name>.
	SignerIssuers        = "issuers.cert-manager.io"
	SignerClusterIssuers = "clusterissuers.cert-manager.io"
)

// CertificateSigningRequest is certificates.k8s.io/v1
// CertificateSigningRequest (cluster-scoped; docs/design/certificates-api.md). Its spec is
// immutable after creation; the requester identity fields are set by
// certfn from the authenticated caller, never from the body.
type CertificateSigningRequest struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       CertificateSigningRequestSpec   `json:"spec"`
	Status     CertificateSigningRequestStatus `json:"status,omitempty"`
}

// CertificateSigningRequestSpec is the upstream spec (docs/design/certificates-api.md), with
// docs/design/request-duration.md's expirationSeconds.
type CertificateSigningRequestSpec struct {
	// Request is the PEM-encoded PKCS#10 CSR (base64 in JSON/YAML, as upstream).
	Request []byte `json:"request"`
	// SignerName is required: a qualified name "domain/path".
	SignerName string `json:"signerName"`
	// ExpirationSeconds is the requested lifetime (docs/design/request-duration.md, minimum 600);
	// a signer may honour less, and the client must check.
	ExpirationSeconds *int32     `json:"expirationSeconds,omitempty"`
	Usages            []KeyUsage `json:"usages,omitempty"`
	// Username, UID, Groups and Extra are the requester, recorded by certfn.
	Username string              `json:"username,omitempty"`
	UID      string              `json:"uid,omitempty"`
	Groups   []string            `json:"groups,omitempty"`
	Extra    map[string][]string `json:"extra,omitempty"`
}

// CSRCondition is upstream's CertificateSigningRequestCondition (it has
// lastUpdateTime, which certfn's Condition lacks).
type CSRCondition struct {
	Type               string          `json:"type"`
	Status             ConditionStatus `json:"status"`
	Reason             string          `json:"reason,omitempty"`
	Message            string          `json:"message,omitempty"`
	LastUpdateTime     *Time           `json:"lastUpdateTime,omitempty"`
	LastTransitionTime *Time           `json:"lastTransitionTime,omitempty"`
}

// CertificateSigningRequestStatus holds the conditions and the issued chain.
type CertificateSigningRequestStatus struct {
	Conditions []CSRCondition `json:"conditions,omitempty"`
	// Certificate is the PEM chain, leaf first (base64 in JSON, docs/design/certificates-api.md).
	Certificate []byte `json:"certificate,omitempty"`
	// RequestedDuration and HonouredDuration record docs/design/request-duration.md's requested
	// vs honoured lifetime. Upstream has no such fields: they are certfn's
	// extension, as on CertificateRequests.
	RequestedDuration *Duration `json:"requestedDuration,omitempty"`
	HonouredDuration  *Duration `json:"honouredDuration,omitempty"`
	// IssuedAt is when status.certificate was set (certfn's extension too:
	// upstream has no Issued condition), from which the CSR's retention
	// counts (FinishedAt).
	IssuedAt *Time `json:"issuedAt,omitempty"`
	// Approved is what the approval approved (certfn's extension): the
	// parameters the approver evaluated. Only the write that adds the
	// Approved condition sets it (certificatesigningrequests.Approve); an apply never writes
	// status. The signer signs these parameters and refuses a request whose
	// evaluated view no longer matches them.
	Approved *CSRApproval `json:"approved,omitempty"`
}

// CSRApproval records the evaluated view of a CertificateSigningRequest
// that was approved: the request as its signer would sign it.
type CSRApproval struct {
	// Digest is the hex SHA-256 of the whole evaluated view (the fields
	// below, the signer name and the requester).
	Digest string `json:"digest"`
	// ResourceVersion is the version of the request the approval read.
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// RequestSHA256 is the hex SHA-256 of spec.request.
	RequestSHA256 string `json:"requestSHA256"`
	// IsCA is the approved experimental.cert-manager.io/request-is-ca.
	IsCA bool `json:"isCA,omitempty"`
	// ExpirationSeconds is the approved spec.expirationSeconds.
	ExpirationSeconds *int32 `json:"expirationSeconds,omitempty"`
	// Duration is the approved experimental.cert-manager.io/request-duration
	// (when expirationSeconds is unset).
	Duration *Duration `json:"duration,omitempty"`
	// Usages are the approved spec.usages.
	Usages []KeyUsage `json:"usages,omitempty"`
	// PrivateKeySecretName is the approved
	// experimental.cert-manager.io/private-key-secret-name.
	PrivateKeySecretName string `json:"privateKeySecretName,omitempty"`
}

// FinishedAt is when the CSR became final: its Denied or Failed
// condition's lastUpdateTime, else status.issuedAt; for a final CSR that
// records neither (written before issuedAt existed), its creation time.
// ok is false for a CSR that is not final.
func (c *CertificateSigningRequest) FinishedAt() (at time.Time, ok bool) {
	if !c.IsFinal() {
		return time.Time{}, false
	}
	for _, t := range []string{CSRConditionDenied, CSRConditionFailed} {
		if cond := c.Status.Condition(t); cond != nil && cond.Status == ConditionTrue && cond.LastUpdateTime != nil {
			return cond.LastUpdateTime.Time, true
		}
	}
	if c.Status.IssuedAt != nil {
		return c.Status.IssuedAt.Time, true
	}
	if c.CreationTimestamp != nil {
		return c.CreationTimestamp.Time, true
	}
	return time.Time{}, true
}

// Condition returns the condition of type t, or nil.
func (s *CertificateSigningRequestStatus) Condition(t string) *CSRCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}

// Has reports whether condition t is present with status True (docs/design/certificates-api.md:
// Approved, Denied and Failed are treated as True when present).
func (s *CertificateSigningRequestStatus) Has(t string) bool {
	c := s.Condition(t)
	return c != nil && c.Status == ConditionTrue
}

// AddCondition adds condition t (True) at now unless one of type t is
// present; it returns whether it added it. Approved, Denied and Failed are
// never changed once present.
func (s *CertificateSigningRequestStatus) AddCondition(t, reason, message string, now time.Time) bool {
	if s.Condition(t) != nil {
		return false
	}
	s.Conditions = append(s.Conditions, CSRCondition{Type: t, Status: ConditionTrue, Reason: reason, Message: message,
		LastUpdateTime: NewTime(now), LastTransitionTime: NewTime(now)})
	return true
}

// IsFinal reports whether the request reached a terminal state: issued,
// Denied or Failed.
func (c *CertificateSigningRequest) IsFinal() bool {
	return len(c.Status.Certificate) > 0 || c.Status.Has(CSRConditionDenied) || c.Status.Has(CSRConditionFailed)
}

// IsIssued reports whether the request holds a certificate.
func (c *CertificateSigningRequest) IsIssued() bool { return len(c.Status.Certificate) > 0 }

// SignerIssuer resolves a signer name to the issuer cert-manager signs it
// with: issuers.cert-manager.io/<namespace>.<name> names an Issuer,
// clusterissuers.cert-manager.io/<name> a ClusterIssuer (namespace "").
// ok is false for any other signer name.
func SignerIssuer(signerName string) (ref IssuerReference, namespace string, ok bool) {
	domain, rest, found := strings.Cut(signerName, "/")
	if !found || rest == "" {
		return IssuerReference{}, "", false
	}
	switch domain {
	case SignerIssuers:
		ns, name, found := strings.Cut(rest, ".")
		if !found || ns == "" || name == "" {
			return IssuerReference{}, "", false
		}
		return IssuerReference{Name: name, Kind: KindIssuer, Group: CertManagerGroup}, ns, true
	case SignerClusterIssuers:
		return IssuerReference{Name: rest, Kind: KindClusterIssuer, Group: CertManagerGroup}, "", true
	}
	return IssuerReference{}, "", false
}
