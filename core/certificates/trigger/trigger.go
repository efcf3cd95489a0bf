// Package trigger is docs/design/certificate-controllers.md's trigger controller: it decides whether the
// stored certificate must be (re-)issued and, if so, sets the Issuing
// condition. It honours the per-Certificate failure backoff.
package trigger

import (
	"context"
	"fmt"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates"
	"github.com/certfn/certfn/core/certificates/readiness"
	"github.com/certfn/certfn/core/pki"
)

// BackoffRemaining is how long issuance must still wait after a failure:
// 1 h doubling per consecutive failure up to 32 h, counted from
// status.lastFailureTime, unless the spec changed since the failed request
// (or, for a refused spec.privateKey, since the refusal).
func BackoffRemaining(st *certificates.State) time.Duration {
	s := st.Cert.Status
	if s.LastFailureTime == nil {
		return 0
	}
	attempts := 1
	if s.FailedIssuanceAttempts != nil && *s.FailedIssuanceAttempts > 0 {
		attempts = *s.FailedIssuanceAttempts
	}
	if c := api.FindCondition(s.Conditions, api.CertificateConditionIssuing); c != nil && c.Status == api.ConditionFalse &&
		c.Reason == certificates.ReasonKeyNotAllowed && c.ObservedGeneration != st.Cert.Generation {
		return 0 // a refused spec.privateKey (no request was made) and the spec changed since
	}
	if failed := st.RequestsFor(st.NextRevision()); len(failed) == 1 {
		if bad, err := pki.RequestMatchesSpec(failed[0].CR, &st.Cert.Spec); err == nil && len(bad) > 0 {
			return 0 // the spec changed after the failure: retry at once
		}
	}
	until := s.LastFailureTime.Add(certificates.Backoff(attempts))
	if st.Now.Before(until) {
		return until.Sub(st.Now)
	}
	return 0
}

// Step sets Issuing=True when Evaluate finds a reason and no backoff applies.
// It does nothing while Issuing is already True (a user may set it by hand
// to force a renewal; the trigger never interferes).
//
// First it asks who owns spec.secretName (certificates.SecretOwner): a
// Certificate that does not own it never issues. Its issuance, if one is
// under way, is stopped (Issuing=False, reason DuplicateSecretName, or
// the reason no Certificate may write the secret: Ownership.Refused);
// otherwise the step does nothing and asks to look again after
// env.WaitPoll, as cert-manager requeues such a Certificate, in case the
// owner changed in a way no write reports (the secret deleted or
// re-annotated outside certfn). Deleting the owner or changing its
// spec.secretName wakes the others at once (app.Service).
func Step(ctx context.Context, env *certificates.Env, st *certificates.State) (certificates.Outcome, error) {
	own, err := st.Ownership(ctx)
	if err != nil {
		return certificates.Outcome{}, err
	}
	if !own.Owns(st.Cert.Name) {
		return notOwner(ctx, env, st, own)
	}
	if st.IsIssuing() {
		return certificates.Outcome{Why: "already issuing"}, nil
	}
	if err := st.LoadSecret(ctx); err != nil {
		return certificates.Outcome{}, err
	}
	r := certificates.Evaluate(st)
	if r.RenewalDisabled {
		return certificates.Outcome{Why: "renewal is disabled (spec.renewal.policy: Disabled): the certificate is not renewed"}, nil
	}
	if r.Reason == "" {
		return certificates.Outcome{RequeueAt: r.RenewAt, Why: "no reason to issue before the renewal time"}, nil
	}
	if !r.HeldUntil.IsZero() && st.Now.Before(r.HeldUntil) {
		return certificates.Outcome{RequeueAt: r.HeldUntil, Why: "held: " + r.Message}, nil
	}
	if wait := BackoffRemaining(st); wait > 0 {
		return certificates.Outcome{RequeueAt: st.Now.Add(wait), Why: "backing off after a failed issuance"}, nil
	}
	now := st.Now
	api.SetCondition(&st.Cert.Status.Conditions, api.Condition{
		Type: api.CertificateConditionIssuing, Status: api.ConditionTrue, Reason: r.Reason, Message: r.Message,
		ObservedGeneration: st.Cert.Generation,
	}, now)
	readiness.Apply(st)
	if err := env.Writer.UpdateCertificate(ctx, st, now.Add(certificates.FollowUpGrace)); err != nil {
		return certificates.Outcome{}, fmt.Errorf("set Issuing condition: %w", err)
	}
	return certificates.Outcome{Wrote: true}, nil
}

// notOwner stops an issuance of a Certificate that does not own its
// secret; the Ready condition (readiness.Apply) names the owner.
func notOwner(ctx context.Context, env *certificates.Env, st *certificates.State, own certificates.Ownership) (certificates.Outcome, error) {
	recheck := st.Now.Add(env.WaitPoll)
	if !st.IsIssuing() {
		return certificates.Outcome{RequeueAt: recheck, Why: "not the owner of the secret: " + own.Message()}, nil
	}
	api.SetCondition(&st.Cert.Status.Conditions, api.Condition{
		Type: api.CertificateConditionIssuing, Status: api.ConditionFalse, Reason: own.Reason(),
		Message: own.Message(), ObservedGeneration: st.Cert.Generation,
	}, st.Now)
	readiness.Apply(st)
	if err := env.Writer.UpdateCertificate(ctx, st, st.Now.Add(certificates.FollowUpGrace)); err != nil {
		return certificates.Outcome{}, fmt.Errorf("stop the issuance of a Certificate that does not own its secret: %w", err)
	}
	return certificates.Outcome{Wrote: true}, nil
}
