package ports

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/certfn/certfn/core/api"
)

// Notifier publishes what happened to a Certificate — issued, renewed,
// failed, approaching expiration — to the people who route such events
// (chat, e-mail, paging). The Certificate step core/certificates/notify.go
// calls it; adapters/aws/ebnotify (EventBridge), adapters/gcp/pubsubnotify
// (Pub/Sub), adapters/webhook (Standard Webhooks, local mode) and
// core/memory implement it (docs/design/notifications.md).
//
// Contract (ports/porttest.NotifierSuite):
//   - n is checked first (Notification.Validate): an invalid notification
//     is a permanent error (core/errs) and nothing is published.
//   - Notify returning nil means the backend accepted n. Delivery is at
//     least once: an error may come after the backend accepted n, and the
//     caller then publishes it again; duplicates carry the same ID.
//   - Errors that retrying cannot fix (a permission missing, the event bus
//     missing, the backend refusing the event) are permanent; others
//     (throttling, 5xx, network, a canceled context) are transient.
//   - A canceled or expired context fails before anything is published.
//   - Times are published to the second (fractions may be dropped), in UTC.
//
// A Notification never holds key material, so nothing a Notifier
// publishes, logs or returns can.
type Notifier interface {
	Notify(ctx context.Context, n Notification) error
}

// NotificationType is what happened.
type NotificationType string

// The notification types.
const (
	// NotificationIssued: the Certificate's first revision was issued.
	NotificationIssued NotificationType = "Issued"
	// NotificationRenewed: a later revision was issued (a renewal or a
	// re-issuance after a spec change).
	NotificationRenewed NotificationType = "Renewed"
	// NotificationFailed: an issuance failed (the request was denied,
	// failed or was invalid); certfn backs off and tries again.
	NotificationFailed NotificationType = "Failed"
	// NotificationExpiring: the certificate in the secret expires within
	// the deployment's expiry window and has not been renewed (sent once a
	// day, as ACM's "Approaching Expiration").
	NotificationExpiring NotificationType = "Expiring"
)

// NotificationTypes lists every type, in the order above.
var NotificationTypes = []NotificationType{NotificationIssued, NotificationRenewed, NotificationFailed, NotificationExpiring}

// Notification is one event about one Certificate. Fields that do not
// apply to a type are zero.
type Notification struct {
	// Type is what happened (required).
	Type NotificationType
	// Certificate is the Certificate's key (required).
	Certificate api.Key
	// Time is when certfn noticed (the step's clock; required).
	Time time.Time
	// Revision is status.revision: the revision issued (Issued, Renewed)
	// or the one in the secret (Failed, Expiring; 0 when none was ever
	// issued).
	Revision int
	// Serial, NotBefore, NotAfter, CommonName and DNSNames describe the
	// certificate in the secret: the one just issued (Issued, Renewed),
	// the one about to expire (Expiring), the one still in use while
	// issuance fails (Failed; empty when there is none). Serial is
	// lower-case hex octets separated by colons ("0a:1b:...").
	Serial     string
	NotBefore  time.Time
	NotAfter   time.Time
	CommonName string
	DNSNames   []string
	// IssuerRef is spec.issuerRef; SecretName is spec.secretName.
	IssuerRef  api.IssuerReference
	SecretName string
	// Failed only: Reason is the failed CertificateRequest's reason
	// (Denied, Failed, InvalidRequest) or, without one, the Issuing
	// condition's; Message is the Issuing condition's message (it names
	// the request and the next attempt); Request is the failed
	// CertificateRequest's name; FailureTime is status.lastFailureTime;
	// FailedAttempts is status.failedIssuanceAttempts; RetryAfter is when
	// certfn tries again at the earliest (the backoff).
	Reason         string
	Message        string
	Request        string
	FailureTime    time.Time
	FailedAttempts int
	RetryAfter     time.Time
}

// ID identifies the event, so that consumers can drop the duplicates that
// at-least-once delivery makes: "<key>/revision/<n>" for Issued and
// Renewed, "<key>/failure/<failure time, RFC 3339>" for Failed,
// "<key>/expiring/<UTC day>" for Expiring.
func (n Notification) ID() string {
	key := n.Certificate.String()
	switch n.Type {
	case NotificationIssued, NotificationRenewed:
		return fmt.Sprintf("%s/revision/%d", key, n.Revision)
	case NotificationFailed:
		return key + "/failure/" + n.FailureTime.UTC().Format(time.RFC3339)
	case NotificationExpiring:
		return key + "/expiring/" + n.Time.UTC().Format(time.DateOnly)
	}
	return key + "/" + strings.ToLower(string(n.Type))
}

// Validate checks what every backend needs: a known type, a Certificate
// key, a time, and the fields that type is about. The error is permanent
// (core/errs cannot be imported here: adapters wrap it with errs.Permanent).
func (n Notification) Validate() error {
	var problems []string
	known := false
	for _, t := range NotificationTypes {
		known = known || n.Type == t
	}
	if !known {
		problems = append(problems, fmt.Sprintf("type %q is not one of Issued, Renewed, Failed, Expiring", n.Type))
	}
	if n.Certificate.Kind != api.KindCertificate {
		problems = append(problems, fmt.Sprintf("certificate: kind %q, want %s", n.Certificate.Kind, api.KindCertificate))
	} else if err := n.Certificate.Validate(); err != nil {
		problems = append(problems, "certificate: "+err.Error())
	} else if n.Certificate.Namespace == "" {
		problems = append(problems, "certificate: namespace: must not be empty")
	}
	if n.Time.IsZero() {
		problems = append(problems, "time: must be set")
	}
	switch n.Type {
	case NotificationIssued, NotificationRenewed:
		if n.Revision < 1 {
			problems = append(problems, fmt.Sprintf("revision: %d, want 1 or more", n.Revision))
		}
	case NotificationFailed:
		if n.FailureTime.IsZero() {
			problems = append(problems, "failureTime: must be set")
		}
	case NotificationExpiring:
		if n.NotAfter.IsZero() {
			problems = append(problems, "notAfter: must be set")
		}
	}
	if n.Revision < 0 || n.FailedAttempts < 0 {
		problems = append(problems, "revision and failedAttempts: must not be negative")
	}
	if len(problems) > 0 {
		return errors.New("invalid notification: " + strings.Join(problems, "; "))
	}
	return nil
}

// String describes n in one line: type, Certificate, revision, serial.
func (n Notification) String() string {
	s := fmt.Sprintf("%s %s (revision %d", n.Type, n.Certificate, n.Revision)
	if n.Serial != "" {
		s += ", serial " + n.Serial
	}
	return s + ")"
}

// GoString is String, so that %#v prints the same line.
func (n Notification) GoString() string { return n.String() }
