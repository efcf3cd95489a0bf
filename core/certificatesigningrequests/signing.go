package certificatesigningrequests

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificaterequests"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/rbac"
	"github.com/certfn/certfn/core/signers"
	"github.com/certfn/certfn/core/step"
)

// Reasons of the Failed condition the signing step records (docs/design/certificates-api.md:
// terminal signer errors), after cert-manager's CSR signers.
const (
	ReasonRequestParsing  = "RequestParsingError"
	ReasonDeniedReference = "DeniedReference"
	ReasonSigningError    = "SigningError"
	ReasonBadDuration     = "ErrorParseDuration"
)

// superuserGroup passes every check, as Kubernetes' system:masters.
const superuserGroup = "system:masters"

// SigningStep is the signer actor for an approved CSR of one of
// cert-manager's signer names (docs/design/certificates-api.md), with the selfSigned and CA
// signers of CertificateRequests:
//   - a Denied, Failed or issued CSR is final; an unapproved one waits;
//   - an approved CSR is signed with the parameters its approval recorded
//     (status.approved: isCA, lifetime, usages, the selfSigned key) and
//     nothing read later; one whose evaluated view (Request) differs from
//     that record, or that has none, is Failed (ReasonChangedAfterApproval,
//     ReasonApprovalNotRecorded), never signed;
//   - a CSR that does not parse, carries a name a CA must not sign, or
//     whose request-duration annotation is not a duration is Failed;
//   - for a namespaced Issuer the requester must hold `reference` on
//     `signers` in cert-manager.io in the Issuer's namespace, named by the
//     issuer or "*" (CanReference, cert-manager's check), else
//     Failed/DeniedReference. A role without Env.Authorizer (the AWS
//     signer, which may not read RBAC) skips it: the approving role
//     checked it before handing the CSR over (app.Deliverer). It comes
//     before the issuer is read: whether another namespace's Issuer
//     exists is not told to a requester who may not use it;
//   - a missing or not Ready issuer leaves the CSR waiting (WaitPoll);
//   - an ACME issuer signs through an Order that the CSR owns (in the
//     issuer's namespace: the Issuer's, or the cluster resource namespace
//     for a ClusterIssuer), created at the first signing step; the CSR
//     waits on it (the Order's final write wakes the CSR) and takes its
//     certificate, or is Failed/SigningError with the Order's reason
//     (cert-manager's pkg/controller/certificatesigningrequests/acme);
//   - the signer's permanent errors are Failed/SigningError; its transient
//     errors are retried;
//   - on success status.certificate is the chain (leaf first, validated as
//     docs/design/certificates-api.md says, its leaf for spec.request's public key), status.requestedDuration and honouredDuration record
//     docs/design/request-duration.md's requested vs honoured lifetime, and docs/design/request-duration.md's metrics
//     count a CSR that asked for expirationSeconds, and whether it was
//     honoured.
func SigningStep(ctx context.Context, env *Env, st *State) (Outcome, error) {
	c := st.CSR
	if c.IsFinal() {
		return Outcome{Why: "final"}, nil
	}
	if !c.Status.Has(api.CSRConditionApproved) {
		return Outcome{Why: "not approved"}, nil
	}
	cr, ours, err := Request(c, env.ClusterResourceNamespace)
	if !ours {
		return Outcome{Why: fmt.Sprintf("signer %q is not one of certfn's", c.Spec.SignerName)}, nil
	}
	if err != nil {
		return fail(ctx, env, st, ReasonBadDuration, err.Error())
	}
	if reason, msg, ok := approvedRequest(c, cr); !ok {
		return fail(ctx, env, st, reason, msg)
	}
	parsed, err := pki.ParseCSRPEM(c.Spec.Request)
	if err != nil {
		return fail(ctx, env, st, ReasonRequestParsing, "spec.request: "+err.Error())
	}
	if err := certificaterequests.CheckNames(parsed); err != nil {
		return fail(ctx, env, st, certificaterequests.ReasonInvalidNames, err.Error())
	}
	// The reference check comes before the issuer is read, so that the
	// answer is the same whether or not another namespace's Issuer exists.
	if env.Authorizer != nil {
		if ok, why, err := CanReference(ctx, env.Authorizer, c); err != nil {
			return Outcome{}, err
		} else if !ok {
			return fail(ctx, env, st, ReasonDeniedReference, why)
		}
	}
	iss, secretNS, ok, err := env.Issuers.Get(ctx, cr.Namespace, cr.Spec.IssuerRef)
	if err != nil {
		return Outcome{}, fmt.Errorf("read issuer %s: %w", cr.Spec.IssuerRef.Name, err)
	}
	if !ok {
		return waiting(st, env, ReasonIssuerNotFound, fmt.Sprintf("%s %q not found", cr.Spec.IssuerRef.Kind, cr.Spec.IssuerRef.Name))
	}
	typ := certificaterequests.IssuerType(iss.GetSpec())
	if typ == "selfSigned" && cr.Annotations[api.AnnotationPrivateKeySecretName] == "" {
		return fail(ctx, env, st, ReasonSigningError, fmt.Sprintf("a selfSigned issuer signs a CertificateSigningRequest with the key in the secret that the annotation %q names (in namespace %s); the annotation is missing",
			api.AnnotationCSRPrivateKeySecretName, cr.Namespace))
	}
	signer, ok := env.Signers[typ]
	if !ok {
		return Outcome{Why: "no signer for issuer type " + typ + " in this role"}, nil
	}
	if !api.IsTrue(iss.GetStatus().Conditions, api.IssuerConditionReady) {
		return waiting(st, env, ReasonIssuerNotReady, fmt.Sprintf("issuer %q is not Ready", iss.GetObjectMeta().Name))
	}
	// Owner: an ACME Order made for this request belongs to the CSR (in the
	// issuer's namespace), as cert-manager's CSR ACME signer makes it.
	req := signers.Request{CR: cr, Issuer: iss, SecretNamespace: secretNS, Objects: env.Objects, Owner: c}
	if out, held, err := quota(ctx, env, st, signer, req); held || err != nil {
		return out, err
	}
	res, err := signer.Sign(ctx, req)
	switch {
	case err == nil:
	case errors.Is(err, signers.ErrIssuerNotReady):
		return waiting(st, env, ReasonIssuerNotReady, err.Error())
	case errors.Is(err, signers.ErrPending):
		return waiting(st, env, pendingReason(typ), err.Error())
	case errs.IsPermanent(err):
		return fail(ctx, env, st, ReasonSigningError, err.Error())
	default:
		return Outcome{}, fmt.Errorf("sign CertificateSigningRequest %s: %w", c.Name, err)
	}
	chain, err := pki.ParseChainPEM(res.Certificate)
	if err != nil {
		return fail(ctx, env, st, ReasonSigningError, "the signer returned an invalid status.certificate: "+err.Error())
	}
	if !pki.PublicKeysEqual(chain[0].PublicKey, parsed.PublicKey) {
		return fail(ctx, env, st, ReasonSigningError, "the signer returned a certificate for another public key than spec.request's")
	}
	c.Status.Certificate = res.Certificate
	c.Status.IssuedAt = api.NewTime(st.Now)
	if res.Requested > 0 {
		c.Status.RequestedDuration = api.NewDuration(res.Requested)
	}
	if res.Honoured > 0 {
		c.Status.HonouredDuration = api.NewDuration(res.Honoured)
	}
	if env.Metrics != nil {
		label := SignerLabel(c.Spec.SignerName)
		env.Metrics.Inc("certfn_csrs_signed_total", "signer", label, "issuer_type", typ)
		if c.Spec.ExpirationSeconds != nil {
			env.Metrics.Inc(MetricRequestedDuration, "signerName", label)
			if res.Honoured == time.Duration(*c.Spec.ExpirationSeconds)*time.Second {
				env.Metrics.Inc(MetricHonoredDuration, "signerName", label)
			}
		}
	}
	return write(ctx, env, st, "store signed certificate")
}

// quota applies the issuance quota of CSRs (env.IssuancesPerHour, by
// requester) before signer is called, as the CertificateRequests' signing
// step applies it by namespace: when the requester's CSRs issued within
// the last certificaterequests.QuotaWindow reach the limit, and signing this one has
// not begun (signers.Resumer: an ACME Order created before), the CSR
// waits (ReasonIssuanceQuota, naming the quota and when it frees up) until
// the oldest of those issuances leaves the window. held says it was held
// back (out and err are then the step's result).
func quota(ctx context.Context, env *Env, st *State, signer signers.Signer, req signers.Request) (out Outcome, held bool, err error) {
	user := st.CSR.Spec.Username
	hold, err := certificaterequests.QuotaHeld(ctx, env.Quota, certificaterequests.QuotaCount{Limit: env.IssuancesPerHour,
		Who: user, What: fmt.Sprintf("requester %q", user), Now: st.Now, WaitPoll: env.WaitPoll, Signer: signer, Request: req})
	if hold == nil || err != nil {
		return Outcome{}, err != nil, err
	}
	msg := fmt.Sprintf("Issuance quota of requester %q reached: %d CertificateSigningRequests issued in the last hour, limit %d per hour "+
		"(CERTFN_QUOTA_ISSUANCES_PER_HOUR); signing waits until %s, when the oldest of them is an hour old",
		user, hold.Issued, env.IssuancesPerHour, hold.Free.UTC().Format(time.RFC3339))
	return Outcome{RequeueAt: hold.Free, Why: "waiting: " + msg, Waiting: &step.Waiting{Reason: ReasonIssuanceQuota, Message: msg}}, true, nil
}

// CanReference reports whether the requester of c may have it signed by
// the issuer its signer name names: for a namespaced Issuer, `reference`
// on `signers` in cert-manager.io in the Issuer's namespace, named by the
// issuer or "*" (rbac.CanReferenceSigner, cert-manager's check, so that a
// requester cannot use another namespace's CA); members of
// system:masters pass; a ClusterIssuer needs no such permission. why
// says what is missing. authorizer returns the RBAC snapshot.
func CanReference(ctx context.Context, authorizer func(context.Context) (*rbac.Authorizer, error), c *api.CertificateSigningRequest) (ok bool, why string, err error) {
	ref, ns, ours := api.SignerIssuer(c.Spec.SignerName)
	if !ours || ref.Kind != api.KindIssuer {
		return true, "", nil
	}
	id := rbac.Identity{Username: c.Spec.Username, UID: c.Spec.UID, Groups: c.Spec.Groups, Extra: c.Spec.Extra}.WithImplicitGroups()
	for _, g := range id.Groups {
		if g == superuserGroup {
			return true, "", nil
		}
	}
	az, err := authorizer(ctx)
	if err != nil {
		return false, "", fmt.Errorf("read RBAC for the reference check: %w", err)
	}
	ok, why = az.CanReferenceSigner(id, ref, ns)
	return ok, why, nil
}

// waiting leaves the CSR as it is, looked at again after WaitPoll (the
// issuer's readiness wakes it sooner in local mode's loops through the
// sweep), and tells its users why (step.Waiting: the controller records it as
// the CSR's Event).
func waiting(st *State, env *Env, reason, msg string) (Outcome, error) {
	return Outcome{RequeueAt: st.Now.Add(env.WaitPoll), Why: "waiting: " + msg,
		Waiting: &step.Waiting{Reason: reason, Message: msg, Warning: reason == ReasonIssuerNotFound || reason == ReasonIssuerNotReady}}, nil
}

// fail records a Failed condition (docs/design/certificates-api.md: terminal signer error).
func fail(ctx context.Context, env *Env, st *State, reason, msg string) (Outcome, error) {
	st.CSR.Status.AddCondition(api.CSRConditionFailed, reason, msg, st.Now)
	if env.Metrics != nil {
		env.Metrics.Inc("certfn_csrs_failed_total", "signer", SignerLabel(st.CSR.Spec.SignerName), "reason", reason)
	}
	return write(ctx, env, st, "record signing failure")
}

func write(ctx context.Context, env *Env, st *State, what string) (Outcome, error) {
	next, _ := KeepUntil(st.CSR) // final: due when CleanupStep deletes it
	if err := env.Writer.UpdateCSR(ctx, st, next); err != nil {
		return Outcome{}, fmt.Errorf("%s: %w", what, err)
	}
	return Outcome{Wrote: true}, nil
}
