// Package ebnotify publishes certfn's notifications (ports.Notifier) as
// Amazon EventBridge events, one PutEvents entry per notification, on a
// configurable event bus (the account's "default" bus unless told
// otherwise), so that users route them with a rule to SNS, e-mail, chat or
// a queue — as AWS Certificate Manager's own "ACM Certificate Approaching
// Expiration" events.
//
// Every event has:
//
//	source       "certfn" (Source)
//	detail-type  "Certificate Issued", "Certificate Renewed",
//	             "Certificate Issuance Failed" or
//	             "Certificate Approaching Expiration" (DetailTypes)
//	resources    ["urn:certfn:certificate:<deployment>:<namespace>/<name>"]
//	time         the notification's time (the step's clock), to the second
//	detail       a Detail as JSON (its fields are documented on the type
//	             and in docs/deploy/aws.md, "Notifications")
//
// A rule matches them with {"source": ["certfn"]}, narrowed by
// detail-type, detail.deployment (several deployments in one account) or
// detail.namespace. ParseEvent reads such an event back (from an SQS
// queue, an SNS message, a Lambda target) into a ports.Notification.
//
// Errors: a refused entry (FailedEntryCount > 0) is an error; entry and
// API errors that retrying cannot fix (AccessDenied, a missing bus, a
// malformed entry, not authorized for the source) are permanent
// (core/errs), others (throttling, internal failures, network) transient.
// The SDK's retryer (adapters/aws/awscfg) has already retried throttling
// and 5xx responses of the call itself.
package ebnotify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/smithy-go"

	"github.com/certfn/certfn/adapters/certevent"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// API is the part of the EventBridge client the notifier uses
// (*eventbridge.Client implements it).
type API interface {
	PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, optFns ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

// Source is the source of every event certfn publishes
// (certevent.Source); the worker's IAM policy (infra/terraform/aws) allows
// events:PutEvents only with it.
const Source = certevent.Source

// DefaultEventBus is the event bus used when Options.EventBus is empty.
const DefaultEventBus = "default"

// DetailVersion is Detail.Version (certevent.Version).
const DetailVersion = certevent.Version

// DetailTypes are the detail-type of each notification type
// (certevent.DetailTypes).
var DetailTypes = certevent.DetailTypes

// Options configure a Notifier.
type Options struct {
	// EventBus is the name or ARN of the event bus (default "default").
	EventBus string
	// Deployment names the certfn deployment in every event
	// (Detail.Deployment and the resource URN), so that one account's
	// deployments can be told apart by a rule (required; AWS mode uses
	// the Terraform module's name_prefix).
	Deployment string
}

// Notifier implements ports.Notifier over EventBridge. Safe for
// concurrent use.
type Notifier struct {
	api  API
	opts Options
}

var _ ports.Notifier = (*Notifier)(nil)

// New returns a Notifier over api. A missing client or deployment is a
// permanent error.
func New(api API, opts Options) (*Notifier, error) {
	if api == nil {
		return nil, errs.Permanentf("eventbridge notifier: no EventBridge client")
	}
	opts.EventBus = strings.TrimSpace(opts.EventBus)
	if opts.EventBus == "" {
		opts.EventBus = DefaultEventBus
	}
	if strings.TrimSpace(opts.Deployment) == "" {
		return nil, errs.Permanentf("eventbridge notifier: the deployment name is required")
	}
	return &Notifier{api: api, opts: opts}, nil
}

// EventBus is the bus the notifier publishes on.
func (n *Notifier) EventBus() string { return n.opts.EventBus }

// Detail is the detail of every certfn event: the shape every certfn
// notifier publishes (certevent.Detail, whose fields are documented there
// and in docs/deploy/aws.md).
type Detail = certevent.Detail

// Event is an EventBridge event as targets receive it (the envelope with
// the detail), for ParseEvent.
type Event struct {
	Version    string          `json:"version"`
	ID         string          `json:"id"`
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Account    string          `json:"account"`
	Time       string          `json:"time"`
	Region     string          `json:"region"`
	Resources  []string        `json:"resources"`
	Detail     json.RawMessage `json:"detail"`
}

// ResourceURN names a Certificate of a deployment in the events'
// resources: "urn:certfn:certificate:<deployment>:<namespace>/<name>".
func ResourceURN(deployment string, key api.Key) string {
	return certevent.ResourceURN(deployment, key)
}

// NewDetail returns n's detail for deployment.
func NewDetail(deployment string, n ports.Notification) Detail { return certevent.New(deployment, n) }

// Notify implements ports.Notifier: one PutEvents entry.
func (n *Notifier) Notify(ctx context.Context, note ports.Notification) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("eventbridge: notify %s: %w", note, err)
	}
	if err := note.Validate(); err != nil {
		return errs.Permanent(fmt.Errorf("eventbridge: %w", err))
	}
	detail, err := json.Marshal(NewDetail(n.opts.Deployment, note))
	if err != nil {
		return errs.Permanent(fmt.Errorf("eventbridge: encode %s: %w", note, err))
	}
	entry := types.PutEventsRequestEntry{
		Source: aws.String(Source), DetailType: aws.String(DetailTypes[note.Type]), Detail: aws.String(string(detail)),
		EventBusName: aws.String(n.opts.EventBus), Resources: []string{ResourceURN(n.opts.Deployment, note.Certificate)},
		Time: aws.Time(note.Time.UTC().Truncate(time.Second)),
	}
	out, err := n.api.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []types.PutEventsRequestEntry{entry}})
	if err != nil {
		return classify(fmt.Errorf("eventbridge: put %s on bus %s: %w", note, n.opts.EventBus, err))
	}
	if out.FailedEntryCount > 0 || len(out.Entries) != 1 || aws.ToString(out.Entries[0].ErrorCode) != "" {
		code, msg := "unknown", "no result entry"
		if len(out.Entries) > 0 {
			code, msg = aws.ToString(out.Entries[0].ErrorCode), aws.ToString(out.Entries[0].ErrorMessage)
		}
		err := &EntryError{Code: code, Message: msg}
		wrapped := fmt.Errorf("eventbridge: put %s on bus %s: entry refused: %w", note, n.opts.EventBus, err)
		if permanentCodes[code] {
			return errs.Permanent(wrapped)
		}
		return wrapped
	}
	return nil
}

// EntryError is an entry PutEvents refused (FailedEntryCount > 0).
type EntryError struct {
	Code    string
	Message string
}

func (e *EntryError) Error() string { return e.Code + ": " + e.Message }

// permanentCodes are the API and entry error codes that retrying cannot
// fix (EventBridge's "non-retryable" entry errors, and the API's
// permission, validation and not-found errors).
var permanentCodes = map[string]bool{
	"AccessDeniedException":               true,
	"AccessDenied":                        true,
	"InvalidAccountIdException":           true,
	"InvalidArgument":                     true,
	"MalformedDetail":                     true,
	"RedactionFailure":                    true,
	"NotAuthorizedForSourceException":     true,
	"NotAuthorizedForDetailTypeException": true,
	"ValidationException":                 true,
	"ResourceNotFoundException":           true, // the event bus does not exist
	"UnrecognizedClientException":         true,
	"InvalidSignatureException":           true,
}

// classify marks EventBridge API errors permanent or transient (core/errs).
func classify(err error) error {
	var ae smithy.APIError
	if errors.As(err, &ae) && permanentCodes[ae.ErrorCode()] {
		return errs.Permanent(err)
	}
	return err
}

// ParseEvent reads a certfn event as an EventBridge target receives it
// (an SQS message body, an SNS message, a Lambda event) back into the
// notification it was made from. It refuses events of another source or
// detail-type and details of another major version.
func ParseEvent(body []byte) (ports.Notification, error) {
	var ev Event
	if err := json.Unmarshal(body, &ev); err != nil {
		return ports.Notification{}, fmt.Errorf("ebnotify: not an EventBridge event: %w", err)
	}
	if ev.Source != Source {
		return ports.Notification{}, fmt.Errorf("ebnotify: source %q, want %q", ev.Source, Source)
	}
	var d Detail
	if err := json.Unmarshal(ev.Detail, &d); err != nil {
		return ports.Notification{}, fmt.Errorf("ebnotify: detail: %w", err)
	}
	if d.Version != DetailVersion {
		return ports.Notification{}, fmt.Errorf("ebnotify: detail version %q, want %q", d.Version, DetailVersion)
	}
	if want, ok := DetailTypes[ports.NotificationType(d.Type)]; !ok || want != ev.DetailType {
		return ports.Notification{}, fmt.Errorf("ebnotify: detail-type %q with detail type %q", ev.DetailType, d.Type)
	}
	n, err := d.Notification()
	if err != nil {
		return ports.Notification{}, fmt.Errorf("ebnotify: %w", err)
	}
	return n, nil
}
