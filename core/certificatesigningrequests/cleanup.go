package certificatesigningrequests

import (
	"context"
	"fmt"
	"time"

	"github.com/certfn/certfn/core/api"
)

// Retain is how long a final CertificateSigningRequest (issued, Denied or
// Failed) is kept: docs/design/request-duration.md — "automatically garbage collected via a
// pre-existing controller once the issued certificate has expired or
// after one hour, whichever is shorter" (Kubernetes' csrcleaner); certfn
// keeps the hour (KeepUntil). The requester has its certificate by then.
const Retain = time.Hour

// KeepUntil is when the final CSR c may go: Retain after it became final
// (api's FinishedAt: its Denied or Failed condition, or status.issuedAt).
// An issued CSR is kept that long even when its certificate expires
// sooner (where upstream deletes it at expiry): the issuance quota counts
// a requester's issued CSRs over the last hour (certificaterequests.QuotaWindow,
// equal to Retain), and a short-lived certificate must not take its CSR
// out of that count. ok is false for a CSR that is not final. It is read
// from the CSR alone, so every writer agrees on it whatever due time it
// leaves on the record.
func KeepUntil(c *api.CertificateSigningRequest) (at time.Time, ok bool) {
	finished, ok := c.FinishedAt()
	if !ok {
		return time.Time{}, false
	}
	return finished.Add(Retain), true
}

// PendingRetain is how long a CertificateSigningRequest nobody approved or
// denied is kept, counted from its creation: a day, as Kubernetes'
// csrcleaner deletes pending requests.
const PendingRetain = 24 * time.Hour

// PendingUntil is when the pending CSR c (neither Approved nor Denied, and
// not final) may go: PendingRetain after its creation. ok is false for a
// CSR that is decided or final, or that records no creation time.
func PendingUntil(c *api.CertificateSigningRequest) (at time.Time, ok bool) {
	if c.IsFinal() || c.Status.Condition(api.CSRConditionApproved) != nil || c.Status.Condition(api.CSRConditionDenied) != nil || c.CreationTimestamp == nil {
		return time.Time{}, false
	}
	return c.CreationTimestamp.Time.Add(PendingRetain), true
}

// CleanupStep is the csrcleaner of docs/design/request-duration.md for CSRs certfn decided or
// signed, in every deployment (local mode has no store TTL; the cloud
// stores' TTL, app.ExpiresAt, is the same rule as a backstop): a final
// CSR is kept until KeepUntil (the steps that make it final write it due
// then), and reconciled at or after that time it is deleted with what it
// owns (an ACME Order and its Challenges) and its Event. A pending CSR
// (nobody approved or denied it, whatever its signer name) is deleted the
// same way at PendingUntil, a day after its creation, as upstream does.
// An approved CSR that is not final is kept until it ends (upstream
// deletes it an hour after approval whether signed or not; certfn does
// not cut a slow ACME Order short).
func CleanupStep(ctx context.Context, env *Env, st *State) (Outcome, error) {
	c := st.CSR
	what := "final"
	at, ok := KeepUntil(c)
	if !ok {
		what = "pending"
		if at, ok = PendingUntil(c); !ok {
			return Outcome{Why: "approved, not final"}, nil
		}
	}
	if st.Now.Before(at) {
		return Outcome{RequeueAt: at, Why: what + ": kept until " + at.UTC().Format(time.RFC3339)}, nil
	}
	if err := env.Writer.DeleteCSR(ctx, st); err != nil {
		return Outcome{}, fmt.Errorf("delete %s CertificateSigningRequest %s: %w", what, c.Name, err)
	}
	if env.Metrics != nil {
		env.Metrics.Inc("certfn_csrs_cleaned_total", "signer", SignerLabel(c.Spec.SignerName))
	}
	return Outcome{Wrote: true}, nil
}
