package certificaterequests

import (
	"context"
	"fmt"
	"github.com/certfn/certfn/core/kernel"
	"strings"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/pki"
)

// ApprovalStep is the approver step for CertificateRequests (docs/design/certificates-api.md:
// the approver is an actor separate from requester and signer). It asks the
// configured Approver once and records Approved or Denied; both are
// permanent and mutually exclusive. A request no policy applies to is left
// untouched, with the reason visible on its Ready condition. A request
// whose CSR carries a name a CA must not sign (pki.CheckCSRNames) is
// Denied with reason ReasonInvalidNames before the Approver is
// asked, so that no policy and no auto-approval can approve it.
func ApprovalStep(ctx context.Context, env *Env, st *State) (Outcome, error) {
	conds := &st.CR.Status.Conditions
	if api.FindCondition(*conds, api.CertificateRequestConditionApproved) != nil ||
		api.FindCondition(*conds, api.CertificateRequestConditionDenied) != nil || st.CR.IsFinal() {
		return Outcome{Why: "already decided"}, nil
	}
	d, err := decide(ctx, env, st.CR)
	if err != nil {
		return Outcome{}, err
	}
	status := "unmatched"
	switch d.Result {
	case Approved:
		status = "approved"
		api.SetCondition(conds, api.Condition{Type: api.CertificateRequestConditionApproved, Status: api.ConditionTrue,
			Reason: d.Reason, Message: d.Message}, st.Now)
		st.Record(kernel.Normal("Approved", d.Message)) // approver-policy's reasons
	case Denied:
		status = "denied"
		api.SetCondition(conds, api.Condition{Type: api.CertificateRequestConditionDenied, Status: api.ConditionTrue,
			Reason: d.Reason, Message: d.Message}, st.Now)
		st.Record(kernel.Warning("Denied", d.Message))
	default:
		changed := api.SetCondition(conds, api.Condition{Type: api.CertificateRequestConditionReady, Status: api.ConditionFalse,
			Reason: api.CertificateRequestReasonPending, Message: d.Message}, st.Now)
		if !changed {
			return Outcome{RequeueAt: st.Now.Add(env.WaitPoll), Why: strings.TrimSuffix("pending approval: "+d.Message+"; "+d.Detail, "; ")}, nil
		}
		st.Record(kernel.Normal("Unprocessed", d.Message))
	}
	if env.Metrics != nil {
		env.Metrics.Inc("certfn_approval_total", "namespace", st.CR.Namespace, "status", status)
	}
	next := st.Now.Add(env.WaitPoll)
	if d.Result != Unmatched {
		next = st.Now.Add(FollowUpGrace) // the signing step follows at once (enqueued by the write)
	}
	if err := env.Writer.UpdateRequest(ctx, st, next); err != nil {
		return Outcome{}, fmt.Errorf("record approval decision: %w", err)
	}
	return Outcome{Wrote: true}, nil
}

// decide is the approval decision for cr. A CSR carrying a name a CA must
// not sign is Denied here, with the name and the rule in the message,
// without asking env.Approver — unless env.Approver is a
// Refuser (this role makes no decisions at all). A CSR that does
// not parse is left to the approver, as before (a policy denies it; the
// signing step marks it InvalidRequest). Everything else is the
// approver's decision.
func decide(ctx context.Context, env *Env, cr *api.CertificateRequest) (Decision, error) {
	if _, refuses := env.Approver.(Refuser); !refuses {
		if csr, err := pki.ParseCSRPEM(cr.Spec.Request); err == nil {
			if err := CheckNames(csr); err != nil {
				return Decision{Result: Denied, Reason: ReasonInvalidNames, Message: err.Error()}, nil
			}
		}
	}
	d, err := env.Approver.Decide(ctx, cr)
	if err != nil {
		return Decision{}, fmt.Errorf("approval of CertificateRequest %s/%s: %w", cr.Namespace, cr.Name, err)
	}
	return d, nil
}
