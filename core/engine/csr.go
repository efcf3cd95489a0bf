package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificaterequests"
	"github.com/certfn/certfn/core/certificatesigningrequests"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/step"
)

// csrSteps are the CertificateSigningRequest steps (core/certificatesigningrequests): the
// approver, then the signer (docs/design/certificates-api.md), one write per invocation.
var csrSteps = []step.Func[*certificatesigningrequests.Env, *certificatesigningrequests.State]{certificatesigningrequests.ApprovalStep, certificatesigningrequests.SigningStep, certificatesigningrequests.CleanupStep}

var csrStepNames = []string{"approval", "signing", "cleanup"}

// reconcileCSR runs one step of a CertificateSigningRequest with the
// engine's approver (the auto-approve list, then CertificateRequestPolicies)
// and signers, as reconcileRequest does for CertificateRequests.
func (e *run) reconcileCSR(ctx context.Context, rec ports.Record) error {
	obj, err := decode(rec)
	if err != nil {
		return err
	}
	st := &certificatesigningrequests.State{CSR: obj.(*api.CertificateSigningRequest), Version: rec.Version, Now: e.cfg.Clock.Now()}
	env := &certificatesigningrequests.Env{Writer: csrWriter{e}, Approver: e.cfg.Approver, Issuers: &issuerGetter{e}, Signers: e.cfg.Signers,
		Objects: e, Metrics: e.cfg.Metrics, Authorizer: e.Authorizer, ClusterResourceNamespace: e.cfg.ClusterResourceNamespace,
		WaitPoll: e.cfg.WaitPoll}
	if n := e.cfg.IssuancesPerHourPerNamespace; n > 0 {
		// The same limit, by requester: a CSR is cluster-scoped.
		env.IssuancesPerHour, env.Quota = n, csrIssuedCounter{e}
	}
	if _, refuses := e.cfg.Approver.(certificaterequests.Refuser); refuses {
		// A role that never approves (the AWS signer) may not read RBAC:
		// the approving role checked the reference before handing over.
		env.Authorizer = nil
	}
	res, err := step.Run(ctx, env, st, csrSteps, csrStepNames)
	if err != nil || res.Wrote {
		return err
	}
	e.why = res.Why
	rec.Version = st.Version
	if err := e.settle(ctx, rec, res.Want); err != nil {
		return err
	}
	return e.recordCSREvent(ctx, rec.Key, st.CSR, res.Waiting)
}

// recordCSREvent keeps a CSR's Event true after a reconcile that wrote
// nothing (a reconcile that writes records no Event, so there is at most
// one Event write per reconcile). A CSR has no Ready condition (upstream's
// conditions are Approved, Denied and Failed only), so its Event is where
// `certfn describe csr`, `get events` and `create csr --wait` read why it
// waits, as cert-manager's CSR controllers tell it in Events:
//   - waiting (w, from the steps): a Normal or Warning Event with w's
//     reason and message, rewritten while unchanged at most every
//     EventMinInterval; a waiting CSR is polled every WaitPoll (longer), so
//     its steady state costs at most one Event write per poll;
//   - final (issued, Denied, Failed): an existing Event (a waiting reason,
//     or a failure recorded before) is replaced once by how it ended
//     (csrOutcome), so that a stale "WaitingApproval" or "IssuerNotReady"
//     never contradicts the conditions. Clearing it instead would hide how
//     it ended from `get events`. A CSR that never waited gets no Event
//     (the usual path writes none), at the cost of one read. The CSR's
//     final write wakes it, and the reconcile that follows (which writes
//     nothing) does this.
//
// A reconcile that read the CSR before a concurrent decision (an approval
// through the API) may still record its old reason after it; the
// decision's write wakes the CSR, whose next reconcile records the current
// one (and `create csr --wait` ignores WaitingApproval on an approved CSR).
func (e *run) recordCSREvent(ctx context.Context, key api.Key, c *api.CertificateSigningRequest, w *step.Waiting) error {
	switch {
	case c.IsFinal():
		return e.recordEvent(ctx, key, csrOutcome(c), eventReplace)
	case w != nil:
		typ := api.EventTypeNormal
		if w.Warning {
			typ = api.EventTypeWarning
		}
		return e.recordEvent(ctx, key, note{typ, w.Reason, w.Message}, eventRepeat)
	}
	return nil
}

// csrOutcome is the Event of a final CSR: Normal CertificateIssued (the
// message of cert-manager's signers), Warning Denied with the Denied
// condition's message, or Warning with the Failed condition's reason and
// message (as cert-manager records a signer's failure).
func csrOutcome(c *api.CertificateSigningRequest) note {
	if c.Status.Has(api.CSRConditionDenied) {
		cond := c.Status.Condition(api.CSRConditionDenied)
		return note{api.EventTypeWarning, api.CSRConditionDenied, csrConditionMessage(cond)}
	}
	if c.Status.Has(api.CSRConditionFailed) {
		cond := c.Status.Condition(api.CSRConditionFailed)
		reason := cond.Reason
		if reason == "" {
			reason = api.CSRConditionFailed
		}
		return note{api.EventTypeWarning, reason, cond.Message}
	}
	return note{api.EventTypeNormal, "CertificateIssued", "Certificate fetched from issuer successfully"}
}

// csrConditionMessage is a condition's message with its reason.
func csrConditionMessage(cond *api.CSRCondition) string {
	if cond.Reason == "" {
		return cond.Message
	}
	return cond.Message + " (" + cond.Reason + ")"
}

type csrWriter struct{ e *run }

// DeleteCSR deletes the CSR's Event (which the deletion would leave
// behind otherwise; a user's delete takes it too: core/app
// Service.Delete), then the CSR (conditionally on st.Version) with what it
// owns. In that order a crash between the two leaves the CSR, whose next
// reconcile deletes again, never an Event about nothing.
func (w csrWriter) DeleteCSR(ctx context.Context, st *certificatesigningrequests.State) error {
	key := api.KeyOf(st.CSR)
	if err := w.e.cfg.Store.Delete(ctx, api.EventKeyFor(key), 0); err != nil && !errors.Is(err, ports.ErrNotFound) {
		return fmt.Errorf("delete the Event of %s: %w", key, err)
	}
	return w.e.DeleteObject(ctx, key, st.Version, api.Key{})
}

func (w csrWriter) UpdateCSR(ctx context.Context, st *certificatesigningrequests.State, next time.Time) error {
	v, err := w.e.update(ctx, st.CSR, st.Version, next)
	if err != nil {
		return err
	}
	st.Version = v
	return nil
}

// wakePendingCSRs enqueues every CSR that is not final and whose signer
// is one of certfn's, when a policy, a binding or an issuer changed: it
// may now be decided or signed. One List of every CSR.
func (e *run) wakePendingCSRs(ctx context.Context) error {
	recs, err := e.cfg.Store.List(ctx, ports.ListOptions{Kind: api.KindCertificateSigningRequest})
	if err != nil {
		return fmt.Errorf("list pending CertificateSigningRequests: %w", err)
	}
	for _, r := range recs {
		o, err := decode(r)
		if err != nil {
			return err
		}
		c := o.(*api.CertificateSigningRequest)
		if _, _, ours := api.SignerIssuer(c.Spec.SignerName); !ours || c.IsFinal() {
			continue
		}
		if err := e.enqueue(ctx, r.Key, 0); err != nil {
			return err
		}
	}
	return nil
}

// csrIssuedCounter counts a requester's issued CSRs for the issuance
// quota (certificatesigningrequests.Quota) with one List of every CSR.
type csrIssuedCounter struct{ e *run }

// IssuedSince implements certificatesigningrequests.Quota: the CSRs of username whose
// status.issuedAt is after since. An issued CSR is kept certificatesigningrequests.Retain (the
// quota's window) after its issuance; one deleted sooner by a user is no
// longer counted.
func (q csrIssuedCounter) IssuedSince(ctx context.Context, username string, since time.Time) (int, time.Time, error) {
	recs, err := q.e.cfg.Store.List(ctx, ports.ListOptions{Kind: api.KindCertificateSigningRequest})
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("list CertificateSigningRequests: %w", err)
	}
	n, oldest := 0, time.Time{}
	for _, r := range recs {
		o, err := decode(r)
		if err != nil {
			return 0, time.Time{}, err
		}
		c := o.(*api.CertificateSigningRequest)
		if c.Spec.Username != username || c.Status.IssuedAt == nil || !c.Status.IssuedAt.Time.After(since) {
			continue
		}
		n++
		if at := c.Status.IssuedAt.Time; oldest.IsZero() || at.Before(oldest) {
			oldest = at
		}
	}
	return n, oldest, nil
}
