package orders

import (
	"context"
	"errors"
	"fmt"

	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
)

// create sends newOrder — only reached while status.url is empty, so an
// Order makes at most one ACME order (a crash between the request and the
// write is the one case that leaves an unused order on the server) — and
// records the order URL, finalize URL and authorization URLs.
func (r *run) create(ctx context.Context, a *acmeCtx) error {
	spec := &r.o.Spec
	req := acme.NewOrderRequest{DNSNames: identifiers(spec), IPAddresses: spec.IPAddresses, Profile: spec.Profile, Replaces: spec.Replaces}
	if a.iss.GetSpec().ACME.EnableDurationFeature && spec.Duration != nil {
		req.NotAfter = r.now.Add(spec.Duration.Duration)
	}
	if len(req.DNSNames) == 0 && len(req.IPAddresses) == 0 {
		return r.fail(ctx, api.StateErrored, "spec: the Order names no identifier (commonName, dnsNames or ipAddresses)")
	}
	order, err := a.client.NewOrder(ctx, a.acct, req)
	if replacesRefused(err) && req.Replaces != "" {
		// RFC 9773: the predecessor already has a replacement (an earlier
		// attempt of this renewal), or the server refused the order with
		// "replaces" for another reason; "replaces" is a hint (servers
		// MAY refuse it), so order without it rather than retry the same
		// refusal for ever (Pebble 2.10 answers 500 to a replaces whose
		// serial has a leading zero octet, as RFC 9773 encodes it, and so
		// could a CA's bug).
		req.Replaces = ""
		order, err = a.client.NewOrder(ctx, a.acct, req)
	}
	r.e.Metrics().Inc("certfn_acme_requests_total", "op", "new_order")
	if errs.IsPermanent(err) {
		return r.fail(ctx, api.StateErrored, "Failed to create the ACME order: "+err.Error())
	}
	if err != nil {
		return fmt.Errorf("order %s: %w", r.rec.Key, err)
	}
	if order.URL == "" {
		return fmt.Errorf("order %s: the ACME server returned no order URL", r.rec.Key)
	}
	s := &r.o.Status
	s.URL, s.FinalizeURL, s.CertificateURL = order.URL, order.FinalizeURL, order.CertificateURL
	s.State = acme.StateOf(order.Status)
	s.Authorizations = nil
	for _, u := range order.Authorizations {
		s.Authorizations = append(s.Authorizations, api.ACMEAuthorization{URL: u})
	}
	if order.Status == acme.StatusInvalid {
		return r.fail(ctx, api.StateInvalid, "The ACME order is invalid: "+order.Problem)
	}
	s.Reason = "Created ACME order"
	r.logStep(ctx, "OrderSubmitted", fmt.Sprintf("Created the ACME order %s (%d authorizations)", order.URL, len(order.Authorizations)))
	return r.write(ctx, r.now, "record the new ACME order")
}

// identifiers are the DNS identifiers of the order: dnsNames plus the
// common name when it is a DNS name not already listed (cert-manager).
func identifiers(spec *api.OrderSpec) []string {
	out := append([]string(nil), spec.DNSNames...)
	if cn := spec.CommonName; cn != "" && !isIP(cn, spec.IPAddresses) {
		for _, d := range out {
			if d == cn {
				return out
			}
		}
		out = append([]string{cn}, out...)
	}
	return out
}

func isIP(s string, ips []string) bool {
	for _, ip := range ips {
		if ip == s {
			return true
		}
	}
	return false
}

// fetchAuthorizations reads every authorization not read yet, once, and
// records identifier, wildcard, initial state and offered challenges.
func (r *run) fetchAuthorizations(ctx context.Context, a *acmeCtx) error {
	s := &r.o.Status
	for i := range s.Authorizations {
		az := &s.Authorizations[i]
		if az.InitialState != api.StateUnknown {
			continue
		}
		got, err := a.client.GetAuthorization(ctx, a.acct, az.URL)
		r.e.Metrics().Inc("certfn_acme_requests_total", "op", "get_authorization")
		if errs.IsPermanent(err) {
			return r.fail(ctx, api.StateErrored, fmt.Sprintf("Failed to read authorization %s: %v", az.URL, err))
		}
		if err != nil {
			return fmt.Errorf("order %s: %w", r.rec.Key, err)
		}
		wild := got.Wildcard
		az.Identifier, az.Wildcard = got.Identifier, &wild
		az.InitialState = acme.StateOf(got.Status)
		if az.InitialState == api.StateUnknown {
			az.InitialState = api.StatePending
		}
		az.Challenges = nil
		for _, ch := range got.Challenges {
			az.Challenges = append(az.Challenges, api.ACMEChallenge{URL: ch.URL, Token: ch.Token, Type: ch.Type})
		}
	}
	for _, az := range s.Authorizations {
		if az.InitialState.IsFinal() && az.InitialState != api.StateValid {
			return r.fail(ctx, api.StateInvalid, fmt.Sprintf("Authorization for %q is %s", az.Identifier, az.InitialState))
		}
	}
	s.Reason = "Waiting for the authorizations' challenges"
	return r.write(ctx, r.now, "record authorizations")
}

// replacesRefused says whether a new-order with "replaces" was refused in
// a way worth one order without it: already replaced, or any problem the
// server answered except a rate limit or unavailability that names when to
// come back (another order would be refused as well).
func replacesRefused(err error) bool {
	if errors.Is(err, acme.ErrAlreadyReplaced) {
		return true
	}
	_, later := errs.SuggestedDelay(err)
	return errors.Is(err, acme.ErrProblem) && !later
}
