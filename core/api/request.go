package api

// CertificateRequest condition types and Ready reasons (cert-manager's).
const (
	CertificateRequestConditionReady          = "Ready"
	CertificateRequestConditionInvalidRequest = "InvalidRequest"
	CertificateRequestConditionApproved       = "Approved"
	CertificateRequestConditionDenied         = "Denied"
	CertificateRequestConditionFailed         = "Failed"

	CertificateRequestReasonPending = "Pending"
	CertificateRequestReasonFailed  = "Failed"
	CertificateRequestReasonIssued  = "Issued"
	CertificateRequestReasonDenied  = "Denied"
)

// CertificateRequest is cert-manager.io/v1 CertificateRequest. Its spec is
// immutable after creation; the identity fields (username, uid, groups,
// extra) are set by certfn from the authenticated caller (docs/design/certificates-api.md).
type CertificateRequest struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       CertificateRequestSpec   `json:"spec"`
	Status     CertificateRequestStatus `json:"status,omitempty"`
}

// CertificateRequestSpec is cert-manager's spec plus expirationSeconds
// (docs/design/request-duration.md, minimum 600).
type CertificateRequestSpec struct {
	Duration  *Duration       `json:"duration,omitempty"`
	IssuerRef IssuerReference `json:"issuerRef"`
	// Request is the PEM-encoded CSR (base64 in JSON/YAML, as cert-manager).
	Request []byte     `json:"request"`
	IsCA    bool       `json:"isCA,omitempty"`
	Usages  []KeyUsage `json:"usages,omitempty"`
	// ExpirationSeconds is the requested lifetime (docs/design/request-duration.md); when both it and
	// duration are set they must agree.
	ExpirationSeconds *int32              `json:"expirationSeconds,omitempty"`
	Username          string              `json:"username,omitempty"`
	UID               string              `json:"uid,omitempty"`
	Groups            []string            `json:"groups,omitempty"`
	Extra             map[string][]string `json:"extra,omitempty"`
}

// CertificateRequestStatus holds the outcome.
type CertificateRequestStatus struct {
	Conditions []Condition `json:"conditions,omitempty"`
	// Certificate is the PEM chain, leaf first (docs/design/certificates-api.md validation).
	Certificate []byte `json:"certificate,omitempty"`
	// CA is the PEM of the issuing CA, when known.
	CA          []byte `json:"ca,omitempty"`
	FailureTime *Time  `json:"failureTime,omitempty"`
	// RequestedDuration and HonouredDuration record docs/design/request-duration.md's
	// requested vs honoured lifetime (certfn extension).
	RequestedDuration *Duration `json:"requestedDuration,omitempty"`
	HonouredDuration  *Duration `json:"honouredDuration,omitempty"`
}

// IsFinal reports whether the request reached a terminal state: Ready
// (issued), Failed, Denied or InvalidRequest.
func (cr *CertificateRequest) IsFinal() bool {
	c := FindCondition(cr.Status.Conditions, CertificateRequestConditionReady)
	if c != nil && c.Status == ConditionTrue {
		return true
	}
	if c != nil && c.Status == ConditionFalse &&
		(c.Reason == CertificateRequestReasonFailed || c.Reason == CertificateRequestReasonDenied) {
		return true
	}
	return IsTrue(cr.Status.Conditions, CertificateRequestConditionDenied) ||
		IsTrue(cr.Status.Conditions, CertificateRequestConditionInvalidRequest) ||
		IsTrue(cr.Status.Conditions, CertificateRequestConditionFailed)
}

// IsIssued reports whether the request has a certificate and Ready=True.
func (cr *CertificateRequest) IsIssued() bool {
	return IsTrue(cr.Status.Conditions, CertificateRequestConditionReady) && len(cr.Status.Certificate) > 0
}
