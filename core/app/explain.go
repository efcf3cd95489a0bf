// The explanation of a Certificate that `certfn
// status` prints and that the HTTP API's status route returns: the whole
// chain (Certificate → CertificateRequest → issuer → secret) with a one-line
// summary of why the certificate is, or is not, ready. The CLI (local and
// remote) and the API share this one implementation: a Report is plain data
// (it round-trips through JSON) and Render prints it.
//
// A Report never holds key material: the secret section is built from the
// secret's tls.crt only, and only when the caller supplies a SecretReader
// (local mode). The API supplies none: it never reads the secret store
// (docs/design/roles.md).

package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
)

// Lookup returns one stored object. It returns an error wrapping
// ports.ErrNotFound for a missing object and one wrapping
// ErrForbidden for an object the caller may not read (that part of
// the chain is then reported as hidden).
type Lookup func(ctx context.Context, key api.Key) (api.Object, error)

// EventsOf returns the Events about one object the caller may read
// (none, or an error wrapping ErrForbidden, when it may not).
type EventsOf func(ctx context.Context, key api.Key) ([]api.Event, error)

// SecretReader returns the PEM tls.crt of the secret namespace/name, or an
// error wrapping ports.ErrNotFound when the secret does not exist, or
// ErrSecretNotOwned when the Certificate explained did not write it. It
// must not return anything but the certificate chain.
type SecretReader func(ctx context.Context, namespace, name string) (tlsCrt []byte, err error)

// States of the issuer and secret sections.
const (
	// StateFound: the object exists and is shown.
	StateFound = "Found"
	// StateMissing: the object does not exist.
	StateMissing = "Missing"
	// StateHidden: the caller may not read the object.
	StateHidden = "Hidden"
	// StateNotRead: the secret store was not consulted (the API never reads it).
	StateNotRead = "NotRead"
	// StateNotOwned: the secret exists but this Certificate did not write
	// it (its cert-manager.io/certificate-name annotation names another or
	// none); what it holds is not shown, so that naming a secret is no way
	// to read it.
	StateNotOwned = "NotOwned"
)

// ErrSecretNotOwned is returned by a SecretReader for a secret the
// Certificate being explained did not write (StateNotOwned).
var ErrSecretNotOwned = errors.New("the secret was not written by this Certificate")

// Report explains one Certificate.
type Report struct {
	// Summary is the first line: "Ready: ...", "Issuing: ..." or "Not ready: ...".
	Summary     string           `json:"summary"`
	Certificate *api.Certificate `json:"certificate"`
	Issuer      IssuerInfo       `json:"issuer"`
	Secret      SecretInfo       `json:"secret"`
	// Request is the CertificateRequest of the revision in flight, else of
	// the current revision; nil when there is none (or it is hidden).
	Request       *api.CertificateRequest `json:"request,omitempty"`
	RequestHidden bool                    `json:"requestHidden,omitempty"`
	// Order is the ACME Order of Request (nil: none, not ACME, or hidden);
	// Challenges are its Challenges the caller may read, in the order of
	// the Order's authorizations.
	Order      *api.Order       `json:"order,omitempty"`
	Challenges []*api.Challenge `json:"challenges,omitempty"`
	// Events are the recorded failures (Warning api.Events) of the Certificate, its
	// request, Order and Challenges and its issuer that the caller may
	// read, oldest first.
	Events []api.Event `json:"events,omitempty"`
	// Permanent: what blocks the Certificate will not pass by itself (the
	// request was denied or failed, the issuer is misconfigured); waiting
	// cannot help until someone changes something. `certfn wait` exits
	// at once on it.
	Permanent bool `json:"permanent,omitempty"`
}

// permanentIssuerReasons are the Ready reasons of an issuer whose
// configuration must change before it can become Ready (a missing secret,
// or a server that cannot be reached, may still come).
var permanentIssuerReasons = map[string]bool{
	"ErrInvalidKeyPair": true, acme.ReasonAccountKey: true, acme.ReasonServerNotAllowed: true, acme.ReasonProfileNotSupported: true,
	dns01.ReasonSolverNotAvailable: true, "NotSupported": true, "UnsupportedIssuerType": true,
}

// IssuerInfo is the issuer the Certificate refers to.
type IssuerInfo struct {
	Kind  string `json:"kind"`
	Name  string `json:"name"`
	State string `json:"state"`
	// OtherKindExists: the issuer is missing, the ref names an Issuer,
	// and a ClusterIssuer of that name exists (the ref lacks its kind).
	OtherKindExists bool `json:"otherKindExists,omitempty"`
	// Generation is the issuer's metadata.generation: a condition
	// observed at an older one predates the issuer's spec.
	Generation int64           `json:"generation,omitempty"`
	Conditions []api.Condition `json:"conditions,omitempty"`
}

// SecretInfo describes the Certificate's secret from its tls.crt leaf.
type SecretInfo struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	State     string `json:"state"`
	// Reference is where the deployment's secret store keeps the secret
	// (Ports.SecretReference): a Secrets Manager secret name, a Parameter
	// Store path prefix, a Secret Manager resource name or a local
	// directory; empty when the deployment does not say. Never a value.
	Reference string    `json:"reference,omitempty"`
	Subject   string    `json:"subject,omitempty"`
	Issuer    string    `json:"issuer,omitempty"`
	SANs      []string  `json:"sans,omitempty"`
	NotBefore time.Time `json:"notBefore,omitzero"`
	NotAfter  time.Time `json:"notAfter,omitzero"`
	// Invalid says why tls.crt could not be parsed.
	Invalid string `json:"invalid,omitempty"`
}

// Certificate builds the report of the Certificate at key. It returns the
// lookup's error (not found, forbidden) for the Certificate itself; the
// request and issuer are reported as hidden when the lookup forbids them.
// secrets may be nil: the secret section is then StateNotRead.
func Explain(ctx context.Context, lookup Lookup, events EventsOf, secrets SecretReader, key api.Key) (*Report, error) {
	o, err := lookup(ctx, key)
	if err != nil {
		return nil, err
	}
	c, ok := o.(*api.Certificate)
	if !ok {
		return nil, fmt.Errorf("%s is a %T, not a Certificate", key, o)
	}
	r := &Report{Certificate: c}
	if err := requestChain(ctx, lookup, r); err != nil {
		return nil, fmt.Errorf("explain %s: %w", key, err)
	}

	ref := c.Spec.IssuerRef
	ik := api.IssuerKey(c.Namespace, ref)
	r.Issuer = IssuerInfo{Kind: ik.Kind, Name: ref.Name, State: StateMissing}
	switch io, err := lookup(ctx, ik); {
	case err == nil:
		if iss, ok := io.(api.GenericIssuer); ok {
			r.Issuer.State, r.Issuer.Conditions = StateFound, iss.GetStatus().Conditions
			r.Issuer.Generation = iss.GetObjectMeta().Generation
		}
	case errors.Is(err, ErrForbidden):
		r.Issuer.State = StateHidden
	case !errors.Is(err, ports.ErrNotFound):
		return nil, fmt.Errorf("explain %s: read %s: %w", key, ik, err)
	case ik.Kind == api.KindIssuer:
		// The commonest mistake: a ClusterIssuer named without kind.
		if _, err := lookup(ctx, api.Key{Kind: api.KindClusterIssuer, Name: ref.Name}); err == nil {
			r.Issuer.OtherKindExists = true
		}
	}

	r.Secret = SecretInfo{Namespace: c.Namespace, Name: c.Spec.SecretName, State: StateNotRead}
	if secrets != nil {
		crt, err := secrets(ctx, c.Namespace, c.Spec.SecretName)
		switch {
		case errors.Is(err, ports.ErrNotFound):
			r.Secret.State = StateMissing
		case errors.Is(err, ErrSecretNotOwned):
			r.Secret.State = StateNotOwned
		case err != nil:
			return nil, fmt.Errorf("explain %s: read secret %s/%s: %w", key, c.Namespace, c.Spec.SecretName, err)
		default:
			r.Secret.State = StateFound
			fillSecret(&r.Secret, crt)
		}
	}
	keys := []api.Key{key, ik}
	if r.Request != nil {
		keys = append(keys, api.KeyOf(r.Request))
	}
	if r.Order != nil {
		keys = append(keys, api.KeyOf(r.Order))
	}
	for _, ch := range r.Challenges {
		keys = append(keys, api.KeyOf(ch))
	}
	for _, k := range keys {
		if events == nil {
			break
		}
		evs, err := events(ctx, k)
		if err != nil {
			continue // not readable by the caller
		}
		for _, ev := range evs {
			if ev.Type == api.EventTypeWarning {
				r.Events = append(r.Events, ev)
			}
		}
	}
	api.SortEvents(r.Events)
	r.Summary, r.Permanent = summary(r)
	return r, nil
}

// requestChain fills in r.Request (the CertificateRequest of r.Certificate's
// revision in flight, else of its current one, or RequestHidden), then
// its ACME Order and Challenges (explainOrder): the objects of the
// issuance, without the issuer, the secret or the Events.
func requestChain(ctx context.Context, lookup Lookup, r *Report) error {
	c := r.Certificate
	st := &certificates.State{Cert: c}
	for _, rev := range []int{st.NextRevision(), st.CurrentRevision()} {
		if rev < 1 {
			continue
		}
		ro, err := lookup(ctx, api.Key{Kind: api.KindCertificateRequest, Namespace: c.Namespace, Name: certificates.RequestName(c.Name, rev)})
		if errors.Is(err, ErrForbidden) {
			r.RequestHidden = true
			break
		}
		if err == nil {
			if cr, ok := ro.(*api.CertificateRequest); ok {
				r.Request = cr
				break
			}
		}
	}
	return explainOrder(ctx, lookup, r)
}

// explainOrder adds the ACME Order of r.Request and its Challenges (by
// their deterministic names; those the caller may not read, or that are
// gone, are left out).
func explainOrder(ctx context.Context, lookup Lookup, r *Report) error {
	cr := r.Request
	if cr == nil || cr.UID == "" {
		return nil
	}
	oo, err := lookup(ctx, api.Key{Kind: api.KindOrder, Namespace: cr.Namespace, Name: acme.OrderName(cr)})
	switch {
	case errors.Is(err, ports.ErrNotFound), errors.Is(err, ErrForbidden):
		return nil
	case err != nil:
		return fmt.Errorf("read the Order of %s: %w", cr.Name, err)
	}
	o, ok := oo.(*api.Order)
	if !ok {
		return nil
	}
	r.Order = o
	for _, az := range o.Status.Authorizations {
		co, err := lookup(ctx, api.Key{Kind: api.KindChallenge, Namespace: o.Namespace, Name: acme.ChallengeName(o.Name, az.URL)})
		switch {
		case errors.Is(err, ports.ErrNotFound), errors.Is(err, ErrForbidden):
			continue
		case err != nil:
			return fmt.Errorf("read a Challenge of Order %s: %w", o.Name, err)
		}
		if ch, ok := co.(*api.Challenge); ok {
			r.Challenges = append(r.Challenges, ch)
		}
	}
	return nil
}

func eventTime(e api.Event) time.Time { return api.EventTime(&e) }

func fillSecret(s *SecretInfo, crt []byte) {
	chain, err := pki.ParseChainPEM(crt)
	if err != nil {
		s.Invalid = err.Error()
		return
	}
	l := chain[0]
	s.Subject, s.Issuer, s.SANs = l.Subject.String(), l.Issuer.String(), SANs(l.DNSNames, l.IPAddresses, l.URIs, l.EmailAddresses)
	s.NotBefore, s.NotAfter = l.NotBefore.UTC(), l.NotAfter.UTC()
}

// SANs renders a certificate's subject alternative names in the order DNS
// names, IP addresses, URIs, e-mail addresses.
func SANs[IP, URI fmt.Stringer](dns []string, ips []IP, uris []URI, emails []string) []string {
	var out []string
	out = append(out, dns...)
	for _, ip := range ips {
		out = append(out, ip.String())
	}
	for _, u := range uris {
		out = append(out, u.String())
	}
	return append(out, emails...)
}

// summary returns the one-line reason a certificate is (not) ready, built
// from the whole chain down to the ACME Challenge, and whether that reason
// is permanent (see Report.Permanent). A failure recorded before what
// would change it is never permanent: a Certificate condition observed
// at an older generation than the spec's (the spec was corrected since,
// and the controllers have not looked yet), an issuer condition observed
// at an older issuer generation, and a request denied or failed before
// the issuance in flight began (`certfn renew`, or the spec change that
// started it, came after it: the next request replaces it).
func summary(r *Report) (string, bool) {
	c, cr := r.Certificate, r.Request
	conds := c.Status.Conditions
	if api.IsTrue(conds, api.CertificateConditionReady) && !api.IsTrue(conds, api.CertificateConditionIssuing) {
		return "Ready: " + condMessage(conds, api.CertificateConditionReady), false
	}
	if rc := api.FindCondition(conds, api.CertificateConditionReady); rc != nil && (rc.Reason == certificates.ReasonDuplicateSecretName || rc.Reason == certificates.ReasonSecretNotOwned ||
		rc.Reason == certificates.ReasonSecretInUse || rc.Reason == certificates.ReasonSecretFilePermsNotAllowed || rc.Reason == certificates.ReasonKeyNotAllowed) {
		return "Not ready: " + rc.Message, current(rc, c.Generation)
	}
	switch r.Issuer.State {
	case StateMissing:
		msg := fmt.Sprintf("Not ready: %s %q does not exist", r.Issuer.Kind, r.Issuer.Name)
		if r.Issuer.Kind == api.KindIssuer {
			msg += " in namespace " + c.Namespace
		}
		if r.Issuer.OtherKindExists {
			msg += fmt.Sprintf(`; a ClusterIssuer %q exists: set issuerRef.kind: ClusterIssuer (a ref without kind names an Issuer of the Certificate's namespace)`, r.Issuer.Name)
		}
		return msg, false
	case StateFound:
		if !api.IsTrue(r.Issuer.Conditions, "Ready") {
			ready := api.FindCondition(r.Issuer.Conditions, "Ready")
			if ready == nil {
				return fmt.Sprintf("Not ready: issuer %q has not been checked yet", r.Issuer.Name), false
			}
			return fmt.Sprintf("Not ready: issuer %q is not ready (%s): %s", r.Issuer.Name, ready.Reason, ready.Message),
				permanentIssuerReasons[ready.Reason] && current(ready, r.Issuer.Generation)
		}
	}
	ic := api.FindCondition(conds, api.CertificateConditionIssuing)
	if cr != nil {
		if d := api.FindCondition(cr.Status.Conditions, api.CertificateRequestConditionDenied); d != nil && d.Status == api.ConditionTrue {
			return fmt.Sprintf("Not ready: request %s denied: %s", cr.Name, d.Message), decidedInIssuance(d, ic, c.Generation)
		}
		if rc := api.FindCondition(cr.Status.Conditions, "Ready"); rc != nil && rc.Status == api.ConditionFalse && rc.Reason == api.CertificateRequestReasonFailed {
			return fmt.Sprintf("Not ready: request %s failed: %s", cr.Name, rc.Message), decidedInIssuance(rc, ic, c.Generation)
		}
	}
	if ic != nil && ic.Status == api.ConditionFalse && ic.Reason == "Failed" {
		return "Not ready: " + ic.Message, current(ic, c.Generation)
	}
	if cr != nil {
		if !api.IsTrue(cr.Status.Conditions, api.CertificateRequestConditionApproved) && !cr.IsFinal() {
			why := condMessage(cr.Status.Conditions, "Ready")
			if why == "" {
				why = "no approver has approved or denied it yet"
			}
			return fmt.Sprintf("Not ready: request %s is waiting for approval: %s", cr.Name, why), false
		}
		if why := challengeBlocker(r); why != "" {
			return "Not ready: " + why, false
		}
		if m := condMessage(cr.Status.Conditions, "Ready"); m != "" && !api.IsTrue(cr.Status.Conditions, "Ready") {
			return fmt.Sprintf("Not ready: request %s: %s", cr.Name, m), false
		}
	}
	if api.IsTrue(conds, api.CertificateConditionIssuing) {
		return "Issuing: " + condMessage(conds, api.CertificateConditionIssuing), false
	}
	return "Not ready: " + condMessage(conds, api.CertificateConditionReady), false
}

// current reports a condition observed at generation gen or later (0: the
// condition does not say, taken as current).
func current(c *api.Condition, gen int64) bool {
	return c.ObservedGeneration == 0 || c.ObservedGeneration >= gen
}

// decidedInIssuance reports a request's final condition d recorded during
// the Certificate's issuance in flight, not before it: issuing is the
// Certificate's Issuing condition (nil: none), gen its generation. While
// Issuing is True, a decision at or before Issuing's transition belongs
// to an earlier attempt (conditions' times are whole seconds: one in the
// same second counts as earlier, which only defers the verdict until the
// Certificate records the failure itself). A Certificate whose Issuing
// condition predates its spec has not yet looked at the change.
func decidedInIssuance(d, issuing *api.Condition, gen int64) bool {
	if issuing == nil {
		return true
	}
	if !current(issuing, gen) {
		return false
	}
	if issuing.Status != api.ConditionTrue || issuing.LastTransitionTime == nil || d.LastTransitionTime == nil {
		return true
	}
	return d.LastTransitionTime.After(issuing.LastTransitionTime.Time)
}

// challengeBlocker names the first Challenge of the Order that is not
// valid, with its state and the ACME server's or certfn's reason; or the
// Order's own reason; "" when the Order is not what waits.
func challengeBlocker(r *Report) string {
	o := r.Order
	if o == nil || o.Status.State == api.StateValid {
		return ""
	}
	for _, ch := range r.Challenges {
		if ch.Status.State == api.StateValid {
			continue
		}
		state := string(ch.Status.State)
		if state == "" {
			state = "not yet presented"
			if ch.Status.Presented {
				state = "presented"
			}
		}
		msg := fmt.Sprintf("order %s: challenge %s (%s for %s) is %s", o.Name, ch.Name, ch.Spec.Type, ch.Spec.DNSName, state)
		if ch.Status.Reason != "" {
			msg += ": " + ch.Status.Reason
		}
		return msg + lastFailure(r, ch)
	}
	msg := fmt.Sprintf("order %s is %s", o.Name, orDefault(string(o.Status.State), "being created"))
	if o.Status.Reason != "" {
		msg += ": " + o.Status.Reason
	}
	return msg + lastFailure(r, o)
}

// lastFailure says how the last reconcile of obj failed, from its Warning
// Event, when that was recorded after obj was created (an ACME
// server answering 500s left the Certificate "Issuing" with the cause only
// in an Event): "; its last attempt failed at <time> (once | <n> times): <message>".
// Events outlive a recovery, so the time is given; "" when there is none.
func lastFailure(r *Report, obj api.Object) string {
	k, m := api.KeyOf(obj), obj.GetObjectMeta()
	for i := len(r.Events) - 1; i >= 0; i-- { // the latest first
		e := r.Events[i]
		ref := e.InvolvedObject
		if e.Type != api.EventTypeWarning || ref.Kind != k.Kind || ref.Namespace != k.Namespace || ref.Name != k.Name {
			continue
		}
		if at := eventTime(e); m.CreationTimestamp == nil || !at.Before(m.CreationTimestamp.Time) {
			times := "once"
			if e.Count > 1 {
				times = fmt.Sprintf("%d times", e.Count)
			}
			return fmt.Sprintf("; its last attempt failed at %s (%s): %s", at.UTC().Format(time.RFC3339), times, e.Message)
		}
	}
	return ""
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Render prints the report as `certfn status` does: the summary, a blank
// line, then the Certificate, issuer, secret and request sections.
func (r *Report) Render(w io.Writer) error {
	ew := &errWriter{w: w}
	c := r.Certificate
	if c == nil {
		return errors.New("explain: report without a certificate")
	}
	ew.printf("%s\n\n", r.Summary)
	ew.printf("Certificate: %s/%s (generation %d, revision %s)\n", c.Namespace, c.Name, c.Generation, intPtr(c.Status.Revision))
	ew.printf("  Names: %s\n", strings.Join(Identities(c), ", "))
	printConds(ew, "  ", c.Status.Conditions)
	if c.Status.NotAfter != nil {
		ew.printf("  Not before: %s  Not after: %s  Renewal: %s\n", ts(c.Status.NotBefore), ts(c.Status.NotAfter), ts(c.Status.RenewalTime))
	}
	if c.Status.FailedIssuanceAttempts != nil {
		ew.printf("  Failed issuance attempts: %d (last failure %s)\n", *c.Status.FailedIssuanceAttempts, ts(c.Status.LastFailureTime))
	}
	if len(c.Status.IgnoredFields) > 0 {
		ew.printf("  Ignored fields: %s\n", strings.Join(c.Status.IgnoredFields, ", "))
	}

	ew.printf("Issuer: %s %q", r.Issuer.Kind, r.Issuer.Name)
	switch r.Issuer.State {
	case StateMissing:
		ew.printf(" — does not exist\n")
	case StateHidden:
		ew.printf(" — not shown (the caller may not get it)\n")
	default:
		ew.printf("\n")
		printConds(ew, "  ", r.Issuer.Conditions)
	}

	s := r.Secret
	switch s.State {
	case StateFound:
		ew.printf("Secret: %s/%s\n", s.Namespace, s.Name)
		if s.Invalid != "" {
			ew.printf("  tls.crt: invalid: %s\n", s.Invalid)
		} else {
			ew.printf("  Subject: %s  Issuer: %s\n  SANs: %s\n  Valid: %s → %s\n", orDefault(s.Subject, "(empty)"), orDefault(s.Issuer, "(empty)"),
				strings.Join(s.SANs, ", "), s.NotBefore.Format(time.RFC3339), s.NotAfter.Format(time.RFC3339))
		}
	case StateMissing:
		ew.printf("Secret: %s/%s — does not exist\n", s.Namespace, s.Name)
	case StateNotOwned:
		ew.printf("Secret: %s/%s — not shown (this Certificate did not write it)\n", s.Namespace, s.Name)
	default:
		ew.printf("Secret: %s/%s — not read (the API never reads the secret store; see status.notAfter above)\n", s.Namespace, s.Name)
	}

	cr := r.Request
	switch {
	case r.RequestHidden:
		ew.printf("CertificateRequest: not shown (the caller may not get it)\n")
	case cr == nil:
		ew.printf("CertificateRequest: none\n")
	default:
		ew.printf("CertificateRequest: %s/%s (revision %s, requester %s)\n", cr.Namespace, cr.Name, cr.Annotations[api.AnnotationRevision], cr.Spec.Username)
		printConds(ew, "  ", cr.Status.Conditions)
		if cr.Status.RequestedDuration != nil || cr.Status.HonouredDuration != nil {
			ew.printf("  Duration requested: %s  honoured: %s\n", durStr(cr.Status.RequestedDuration), durStr(cr.Status.HonouredDuration))
		}
	}
	if o := r.Order; o != nil {
		ew.printf("Order: %s/%s (state %s)\n", o.Namespace, o.Name, orDefault(string(o.Status.State), "none yet"))
		if o.Status.Reason != "" {
			ew.printf("  Reason: %s\n", o.Status.Reason)
		}
		for _, ch := range r.Challenges {
			ew.printf("  Challenge: %s (%s for %s, state %s, presented %t)\n", ch.Name, ch.Spec.Type, ch.Spec.DNSName,
				orDefault(string(ch.Status.State), "none yet"), ch.Status.Presented)
			if ch.Status.Reason != "" {
				ew.printf("    Reason: %s\n", ch.Status.Reason)
			}
		}
	}
	if len(r.Events) > 0 {
		ew.printf("Recorded failures:\n")
		for _, e := range r.Events {
			o := e.InvolvedObject
			ew.printf("  %s %s: %s ×%d (first %s, last %s): %s\n", o.Kind, o.Name, e.Reason, e.Count, ts(e.FirstTimestamp), ts(e.LastTimestamp), e.Message)
		}
	}
	return ew.err
}

// Identities lists what a Certificate asks for: CN=..., DNS names, IP
// addresses, URIs, e-mail addresses and the literal subject.
func Identities(c *api.Certificate) []string {
	var out []string
	if c.Spec.CommonName != "" {
		out = append(out, "CN="+c.Spec.CommonName)
	}
	out = append(out, c.Spec.DNSNames...)
	out = append(out, c.Spec.IPAddresses...)
	out = append(out, c.Spec.URIs...)
	out = append(out, c.Spec.EmailAddresses...)
	if c.Spec.LiteralSubject != "" {
		out = append(out, c.Spec.LiteralSubject)
	}
	return out
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, a ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, a...)
	}
}

func printConds(w *errWriter, indent string, conds []api.Condition) {
	for _, c := range conds {
		w.printf("%s%s=%s (%s) %s\n", indent, c.Type, c.Status, c.Reason, c.Message)
	}
}

func condMessage(conds []api.Condition, t string) string {
	if c := api.FindCondition(conds, t); c != nil {
		return c.Message
	}
	return ""
}

func ts(t *api.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func durStr(d *api.Duration) string {
	if d == nil {
		return "-"
	}
	return d.Duration.String()
}

func intPtr(p *int) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}
