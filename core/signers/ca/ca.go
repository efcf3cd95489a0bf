// Package ca is the CA issuer's signer: requests are signed with the key
// pair stored in the issuer's spec.ca.secretName (cert-manager's CA
// issuer). Its contract is in docs/signers.md.
package ca

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"fmt"

	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/signers"
)

// Metric names (seed 003: requested vs honoured durations), observed in
// seconds with the label issuer.
const (
	MetricRequested = "certfn_signer_duration_seconds_requested"
	MetricHonoured  = "certfn_signer_duration_seconds_honoured"
)

type signer struct {
	secrets ports.SecretStore
	clk     ports.Clock
	metrics ports.Metrics
}

// New returns the CA signer. It reads the CA key pair from secrets, takes
// the time from clk and records durations in metrics (nil: not recorded).
func New(secrets ports.SecretStore, clk ports.Clock, metrics ports.Metrics) signers.Signer {
	return &signer{secrets: secrets, clk: clk, metrics: metrics}
}

// Sign issues a certificate for req.CR signed by the issuer's CA:
//   - the CA key pair is tls.crt (the CA certificate first, then optionally
//     its own issuers) and tls.key of spec.ca.secretName in
//     req.SecretNamespace; a missing secret, an undecodable certificate or
//     key, a certificate that is not a CA, a key that does not match, or a
//     CA not valid now is a transient ErrIssuerNotReady error;
//   - the template is signers.TemplateFromRequest (a bad CSR is permanent)
//     plus the issuer's crlDistributionPoints, ocspServers and
//     issuingCertificateURLs;
//   - lifetime: honoured = min(requested, the issuer's
//     api.AnnotationMaxDuration), and notAfter never beyond the CA's;
//     both are observed as metrics with the label issuer;
//   - the issued certificate must verify against the CA (its name
//     constraints included); a request for a CA certificate under a CA
//     whose path length is 0 fails; both are permanent;
//   - Certificate is the leaf plus the CA chain without a self-signed root,
//     CA is the top of the chain (cert-manager's PEM bundle).
func (s *signer) Sign(ctx context.Context, req signers.Request) (signers.Result, error) {
	if err := ctx.Err(); err != nil {
		return signers.Result{}, err
	}
	cr := req.CR
	if cr == nil {
		return signers.Result{}, errs.Permanentf("ca: no certificate request")
	}
	if req.Issuer == nil || req.Issuer.GetSpec().CA == nil {
		return signers.Result{}, signers.NotReady("ca: the issuer has no spec.ca")
	}
	spec := req.Issuer.GetSpec().CA
	if spec.SecretName == "" {
		return signers.Result{}, signers.NotReady("ca: spec.ca.secretName is empty")
	}
	where := req.SecretNamespace + "/" + spec.SecretName
	sec, err := s.secrets.Get(ctx, req.SecretNamespace, spec.SecretName)
	if errors.Is(err, ports.ErrNotFound) {
		return signers.Result{}, signers.NotReady("ca: CA secret %s not found", where)
	}
	if err != nil {
		return signers.Result{}, fmt.Errorf("ca: read CA secret %s: %w", where, err)
	}
	caCerts, err := pki.ParseChainPEM(sec.Data[pki.SecretKeyTLSCert])
	if err != nil {
		return signers.Result{}, signers.NotReady("ca: CA secret %s: %s: %v", where, pki.SecretKeyTLSCert, err)
	}
	caKey, err := pki.DecodePrivateKeyPEM(sec.Data[pki.SecretKeyTLSKey])
	if err != nil {
		return signers.Result{}, signers.NotReady("ca: CA secret %s: %s: %v", where, pki.SecretKeyTLSKey, err)
	}
	caCert := caCerts[0]
	if !caCert.BasicConstraintsValid || !caCert.IsCA {
		return signers.Result{}, signers.NotReady("ca: CA secret %s: %s is not a CA certificate (basicConstraints CA:TRUE is missing)", where, pki.SecretKeyTLSCert)
	}
	if !pki.PublicKeysEqual(caKey.Public(), caCert.PublicKey) {
		return signers.Result{}, signers.NotReady("ca: CA secret %s: %s does not match the public key of %s", where, pki.SecretKeyTLSKey, pki.SecretKeyTLSCert)
	}
	if _, err := pki.BuildChain(caCert, caCerts[1:]); err != nil {
		return signers.Result{}, signers.NotReady("ca: CA secret %s: %s: %v", where, pki.SecretKeyTLSCert, err)
	}
	now := s.clk.Now()
	if now.Before(caCert.NotBefore) || !now.Before(caCert.NotAfter) {
		return signers.Result{}, signers.NotReady("ca: the CA certificate in %s is valid from %s to %s, not now", where,
			caCert.NotBefore.UTC().Format("2006-01-02T15:04:05Z"), caCert.NotAfter.UTC().Format("2006-01-02T15:04:05Z"))
	}

	tmpl, err := signers.TemplateFromRequest(cr, now)
	if err != nil {
		return signers.Result{}, fmt.Errorf("ca: %w", err)
	}
	if tmpl.IsCA && caCert.MaxPathLenZero {
		return signers.Result{}, errs.Permanentf("ca: spec.isCA: the CA's path length constraint is 0, so it cannot sign a CA certificate")
	}
	tmpl.CRLDistributionPoints = spec.CRLDistributionPoints
	tmpl.OCSPServer = spec.OCSPServers
	tmpl.IssuingCertificateURL = spec.IssuingCertificateURLs
	requested, honoured, err := signers.Lifetime(tmpl, req.Issuer, caCert.NotAfter)
	if err != nil {
		return signers.Result{}, fmt.Errorf("ca: %w", err)
	}

	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, tmpl.PublicKey, caKey)
	if err != nil {
		return signers.Result{}, errs.Permanentf("ca: sign certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return signers.Result{}, errs.Permanentf("ca: the signed certificate does not parse: %w", err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(caCert)
	if _, err := leaf.Verify(x509.VerifyOptions{
		Roots:       roots,
		CurrentTime: tmpl.NotBefore,
		KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
	}); err != nil {
		return signers.Result{}, errs.Permanentf("ca: the CA cannot sign this request: %w", err)
	}
	bundle, err := pki.BuildChain(leaf, caCerts)
	if err != nil {
		return signers.Result{}, fmt.Errorf("ca: build chain: %w", err)
	}
	if s.metrics != nil {
		label := signers.IssuerLabel(req.Issuer)
		s.metrics.Observe(MetricRequested, requested.Seconds(), "issuer", label)
		s.metrics.Observe(MetricHonoured, honoured.Seconds(), "issuer", label)
	}
	return signers.Result{Certificate: bundle.ChainPEM, CA: bundle.CAPEM, Requested: requested, Honoured: honoured}, nil
}
