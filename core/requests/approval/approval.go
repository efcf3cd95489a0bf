// Package approval is the approver step for CertificateRequests (docs/design/certificates-api.md:
// the approver is an actor separate from requester and signer). It asks the
// configured Approver once and records Approved or Denied; both are
// permanent and mutually exclusive. A request no policy applies to is left
// untouched, with the reason visible on its Ready condition. A request
// whose CSR carries a name a CA must not sign (pki.CheckCSRNames) is
// Denied with reason requests.ReasonInvalidNames before the Approver is
// asked, so that no policy and no auto-approval can approve it.
package approval

import (
	"context"
	"fmt"
	"strings"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/requests"
)

// Step runs one approval step.
func Step(ctx context.Context, env *requests.Env, st *requests.State) (requests.Outcome, error) {
	conds := &st.CR.Status.Conditions
	if api.FindCondition(*conds, api.CertificateRequestConditionApproved) != nil ||
		api.FindCondition(*conds, api.CertificateRequestConditionDenied) != nil || st.CR.IsFinal() {
		return requests.Outcome{Why: "already decided"}, nil
	}
	d, err := decide(ctx, env, st.CR)
	if err != nil {
		return requests.Outcome{}, err
	}
	status := "unmatched"
	switch d.Result {
	case requests.Approved:
		status = "approved"
		api.SetCondition(conds, api.Condition{Type: api.CertificateRequestConditionApproved, Status: api.ConditionTrue,
			Reason: d.Reason, Message: d.Message}, st.Now)
	case requests.Denied:
		status = "denied"
		api.SetCondition(conds, api.Condition{Type: api.CertificateRequestConditionDenied, Status: api.ConditionTrue,
			Reason: d.Reason, Message: d.Message}, st.Now)
	default:
		changed := api.SetCondition(conds, api.Condition{Type: api.CertificateRequestConditionReady, Status: api.ConditionFalse,
			Reason: api.CertificateRequestReasonPending, Message: d.Message}, st.Now)
		if !changed {
			return requests.Outcome{RequeueAt: st.Now.Add(env.WaitPoll), Why: strings.TrimSuffix("pending approval: "+d.Message+"; "+d.Detail, "; ")}, nil
		}
	}
	if env.Metrics != nil {
		env.Metrics.Inc("certfn_approval_total", "namespace", st.CR.Namespace, "status", status)
	}
	next := st.Now.Add(env.WaitPoll)
	if d.Result != requests.Unmatched {
		next = st.Now.Add(requests.FollowUpGrace) // the signing step follows at once (enqueued by the write)
	}
	if err := env.Writer.UpdateRequest(ctx, st, next); err != nil {
		return requests.Outcome{}, fmt.Errorf("record approval decision: %w", err)
	}
	return requests.Outcome{Wrote: true}, nil
}

// decide is the approval decision for cr. A CSR carrying a name a CA must
// not sign is Denied here, with the name and the rule in the message,
// without asking env.Approver — unless env.Approver is a
// requests.Refuser (this role makes no decisions at all). A CSR that does
// not parse is left to the approver, as before (a policy denies it; the
// signing step marks it InvalidRequest). Everything else is the
// approver's decision.
func decide(ctx context.Context, env *requests.Env, cr *api.CertificateRequest) (requests.Decision, error) {
	if _, refuses := env.Approver.(requests.Refuser); !refuses {
		if csr, err := pki.ParseCSRPEM(cr.Spec.Request); err == nil {
			if err := requests.CheckNames(csr); err != nil {
				return requests.Decision{Result: requests.Denied, Reason: requests.ReasonInvalidNames, Message: err.Error()}, nil
			}
		}
	}
	d, err := env.Approver.Decide(ctx, cr)
	if err != nil {
		return requests.Decision{}, fmt.Errorf("approval of CertificateRequest %s/%s: %w", cr.Namespace, cr.Name, err)
	}
	return d, nil
}
