package acme

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
)

// Provenance (docs/design/acme-orders.md: Orders and Challenges "are not intended to be
// created by users"). The application service refuses every write of an
// Order or a Challenge, so only certfn's ACME issuer stores them; as a
// second line, the handlers act only on objects whose chain leads to an
// approved CertificateRequest, and take from a Challenge nothing that
// certfn did not derive itself: its URL and token must be ones the ACME
// server offered for the Order (Order.Status, written only by certfn),
// its key authorization is recomputed from the issuer's account, and a
// DNS-01 solver must be the issuer's own (see the challenges handler).

// Getter reads a stored object (kernel.Objects.Get): ports.ErrNotFound
// when it is missing.
type Getter func(ctx context.Context, key api.Key) (api.Object, error)

// CheckOrder reports why the Order must not be acted on ("" when it may):
// it must be controlled by a CertificateRequest of its namespace that is
// approved and not denied, and carry that request's CSR and issuerRef
// unchanged — or by a CertificateSigningRequest (cluster-scoped) that is
// approved and not denied, whose signer name names the Order's issuer
// (for a namespaced Issuer, in the Order's namespace) and whose request
// the Order carries (checkCSROrder). A read failure other than not-found
// is returned as err.
func CheckOrder(ctx context.Context, get Getter, o *api.Order) (why string, err error) {
	ref := o.ControllerOf()
	if ref != nil && ref.Kind == api.KindCertificateSigningRequest {
		return checkCSROrder(ctx, get, o, ref)
	}
	if ref == nil || ref.Kind != api.KindCertificateRequest {
		return "the Order is not controlled by a CertificateRequest or a CertificateSigningRequest: certfn's ACME issuer acts only on the Orders it creates for approved requests", nil
	}
	obj, err := get(ctx, api.Key{Kind: api.KindCertificateRequest, Namespace: o.Namespace, Name: ref.Name})
	if errors.Is(err, ports.ErrNotFound) {
		return fmt.Sprintf("the Order's CertificateRequest %q does not exist", ref.Name), nil
	}
	if err != nil {
		return "", fmt.Errorf("read the CertificateRequest of Order %s/%s: %w", o.Namespace, o.Name, err)
	}
	cr, ok := obj.(*api.CertificateRequest)
	switch {
	case !ok || (ref.UID != "" && cr.UID != ref.UID):
		return fmt.Sprintf("the Order's CertificateRequest %q is not the one it was created for", ref.Name), nil
	case !api.IsTrue(cr.Status.Conditions, api.CertificateRequestConditionApproved) || api.IsTrue(cr.Status.Conditions, api.CertificateRequestConditionDenied):
		return fmt.Sprintf("the Order's CertificateRequest %q is not approved", ref.Name), nil
	case !bytes.Equal(bytes.TrimSpace(cr.Spec.Request), bytes.TrimSpace(o.Spec.Request)):
		return fmt.Sprintf("the Order does not carry the CSR of its CertificateRequest %q", ref.Name), nil
	case !sameIssuerRef(cr.Spec.IssuerRef, o.Spec.IssuerRef):
		return fmt.Sprintf("the Order does not name the issuer of its CertificateRequest %q", ref.Name), nil
	}
	return "", nil
}

// checkCSROrder is CheckOrder for an Order controlled by the
// CertificateSigningRequest ref names (core/certificatesigningrequests: cert-manager's signer
// names issuers.cert-manager.io/<namespace>.<name> and
// clusterissuers.cert-manager.io/<name>).
func checkCSROrder(ctx context.Context, get Getter, o *api.Order, ref *api.OwnerReference) (string, error) {
	obj, err := get(ctx, api.Key{Kind: api.KindCertificateSigningRequest, Name: ref.Name})
	if errors.Is(err, ports.ErrNotFound) {
		return fmt.Sprintf("the Order's CertificateSigningRequest %q does not exist", ref.Name), nil
	}
	if err != nil {
		return "", fmt.Errorf("read the CertificateSigningRequest of Order %s/%s: %w", o.Namespace, o.Name, err)
	}
	c, ok := obj.(*api.CertificateSigningRequest)
	if !ok || (ref.UID != "" && c.UID != ref.UID) {
		return fmt.Sprintf("the Order's CertificateSigningRequest %q is not the one it was created for", ref.Name), nil
	}
	issuer, ns, ours := api.SignerIssuer(c.Spec.SignerName)
	switch {
	case !c.Status.Has(api.CSRConditionApproved) || c.Status.Has(api.CSRConditionDenied):
		return fmt.Sprintf("the Order's CertificateSigningRequest %q is not approved", ref.Name), nil
	case !bytes.Equal(bytes.TrimSpace(c.Spec.Request), bytes.TrimSpace(o.Spec.Request)):
		return fmt.Sprintf("the Order does not carry the CSR of its CertificateSigningRequest %q", ref.Name), nil
	case !ours || !sameIssuerRef(issuer, o.Spec.IssuerRef) || (issuer.Kind == api.KindIssuer && ns != o.Namespace):
		return fmt.Sprintf("the Order does not name the issuer of its CertificateSigningRequest %q (signer %q)", ref.Name, c.Spec.SignerName), nil
	}
	return "", nil
}

// CheckChallenge reports why the Challenge must not be acted on ("" when
// it may): it must be controlled by an Order that passes CheckOrder,
// name that Order's issuer, and be, in the Order's status (which only
// certfn writes, from the ACME server's answers), the challenge the server
// offered for its authorization: the same authorization URL, identifier,
// challenge URL, token and type. It returns the Order.
func CheckChallenge(ctx context.Context, get Getter, c *api.Challenge) (order *api.Order, why string, err error) {
	ref := c.ControllerOf()
	if ref == nil || ref.Kind != api.KindOrder {
		return nil, "the Challenge is not controlled by an Order: certfn's ACME issuer acts only on the Challenges it creates", nil
	}
	obj, err := get(ctx, api.Key{Kind: api.KindOrder, Namespace: c.Namespace, Name: ref.Name})
	if errors.Is(err, ports.ErrNotFound) {
		return nil, fmt.Sprintf("the Challenge's Order %q does not exist", ref.Name), nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("read the Order of Challenge %s/%s: %w", c.Namespace, c.Name, err)
	}
	o, ok := obj.(*api.Order)
	if !ok || (ref.UID != "" && o.UID != ref.UID) {
		return nil, fmt.Sprintf("the Challenge's Order %q is not the one it was created for", ref.Name), nil
	}
	if why, err := CheckOrder(ctx, get, o); why != "" || err != nil {
		return nil, why, err
	}
	if !sameIssuerRef(o.Spec.IssuerRef, c.Spec.IssuerRef) {
		return nil, fmt.Sprintf("the Challenge does not name the issuer of its Order %q", o.Name), nil
	}
	for _, az := range o.Status.Authorizations {
		if az.URL != c.Spec.AuthorizationURL {
			continue
		}
		if az.Identifier != c.Spec.DNSName || (az.Wildcard != nil && *az.Wildcard) != c.Spec.Wildcard {
			break
		}
		for _, offer := range az.Challenges {
			typ, _ := ChallengeTypeFor(offer.Type)
			if offer.URL == c.Spec.URL && offer.Token == c.Spec.Token && typ == c.Spec.Type {
				return o, "", nil
			}
		}
		break
	}
	return nil, fmt.Sprintf("the Challenge is not one the ACME server offered for its Order %q (authorization, identifier, URL, token or type differ)", o.Name), nil
}

// sameIssuerRef compares issuer references with cert-manager's defaults
// (kind Issuer, group cert-manager.io).
func sameIssuerRef(a, b api.IssuerReference) bool {
	norm := func(r api.IssuerReference) api.IssuerReference {
		if r.Kind == "" {
			r.Kind = api.KindIssuer
		}
		if r.Group == "" {
			r.Group = api.CertManagerGroup
		}
		return r
	}
	return norm(a) == norm(b)
}
