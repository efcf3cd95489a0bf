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
	// RenewalDisabled is set when spec.renewal.policy is Disabled and the
	// only reason there may be is time (Expired): the trigger issues
	// nothing for it.
	RenewalDisabled bool
}

// Evaluate applies seed 002's triggers in cert-manager's order: missing or
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
	if pki.RenewalDisabled(spec.Renewal) {
		// cert-manager's trigger never renews such a certificate, not even
		// once expired; the Ready condition still says it expired.
		if !st.Now.Before(leaf.NotAfter) {
			return Reason{Reason: "Expired", Message: fmt.Sprintf("Certificate expired on %s (renewal is disabled: spec.renewal.policy is Disabled)",
				leaf.NotAfter.UTC().Format(time.RFC3339)), RenewalDisabled: true}
		}
		return Reason{RenewalDisabled: true}
	}
	renewAt, werr := renewalTime(st, issued.Chain[0])
	switch {
	case !st.Now.Before(leaf.NotAfter):
		return Reason{Reason: "Expired", Message: fmt.Sprintf("Certificate expired on %s", leaf.NotAfter.UTC().Format(time.RFC3339))}
	case !st.Now.Before(renewAt):
		msg := fmt.Sprintf("Renewing certificate as renewal was scheduled at %s", renewAt.UTC().Format(time.RFC3339))
		if werr != nil {
			msg += " (" + werr.Error() + ")"
		}
		return Reason{Reason: "Renewing", Message: msg}
	}
	return Reason{RenewAt: renewAt}
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
	t, _ := renewalTime(st, issued.Chain[0])
	return t
}

// renewalTime computes RenewalTime for leaf. The error says why no
// renewal window could be used (the time is then the one before the
// windows, as cert-manager does).
func renewalTime(st *State, leaf *x509.Certificate) (time.Time, error) {
	spec := &st.Cert.Spec
	t := pki.RenewalTime(leaf.NotBefore, leaf.NotAfter, spec.RenewBefore, spec.RenewBeforePercentage)
	if ri := st.Cert.Status.RenewalInfo; ri != nil && ri.SelectedTime != nil && ri.SelectedTime.Before(t) &&
		(ri.CertificateID == "" || ri.CertificateID == ARICertificateID(leaf)) {
		t = ri.SelectedTime.Time
	}
	if r := spec.Renewal; r != nil && len(r.Windows) > 0 {
		return pki.ApplyRenewalWindows(leaf.NotBefore, leaf.NotAfter, t, r.Windows)
	}
	return t, nil
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
