// Package certificaterequests is the controller package of the
// CertificateRequest kind, named as cert-manager's
// pkg/controller/certificaterequests. Each step is one file and one
// exported function: approval.go (ApprovalStep, the approver actor of
// docs/design/certificates-api.md) and signing.go (SigningStep, the signer
// actor). state.go holds what the steps share: the loaded State and the
// Env. The Controller (controller.go) runs the steps in that order, one
// write per invocation.
package certificaterequests

import (
	"context"
	"crypto/x509"
	"github.com/certfn/certfn/core/kernel"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/signers"
	"github.com/certfn/certfn/core/step"
)

// State is one CertificateRequest as loaded for a reconcile.
type State struct {
	CR        *api.CertificateRequest
	Version   int64
	NextRunAt time.Time
	Now       time.Time
	// Events receives the Events the steps record about the request
	// (approver-policy's Approved, Denied and Unprocessed; cert-manager's
	// CertificateIssued, OrderCreated, the failure reasons); nil drops
	// them. A step records before its write: the kernel writes the Event
	// once that write succeeded.
	Events func(kernel.Note)
}

// Record hands n to st.Events (see there).
func (st *State) Record(n kernel.Note) {
	if st.Events != nil {
		st.Events(n)
	}
}

// Outcome is what a step did (see step.Outcome).
type Outcome = step.Outcome

// Result of an approval decision.
type Result int

// Decision results.
const (
	Unmatched Result = iota
	Approved
	Denied
)

// Decision is an approver's verdict. Unmatched leaves the request
// untouched, with Message shown as the reason it waits.
type Decision struct {
	Result  Result
	Reason  string
	Message string
	// Detail is for operators' debug logs only (never stored on the
	// request): e.g. why no policy applies.
	Detail string
}

// Approver decides on a request (auto-approval list, policies).
type Approver interface {
	Decide(ctx context.Context, cr *api.CertificateRequest) (Decision, error)
}

// Refuser is implemented by the Approver of a role that never makes
// approval decisions (docs/design/certificates-api.md: approver and signer are separate actors).
// The approval step then leaves every decision, a denial of invalid names
// included, to the approving role; the signing step still refuses such
// names.
type Refuser interface {
	Approver
	RefusesApproval()
}

// Issuers resolves a request's issuerRef; ok is false when it does not exist.
// SecretNamespace is where that issuer's secrets live.
type Issuers interface {
	Get(ctx context.Context, namespace string, ref api.IssuerReference) (iss api.GenericIssuer, secretNamespace string, ok bool, err error)
}

// Writer writes a request conditionally on st.Version (see certificates.Writer).
type Writer interface {
	UpdateRequest(ctx context.Context, st *State, nextRunAt time.Time) error
}

// Env is what the request steps get from outside.
type Env struct {
	Clock    ports.Clock
	Writer   Writer
	Approver Approver
	Issuers  Issuers
	// Signers by issuer type: "selfSigned", "ca" (and later "acme").
	Signers map[string]signers.Signer
	// Objects is handed to signers (signers.Request.Objects).
	Objects  signers.Objects
	Metrics  ports.Metrics
	WaitPoll time.Duration
	// IssuancesPerHour is the issuance quota: the most requests of one
	// namespace signed in any rolling hour (0: unlimited). The signing
	// step checks it with Quota before a signer is called.
	IssuancesPerHour int
	// Quota counts a namespace's issuances (required when
	// IssuancesPerHour is set).
	Quota Quota
}

// QuotaWindow is the rolling window of the issuance quota.
const QuotaWindow = time.Hour

// Quota counts the issuances of a namespace for the issuance quota.
type Quota interface {
	// IssuedSince returns how many CertificateRequests of namespace were
	// issued (Ready=True, reason Issued) strictly after since, by the time
	// of their Ready condition, and the earliest of those times (zero when
	// n is 0).
	IssuedSince(ctx context.Context, namespace string, since time.Time) (n int, oldest time.Time, err error)
}

// IssuerType names the configured type of an issuer spec, "" when none is
// supported.
func IssuerType(spec *api.IssuerSpec) string {
	switch {
	case spec.SelfSigned != nil:
		return "selfSigned"
	case spec.CA != nil:
		return "ca"
	case spec.ACME != nil:
		return "acme"
	}
	return ""
}

// FollowUpGrace: see certificates.FollowUpGrace.
const FollowUpGrace = 2 * time.Minute

// ReasonInvalidNames is the reason recorded on a request whose CSR carries
// a name a CA must not sign (pki.CheckCSRNames): on its Denied condition
// when the approval step finds it (before any approver or policy is
// asked), on its InvalidRequest and Failed conditions when the signing step
// does (a request approved by hand, or before names were checked).
const ReasonInvalidNames = "InvalidNames"

// CheckNames checks every name a request's parsed CSR carries
// (pki.CheckCSRNames). The error is permanent (no retry makes a name
// valid) and names the field, the SAN and the rule:
// `spec.request: DNS name "a/b.example.com" (SAN 1): contains a character
// a DNS name cannot hold ('/')`.
func CheckNames(csr *x509.CertificateRequest) error {
	if err := pki.CheckCSRNames(csr); err != nil {
		return errs.Permanentf("spec.request: %w", err)
	}
	return nil
}
