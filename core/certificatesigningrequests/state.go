// Package certificatesigningrequests is the controller package of the
// certificates.k8s.io/v1 CertificateSigningRequest kind
// (docs/design/certificates-api.md) for CSRs signed by certfn's issuers,
// named as cert-manager's pkg/controller/certificatesigningrequests: a
// signer name issuers.cert-manager.io/<namespace>.<name> or
// clusterissuers.cert-manager.io/<name> names the issuer
// (api.SignerIssuer); any other signer name is left alone (another
// signer's request).
//
// Each step is one file and one exported function, run in this order, one
// write per invocation: approval.go (ApprovalStep, the approver actor),
// signing.go (SigningStep, the signer actor) and cleanup.go (CleanupStep,
// as Kubernetes' csrcleaner). approved.go is the one place an approval is
// recorded (Approve); state.go holds what the steps share (State, Env).
// Each step works on the CSR seen as a CertificateRequest (Request), so
// that the approver (the auto-approve list, CertificateRequestPolicies)
// and the signers (selfSigned, CA) decide and sign CSRs exactly as they do
// CertificateRequests.
package certificatesigningrequests

import (
	"context"
	"strings"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificaterequests"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/rbac"
	"github.com/certfn/certfn/core/signers"
	"github.com/certfn/certfn/core/step"
)

// State is one CSR as loaded for a reconcile.
type State struct {
	CSR     *api.CertificateSigningRequest
	Version int64
	Now     time.Time
}

// Writer writes the CSR conditionally on st.Version, due at next (zero:
// not due), and deletes it (DeleteCSR: conditionally on st.Version, with
// what it owns and its Event).
type Writer interface {
	UpdateCSR(ctx context.Context, st *State, next time.Time) error
	DeleteCSR(ctx context.Context, st *State) error
}

// Env is what the CSR steps get from outside (the Controller fills it as
// the CertificateRequest controller does certificaterequests.Env).
type Env struct {
	Writer   Writer
	Approver certificaterequests.Approver
	Issuers  certificaterequests.Issuers
	// Signers by issuer type, as certificaterequests.Env.Signers.
	Signers map[string]signers.Signer
	Objects signers.Objects
	Metrics ports.Metrics
	// Authorizer returns the RBAC snapshot for the requester's `reference`
	// permission on a namespaced Issuer (CanReference); nil in a role that
	// may not read RBAC (the AWS signer), which then trusts the role that
	// handed the CSR over to have checked it.
	Authorizer func(ctx context.Context) (*rbac.Authorizer, error)
	// ClusterResourceNamespace holds ClusterIssuer secrets.
	ClusterResourceNamespace string
	WaitPoll                 time.Duration
	// IssuancesPerHour is the issuance quota of CSRs: the most CSRs of one
	// requester (spec.username) signed in any rolling
	// certificaterequests.QuotaWindow (0: unlimited). The signing step counts them
	// with Quota before a signer is called.
	IssuancesPerHour int
	// Quota counts a requester's issued CSRs (required when
	// IssuancesPerHour is set).
	Quota Quota
}

// Quota counts the CSRs one requester had issued, for the issuance quota.
type Quota interface {
	// IssuedSince returns how many CSRs whose spec.username is username
	// were issued (status.issuedAt) strictly after since, and the earliest
	// of those times (zero when n is 0).
	IssuedSince(ctx context.Context, username string, since time.Time) (n int, oldest time.Time, err error)
}

// Outcome is what a step did.
type Outcome = step.Outcome

// Reasons of the step.Waiting a CSR's steps report when it waits (the
// controller records them as the CSR's Event; a CSR has no condition to say
// it), after cert-manager's CSR controllers
// (pkg/controller/certificatesigningrequests: sync.go's WaitingApproval,
// IssuerNotFound and IssuerNotReady; acme/acme.go's OrderPending). The
// issuer reasons are Warnings, as there.
const (
	// ReasonWaitingApproval: nobody approved or denied it yet; the message
	// is the approver's (which CertificateRequestPolicies did not match).
	ReasonWaitingApproval = "WaitingApproval"
	// ReasonIssuerNotFound: approved, the signer name's issuer does not exist.
	ReasonIssuerNotFound = "IssuerNotFound"
	// ReasonIssuerNotReady: approved, the issuer is not Ready or its
	// signer says it cannot sign yet (signers.ErrIssuerNotReady).
	ReasonIssuerNotReady = "IssuerNotReady"
	// ReasonOrderPending: an ACME issuer's Order is in progress.
	ReasonOrderPending = "OrderPending"
	// ReasonPending: another signer works on it asynchronously
	// (signers.ErrPending), as a CertificateRequest's Pending.
	ReasonPending = "Pending"
	// ReasonIssuanceQuota: approved, its requester had as many CSRs issued
	// in the last hour as the issuance quota allows.
	ReasonIssuanceQuota = "IssuanceQuotaReached"
)

// pendingReason is the reason of a signer's ErrPending for issuer type typ.
func pendingReason(typ string) string {
	if typ == "acme" {
		return ReasonOrderPending
	}
	return ReasonPending
}

// Request returns c seen as a CertificateRequest of the issuer its signer
// name names, as cert-manager's CSR signers read a CSR:
//   - namespace: the Issuer's namespace, or the cluster resource namespace
//     for a ClusterIssuer (where the issuer's secrets and a selfSigned
//     request's private key live; policies see this namespace);
//   - issuerRef from the signer name; spec.request, spec.usages and the
//     requester (username, uid, groups, extra) copied;
//   - the lifetime: spec.expirationSeconds, else the annotation
//     experimental.cert-manager.io/request-duration, else the default (90
//     days) — expirationSeconds wins, as cert-manager's
//     DurationFromCertificateSigningRequest;
//   - isCA from experimental.cert-manager.io/request-is-ca ("true");
//   - the selfSigned key from experimental.cert-manager.io/private-key-secret-name;
//   - the Approved and Denied conditions.
//
// ok is false when the signer name is not one of cert-manager's. A
// request-duration annotation that is not a duration is a permanent
// error naming it.
func Request(c *api.CertificateSigningRequest, clusterResourceNamespace string) (cr *api.CertificateRequest, ok bool, err error) {
	ref, ns, ok := api.SignerIssuer(c.Spec.SignerName)
	if !ok {
		return nil, false, nil
	}
	if ns == "" {
		ns = clusterResourceNamespace
	}
	ann := map[string]string{}
	for k, v := range c.Annotations {
		ann[k] = v
	}
	if v := c.Annotations[api.AnnotationCSRPrivateKeySecretName]; v != "" {
		ann[api.AnnotationPrivateKeySecretName] = v
	} else {
		delete(ann, api.AnnotationPrivateKeySecretName)
	}
	cr = &api.CertificateRequest{
		TypeMeta:   api.TypeMeta{APIVersion: api.CertManagerV1, Kind: api.KindCertificateRequest},
		ObjectMeta: api.ObjectMeta{Name: c.Name, Namespace: ns, UID: c.UID, Labels: c.Labels, Annotations: ann, CreationTimestamp: c.CreationTimestamp},
		Spec: api.CertificateRequestSpec{
			IssuerRef: ref, Request: c.Spec.Request, Usages: c.Spec.Usages,
			IsCA:     c.Annotations[api.AnnotationCSRIsCA] == "true",
			Username: c.Spec.Username, UID: c.Spec.UID, Groups: c.Spec.Groups, Extra: c.Spec.Extra,
		},
	}
	switch v, has := c.Annotations[api.AnnotationCSRDuration]; {
	case c.Spec.ExpirationSeconds != nil:
		cr.Spec.ExpirationSeconds = c.Spec.ExpirationSeconds
	case has:
		d, perr := time.ParseDuration(v)
		if perr != nil || d <= 0 {
			return nil, true, errs.Permanentf("metadata.annotations[%q]: %q is not a positive duration such as \"720h\"", api.AnnotationCSRDuration, v)
		}
		cr.Spec.Duration = api.NewDuration(d)
	}
	for _, t := range []string{api.CSRConditionApproved, api.CSRConditionDenied} {
		if cond := c.Status.Condition(t); cond != nil {
			cr.Status.Conditions = append(cr.Status.Conditions, api.Condition{Type: t, Status: cond.Status, Reason: cond.Reason, Message: cond.Message})
		}
	}
	return cr, true, nil
}

// SignerLabel is the metrics label of a signer name: its domain for
// cert-manager's two signer domains, "other" for anything else
// (docs/design/request-duration.md's metrics name only well-known signers, keeping labels bounded).
func SignerLabel(signerName string) string {
	if _, _, ok := api.SignerIssuer(signerName); ok {
		d, _, _ := strings.Cut(signerName, "/")
		return d
	}
	return "other"
}

// docs/design/request-duration.md's metrics (KEP-2784: "apiserver_certificates_registry_csr_requested_duration_total"
// and "..._honored_duration_total", sliced by signer), counted by the
// signing step when it issues a certificate for a CSR with
// spec.expirationSeconds.
const (
	MetricRequestedDuration = "apiserver_certificates_registry_csr_requested_duration_total"
	MetricHonoredDuration   = "apiserver_certificates_registry_csr_honored_duration_total"
)
