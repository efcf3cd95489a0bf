// Package ca is the CA issuer's signer: requests are signed with the key
// pair stored in the issuer's spec.ca.secretName (cert-manager's CA
// issuer). Its contract is in docs/reference/signers.md.
package ca

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/asn1"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/signers"
)

// Metric names (docs/design/request-duration.md: requested vs honoured durations), observed in
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
//     whose path length is 0 fails; under a CA with name constraints, a
//     leaf's subject commonName must be one of its DNS or IP
//     subjectAltNames (commonNamesCovered); all three are permanent;
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
	if err := commonNamesCovered(tmpl, caCerts); err != nil {
		return signers.Result{}, fmt.Errorf("ca: %w", err)
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

// commonNamesCovered applies, for a leaf (not a CA certificate), the rule
// that keeps a commonName inside a CA's name constraints: when the CA
// certificate or any certificate of the chain in its secret carries name
// constraints, every subject commonName of tmpl must equal (DNS names
// case-insensitively) one of tmpl's DNS names or IP addresses. Clients
// that enforce name constraints (crypto/x509 among them) check
// subjectAltNames only, while some clients still read the commonName of a
// certificate without DNS names as its host name; with the commonName
// among the SANs, the constraint check covers it. This is the CA/Browser
// Forum's rule, and what cert-manager produces for a Certificate whose
// commonName is also listed in dnsNames or ipAddresses. A CA without name
// constraints signs any commonName CheckCSRNames accepts. The error is
// permanent and names the commonName.
func commonNamesCovered(tmpl *x509.Certificate, chain []*x509.Certificate) error {
	if tmpl.IsCA || !constrained(chain) {
		return nil
	}
	for _, atv := range tmpl.Subject.Names {
		if !atv.Type.Equal(oidCommonName) {
			continue
		}
		cn, _ := atv.Value.(string)
		if cn == "" || coveredBySAN(cn, tmpl) {
			continue
		}
		return errs.Permanentf("spec.request: subject commonName %q is not among the request's DNS names or IP addresses; the CA has name constraints, which clients check on subjectAltNames only, so a commonName must repeat one of them (add it to spec.dnsNames or spec.ipAddresses, or leave it out)", cn)
	}
	return nil
}

var oidCommonName = asn1.ObjectIdentifier{2, 5, 4, 3}

func coveredBySAN(cn string, tmpl *x509.Certificate) bool {
	if ip := net.ParseIP(cn); ip != nil {
		for _, x := range tmpl.IPAddresses {
			if x.Equal(ip) {
				return true
			}
		}
		return false
	}
	for _, d := range tmpl.DNSNames {
		if strings.EqualFold(d, cn) {
			return true
		}
	}
	return false
}

// constrained reports whether any certificate of chain carries name
// constraints of any kind.
func constrained(chain []*x509.Certificate) bool {
	for _, c := range chain {
		if len(c.PermittedDNSDomains)+len(c.ExcludedDNSDomains)+len(c.PermittedIPRanges)+len(c.ExcludedIPRanges)+
			len(c.PermittedEmailAddresses)+len(c.ExcludedEmailAddresses)+len(c.PermittedURIDomains)+len(c.ExcludedURIDomains) > 0 {
			return true
		}
		for _, e := range c.Extensions {
			if e.Id.Equal(pki.OIDExtensionNameConstraints) {
				return true
			}
		}
	}
	return false
}
