package certificates

import (
	"context"
	"fmt"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/pki"
)

// ApplyReadiness sets the Ready condition and the validity fields on st.Cert from
// the stored secret; it returns whether anything changed. A Certificate
// that does not own spec.secretName (st.NotOwner: another Certificate of
// the namespace names the same secret and owns it) is not Ready, with
// reason DuplicateSecretName (or the reason no Certificate may write it,
// Ownership.Reason), and shows no validity: what is stored is not
// its certificate. Once it owns the secret, an Issuing=False condition left
// from then is removed.
func ApplyReadiness(st *State) bool {
	s := &st.Cert.Status
	cond := api.Condition{Type: api.CertificateConditionReady, ObservedGeneration: st.Cert.Generation}
	if own, ok := st.NotOwner(); ok {
		cond.Status, cond.Reason, cond.Message = api.ConditionFalse, own.Reason(), own.Message()
		changed := setTime(&s.NotBefore, nil)
		changed = setTime(&s.NotAfter, nil) || changed
		changed = setTime(&s.RenewalTime, nil) || changed
		return api.SetCondition(&s.Conditions, cond, st.Now) || changed
	}
	changed := false
	if c := api.FindCondition(s.Conditions, api.CertificateConditionIssuing); c != nil &&
		c.Status == api.ConditionFalse && ownershipReasons[c.Reason] {
		api.RemoveCondition(&s.Conditions, api.CertificateConditionIssuing)
		changed = true
	}
	issued, _ := st.Parse()
	r := Evaluate(st)
	switch {
	case r.Reason == "" || r.Reason == "Renewing":
		cond.Status, cond.Reason, cond.Message = api.ConditionTrue, "Ready", "Certificate is up to date and has not expired"
		if r.Held != "" {
			cond.Message += " (" + r.Held + ")"
		}
	default:
		cond.Status, cond.Reason, cond.Message = api.ConditionFalse, r.Reason, r.Message
		if c := keyNotAllowed(st.Cert); c != nil {
			// No key is generated for the spec: say why rather than what is stored.
			cond.Reason, cond.Message = c.Reason, c.Message
		}
	}
	if issued != nil {
		leaf := issued.Chain[0]
		changed = setTime(&s.NotBefore, api.NewTime(leaf.NotBefore)) || changed
		changed = setTime(&s.NotAfter, api.NewTime(leaf.NotAfter)) || changed
		changed = setTime(&s.RenewalTime, api.NewTime(RenewalTime(st))) || changed
	} else {
		changed = setTime(&s.NotBefore, nil) || changed
		changed = setTime(&s.NotAfter, nil) || changed
		changed = setTime(&s.RenewalTime, nil) || changed
	}
	return api.SetCondition(&s.Conditions, cond, st.Now) || changed
}

// keyNotAllowed returns the Issuing=False condition of a refused
// spec.privateKey (ReasonKeyNotAllowed) for the current
// generation, or nil.
func keyNotAllowed(crt *api.Certificate) *api.Condition {
	c := api.FindCondition(crt.Status.Conditions, api.CertificateConditionIssuing)
	if c == nil || c.Status != api.ConditionFalse || c.Reason != ReasonKeyNotAllowed || c.ObservedGeneration != crt.Generation {
		return nil
	}
	return c
}

// ownershipReasons are the reasons of an Issuing=False condition left by
// a stopped issuance of a Certificate that did not own its secret.
var ownershipReasons = map[string]bool{
	ReasonDuplicateSecretName: true, ReasonSecretNotOwned: true,
	ReasonSecretInUse: true, ReasonSecretFilePermsNotAllowed: true,
}

func setTime(dst **api.Time, v *api.Time) bool {
	switch {
	case *dst == nil && v == nil:
		return false
	case *dst != nil && v != nil && (*dst).Equal(v.Time):
		return false
	}
	*dst = v
	return true
}

// MetricExpirySeconds is observed on every reconcile that reaches this
// step (at least daily for each Certificate with a certificate, through the
// resync): the seconds left until the stored certificate's notAfter
// (negative once expired), label namespace. Its minimum over a day is the
// soonest expiry, which a cloud alarm can watch without listing anything.
const MetricExpirySeconds = "certfn_certificate_expiry_seconds"

// ReadinessStep writes the Certificate when ApplyReadiness changed it (drift: a secret
// deleted, replaced or expired since the last write).
//
// It keeps a Certificate's Ready condition and its
// notBefore/notAfter/renewalTime fields in line with what is stored
// (cert-manager's readiness controller). Renewal being due does not make a
// still-valid certificate not Ready.
func ReadinessStep(ctx context.Context, env *Env, st *State) (Outcome, error) {
	if err := st.LoadSecret(ctx); err != nil {
		return Outcome{}, err
	}
	own, err := st.Ownership(ctx)
	if err != nil {
		return Outcome{}, err
	}
	owner := own.Owns(st.Cert.Name)
	if issued, _ := st.Parse(); issued != nil && owner && env.Metrics != nil {
		env.Metrics.Observe(MetricExpirySeconds, issued.Chain[0].NotAfter.Sub(st.Now).Seconds(), "namespace", st.Cert.Namespace)
	}
	if !ApplyReadiness(st) {
		return Outcome{Why: "the Ready condition is up to date"}, nil
	}
	next := st.NextRunAt
	if rt := RenewalTime(st); !rt.IsZero() && !st.IsIssuing() && owner {
		next = rt
	} else if issued, _ := st.Parse(); issued != nil && owner && pki.RenewalDisabled(st.Cert.Spec.Renewal) {
		// Renewal disabled: look again at expiry at the latest, to say so in Ready.
		if exp := issued.Chain[0].NotAfter; st.Now.Before(exp) && (next.IsZero() || exp.Before(next)) {
			next = exp
		}
	}
	if err := env.Writer.UpdateCertificate(ctx, st, next); err != nil {
		return Outcome{}, fmt.Errorf("update Ready condition: %w", err)
	}
	return Outcome{Wrote: true}, nil
}
