package certificatesigningrequests

import (
	"context"
	"errors"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificaterequests"
	"github.com/certfn/certfn/core/kernel"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/rbac"
	"github.com/certfn/certfn/core/signers"
	"github.com/certfn/certfn/core/step"
)

// steps are the CertificateSigningRequest steps: the approver, then the
// signer (docs/design/certificates-api.md), then the cleanup, one write
// per invocation.
var steps = []step.Func[*Env, *State]{ApprovalStep, SigningStep, CleanupStep}

var stepNames = []string{"approval", "signing", "cleanup"}

// Reads are the CSR controller's reads of other objects (core/repo.Repo
// is one).
type Reads interface {
	rbac.Lister
	Issuer(ctx context.Context, namespace string, ref api.IssuerReference) (api.GenericIssuer, string, bool, error)
	CSRsIssuedSince(ctx context.Context, username string, since time.Time) (int, time.Time, error)
}

// Config configures the CertificateSigningRequest controller.
type Config struct {
	// Approver decides CSRs seen as CertificateRequests (required). An
	// approver that refuses (certificaterequests.Refuser: a role that never
	// approves) also makes the controller skip the requester's
	// `reference` check: such a role (the AWS signer) may not read RBAC,
	// and the approving role checked it before handing over.
	Approver certificaterequests.Approver
	// Signers by issuer type, as the CertificateRequest controller's.
	Signers map[string]signers.Signer
	// Reads are its reads of other objects (required).
	Reads Reads
	// ClusterResourceNamespace holds ClusterIssuer secrets.
	ClusterResourceNamespace string
	// WaitPoll is how long a CSR waiting on its issuer waits before
	// looking again by itself (default 10 minutes).
	WaitPoll time.Duration
	// IssuancesPerHour is the issuance quota of one requester (0:
	// unlimited; see Env.IssuancesPerHour).
	IssuancesPerHour int
}

// Controller reconciles CertificateSigningRequests: the steps, one write
// per call, and the CSR's Event when none wrote (recordEvent).
type Controller struct{ cfg Config }

// NewController checks cfg and returns the CSR controller.
func NewController(cfg Config) (*Controller, error) {
	switch {
	case cfg.Approver == nil:
		return nil, errors.New("CSR controller: Approver is required")
	case cfg.Reads == nil:
		return nil, errors.New("CSR controller: Reads is required")
	}
	if cfg.WaitPoll <= 0 {
		cfg.WaitPoll = 10 * time.Minute
	}
	if cfg.ClusterResourceNamespace == "" {
		cfg.ClusterResourceNamespace = api.DefaultClusterResourceNamespace
	}
	return &Controller{cfg: cfg}, nil
}

var _ kernel.Controller = (*Controller)(nil)

// Reconcile implements kernel.Controller.
func (c *Controller) Reconcile(ctx context.Context, o kernel.Objects, rec ports.Record) error {
	csr, err := kernel.DecodeAs[*api.CertificateSigningRequest](o, rec)
	if err != nil {
		return err
	}
	st := &State{CSR: csr, Version: rec.Version, Now: o.Now()}
	reads := c.cfg.Reads
	env := &Env{Writer: writer{o}, Approver: c.cfg.Approver, Issuers: certificaterequests.IssuerFunc(reads.Issuer), Signers: c.cfg.Signers,
		Objects: o, Metrics: o.Metrics(), ClusterResourceNamespace: c.cfg.ClusterResourceNamespace, WaitPoll: c.cfg.WaitPoll,
		Authorizer: func(ctx context.Context) (*rbac.Authorizer, error) { return rbac.Load(ctx, reads) }}
	if n := c.cfg.IssuancesPerHour; n > 0 {
		// The same limit as the requests', by requester: a CSR is cluster-scoped.
		env.IssuancesPerHour, env.Quota = n, quotaFunc(reads.CSRsIssuedSince)
	}
	if _, refuses := c.cfg.Approver.(certificaterequests.Refuser); refuses {
		// A role that never approves (the AWS signer) may not read RBAC:
		// the approving role checked the reference before handing over.
		env.Authorizer = nil
	}
	res, err := step.Run(ctx, env, st, steps, stepNames)
	if err != nil || res.Wrote {
		return err
	}
	o.Explain(res.Why)
	rec.Version = st.Version
	if err := o.Settle(ctx, rec, res.Want); err != nil {
		return err
	}
	return recordEvent(ctx, o, rec.Key, st.CSR, res.Waiting)
}

// recordEvent keeps a CSR's Event true after a reconcile that wrote
// nothing (a reconcile that writes records no Event, so there is at most
// one Event write per reconcile). A CSR has no Ready condition (upstream's
// conditions are Approved, Denied and Failed only), so its Event is where
// `certfn describe csr`, `get events` and `create csr --wait` read why it
// waits, as cert-manager's CSR controllers tell it in Events:
//   - waiting (w, from the steps): a Normal or Warning Event with w's
//     reason and message, rewritten while unchanged at most every
//     kernel.EventMinInterval; a waiting CSR is polled every WaitPoll
//     (longer), so its steady state costs at most one Event write per poll;
//   - final (issued, Denied, Failed): how it ended (outcome) is recorded
//     once (kernel.EventOnce), as cert-manager's signers record it; the
//     waiting Events stay as its history, older than the outcome. The
//     CSR's final write wakes it, and the reconcile that follows (which
//     writes nothing) does this.
//
// A reconcile that read the CSR before a concurrent decision (an approval
// through the API) may still record its old reason after it; the
// decision's write wakes the CSR, whose next reconcile records the current
// one (and `create csr --wait` ignores WaitingApproval on an approved CSR).
func recordEvent(ctx context.Context, o kernel.Objects, key api.Key, c *api.CertificateSigningRequest, w *step.Waiting) error {
	switch {
	case c.IsFinal():
		return o.RecordEvent(ctx, key, outcome(c), kernel.EventOnce)
	case w != nil:
		typ := api.EventTypeNormal
		if w.Warning {
			typ = api.EventTypeWarning
		}
		return o.RecordEvent(ctx, key, kernel.Note{Type: typ, Reason: w.Reason, Message: w.Message}, kernel.EventRepeat)
	}
	return nil
}

// outcome is the Event of a final CSR: Normal CertificateIssued (the
// message of cert-manager's signers), Warning Denied with the Denied
// condition's message, or Warning with the Failed condition's reason and
// message (as cert-manager records a signer's failure).
func outcome(c *api.CertificateSigningRequest) kernel.Note {
	if c.Status.Has(api.CSRConditionDenied) {
		cond := c.Status.Condition(api.CSRConditionDenied)
		return kernel.Note{Type: api.EventTypeWarning, Reason: api.CSRConditionDenied, Message: conditionMessage(cond)}
	}
	if c.Status.Has(api.CSRConditionFailed) {
		cond := c.Status.Condition(api.CSRConditionFailed)
		reason := cond.Reason
		if reason == "" {
			reason = api.CSRConditionFailed
		}
		return kernel.Note{Type: api.EventTypeWarning, Reason: reason, Message: cond.Message}
	}
	return kernel.Note{Type: api.EventTypeNormal, Reason: "CertificateIssued", Message: "Certificate fetched from issuer successfully"}
}

// conditionMessage is a condition's message with its reason.
func conditionMessage(cond *api.CSRCondition) string {
	if cond.Reason == "" {
		return cond.Message
	}
	return cond.Message + " (" + cond.Reason + ")"
}

// writer is the steps' Writer over the kernel's handle.
type writer struct{ o kernel.Objects }

// DeleteCSR deletes the CSR's Event (which the deletion would leave
// behind otherwise; a user's delete takes it too: core/app
// Service.Delete), then the CSR (conditionally on st.Version) with what it
// owns. In that order a crash between the two leaves the CSR, whose next
// reconcile deletes again, never an Event about nothing.
func (w writer) DeleteCSR(ctx context.Context, st *State) error {
	key := api.KeyOf(st.CSR)
	if err := kernel.DeleteEvents(ctx, w.o.Store(), key); err != nil {
		return err
	}
	return w.o.DeleteObject(ctx, key, st.Version, api.Key{})
}

func (w writer) UpdateCSR(ctx context.Context, st *State, next time.Time) error {
	v, err := w.o.UpdateObject(ctx, st.CSR, st.Version, next)
	if err != nil {
		return err
	}
	st.Version = v
	return nil
}

// quotaFunc is a function as Quota.
type quotaFunc func(ctx context.Context, username string, since time.Time) (int, time.Time, error)

func (f quotaFunc) IssuedSince(ctx context.Context, username string, since time.Time) (int, time.Time, error) {
	return f(ctx, username, since)
}

// Unfinished is the CSRs' kernel.UnfinishedFunc: the CSRs that are not
// final.
func Unfinished(ctx context.Context, l *kernel.Listing) (first, rest []api.Key, err error) {
	csrs, err := l.Objects(ctx, api.KindCertificateSigningRequest)
	if err != nil {
		return nil, nil, err
	}
	for _, it := range csrs {
		if !it.Obj.(*api.CertificateSigningRequest).IsFinal() {
			rest = append(rest, it.Rec.Key)
		}
	}
	return nil, rest, nil
}
