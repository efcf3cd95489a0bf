package certificates

import (
	"context"
	"crypto/x509"
	"fmt"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

const (
	// NotifyDefaultExpiryWindow is the deployments' default expiry window: the
	// Terraform module's certificate_expiry_alarm_days default, 14 days.
	NotifyDefaultExpiryWindow = 14 * 24 * time.Hour
	// NotifyMaxAge is how old an issuance or a failure may be and still be
	// announced (see NotifyStep).
	NotifyMaxAge = 7 * 24 * time.Hour
	// NotifyRenewalGrace is how long after its renewal time a Certificate that
	// certfn renews may take before it is announced as expiring.
	NotifyRenewalGrace = time.Hour
	// NotifyPermanentRetry is when a permanently failed publication is tried
	// again.
	NotifyPermanentRetry = time.Hour
)

// MetricNotifications counts publications by type (Issued, Renewed,
// Failed, Expiring) and result (published, failed).
const MetricNotifications = "certfn_notifications_total"

// MetricNotificationFailures counts publications that failed permanently
// (the step does not return those errors, so the kernel's
// certfn_permanent_errors_total does not count them); AWS mode exports it
// to CloudWatch as NotificationFailures.
const MetricNotificationFailures = "certfn_notification_failures_total"

// NotifyStep publishes the first pending event of the Certificate and records
// it.
//
// It is certfn's notification step for Certificates (a certfn
// extension): it publishes, through ports.Notifier
// (adapters/aws/ebnotify: EventBridge), that a Certificate was issued or
// renewed, that an issuance failed, and that its certificate approaches
// expiration, and records on the status what it published
// (notifiedRevision, notifiedFailureTime, notifiedExpiryTime).
//
// It runs last in the Certificate controller's steps, so it sees a settled
// Certificate, and like every step it publishes at most one event and
// writes at most once per invocation; the write wakes the Certificate, so
// a second pending event goes out in the next invocation. The order is:
//
//  1. A new revision: status.revision is greater than notifiedRevision
//     (or notifiedRevision is absent) → NotificationIssued for revision 1,
//     NotificationRenewed for a later one; notifiedRevision = revision.
//  2. A failed issuance: status.lastFailureTime is set and is not
//     notifiedFailureTime → NotificationFailed (cert-manager's Issuing=False
//     reason Failed, which the issuing step sets for a denied, failed or
//     invalid request and for a certificate that does not match its key);
//     notifiedFailureTime = lastFailureTime. Each failure once.
//  3. Approaching expiration: the certificate in the secret expires within
//     Env.NotifyExpiryWindow (0: off) and is not expired →
//     NotificationExpiring once per UTC day, as ACM's daily "Approaching
//     Expiration" events; notifiedExpiryTime = now. A Certificate that
//     certfn renews raises none before its renewal time plus
//     NotifyRenewalGrace: a renewal on time (short-lived certificates are inside
//     any window their whole life) says nothing; one that fails or hangs
//     does. The step asks to run again (Outcome.RequeueAt) when the events
//     start and at the next UTC midnight, so no other wake-up is needed.
//
// Delivery is at least once: the event is published first and recorded
// after, so a crash (or a lost write race) after publishing publishes it
// again, and a crash before loses nothing. Consumers drop duplicates by
// the notification's ID.
//
// Enabling notifications on a deployment that already holds Certificates
// does not announce their old issuances: a revision or failure is
// announced only while it is at most NotifyMaxAge old (the revision's
// CertificateRequest's Ready transition time, else the certificate's
// notBefore; the failure's lastFailureTime). Older ones are left
// unannounced and nothing is written for them (no store write per
// existing Certificate); their next renewal is announced. The same bound
// keeps a deployment whose notifications were off for weeks from
// announcing every renewal it missed, while an outage of the event bus
// shorter than NotifyMaxAge loses nothing.
//
// Without a Notifier (Env.Notifier nil) the step does nothing and writes
// nothing: issuance costs no extra store write with notifications off and
// one (the record of the event) with them on.
//
// A transient publishing error is returned (the message is retried with
// backoff). A permanent one (a permission or the event bus missing) is
// counted (MetricNotificationFailures) and the step asks to try again
// after NotifyPermanentRetry without returning it: returned, it would make the
// sweep run the Certificate again every minute while it is due.
func NotifyStep(ctx context.Context, env *Env, st *State) (Outcome, error) {
	if env.Notifier == nil {
		return Outcome{Why: "notifications are off (this deployment has no notifier)"}, nil
	}
	if err := st.LoadSecret(ctx); err != nil {
		return Outcome{}, err
	}
	var leaf *x509.Certificate
	if issued, _ := st.Parse(); issued != nil {
		leaf = issued.Chain[0]
	}
	if _, notOwner := st.NotOwner(); notOwner {
		// The secret holds another Certificate's key pair: it is not this
		// one's to describe or to announce as expiring.
		leaf = nil
	}
	s := &st.Cert.Status
	var whys []string
	if n, why := revisionEvent(st, leaf); n != nil {
		rev := n.Revision
		return publish(ctx, env, st, *n, func() { s.NotifiedRevision = &rev })
	} else if why != "" {
		whys = append(whys, why)
	}
	if n, why := failureEvent(st, leaf); n != nil {
		at := *s.LastFailureTime
		return publish(ctx, env, st, *n, func() { s.NotifiedFailureTime = &at })
	} else if why != "" {
		whys = append(whys, why)
	}
	n, wake, why := expiryEvent(env, st, leaf)
	if n != nil {
		return publish(ctx, env, st, *n, func() { s.NotifiedExpiryTime = api.NewTime(st.Now) })
	}
	if why != "" {
		whys = append(whys, why)
	}
	out := Outcome{RequeueAt: wake, Why: "nothing to notify"}
	if len(whys) > 0 {
		out.Why = joinWhy(whys)
	}
	return out, nil
}

func joinWhy(whys []string) string {
	s := whys[0]
	for _, w := range whys[1:] {
		s += "; " + w
	}
	return s
}

// base fills in what every notification about st says.
func base(typ ports.NotificationType, st *State, leaf *x509.Certificate) ports.Notification {
	c := st.Cert
	n := ports.Notification{
		Type: typ, Certificate: st.Key(), Time: st.Now, Revision: st.CurrentRevision(),
		IssuerRef: c.Spec.IssuerRef, SecretName: c.Spec.SecretName,
	}
	if leaf != nil {
		n.Serial = FormatACMSerial(leaf.SerialNumber)
		n.NotBefore, n.NotAfter = leaf.NotBefore.UTC(), leaf.NotAfter.UTC()
		n.CommonName = leaf.Subject.CommonName
		n.DNSNames = append([]string(nil), leaf.DNSNames...)
	}
	return n
}

// revisionEvent returns the Issued/Renewed notification due, or why none is.
func revisionEvent(st *State, leaf *x509.Certificate) (*ports.Notification, string) {
	rev := st.CurrentRevision()
	if rev == 0 {
		return nil, ""
	}
	if nr := st.Cert.Status.NotifiedRevision; nr != nil && *nr >= rev {
		return nil, ""
	}
	if leaf == nil {
		return nil, fmt.Sprintf("revision %d is announced once its secret holds a valid certificate", rev)
	}
	at := issuedAt(st, rev, leaf)
	if st.Now.Sub(at) > NotifyMaxAge {
		return nil, fmt.Sprintf("revision %d was issued at %s, more than %s ago (before notifications were on): not announced",
			rev, at.UTC().Format(time.RFC3339), NotifyMaxAge)
	}
	typ := ports.NotificationRenewed
	if rev == 1 {
		typ = ports.NotificationIssued
	}
	n := base(typ, st, leaf)
	return &n, ""
}

// issuedAt is when revision rev was issued: its CertificateRequest's Ready
// transition, else the certificate's notBefore.
func issuedAt(st *State, rev int, leaf *x509.Certificate) time.Time {
	for _, r := range st.RequestsFor(rev) {
		c := api.FindCondition(r.CR.Status.Conditions, api.CertificateRequestConditionReady)
		if c != nil && c.Status == api.ConditionTrue && c.Reason == api.CertificateRequestReasonIssued && c.LastTransitionTime != nil {
			return c.LastTransitionTime.Time
		}
	}
	return leaf.NotBefore
}

// failureEvent returns the Failed notification due, or why none is.
func failureEvent(st *State, leaf *x509.Certificate) (*ports.Notification, string) {
	s := &st.Cert.Status
	if s.LastFailureTime == nil || s.LastFailureTime.IsZero() {
		return nil, ""
	}
	at := s.LastFailureTime.Time
	if s.NotifiedFailureTime != nil && s.NotifiedFailureTime.Equal(at) {
		return nil, ""
	}
	if st.Now.Sub(at) > NotifyMaxAge {
		return nil, fmt.Sprintf("the failed issuance of %s is more than %s old (before notifications were on): not announced",
			at.UTC().Format(time.RFC3339), NotifyMaxAge)
	}
	n := base(ports.NotificationFailed, st, leaf)
	n.FailureTime = at.UTC()
	n.FailedAttempts = 1
	if s.FailedIssuanceAttempts != nil && *s.FailedIssuanceAttempts > 0 {
		n.FailedAttempts = *s.FailedIssuanceAttempts
	}
	n.RetryAfter = at.Add(Backoff(n.FailedAttempts)).UTC()
	if c := api.FindCondition(s.Conditions, api.CertificateConditionIssuing); c != nil && c.Status == api.ConditionFalse {
		n.Reason, n.Message = c.Reason, c.Message
	}
	if n.Reason == "" {
		n.Reason = "Failed"
	}
	if reqs := st.RequestsFor(st.NextRevision()); len(reqs) == 1 {
		cr := reqs[0].CR
		n.Request = cr.Name
		for _, t := range []string{api.CertificateRequestConditionDenied, api.CertificateRequestConditionInvalidRequest, api.CertificateRequestConditionFailed} {
			if api.IsTrue(cr.Status.Conditions, t) {
				n.Reason = t
				break
			}
		}
	}
	return &n, ""
}

// expiryEvent returns the Expiring notification due, or when the next one
// may be (wake) and why none is now.
func expiryEvent(env *Env, st *State, leaf *x509.Certificate) (*ports.Notification, time.Time, string) {
	window := env.NotifyExpiryWindow
	if window <= 0 || leaf == nil {
		return nil, time.Time{}, ""
	}
	now, notAfter := st.Now, leaf.NotAfter
	if !now.Before(notAfter) {
		return nil, time.Time{}, "the certificate has expired: no more approaching-expiration events"
	}
	from := notAfter.Add(-window)
	if renewAt := RenewalTime(st); !renewAt.IsZero() && renewAt.Add(NotifyRenewalGrace).After(from) {
		from = renewAt.Add(NotifyRenewalGrace)
	}
	if now.Before(from) {
		if !from.Before(notAfter) {
			// Renewal is due so close to the expiry that no event would be
			// published before it: the renewal's outcome is announced instead.
			return nil, time.Time{}, ""
		}
		return nil, from, ""
	}
	next := nextDay(now)
	if !next.Before(notAfter) {
		next = time.Time{}
	}
	if last := st.Cert.Status.NotifiedExpiryTime; last != nil && sameDay(last.Time, now) {
		return nil, next, "today's approaching-expiration event was published at " + last.UTC().Format(time.RFC3339)
	}
	n := base(ports.NotificationExpiring, st, leaf)
	return &n, next, ""
}

func sameDay(a, b time.Time) bool {
	ay, am, ad := a.UTC().Date()
	by, bm, bd := b.UTC().Date()
	return ay == by && am == bm && ad == bd
}

// nextDay is the next UTC midnight after t.
func nextDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
}

// publish sends n and, once it was accepted, records it (record edits the
// status) with one write.
func publish(ctx context.Context, env *Env, st *State, n ports.Notification, record func()) (Outcome, error) {
	if err := env.Notifier.Notify(ctx, n); err != nil {
		if errs.IsPermanent(err) {
			count(env, n, "failed")
			if env.Metrics != nil {
				env.Metrics.Inc(MetricNotificationFailures, "type", string(n.Type))
			}
			retry := st.Now.Add(NotifyPermanentRetry)
			return Outcome{RequeueAt: retry,
				Why: fmt.Sprintf("publishing %s failed permanently (tried again after %s): %v", n, retry.UTC().Format(time.RFC3339), err)}, nil
		}
		return Outcome{}, fmt.Errorf("notify %s: %w", n, err)
	}
	count(env, n, "published")
	record()
	// The record's due time stays what the controller computed for this
	// Certificate when it is ahead (the renewal, the backoff, the resync);
	// a due time already reached becomes the next event's day. The write
	// wakes the Certificate, whose next invocation settles the due time.
	next := st.NextRunAt
	if !next.After(st.Now) {
		next = time.Time{}
	}
	if n.Type == ports.NotificationExpiring {
		if nd := nextDay(st.Now); nd.Before(n.NotAfter) {
			next = Earliest(next, nd)
		}
	}
	if next.IsZero() {
		next = st.Now.Add(FollowUpGrace)
	}
	if err := env.Writer.UpdateCertificate(ctx, st, next); err != nil {
		// Published but not recorded: the next invocation publishes again
		// (at least once).
		return Outcome{}, fmt.Errorf("record the %s notification: %w", n.Type, err)
	}
	return Outcome{Wrote: true}, nil
}

func count(env *Env, n ports.Notification, result string) {
	if env.Metrics != nil {
		env.Metrics.Inc(MetricNotifications, "type", string(n.Type), "result", result)
	}
}
