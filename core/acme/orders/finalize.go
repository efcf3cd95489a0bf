package orders

import (
	"context"
	"errors"
	"fmt"
	"github.com/certfn/certfn/core/kernel"
	"strings"

	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/pki"
)

// finalize sends the Order's CSR. The ACME design (docs/design/acme-orders.md) re-checks the order before
// finalizing; certfn lets the finalize request be that check (RFC 8555
// §7.4: a server that does not consider the order ready answers
// orderNotReady, and only then is the order read), which saves one ACME
// request per certificate.
func (r *run) finalize(ctx context.Context, a *acmeCtx) error {
	csr, err := pki.ParseCSRPEM(r.o.Spec.Request)
	if err != nil {
		return r.fail(ctx, api.StateErrored, "spec.request: "+err.Error())
	}
	order, err := a.client.Finalize(ctx, a.acct, r.o.Status.URL, r.o.Status.FinalizeURL, csr.Raw)
	r.e.Metrics().Inc("certfn_acme_requests_total", "op", "finalize")
	if errors.Is(err, acme.ErrOrderNotReady) {
		order, err = a.client.GetOrder(ctx, a.acct, r.o.Status.URL)
		r.e.Metrics().Inc("certfn_acme_requests_total", "op", "get_order")
		if err == nil && (order.Status == acme.StatusPending || order.Status == acme.StatusReady) {
			// The server still sees pending authorizations: look again
			// later (at the backoff's cap: this is not the usual path).
			return r.wait(ctx, r.now.Add(r.h.cfg.Polling.Delay(maxPolls, order.RetryAfter)))
		}
	}
	if errs.IsPermanent(err) {
		return r.fail(ctx, api.StateErrored, "Failed to finalize the ACME order: "+err.Error())
	}
	if err != nil {
		return fmt.Errorf("order %s: %w", r.rec.Key, err)
	}
	r.o.Status.Polls = 0
	r.logStep(ctx, "Finalized", "Finalized the ACME order with the request's CSR (order status "+string(order.Status)+")")
	return r.observe(ctx, a, order, false)
}

// maxPolls is a poll count whose backoff step is the cap.
const maxPolls = 64

// poll re-reads a processing order, no earlier than status.nextPollAt.
func (r *run) poll(ctx context.Context, a *acmeCtx) error {
	if t := r.o.Status.NextPollAt; t != nil && r.now.Before(t.Time) {
		return r.wait(ctx, t.Time)
	}
	order, err := a.client.GetOrder(ctx, a.acct, r.o.Status.URL)
	r.e.Metrics().Inc("certfn_acme_requests_total", "op", "get_order")
	if errs.IsPermanent(err) {
		return r.fail(ctx, api.StateErrored, "Failed to read the ACME order: "+err.Error())
	}
	if err != nil {
		return fmt.Errorf("order %s: %w", r.rec.Key, err)
	}
	return r.observe(ctx, a, order, true)
}

// observe acts on the server's order status after finalize or a poll
// (polled): a processing order is polled again after the server's
// Retry-After or the next backoff step, counted in status.polls.
func (r *run) observe(ctx context.Context, a *acmeCtx, order acme.Order, polled bool) error {
	s := &r.o.Status
	if polled {
		s.Polls++
	}
	switch order.Status {
	case acme.StatusValid:
		if order.CertificateURL == "" {
			return fmt.Errorf("order %s: the ACME order is valid but has no certificate URL", r.rec.Key)
		}
		s.CertificateURL = order.CertificateURL
		return r.download(ctx, a)
	case acme.StatusProcessing, acme.StatusReady:
		s.State, s.Reason = api.StateProcessing, "Waiting for the ACME server to issue the certificate"
		s.NextPollAt = api.NewTime(r.pollAt(s.Polls, order.RetryAfter))
		return r.write(ctx, s.NextPollAt.Time, "record processing order")
	case acme.StatusInvalid, acme.StatusExpired:
		why := order.Problem
		if why == "" {
			why = "no reason given"
		}
		return r.fail(ctx, acme.StateOf(order.Status), "The ACME order is "+order.Status+": "+why)
	}
	return r.wait(ctx, r.pollAt(s.Polls, order.RetryAfter))
}

// download fetches the chain (the preferred one when the issuer names
// one), stores it on the Order and marks the Order valid.
func (r *run) download(ctx context.Context, a *acmeCtx) error {
	chains, err := a.client.Chains(ctx, a.acct, r.o.Status.CertificateURL)
	r.e.Metrics().Inc("certfn_acme_requests_total", "op", "download_certificate")
	if errs.IsPermanent(err) {
		return r.fail(ctx, api.StateErrored, "Failed to download the certificate: "+err.Error())
	}
	if err != nil {
		return fmt.Errorf("order %s: %w", r.rec.Key, err)
	}
	chain, err := PreferredChain(chains, a.iss.GetSpec().ACME.PreferredChain)
	if err != nil {
		return r.fail(ctx, api.StateErrored, err.Error())
	}
	s := &r.o.Status
	s.Certificate, s.State, s.Reason, s.NextPollAt = chain.PEM, api.StateValid, "Certificate issued", nil
	if ri := chain.RenewalInfo; ri != nil {
		s.RenewalInfo = renewalInfo(*ri, nil, r.now, r.h.cfg.ARIInterval)
	}
	r.e.Metrics().Inc("certfn_acme_orders_valid_total", "namespace", r.o.Namespace)
	r.note(ctx, kernel.Normal("Complete", "Order completed successfully"))
	return r.write(ctx, r.now, "record the issued certificate")
}

// PreferredChain returns the first chain (default first, then alternates)
// whose root-most certificate's issuer common name is preferred
// (cert-manager's preferredChain); the default chain when none matches or
// nothing is preferred. Every chain must parse.
func PreferredChain(chains []acme.Chain, preferred string) (acme.Chain, error) {
	if len(chains) == 0 {
		return acme.Chain{}, errors.New("the ACME server returned no certificate chain")
	}
	for i, c := range chains {
		certs, err := pki.ParseChainPEM(c.PEM)
		if err != nil {
			if i == 0 {
				return acme.Chain{}, fmt.Errorf("the ACME server returned an invalid certificate chain: %v", err)
			}
			continue
		}
		if preferred == "" {
			return c, nil
		}
		top := certs[len(certs)-1]
		if strings.EqualFold(top.Issuer.CommonName, preferred) || strings.EqualFold(top.Subject.CommonName, preferred) {
			return c, nil
		}
	}
	return chains[0], nil
}
