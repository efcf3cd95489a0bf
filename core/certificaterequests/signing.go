package certificaterequests

import (
	"context"
	"errors"
	"fmt"
	"github.com/certfn/certfn/core/kernel"
	"strings"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/signers"
)

// SigningStep is the signer step for CertificateRequests of the
// selfSigned and ca issuers (docs/design/certificates-api.md's signer actor): it signs only
// approved requests, records the chain (validated as docs/design/certificates-api.md requires) and
// the requested vs honoured lifetime (docs/design/request-duration.md), marks terminal failures
// Failed, and leaves requests pending while their issuer is missing or not
// ready. A Denied request is marked final here, as cert-manager does. An
// approved request whose CSR does not parse, or carries a name a CA must
// not sign (CheckNames), is marked InvalidRequest and Failed
// before its issuer is looked up, so no signer ever sees it. With an
// issuance quota (Env.IssuancesPerHour), a request of a namespace
// that reached it stays pending until the quota frees up, before any
// signer is called (so an ACME Order is not even created).
func SigningStep(ctx context.Context, env *Env, st *State) (Outcome, error) {
	cr := st.CR
	conds := &cr.Status.Conditions
	// A denial is recorded before the final check: Denied=True alone already
	// makes the request final, and without Ready=False/Denied and
	// failureTime the Certificate could never tell that the denial happened
	// before its next issuance attempt (and would never replace the request).
	if d := api.FindCondition(*conds, api.CertificateRequestConditionDenied); d != nil && d.Status == api.ConditionTrue {
		if r := api.FindCondition(*conds, api.CertificateRequestConditionReady); r != nil && r.Reason == api.CertificateRequestReasonDenied {
			return Outcome{Why: "denied (recorded)"}, nil
		}
		api.SetCondition(conds, api.Condition{Type: api.CertificateRequestConditionReady, Status: api.ConditionFalse,
			Reason: api.CertificateRequestReasonDenied, Message: "The CertificateRequest was denied by an approval controller: " + d.Message}, st.Now)
		cr.Status.FailureTime = api.NewTime(st.Now)
		return write(ctx, env, st, "record denial")
	}
	if cr.IsFinal() {
		return Outcome{Why: "final"}, nil
	}
	if !api.IsTrue(*conds, api.CertificateRequestConditionApproved) {
		return Outcome{Why: "not approved"}, nil
	}
	csr, err := pki.ParseCSRPEM(cr.Spec.Request)
	if err != nil {
		api.SetCondition(conds, api.Condition{Type: api.CertificateRequestConditionInvalidRequest, Status: api.ConditionTrue,
			Reason: "RequestParsingError", Message: "spec.request: " + err.Error()}, st.Now)
		return fail(ctx, env, st, "spec.request: "+err.Error())
	}
	// Defence in depth: the approval step denies such requests, but one
	// approved by hand (or before names were checked) must not be signed.
	if err := CheckNames(csr); err != nil {
		api.SetCondition(conds, api.Condition{Type: api.CertificateRequestConditionInvalidRequest, Status: api.ConditionTrue,
			Reason: ReasonInvalidNames, Message: err.Error()}, st.Now)
		return failWith(ctx, env, st, ReasonInvalidNames, err.Error())
	}
	iss, secretNS, ok, err := env.Issuers.Get(ctx, cr.Namespace, cr.Spec.IssuerRef)
	if err != nil {
		return Outcome{}, fmt.Errorf("read issuer %s: %w", cr.Spec.IssuerRef.Name, err)
	}
	if !ok {
		kind := cr.Spec.IssuerRef.Kind
		if kind == "" {
			kind = api.KindIssuer
		}
		return pending(ctx, env, st, fmt.Sprintf("Referenced %q not found: %s %q does not exist", kind, kind, cr.Spec.IssuerRef.Name))
	}
	if g := cr.Spec.IssuerRef.Group; g != "" && g != api.CertManagerGroup {
		return pending(ctx, env, st, fmt.Sprintf("issuerRef.group %q is an external issuer, which certfn does not support", g))
	}
	typ := IssuerType(iss.GetSpec())
	signer, ok := env.Signers[typ]
	if !ok {
		// acme requests are handled by the ACME issuer's own steps.
		return Outcome{Why: "no signer for issuer type " + typ + " in this role"}, nil
	}
	if !api.IsTrue(iss.GetStatus().Conditions, api.IssuerConditionReady) {
		return pending(ctx, env, st, fmt.Sprintf("Referenced issuer %q does not have a Ready status condition", iss.GetObjectMeta().Name))
	}
	req := signers.Request{CR: cr, Issuer: iss, SecretNamespace: secretNS, Objects: env.Objects}
	if out, held, err := quota(ctx, env, st, signer, req); held || err != nil {
		return out, err
	}
	res, err := signer.Sign(ctx, req)
	switch {
	case err == nil:
	case errors.Is(err, signers.ErrIssuerNotReady):
		return pending(ctx, env, st, "Issuer is not ready: "+err.Error())
	case errors.Is(err, signers.ErrPending):
		return pending(ctx, env, st, err.Error())
	case errs.IsPermanent(err):
		return fail(ctx, env, st, err.Error())
	default:
		return Outcome{}, fmt.Errorf("sign CertificateRequest %s/%s: %w", cr.Namespace, cr.Name, err)
	}
	if _, err := pki.ParseChainPEM(res.Certificate); err != nil {
		return fail(ctx, env, st, "the signer returned an invalid status.certificate: "+err.Error())
	}
	cr.Status.Certificate, cr.Status.CA = res.Certificate, res.CA
	if res.Requested > 0 {
		cr.Status.RequestedDuration = api.NewDuration(res.Requested)
	}
	if res.Honoured > 0 {
		cr.Status.HonouredDuration = api.NewDuration(res.Honoured)
	}
	api.SetCondition(conds, api.Condition{Type: api.CertificateRequestConditionReady, Status: api.ConditionTrue,
		Reason: api.CertificateRequestReasonIssued, Message: "Certificate fetched from issuer successfully"}, st.Now)
	st.Record(kernel.Normal("CertificateIssued", "Certificate fetched from issuer successfully"))
	if env.Metrics != nil {
		env.Metrics.Inc("certfn_requests_signed_total", "namespace", cr.Namespace, "issuer_type", typ)
	}
	return write(ctx, env, st, "store signed certificate")
}

// quota applies the issuance quota (env.IssuancesPerHour) before signer
// is called. When the requests of the namespace issued within the last
// QuotaWindow reach the limit, and signing the request has not
// begun already (signers.Resumer: an ACME Order created before), the
// request stays Ready=False/Pending with a message naming the quota and
// when it frees up, and asks to run again when the oldest of those
// issuances leaves the window. held says the request was held back (out
// and err are then the step's result). Without a limit nothing is counted.
func quota(ctx context.Context, env *Env, st *State, signer signers.Signer, req signers.Request) (out Outcome, held bool, err error) {
	ns := st.CR.Namespace
	hold, err := QuotaHeld(ctx, env.Quota, QuotaCount{Limit: env.IssuancesPerHour, Who: ns, What: "namespace " + ns,
		Now: st.Now, WaitPoll: env.WaitPoll, Signer: signer, Request: req})
	if hold == nil || err != nil {
		return Outcome{}, err != nil, err
	}
	msg := fmt.Sprintf("Issuance quota of namespace %s reached: %d CertificateRequests issued in the last hour, limit %d per hour "+
		"(CERTFN_QUOTA_ISSUANCES_PER_HOUR); signing waits until %s, when the oldest of them is an hour old",
		ns, hold.Issued, env.IssuancesPerHour, hold.Free.UTC().Format(time.RFC3339))
	out, err = pendingUntil(ctx, env, st, msg, hold.Free)
	return out, true, err
}

// QuotaCount is one check of the issuance quota: Limit issuances of Who
// within the last QuotaWindow before Now (none: no limit), for Request
// to Signer.
type QuotaCount struct {
	Limit int
	// Who is what the Quota counts by (a namespace, a requester); What
	// names it in errors.
	Who, What string
	Now       time.Time
	// WaitPoll is how long a hold waits when the window's end is not
	// after Now (not expected: every counted issuance is within it).
	WaitPoll time.Duration
	Signer   signers.Signer
	Request  signers.Request
}

// QuotaHold is a request held back by the issuance quota: Issued
// issuances counted, and Free, when the oldest of them leaves the window.
type QuotaHold struct {
	Issued int
	Free   time.Time
}

// IssuanceCounter counts issuances of who strictly after since and
// returns the earliest of their times (zero when n is 0); the Quota of
// both request kinds.
type IssuanceCounter interface {
	IssuedSince(ctx context.Context, who string, since time.Time) (n int, oldest time.Time, err error)
}

// QuotaHeld is the issuance quota's rule for both request kinds: with a
// limit, when the issuances counted reach it and signing has not begun
// already (signers.Resumer: an ACME Order created before), the request is
// held until the oldest of them leaves QuotaWindow. It returns nil when
// the request may be signed. A limit without a counter is a permanent
// error.
func QuotaHeld(ctx context.Context, counter IssuanceCounter, q QuotaCount) (*QuotaHold, error) {
	if q.Limit <= 0 {
		return nil, nil
	}
	if counter == nil {
		return nil, errs.Permanentf("the issuance quota is set (%d per hour) but the step has no Quota to count issuances with", q.Limit)
	}
	n, oldest, err := counter.IssuedSince(ctx, q.Who, q.Now.Add(-QuotaWindow))
	if err != nil {
		return nil, fmt.Errorf("count the issuances of %s for the issuance quota: %w", q.What, err)
	}
	if n < q.Limit {
		return nil, nil
	}
	if r, ok := q.Signer.(signers.Resumer); ok {
		begun, err := r.Begun(ctx, q.Request)
		if err != nil {
			return nil, fmt.Errorf("issuance quota: %w", err)
		}
		if begun {
			return nil, nil
		}
	}
	free := oldest.Add(QuotaWindow)
	if !free.After(q.Now) {
		free = q.Now.Add(q.WaitPoll)
	}
	return &QuotaHold{Issued: n, Free: free}, nil
}

// pending records why the request waits; it writes only when the message
// changed, and asks to be checked again after WaitPoll.
func pending(ctx context.Context, env *Env, st *State, msg string) (Outcome, error) {
	return pendingUntil(ctx, env, st, msg, st.Now.Add(env.WaitPoll))
}

// pendingUntil is pending, checked again at next.
func pendingUntil(ctx context.Context, env *Env, st *State, msg string, next time.Time) (Outcome, error) {
	changed := api.SetCondition(&st.CR.Status.Conditions, api.Condition{Type: api.CertificateRequestConditionReady,
		Status: api.ConditionFalse, Reason: api.CertificateRequestReasonPending, Message: msg}, st.Now)
	if !changed {
		return Outcome{RequeueAt: next, Why: "pending: " + msg}, nil
	}
	st.Record(pendingNote(st.CR, msg))
	if err := env.Writer.UpdateRequest(ctx, st, next); err != nil {
		return Outcome{}, fmt.Errorf("record pending reason: %w", err)
	}
	return Outcome{Wrote: true}, nil
}

// fail marks the request terminally failed (Ready=False/Failed, Failed=True
// with reason SigningError, failureTime).
func fail(ctx context.Context, env *Env, st *State, msg string) (Outcome, error) {
	return failWith(ctx, env, st, "SigningError", msg)
}

// failWith is fail with reason on the Failed condition.
func failWith(ctx context.Context, env *Env, st *State, reason, msg string) (Outcome, error) {
	conds := &st.CR.Status.Conditions
	api.SetCondition(conds, api.Condition{Type: api.CertificateRequestConditionFailed, Status: api.ConditionTrue,
		Reason: reason, Message: msg}, st.Now)
	api.SetCondition(conds, api.Condition{Type: api.CertificateRequestConditionReady, Status: api.ConditionFalse,
		Reason: api.CertificateRequestReasonFailed, Message: "Signing failed: " + msg}, st.Now)
	st.CR.Status.FailureTime = api.NewTime(st.Now)
	st.Record(kernel.Warning(reason, msg))
	return write(ctx, env, st, "record signing failure")
}

// pendingNote is the Event of a request that starts to wait with msg, as
// cert-manager's issuers report it: OrderCreated when the ACME issuer
// created its Order ("Created Order resource <namespace>/<name>"),
// IssuerNotFound and IssuerNotReady (Warnings), else Pending.
func pendingNote(cr *api.CertificateRequest, msg string) kernel.Note {
	switch {
	case strings.HasPrefix(msg, "Waiting on Order "):
		return kernel.Normal("OrderCreated", fmt.Sprintf("Created Order resource %s/%s", cr.Namespace, strings.TrimPrefix(msg, "Waiting on Order ")))
	case strings.HasPrefix(msg, "Referenced ") && strings.Contains(msg, "not found"):
		return kernel.Warning("IssuerNotFound", msg)
	case strings.Contains(msg, "Ready status condition"), strings.HasPrefix(msg, "Issuer is not ready"):
		return kernel.Warning("IssuerNotReady", msg)
	}
	return kernel.Normal("Pending", msg)
}

func write(ctx context.Context, env *Env, st *State, what string) (Outcome, error) {
	// A final request leaves the due index.
	if err := env.Writer.UpdateRequest(ctx, st, time.Time{}); err != nil {
		return Outcome{}, fmt.Errorf("%s: %w", what, err)
	}
	return Outcome{Wrote: true}, nil
}
