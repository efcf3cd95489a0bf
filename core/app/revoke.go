package app

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates"
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

// revocationReason returns the code and RFC 5280 name of a reason given
// as RevocationReasons names it or in any case, as certbot spells them
// (keycompromise, cessationofoperation): ok false when it is none.
func revocationReason(name string) (int, string, bool) {
	for n, code := range RevocationReasons {
		if strings.EqualFold(n, name) {
			return code, n, true
		}
	}
	return 0, "", false
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
	code, name, ok := revocationReason(reason)
	if !ok {
		return errs.Permanent(badRequestf("--reason %q: want one of %s (in any case, as certbot's keycompromise)", reason, strings.Join(ReasonNames(), ", ")))
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
	serial, reason := chain[0].SerialNumber.Text(16), name
	if _, err := s.mutate(ctx, key, func(o api.Object) error {
		c := o.(*api.Certificate)
		now := s.clock.Now()
		c.Status.Revoked = &api.RevokedCertificate{Serial: serial, Reason: reason, RevokedAt: api.NewTime(now)}
		// Not Ready from now on, whether or not a serve runs: the stored
		// certificate is revoked (the readiness step says the same).
		api.SetCondition(&c.Status.Conditions, api.Condition{Type: api.CertificateConditionReady, Status: api.ConditionFalse,
			Reason: certificates.ReasonRevoked, Message: fmt.Sprintf("The stored certificate (serial %s) was revoked, reason %s; a replacement is being issued", serial, reason),
			ObservedGeneration: c.Generation}, now)
		if !api.IsTrue(c.Status.Conditions, api.CertificateConditionIssuing) { // else a re-issuance is under way already
			api.SetCondition(&c.Status.Conditions, api.Condition{Type: api.CertificateConditionIssuing, Status: api.ConditionTrue,
				Reason: "ManuallyTriggered", Message: "Certificate re-issuance triggered by its revocation", ObservedGeneration: c.Generation}, now)
		}
		return nil
	}); err != nil {
		return fmt.Errorf("revoked %s (serial %s); record it and trigger its re-issuance: %w", key, serial, err)
	}
	return nil
}
