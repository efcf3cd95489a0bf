// Package certevent is the one JSON shape of certfn's notifications
// (ports.Notification) that every notifier publishes: the detail of an
// EventBridge event (adapters/aws/ebnotify), the data of a Pub/Sub message
// (adapters/gcp/pubsubnotify) and the data of a webhook's body
// (adapters/webhook). A consumer that reads one reads them all; the fields
// are documented on Detail and in docs/deploy/aws.md, "Notifications".
//
// Detail.Notification reads a detail back into the notification it was
// made from (times to the second, as the port allows).
package certevent

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
)

// Source names certfn as the publisher: EventBridge's source, the Pub/Sub
// attribute "source".
const Source = "certfn"

// Version is Detail.Version: it changes when a field changes meaning or
// goes away (added fields keep it).
const Version = "1"

// DetailTypes are the human names of each notification type, in the style
// of ACM's events ("ACM Certificate Approaching Expiration"): EventBridge's
// detail-type and the Pub/Sub attribute "detailType".
var DetailTypes = map[ports.NotificationType]string{
	ports.NotificationIssued:   "Certificate Issued",
	ports.NotificationRenewed:  "Certificate Renewed",
	ports.NotificationFailed:   "Certificate Issuance Failed",
	ports.NotificationExpiring: "Certificate Approaching Expiration",
}

// Detail is one notification as JSON. Times are RFC 3339 in UTC, to the
// second; fields a type does not use are left out.
type Detail struct {
	// Version is Version.
	Version string `json:"version"`
	// ID identifies the event (ports.Notification.ID): the same for every
	// delivery of one event, so a consumer drops duplicates by it
	// (delivery is at least once).
	ID string `json:"id"`
	// Type is Issued, Renewed, Failed or Expiring.
	Type string `json:"type"`
	// Deployment is the certfn deployment that published it, so that
	// several deployments sharing a bus, a topic or a receiver can be told
	// apart.
	Deployment string `json:"deployment"`
	// Namespace and Name name the Certificate.
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Time is when certfn noticed.
	Time string `json:"time"`
	// Revision is the Certificate's status.revision: the one issued
	// (Issued, Renewed), else the one in the secret (0: none yet).
	Revision int `json:"revision"`
	// SerialNumber, NotBefore, NotAfter, CommonName and DNSNames describe
	// the certificate in the secret (the one issued, about to expire, or
	// still in use while issuance fails); SerialNumber is lower-case hex
	// octets separated by colons.
	SerialNumber string   `json:"serialNumber,omitempty"`
	NotBefore    string   `json:"notBefore,omitempty"`
	NotAfter     string   `json:"notAfter,omitempty"`
	CommonName   string   `json:"commonName,omitempty"`
	DNSNames     []string `json:"dnsNames,omitempty"`
	// DaysToExpiry is the whole days from Time to NotAfter (as ACM's
	// DaysToExpiry); absent without NotAfter.
	DaysToExpiry *int `json:"daysToExpiry,omitempty"`
	// IssuerRef is spec.issuerRef; SecretName spec.secretName.
	IssuerRef  api.IssuerReference `json:"issuerRef"`
	SecretName string              `json:"secretName,omitempty"`
	// Failed only: the failed request's reason (Denied, Failed,
	// InvalidRequest), the Issuing condition's message, the failed
	// CertificateRequest, status.lastFailureTime,
	// status.failedIssuanceAttempts, and the earliest next attempt.
	Reason         string `json:"reason,omitempty"`
	Message        string `json:"message,omitempty"`
	Request        string `json:"request,omitempty"`
	FailureTime    string `json:"failureTime,omitempty"`
	FailedAttempts int    `json:"failedAttempts,omitempty"`
	RetryAfter     string `json:"retryAfter,omitempty"`
}

// ResourceURN names a Certificate of a deployment:
// "urn:certfn:certificate:<deployment>:<namespace>/<name>" (EventBridge's
// resources).
func ResourceURN(deployment string, key api.Key) string {
	return "urn:certfn:certificate:" + deployment + ":" + key.Namespace + "/" + key.Name
}

// New returns n's detail for deployment.
func New(deployment string, n ports.Notification) Detail {
	d := Detail{
		Version: Version, ID: n.ID(), Type: string(n.Type), Deployment: deployment,
		Namespace: n.Certificate.Namespace, Name: n.Certificate.Name, Time: Stamp(n.Time), Revision: n.Revision,
		SerialNumber: n.Serial, NotBefore: Stamp(n.NotBefore), NotAfter: Stamp(n.NotAfter),
		CommonName: n.CommonName, DNSNames: n.DNSNames, IssuerRef: n.IssuerRef, SecretName: n.SecretName,
		Reason: n.Reason, Message: n.Message, Request: n.Request, FailureTime: Stamp(n.FailureTime),
		FailedAttempts: n.FailedAttempts, RetryAfter: Stamp(n.RetryAfter),
	}
	if !n.NotAfter.IsZero() {
		days := int(math.Floor(n.NotAfter.Sub(n.Time).Hours() / 24))
		d.DaysToExpiry = &days
	}
	return d
}

// Stamp formats t as RFC 3339 in UTC to the second ("" for zero).
func Stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Truncate(time.Second).Format(time.RFC3339)
}

// CheckPublisher checks what every notifier is configured with: a
// deployment name and a timeout (0: def). It returns the timeout to use,
// or an error naming the field.
func CheckPublisher(deployment string, timeout, def time.Duration) (time.Duration, error) {
	if strings.TrimSpace(deployment) == "" {
		return 0, errors.New("deployment: must not be empty")
	}
	if timeout < 0 {
		return 0, fmt.Errorf("timeout: %s is negative", timeout)
	}
	if timeout == 0 {
		return def, nil
	}
	return timeout, nil
}

// ErrVersion is the error of Notification for a detail of another version.
var ErrVersion = errors.New("detail version")

// Notification reads d back into the notification it was made from. A
// detail of another version (ErrVersion), a time that is not RFC 3339 or
// a notification that is not valid (ports.Notification.Validate) is an
// error naming the field.
func (d Detail) Notification() (ports.Notification, error) {
	if d.Version != Version {
		return ports.Notification{}, fmt.Errorf("%w %q, want %q", ErrVersion, d.Version, Version)
	}
	n := ports.Notification{
		Type: ports.NotificationType(d.Type), Certificate: api.Key{Kind: api.KindCertificate, Namespace: d.Namespace, Name: d.Name},
		Revision: d.Revision, Serial: d.SerialNumber, CommonName: d.CommonName, DNSNames: d.DNSNames,
		IssuerRef: d.IssuerRef, SecretName: d.SecretName, Reason: d.Reason, Message: d.Message, Request: d.Request,
		FailedAttempts: d.FailedAttempts,
	}
	for _, f := range []struct {
		name string
		in   string
		out  *time.Time
	}{
		{"time", d.Time, &n.Time}, {"notBefore", d.NotBefore, &n.NotBefore}, {"notAfter", d.NotAfter, &n.NotAfter},
		{"failureTime", d.FailureTime, &n.FailureTime}, {"retryAfter", d.RetryAfter, &n.RetryAfter},
	} {
		if f.in == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339, f.in)
		if err != nil {
			return ports.Notification{}, fmt.Errorf("detail.%s: %w", f.name, err)
		}
		*f.out = t
	}
	if err := n.Validate(); err != nil {
		return ports.Notification{}, err
	}
	return n, nil
}
