package app

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/rbac"
)

// RevocationReasons are the RFC 5280 reason codes a subscriber may give
// (the ones Let's Encrypt accepts), by name.
var RevocationReasons = map[string]int{
	"unspecified":          0,
	"keyCompromise":        1,
	"affiliationChanged":   3,
	"superseded":           4,
	"cessationOfOperation": 5,
}

// ReasonNames lists RevocationReasons' names, sorted.
func ReasonNames() []string {
	var out []string
	for n := range RevocationReasons {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Revoke revokes the certificate stored for the Certificate at key at its
// ACME issuer's server (RFC 8555 §7.6, signed with the issuer's account
// key, reason an RFC 5280 code) and then triggers a re-issuance, as Renew
// does (with rotationPolicy Always, the default, the new certificate has a
// new key; keyCompromise with rotationPolicy Never is refused). Running it
// again after a partial failure is safe: a certificate already revoked
// counts as revoked, and the re-issuance is triggered then. The caller
// needs `update` on the Certificate. Only ACME issuers are supported (a
// private CA has no revocation list here), and only where the service
// reads secrets and runs the ACME issuer (local mode).
func (s *Service) Revoke(ctx context.Context, caller Caller, key api.Key, reason string) error {
	code, ok := RevocationReasons[reason]
	if !ok {
		return errs.Permanent(badRequestf("--reason %q: want one of %s", reason, strings.Join(ReasonNames(), ", ")))
	}
	if key.Kind != api.KindCertificate {
		return badRequestf("revoke applies to certificates, not %s", key.Kind)
	}
	if !s.readSecrets || s.accounts == nil {
		return badRequestf("revoke is not available on this deployment (it needs the secret store and the ACME issuer)")
	}
	if err := s.authz().check(ctx, caller, rbac.VerbUpdate, key); err != nil {
		return err
	}
	o, err := s.repo.Get(ctx, key)
	if err != nil {
		return err
	}
	crt := o.(*api.Certificate)
	ik, secretNS, known := s.repo.Issuers().Resolve(crt.Namespace, crt.Spec.IssuerRef)
	if !known {
		return errs.Permanentf("revoke %s: issuerRef names %s/%s, not a cert-manager issuer", key, crt.Spec.IssuerRef.Group, crt.Spec.IssuerRef.Kind)
	}
	io, err := s.repo.Get(ctx, ik)
	if err != nil {
		return fmt.Errorf("revoke %s: issuer: %w", key, err)
	}
	iss := io.(api.GenericIssuer)
	if iss.GetSpec().ACME == nil {
		return errs.Permanentf("revoke %s: issuer %s is not an ACME issuer; only ACME certificates can be revoked (use `certfn renew` to replace a certificate)", key, ik)
	}
	if code == RevocationReasons["keyCompromise"] && crt.Spec.RotationPolicyOrDefault() == api.RotationPolicyNever {
		return errs.Permanentf("revoke %s: reason keyCompromise with privateKey.rotationPolicy Never would re-issue with the compromised key (and CAs refuse keys revoked for compromise): set rotationPolicy Always first", key)
	}
	sec, err := s.secrets.Get(ctx, crt.Namespace, crt.Spec.SecretName)
	if err != nil {
		return fmt.Errorf("revoke %s: read secret %s/%s: %w", key, crt.Namespace, crt.Spec.SecretName, err)
	}
	chain, err := pki.ParseChainPEM(sec.Data["tls.crt"])
	if err != nil {
		return errs.Permanentf("revoke %s: secret %s/%s: tls.crt: %v", key, crt.Namespace, crt.Spec.SecretName, err)
	}
	acct, cl, err := s.accounts.Get(ctx, iss, secretNS)
	if err != nil {
		return fmt.Errorf("revoke %s: ACME account of %s: %w", key, ik, err)
	}
	if err := cl.Revoke(ctx, acct, chain[0], code); err != nil {
		return fmt.Errorf("revoke %s (serial %s): %w", key, chain[0].SerialNumber.Text(16), err)
	}
	if api.IsTrue(crt.Status.Conditions, api.CertificateConditionIssuing) {
		return nil // a re-issuance is under way already
	}
	if _, err := s.renew(ctx, key); err != nil && !errors.Is(err, errInFlight) {
		return fmt.Errorf("revoked %s; trigger its re-issuance: %w", key, err)
	}
	return nil
}
