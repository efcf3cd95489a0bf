// Package selfsigned is the selfSigned issuer's signer: each request is
// signed with its own private key, read from the secret that the request's
// cert-manager.io/private-key-secret-name annotation names (cert-manager's
// selfsigned issuer). Its contract is in docs/reference/signers.md.
package selfsigned

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/signers"
)

type signer struct {
	secrets ports.SecretStore
	clk     ports.Clock
}

// New returns the selfSigned signer. It reads the request's private key
// from secrets and takes the time from clk.
func New(secrets ports.SecretStore, clk ports.Clock) signers.Signer {
	return &signer{secrets: secrets, clk: clk}
}

// Sign issues a self-signed certificate for req.CR:
//   - the key comes from the secret named by the request's annotation
//     api.AnnotationPrivateKeySecretName in the request's namespace, key
//     tls.key; a missing annotation, a missing tls.key or an undecodable key
//     is permanent; a secret that does not exist (yet) is a transient
//     ErrIssuerNotReady error, as cert-manager leaves the request pending;
//   - the CSR's public key must be that key's (else permanent);
//   - the template is signers.TemplateFromRequest plus the issuer's
//     crlDistributionPoints; lifetime = min(requested, the issuer's
//     api.AnnotationMaxDuration);
//   - Certificate and CA are both the issued certificate.
func (s *signer) Sign(ctx context.Context, req signers.Request) (signers.Result, error) {
	if err := ctx.Err(); err != nil {
		return signers.Result{}, err
	}
	cr := req.CR
	if cr == nil {
		return signers.Result{}, errs.Permanentf("selfSigned: no certificate request")
	}
	if req.Issuer == nil || req.Issuer.GetSpec().SelfSigned == nil {
		return signers.Result{}, signers.NotReady("selfSigned: the issuer has no spec.selfSigned")
	}
	name := cr.Annotations[api.AnnotationPrivateKeySecretName]
	if name == "" {
		return signers.Result{}, errs.Permanentf("selfSigned: metadata.annotations[%q] is missing: it must name the secret holding the request's private key", api.AnnotationPrivateKeySecretName)
	}
	sec, err := s.secrets.Get(ctx, cr.Namespace, name)
	if errors.Is(err, ports.ErrNotFound) {
		return signers.Result{}, signers.NotReady("selfSigned: private key secret %s/%s not found", cr.Namespace, name)
	}
	if err != nil {
		return signers.Result{}, fmt.Errorf("selfSigned: read private key secret %s/%s: %w", cr.Namespace, name, err)
	}
	keyPEM, ok := sec.Data[pki.SecretKeyTLSKey]
	if !ok || len(keyPEM) == 0 {
		return signers.Result{}, errs.Permanentf("selfSigned: secret %s/%s has no %s", cr.Namespace, name, pki.SecretKeyTLSKey)
	}
	key, err := pki.DecodePrivateKeyPEM(keyPEM)
	if err != nil {
		return signers.Result{}, errs.Permanentf("selfSigned: secret %s/%s: %w", cr.Namespace, name, err)
	}
	tmpl, err := signers.TemplateFromRequest(cr, s.clk.Now())
	if err != nil {
		return signers.Result{}, fmt.Errorf("selfSigned: %w", err)
	}
	if !pki.PublicKeysEqual(key.Public(), tmpl.PublicKey) {
		return signers.Result{}, errs.Permanentf("selfSigned: the CSR's public key does not match the private key in secret %s/%s", cr.Namespace, name)
	}
	tmpl.CRLDistributionPoints = req.Issuer.GetSpec().SelfSigned.CRLDistributionPoints
	requested, honoured, err := signers.Lifetime(tmpl, req.Issuer, time.Time{})
	if err != nil {
		return signers.Result{}, fmt.Errorf("selfSigned: %w", err)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return signers.Result{}, errs.Permanentf("selfSigned: sign certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return signers.Result{}, errs.Permanentf("selfSigned: the signed certificate does not parse: %w", err)
	}
	p := pki.EncodeCertificatesPEM(cert)
	return signers.Result{Certificate: p, CA: p, Requested: requested, Honoured: honoured}, nil
}
