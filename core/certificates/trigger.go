package certificates

import (
	"context"
	"fmt"
	"github.com/certfn/certfn/core/kernel"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/pki"
)

// BackoffRemaining is how long issuance must still wait after a failure:
// 1 h doubling per consecutive failure up to 32 h, counted from
// status.lastFailureTime, unless the spec changed since the failed request
// (or, for a refused spec.privateKey, since the refusal).
func BackoffRemaining(st *State) time.Duration {
	s := st.Cert.Status
	if s.LastFailureTime == nil {
		return 0
	}
	attempts := 1
	if s.FailedIssuanceAttempts != nil && *s.FailedIssuanceAttempts > 0 {
		attempts = *s.FailedIssuanceAttempts
	}
	if c := api.FindCondition(s.Conditions, api.CertificateConditionIssuing); c != nil && c.Status == api.ConditionFalse &&
		c.Reason == ReasonKeyNotAllowed && c.ObservedGeneration != st.Cert.Generation {
		return 0 // a refused spec.privateKey (no request was made) and the spec changed since
	}
	if failed := st.RequestsFor(st.NextRevision()); len(failed) == 1 {
		if bad, err := pki.RequestMatchesSpec(failed[0].CR, &st.Cert.Spec); err == nil && len(bad) > 0 {
			return 0 // the spec changed after the failure: retry at once
		}
	}
	until := s.LastFailureTime.Add(Backoff(attempts))
	if st.Now.Before(until) {
		return until.Sub(st.Now)
	}
	return 0
}

// TriggerStep is docs/design/certificate-controllers.md's trigger controller: it decides whether the
// stored certificate must be (re-)issued and, if so, sets the Issuing
// condition. It honours the per-Certificate failure backoff.
//
// It sets Issuing=True when Evaluate finds a reason and no backoff applies.
// It does nothing while Issuing is already True (a user may set it by hand
// to force a renewal; the trigger never interferes).
//
// First it asks who owns spec.secretName (SecretOwner): a
// Certificate that does not own it never issues. Its issuance, if one is
// under way, is stopped (Issuing=False, reason DuplicateSecretName, or
// the reason no Certificate may write the secret: Ownership.Refused);
// otherwise the step does nothing and asks to look again after
// env.WaitPoll, as cert-manager requeues such a Certificate, in case the
// owner changed in a way no write reports (the secret deleted or
// re-annotated outside certfn). Deleting the owner or changing its
// spec.secretName wakes the others at once (app.Service).
func TriggerStep(ctx context.Context, env *Env, st *State) (Outcome, error) {
	own, err := st.Ownership(ctx)
	if err != nil {
		return Outcome{}, err
	}
	if !own.Owns(st.Cert.Name) {
		return notOwner(ctx, env, st, own)
	}
	if st.IsIssuing() {
		return Outcome{Why: "already issuing"}, nil
	}
	if err := st.LoadSecret(ctx); err != nil {
		return Outcome{}, err
	}
	r := Evaluate(st)
	if r.RenewalDisabled {
		return Outcome{Why: "renewal is disabled (spec.renewal.policy: Disabled): the certificate is not renewed"}, nil
	}
	if r.Reason == "" {
		return Outcome{RequeueAt: r.RenewAt, Why: "no reason to issue before the renewal time"}, nil
	}
	if !r.HeldUntil.IsZero() && st.Now.Before(r.HeldUntil) {
		return Outcome{RequeueAt: r.HeldUntil, Why: "held: " + r.Message}, nil
	}
	if wait := BackoffRemaining(st); wait > 0 {
		return Outcome{RequeueAt: st.Now.Add(wait), Why: "backing off after a failed issuance"}, nil
	}
	now := st.Now
	api.SetCondition(&st.Cert.Status.Conditions, api.Condition{
		Type: api.CertificateConditionIssuing, Status: api.ConditionTrue, Reason: r.Reason, Message: r.Message,
		ObservedGeneration: st.Cert.Generation,
	}, now)
	ApplyReadiness(st)
	st.Record(kernel.Normal("Issuing", r.Message))
	if err := env.Writer.UpdateCertificate(ctx, st, now.Add(FollowUpGrace)); err != nil {
		return Outcome{}, fmt.Errorf("set Issuing condition: %w", err)
	}
	return Outcome{Wrote: true}, nil
}

// notOwner stops an issuance of a Certificate that does not own its
// secret; the Ready condition (ApplyReadiness) names the owner.
func notOwner(ctx context.Context, env *Env, st *State, own Ownership) (Outcome, error) {
	recheck := st.Now.Add(env.WaitPoll)
	if !st.IsIssuing() {
		return Outcome{RequeueAt: recheck, Why: "not the owner of the secret: " + own.Message()}, nil
	}
	api.SetCondition(&st.Cert.Status.Conditions, api.Condition{
		Type: api.CertificateConditionIssuing, Status: api.ConditionFalse, Reason: own.Reason(),
		Message: own.Message(), ObservedGeneration: st.Cert.Generation,
	}, st.Now)
	ApplyReadiness(st)
	if err := env.Writer.UpdateCertificate(ctx, st, st.Now.Add(FollowUpGrace)); err != nil {
		return Outcome{}, fmt.Errorf("stop the issuance of a Certificate that does not own its secret: %w", err)
	}
	return Outcome{Wrote: true}, nil
}
