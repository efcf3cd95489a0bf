package certificates

import (
	"crypto/x509"
	"encoding/asn1"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/pki"
)

// Reason is why an issuance is needed; empty when none is.
type Reason struct {
	Reason  string
	Message string
	// RenewAt is when the current certificate must be renewed (zero when
	// an issuance is needed now, nothing is issued or renewal is disabled).
	RenewAt time.Time
	// HeldUntil, when set with Reason Expired, is when that issuance may
	// start: the last one was less than MinReissueInterval ago.
	HeldUntil time.Time
	// Held, when set with no Reason, says why RenewAt was moved later than
	// spec.renewBefore (or the issuer's renewal information) asks: to
	// MinReissueInterval after the last issuance. The Ready condition says so.
	Held string
	// RenewalDisabled is set when spec.renewal.policy is Disabled and the
	// only reason there may be is time (Expired): the trigger issues
	// nothing for it.
	RenewalDisabled bool
}

// ReasonRevoked is the Ready reason of a Certificate whose stored
// certificate was revoked (status.revoked): it is re-issued at once.
const ReasonRevoked = "Revoked"

// Evaluate applies docs/design/certificate-controllers.md's triggers in cert-manager's order: missing or
// undecodable secret, key and certificate mismatch, private key no longer
// matching spec.privateKey, issuer changed, the current revision's request no
// longer matching the spec (or, without one, the certificate itself not
// matching it), and the renewal time reached.
func Evaluate(st *State) Reason {
	issued, problem := st.Parse()
	if issued == nil {
		return Reason{Reason: problem.Reason, Message: problem.Message}
	}
	spec := &st.Cert.Spec
	if ok, why := pki.KeyMatchesSpec(issued.Key, spec.PrivateKey); !ok {
		return Reason{Reason: "SecretMismatch", Message: "Issuing certificate as Secret's private key does not match spec.privateKey: " + why}
	}
	if msg := issuerMismatch(st); msg != "" {
		return Reason{Reason: "IncorrectIssuer", Message: msg}
	}
	if cur := st.RequestsFor(st.CurrentRevision()); st.CurrentRevision() > 0 && len(cur) == 1 {
		bad, err := pki.RequestMatchesSpec(cur[0].CR, spec)
		if err != nil {
			return Reason{Reason: "RequestChanged", Message: "Issuing certificate as the current CertificateRequest cannot be read: " + err.Error()}
		}
		if len(bad) > 0 {
			return Reason{Reason: "RequestChanged", Message: fmt.Sprintf("Fields on existing CertificateRequest resource not up to date: %v", bad)}
		}
	} else if bad := pki.CertificateMatchesSpec(issued.Chain[0], spec); len(bad) > 0 {
		return Reason{Reason: "SecretMismatch", Message: fmt.Sprintf("Issuing certificate as Secret was previously issued for different fields: %v", bad)}
	}
	leaf := issued.Chain[0]
	if rv := st.Cert.Status.Revoked; rv != nil && rv.Serial == leaf.SerialNumber.Text(16) {
		at := ""
		if rv.RevokedAt != nil {
			at = " at " + rv.RevokedAt.UTC().Format(time.RFC3339)
		}
		return Reason{Reason: ReasonRevoked, Message: fmt.Sprintf("Issuing certificate as the stored certificate (serial %s) was revoked%s, reason %s",
			rv.Serial, at, rv.Reason)}
	}
	if pki.RenewalDisabled(spec.Renewal) {
		// cert-manager's trigger never renews such a certificate, not even
		// once expired; the Ready condition still says it expired.
		if !st.Now.Before(leaf.NotAfter) {
			return Reason{Reason: "Expired", Message: fmt.Sprintf("Certificate expired on %s (renewal is disabled: spec.renewal.policy is Disabled)",
				leaf.NotAfter.UTC().Format(time.RFC3339)), RenewalDisabled: true}
		}
		return Reason{RenewalDisabled: true}
	}
	ren := renewalTime(st, leaf)
	switch {
	case !st.Now.Before(leaf.NotAfter):
		msg := fmt.Sprintf("Certificate expired on %s", leaf.NotAfter.UTC().Format(time.RFC3339))
		if st.Now.Before(ren.floor) {
			return Reason{Reason: "Expired", HeldUntil: ren.floor, Message: msg + fmt.Sprintf(
				"; it is re-issued at %s, %s after the last issuance (the least time between issuances of a certificate living %s)",
				ren.floor.UTC().Format(time.RFC3339), ren.interval, ren.lifetime)}
		}
		return Reason{Reason: "Expired", Message: msg}
	case !st.Now.Before(ren.at):
		msg := fmt.Sprintf("Renewing certificate as renewal was scheduled at %s", ren.at.UTC().Format(time.RFC3339))
		if ren.err != nil {
			msg += " (" + ren.err.Error() + ")"
		}
		return Reason{Reason: "Renewing", Message: msg}
	}
	r := Reason{RenewAt: ren.at}
	if ren.held {
		r.Held = fmt.Sprintf("renewal held until %s, %s after the last issuance: the issued certificate lives %s, "+
			"and certfn never re-issues sooner than that (the renewal asked for was %s)",
			ren.at.UTC().Format(time.RFC3339), ren.interval, ren.lifetime, ren.asked.UTC().Format(time.RFC3339))
	}
	return r
}

// MinReissueInterval is the least time between an issuance and the next
// one that time causes (the renewal time, expiry), whatever the spec, the
// issuer (a max-duration annotation, an ACME server's short-lived
// certificates or renewal information, a CA that expires soon) or the
// stored certificate say: a tenth of the issued certificate's lifetime,
// at least 5 minutes and at most an hour (so that an ACME server's
// renewal information after a revocation is still followed within the
// hour). Without it, a certificate living less than its renewBefore, or
// issued already expired, is re-issued (a signature, secret writes, a
// deploy hook) every few seconds for ever. A change of the spec still
// re-issues at once.
func MinReissueInterval(lifetime time.Duration) time.Duration {
	return min(max(lifetime/10, 5*time.Minute), time.Hour)
}

// lastIssuance is when leaf was issued, as far as certfn can tell: its
// notBefore, or when the current revision's request became Ready (was
// issued) if that is later (an ACME server back-dates notBefore, or may
// issue a certificate that has expired already).
func lastIssuance(st *State, leaf *x509.Certificate) time.Time {
	t := leaf.NotBefore
	if cur := st.RequestsFor(st.CurrentRevision()); st.CurrentRevision() > 0 && len(cur) == 1 {
		c := api.FindCondition(cur[0].CR.Status.Conditions, api.CertificateRequestConditionReady)
		if c != nil && c.Status == api.ConditionTrue && c.LastTransitionTime != nil && c.LastTransitionTime.After(t) {
			t = c.LastTransitionTime.Time
		}
	}
	return t
}

// RenewalTime is when the stored certificate is renewed: spec.renewBefore /
// renewBeforePercentage, else 2/3 of its lifetime; an ACME renewal window
// (status.renewalInfo.selectedTime) that is earlier wins; the result is
// then moved into spec.renewal's windows, if any (pki.ApplyRenewalWindows).
// Zero when nothing valid is stored, and when spec.renewal.policy is
// Disabled (such a certificate has no renewal time, as in cert-manager).
func RenewalTime(st *State) time.Time {
	issued, _ := st.Parse()
	if issued == nil || pki.RenewalDisabled(st.Cert.Spec.Renewal) {
		return time.Time{}
	}
	return renewalTime(st, issued.Chain[0]).at
}

// renewal is renewalTime's answer.
type renewal struct {
	at    time.Time // the renewal time
	asked time.Time // before the floor
	held  bool      // at is the floor, later than asked
	// floor is the last issuance plus interval (MinReissueInterval of
	// lifetime, the issued certificate's).
	floor              time.Time
	interval, lifetime time.Duration
	// err says why no renewal window could be used (the time is then the
	// one before the windows, as cert-manager does).
	err error
}

// renewalTime computes RenewalTime for leaf: spec.renewBefore (or the
// percentage, or 2/3 of the lifetime), an earlier ACME renewal window,
// spec.renewal's windows, and never before MinReissueInterval after the
// last issuance.
func renewalTime(st *State, leaf *x509.Certificate) renewal {
	spec := &st.Cert.Spec
	t := pki.RenewalTime(leaf.NotBefore, leaf.NotAfter, spec.RenewBefore, spec.RenewBeforePercentage)
	if ri := st.Cert.Status.RenewalInfo; ri != nil && ri.SelectedTime != nil && ri.SelectedTime.Before(t) &&
		(ri.CertificateID == "" || ri.CertificateID == ARICertificateID(leaf)) {
		t = ri.SelectedTime.Time
	}
	var err error
	if r := spec.Renewal; r != nil && len(r.Windows) > 0 {
		t, err = pki.ApplyRenewalWindows(leaf.NotBefore, leaf.NotAfter, t, r.Windows)
	}
	ren := renewal{at: t, asked: t, err: err, lifetime: leaf.NotAfter.Sub(leaf.NotBefore)}
	ren.interval = MinReissueInterval(ren.lifetime)
	// Status timestamps are whole seconds: round the floor up to one.
	ren.floor = lastIssuance(st, leaf).Add(ren.interval)
	if f := ren.floor.Truncate(time.Second); f.Before(ren.floor) {
		ren.floor = f.Add(time.Second)
	}
	if ren.at.Before(ren.floor) {
		ren.at, ren.held = ren.floor, true
	}
	return ren
}

// ARICertificateID is the certificate's ACME renewal information
// identifier (RFC 9773 §4.1): base64url(authority key id) "."
// base64url(serial number's DER content). Renewal information recorded
// for another certificate (an earlier revision) is ignored.
func ARICertificateID(leaf *x509.Certificate) string {
	if leaf.SerialNumber == nil {
		return ""
	}
	der, err := asn1.Marshal(leaf.SerialNumber)
	var rv asn1.RawValue
	if err != nil {
		return ""
	}
	if _, err := asn1.Unmarshal(der, &rv); err != nil {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString(leaf.AuthorityKeyId) + "." + base64.RawURLEncoding.EncodeToString(rv.Bytes)
}

func issuerMismatch(st *State) string {
	ref := st.Cert.Spec.IssuerRef
	a := st.Secret.Annotations
	name, kind, group := a[api.AnnotationIssuerName], a[api.AnnotationIssuerKind], a[api.AnnotationIssuerGroup]
	wantKind := ref.Kind
	if wantKind == "" {
		wantKind = api.KindIssuer
	}
	if kind == "" {
		kind = api.KindIssuer
	}
	wantGroup, gotGroup := ref.Group, group
	if wantGroup == "" {
		wantGroup = api.CertManagerGroup
	}
	if gotGroup == "" {
		gotGroup = api.CertManagerGroup
	}
	if name != ref.Name || kind != wantKind || gotGroup != wantGroup {
		return fmt.Sprintf("Issuing certificate as Secret was previously issued by %s %q (group %s)", kind, name, gotGroup)
	}
	return ""
}
