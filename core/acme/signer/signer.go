// Package signer is the ACME issuer for CertificateRequests (docs/design/acme-orders.md's
// "ACME Issuer"): it manages one Order per request instead of talking to
// the ACME server itself.
//
//   - no Order yet: create it (deterministic name acme.OrderName, owned by
//     the request — or by the CertificateSigningRequest the request stands
//     for, signers.Request.Owner — spec taken from the CSR) and report
//     ErrPending;
//   - Order valid: return its certificate;
//   - Order invalid, expired or errored: a permanent error with the Order's
//     reason (the Certificate backs off; its retry creates a new request and
//     so a new Order, and the old Order goes with the old request);
//   - otherwise: ErrPending ("Waiting on Order <name>").
package signer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/signers"
)

// Signer implements signers.Signer for issuer type "acme". It works
// through the step's signers.Objects (req.Objects), so it holds no kernel.
type Signer struct {
	metrics ports.Metrics
}

// New returns a Signer counting the Orders it creates in metrics (nil: none).
func New(metrics ports.Metrics) *Signer { return &Signer{metrics: metrics} }

var (
	_ signers.Signer  = (*Signer)(nil)
	_ signers.Resumer = (*Signer)(nil)
)

// Begun implements signers.Resumer: signing a request has begun once its
// Order exists (the ACME server signs when the Order is finalized).
func (s *Signer) Begun(ctx context.Context, req signers.Request) (bool, error) {
	if req.Objects == nil {
		return false, errors.New("acme signer: the step passed no Objects")
	}
	key := api.Key{Kind: api.KindOrder, Namespace: req.CR.Namespace, Name: acme.OrderName(req.CR)}
	_, err := req.Objects.Get(ctx, key)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ports.ErrNotFound):
		return false, nil
	}
	return false, fmt.Errorf("read %s: %w", key, err)
}

// Sign implements signers.Signer.
func (s *Signer) Sign(ctx context.Context, req signers.Request) (signers.Result, error) {
	e := req.Objects
	if e == nil {
		return signers.Result{}, errors.New("acme signer: the step passed no Objects")
	}
	cr := req.CR
	name := acme.OrderName(cr)
	key := api.Key{Kind: api.KindOrder, Namespace: cr.Namespace, Name: name}
	obj, err := e.Get(ctx, key)
	if errors.Is(err, ports.ErrNotFound) {
		o, err := buildOrder(ctx, e, req, name)
		if err != nil {
			return signers.Result{}, err
		}
		if _, err := e.CreateObject(ctx, o, e.Now()); err != nil && !errors.Is(err, ports.ErrAlreadyExists) {
			return signers.Result{}, fmt.Errorf("create Order %s: %w", name, err)
		}
		if s.metrics != nil {
			s.metrics.Inc("certfn_acme_orders_created_total", "namespace", cr.Namespace)
		}
		return signers.Result{}, signers.Pending("Waiting on Order %s", name)
	}
	if err != nil {
		return signers.Result{}, err
	}
	o, ok := obj.(*api.Order)
	if !ok {
		return signers.Result{}, errs.Permanentf("%s is not an Order", key)
	}
	// The Order must be the one made for this request (see acme.CheckOrder):
	// its certificate is taken only if it was ordered for this CSR.
	owner := req.OwnerOf()
	if ref := o.ControllerOf(); ref == nil || ref.Kind != owner.GetTypeMeta().Kind || ref.UID != owner.GetObjectMeta().UID ||
		!bytes.Equal(bytes.TrimSpace(o.Spec.Request), bytes.TrimSpace(cr.Spec.Request)) {
		return signers.Result{}, errs.Permanentf("Order %s was not created by certfn's ACME issuer for this request (owner or CSR differ)", name)
	}
	switch {
	case o.Status.State == api.StateValid && len(o.Status.Certificate) > 0:
		chain, err := pki.ParseChainPEM(o.Status.Certificate)
		if err != nil {
			return signers.Result{}, errs.Permanentf("Order %s holds an invalid certificate: %v", name, err)
		}
		res := signers.Result{Certificate: o.Status.Certificate, Honoured: chain[0].NotAfter.Sub(chain[0].NotBefore)}
		if d, ok := cr.Spec.RequestedDuration(); ok {
			res.Requested = d
		}
		return res, nil
	case o.Status.State.IsFinal():
		return signers.Result{}, errs.Permanentf("Order %s failed (%s): %s", name, o.Status.State, o.Status.Reason)
	}
	return signers.Result{}, signers.Pending("Waiting on Order %s", name)
}

// buildOrder is the Order for req: identifiers from the CSR, duration
// from the request (spec.duration, else expirationSeconds: sent to the
// server only with the issuer's enableDurationFeature, as cert-manager),
// the issuer's profile, the owning Certificate's labels (for solver
// selectors; a CertificateSigningRequest's own labels, as cert-manager's
// CSR signer) and, for a renewal, the ARI identifier of the certificate
// it replaces. It is owned by req.OwnerOf().
func buildOrder(ctx context.Context, e signers.Objects, req signers.Request, name string) (*api.Order, error) {
	cr := req.CR
	csr, err := pki.ParseCSRPEM(cr.Spec.Request)
	if err != nil {
		return nil, errs.Permanentf("spec.request: %v", err)
	}
	if err := pki.CheckPublicKey(csr.PublicKey); err != nil {
		return nil, errs.Permanentf("spec.request: %v", err)
	}
	// The ACME server signs the CSR as sent, so the Order's identifiers
	// come from the same reader as the policy's view and the name checks.
	exts, err := pki.ParseCSRExtensions(csr)
	if err != nil {
		return nil, errs.Permanentf("spec.request: %v", err)
	}
	var sans pki.SANs
	if exts.SubjectAltName != nil {
		for i, g := range exts.SubjectAltName.Names {
			if !g.Signable() {
				return nil, errs.Permanentf("spec.request: subjectAltName entry %d is %s, which an ACME certificate cannot carry", i+1, pki.GeneralNameKind(g.Tag))
			}
		}
		sans = pki.SANsOf(exts.SubjectAltName.Names)
	}
	if len(sans.EmailAddresses) > 0 || len(sans.URIs) > 0 || len(sans.OtherNames) > 0 {
		return nil, errs.Permanentf("spec.request: ACME certificates cannot carry email, URI or otherName SANs")
	}
	spec := api.OrderSpec{Request: cr.Spec.Request, IssuerRef: cr.Spec.IssuerRef, CommonName: csr.Subject.CommonName,
		DNSNames: sans.DNSNames, Duration: cr.Spec.Duration, Profile: req.Issuer.GetSpec().ACME.Profile}
	if d, ok := cr.Spec.RequestedDuration(); ok && spec.Duration == nil {
		spec.Duration = api.NewDuration(d)
	}
	for _, ip := range sans.IPAddresses {
		spec.IPAddresses = append(spec.IPAddresses, ip.String())
	}
	if cn := spec.CommonName; cn != "" && net.ParseIP(cn) == nil && !containsFold(spec.DNSNames, cn) {
		spec.DNSNames = append([]string{cn}, spec.DNSNames...)
	}
	o := &api.Order{
		TypeMeta: api.TypeMeta{APIVersion: api.ACMEV1, Kind: api.KindOrder},
		ObjectMeta: api.ObjectMeta{Name: name, Namespace: cr.Namespace,
			Annotations:     map[string]string{},
			OwnerReferences: []api.OwnerReference{acme.ControllerRef(req.OwnerOf())}},
		Spec: spec,
	}
	if req.Owner != nil {
		o.Labels = req.Owner.GetObjectMeta().Labels
	}
	for _, k := range []string{api.AnnotationRevision, api.AnnotationCertificateName} {
		if v, ok := cr.Annotations[k]; ok {
			o.Annotations[k] = v
		}
	}
	if ref := cr.ControllerOf(); ref != nil && ref.Kind == api.KindCertificate {
		obj, err := e.Get(ctx, api.Key{Kind: api.KindCertificate, Namespace: cr.Namespace, Name: ref.Name})
		if err != nil && !errors.Is(err, ports.ErrNotFound) {
			return nil, err
		}
		if cert, ok := obj.(*api.Certificate); ok {
			o.Labels = cert.Labels
			if ri := cert.Status.RenewalInfo; ri != nil && ri.CertificateID != "" && sameIssuer(cert, cr) {
				o.Spec.Replaces = ri.CertificateID
			}
		}
	}
	acme.StampSpec(&o.ObjectMeta, o.Spec)
	return o, nil
}

func sameIssuer(cert *api.Certificate, cr *api.CertificateRequest) bool {
	a, b := cert.Spec.IssuerRef, cr.Spec.IssuerRef
	return a.Name == b.Name && a.KindOrDefault() == b.KindOrDefault()
}

func containsFold(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
