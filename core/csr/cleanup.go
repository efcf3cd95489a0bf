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

// KeepUntil is when the final CSR c may go: Retain after it became final
// (api's FinishedAt: its Denied or Failed condition, or status.issuedAt),
// or when its certificate expires if that is sooner. ok is false for a
// CSR that is not final. It is read from the CSR alone, so every writer
// agrees on it whatever due time it leaves on the record.
func KeepUntil(c *api.CertificateSigningRequest) (at time.Time, ok bool) {
	finished, ok := c.FinishedAt()
	if !ok {
		return time.Time{}, false
	}
	at = finished.Add(Retain)
	if chain, err := pki.ParseChainPEM(c.Status.Certificate); err == nil && chain[0].NotAfter.Before(at) {
		at = chain[0].NotAfter
	}
	return at, true
}

// CleanupStep is the csrcleaner of seed 003 for CSRs certfn decided or
// signed, in every deployment (local mode has no store TTL; the cloud
// stores' TTL, app.ExpiresAt, is the same rule as a backstop): a final
// CSR is kept until KeepUntil (the steps that make it final write it due
// then), and reconciled at or after that time it is deleted with what it
// owns (an ACME Order and its Challenges) and its Event. A CSR that is not
// final is not this step's: upstream also deletes pending CSRs after a
// day and approved ones an hour after approval whether signed or not;
// certfn keeps them until they end (a slow ACME Order is not cut short).
func CleanupStep(ctx context.Context, env *Env, st *State) (Outcome, error) {
	c := st.CSR
	at, final := KeepUntil(c)
	if !final {
		return Outcome{Why: "not final"}, nil
	}
	if st.Now.Before(at) {
		return Outcome{RequeueAt: at, Why: "final: kept until " + at.UTC().Format(time.RFC3339)}, nil
	}
	if err := env.Writer.DeleteCSR(ctx, st); err != nil {
		return Outcome{}, fmt.Errorf("delete final CertificateSigningRequest %s: %w", c.Name, err)
	}
	if env.Metrics != nil {
		env.Metrics.Inc("certfn_csrs_cleaned_total", "signer", SignerLabel(c.Spec.SignerName))
	}
	return Outcome{Wrote: true}, nil
}
