package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/csr"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/requests"
	"github.com/certfn/certfn/core/step"
)

// csrSteps are the CertificateSigningRequest steps (core/csr): the
// approver, then the signer (seed 004), one write per invocation.
var csrSteps = []step.Func[*csr.Env, *csr.State]{csr.ApprovalStep, csr.SigningStep}

var csrStepNames = []string{"approval", "signing"}

// reconcileCSR runs one step of a CertificateSigningRequest with the
// engine's approver (the auto-approve list, then CertificateRequestPolicies)
// and signers, as reconcileRequest does for CertificateRequests.
func (e *run) reconcileCSR(ctx context.Context, rec ports.Record) error {
	obj, err := decode(rec)
	if err != nil {
		return err
	}
	st := &csr.State{CSR: obj.(*api.CertificateSigningRequest), Version: rec.Version, Now: e.cfg.Clock.Now()}
	env := &csr.Env{Writer: csrWriter{e}, Approver: e.cfg.Approver, Issuers: &issuerGetter{e}, Signers: e.cfg.Signers,
		Objects: e, Metrics: e.cfg.Metrics, Authorizer: e.Authorizer, ClusterResourceNamespace: e.cfg.ClusterResourceNamespace,
		WaitPoll: e.cfg.WaitPoll}
	if _, refuses := e.cfg.Approver.(requests.Refuser); refuses {
		// A role that never approves (the AWS signer) may not read RBAC:
		// the approving role checked the reference before handing over.
		env.Authorizer = nil
	}
	res, err := step.Run(ctx, env, st, csrSteps, csrStepNames)
	if err != nil || res.Wrote {
		return err
	}
	e.why = res.Why
	rec.Version = st.Version
	return e.settle(ctx, rec, res.Want)
}

type csrWriter struct{ e *run }

func (w csrWriter) UpdateCSR(ctx context.Context, st *csr.State, next time.Time) error {
	v, err := w.e.update(ctx, st.CSR, st.Version, next)
	if err != nil {
		return err
	}
	st.Version = v
	return nil
}

// wakePendingCSRs enqueues every CSR that is not final and whose signer
// is one of certfn's, when a policy, a binding or an issuer changed: it
// may now be decided or signed. One List of every CSR.
func (e *run) wakePendingCSRs(ctx context.Context) error {
	recs, err := e.cfg.Store.List(ctx, ports.ListOptions{Kind: api.KindCertificateSigningRequest})
	if err != nil {
		return fmt.Errorf("list pending CertificateSigningRequests: %w", err)
	}
	for _, r := range recs {
		o, err := decode(r)
		if err != nil {
			return err
		}
		c := o.(*api.CertificateSigningRequest)
		if _, _, ours := api.SignerIssuer(c.Spec.SignerName); !ours || c.IsFinal() {
			continue
		}
		if err := e.enqueue(ctx, r.Key, 0); err != nil {
			return err
		}
	}
	return nil
}
