package csr

import (
	"context"
	"fmt"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/pki"
)

// Retain is how long a final CertificateSigningRequest (issued, Denied or
// Failed) is kept: seed 003 — "automatically garbage collected via a
// pre-existing controller once the issued certificate has expired or
// after one hour, whichever is shorter" (Kubernetes' csrcleaner). The
// requester has its certificate by then.
const Retain = time.Hour

// KeepUntil is when the final CSR c, final since finalAt, may go: Retain
// after finalAt, or when its certificate expires if that is sooner.
func KeepUntil(c *api.CertificateSigningRequest, finalAt time.Time) time.Time {
	at := finalAt.Add(Retain)
	if chain, err := pki.ParseChainPEM(c.Status.Certificate); err == nil && chain[0].NotAfter.Before(at) {
		at = chain[0].NotAfter
	}
	return at
}

// CleanupStep is the csrcleaner of seed 003 for CSRs certfn decided or
// signed, in every deployment (local mode has no store TTL; the cloud
// stores' TTL, app.ExpiresAt, is the same rule as a backstop): a final
// CSR is due at KeepUntil from its final write (the steps write it with
// that nextRunAt, st.Due); reconciled then, it is deleted with what it
// owns (an ACME Order and its Challenges) and its Event. Earlier it is
// left, due at st.Due; a final CSR without a due time (written before
// this step existed, or by hand) gets one, Retain from now. A CSR that is
// not final is not this step's: upstream also deletes pending CSRs after
// a day and approved ones an hour after approval whether signed or not;
// certfn keeps them until they end (a slow ACME Order is not cut short).
func CleanupStep(ctx context.Context, env *Env, st *State) (Outcome, error) {
	c := st.CSR
	if !c.IsFinal() {
		return Outcome{Why: "not final"}, nil
	}
	if st.Due.IsZero() {
		return Outcome{RequeueAt: KeepUntil(c, st.Now), Why: "final: kept for " + Retain.String()}, nil
	}
	if st.Now.Before(st.Due) {
		return Outcome{RequeueAt: st.Due, Why: "final: kept until " + st.Due.UTC().Format(time.RFC3339)}, nil
	}
	if err := env.Writer.DeleteCSR(ctx, st); err != nil {
		return Outcome{}, fmt.Errorf("delete final CertificateSigningRequest %s: %w", c.Name, err)
	}
	if env.Metrics != nil {
		env.Metrics.Inc("certfn_csrs_cleaned_total", "signer", SignerLabel(c.Spec.SignerName))
	}
	return Outcome{Wrote: true}, nil
}
