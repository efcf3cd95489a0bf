package certificatesigningrequests

import (
	"context"
	"fmt"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificaterequests"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/step"
)

// ApprovalStep is the approver actor for a CSR of one of cert-manager's
// signer names: it asks the configured Approver (the auto-approve list,
// then CertificateRequestPolicies and their `use` bindings, docs/design/approval-policy.md)
// about the CSR seen as a CertificateRequest (Request), exactly as for a
// CertificateRequest, and records Approved or Denied (docs/design/certificates-api.md: permanent,
// mutually exclusive). A CSR carrying a name a CA must not sign is Denied
// first (certificaterequests.CheckNames), unless this role never decides
// (certificaterequests.Refuser). A CSR nobody decides is left untouched and looked
// at again after WaitPoll; a CSR has no Ready condition to say why, so
// the step reports it as step.Waiting (ReasonWaitingApproval with the
// approver's message, which names the policies that did not match) and
// the controller records it as the CSR's Event. CSRs of other signer names
// are not certfn's to decide. An approval records what it approved
// (Approve) and is written conditionally on the version the step read,
// so a request changed meanwhile is evaluated again. A CSR undecided for
// PendingRetain is no longer decided: CleanupStep deletes it.
func ApprovalStep(ctx context.Context, env *Env, st *State) (Outcome, error) {
	c := st.CSR
	if c.Status.Condition(api.CSRConditionApproved) != nil || c.Status.Condition(api.CSRConditionDenied) != nil || c.IsFinal() {
		return Outcome{Why: "already decided"}, nil
	}
	if at, pending := PendingUntil(c); pending && !st.Now.Before(at) {
		return Outcome{Why: "undecided for longer than " + PendingRetain.String() + ": left to the cleanup step"}, nil
	}
	cr, ours, err := Request(c, env.ClusterResourceNamespace)
	if !ours {
		return Outcome{Why: fmt.Sprintf("signer %q is not one of certfn's (issuers.cert-manager.io/<namespace>.<name>, clusterissuers.cert-manager.io/<name>)", c.Spec.SignerName)}, nil
	}
	if err != nil {
		return Outcome{Why: "left to the signing step: " + err.Error()}, nil
	}
	d, err := decide(ctx, env, cr)
	if err != nil {
		return Outcome{}, err
	}
	status := "unmatched"
	switch d.Result {
	case certificaterequests.Approved:
		status = "approved"
		Approve(c, env.ClusterResourceNamespace, d.Reason, d.Message, st.Now)
	case certificaterequests.Denied:
		status = "denied"
		c.Status.AddCondition(api.CSRConditionDenied, d.Reason, d.Message, st.Now)
	default:
		return Outcome{RequeueAt: st.Now.Add(env.WaitPoll), Why: "pending approval: " + d.Message,
			Waiting: &step.Waiting{Reason: ReasonWaitingApproval, Message: d.Message}}, nil
	}
	if env.Metrics != nil {
		env.Metrics.Inc("certfn_csr_approval_total", "signer", SignerLabel(c.Spec.SignerName), "status", status)
	}
	next := st.Now.Add(certificaterequests.FollowUpGrace) // the signing step follows at once (woken by the write)
	if d.Result == certificaterequests.Denied {
		next = st.Now.Add(Retain) // final: due when CleanupStep deletes it (KeepUntil)
	}
	if err := env.Writer.UpdateCSR(ctx, st, next); err != nil {
		return Outcome{}, fmt.Errorf("record approval decision: %w", err)
	}
	return Outcome{Wrote: true}, nil
}

// decide is the approval decision for the CSR seen as cr (see
// certificaterequests.ApprovalStep: names a CA must not sign are denied before the
// approver is asked).
func decide(ctx context.Context, env *Env, cr *api.CertificateRequest) (certificaterequests.Decision, error) {
	if _, refuses := env.Approver.(certificaterequests.Refuser); !refuses {
		if parsed, err := pki.ParseCSRPEM(cr.Spec.Request); err == nil {
			if err := certificaterequests.CheckNames(parsed); err != nil {
				return certificaterequests.Decision{Result: certificaterequests.Denied, Reason: certificaterequests.ReasonInvalidNames, Message: err.Error()}, nil
			}
		}
	}
	d, err := env.Approver.Decide(ctx, cr)
	if err != nil {
		return certificaterequests.Decision{}, fmt.Errorf("approval of CertificateSigningRequest %s: %w", cr.Name, err)
	}
	return d, nil
}
