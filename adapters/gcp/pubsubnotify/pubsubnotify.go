// Package pubsubnotify publishes certfn's notifications (ports.Notifier)
// as Google Cloud Pub/Sub messages on one topic, one message per
// notification, so that users route them with subscriptions (a push
// endpoint, a Cloud Function, an e-mail or chat relay) — the Google Cloud
// counterpart of adapters/aws/ebnotify.
//
// Every message has:
//
//	data        a certevent.Detail as JSON: the very schema of the
//	            EventBridge events' detail (docs/deploy/aws.md,
//	            "Notifications")
//	attributes  source     "certfn"
//	            version    the detail's version (certevent.Version)
//	            type       Issued, Renewed, Failed or Expiring
//	            detailType "Certificate Issued", ... (certevent.DetailTypes,
//	                       EventBridge's detail-type)
//	            deployment the certfn deployment (Options.Deployment)
//	            namespace, name  the Certificate
//	            id         the notification's ID (duplicates share it)
//
// A subscription's filter selects on the attributes, e.g.
// `attributes.deployment = "certfn" AND attributes.type = "Failed"`.
// ParseMessage reads a message back (from a pull, a push envelope's
// message, a Cloud Function's event) into a ports.Notification.
//
// Errors: a missing topic (NotFound), a missing permission
// (PermissionDenied), bad credentials (Unauthenticated) and a refused
// message (InvalidArgument, FailedPrecondition) are permanent (core/errs);
// the others (Unavailable, ResourceExhausted, DeadlineExceeded, Internal,
// network) are transient. The client library has already retried the
// transient codes within Options.Timeout.
package pubsubnotify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/certfn/certfn/adapters/certevent"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// API is the part of the Pub/Sub publisher client the notifier uses
// (*pubsub.Client's TopicAdminClient implements it): one synchronous
// Publish per notification, so that Notify returns only once Pub/Sub has
// stored the message.
type API interface {
	Publish(ctx context.Context, req *pb.PublishRequest, opts ...gax.CallOption) (*pb.PublishResponse, error)
}

// The message attributes.
const (
	AttrSource     = "source"
	AttrVersion    = "version"
	AttrType       = "type"
	AttrDetailType = "detailType"
	AttrDeployment = "deployment"
	AttrNamespace  = "namespace"
	AttrName       = "name"
	AttrID         = "id"
)

// DefaultTimeout bounds one Notify (the client library's retries
// included) when Options.Timeout is zero.
const DefaultTimeout = 10 * time.Second

var topicName = regexp.MustCompile(`^projects/[A-Za-z0-9.:-]+/topics/[A-Za-z][A-Za-z0-9._~%+-]{2,254}$`)

// Options configure a Notifier.
type Options struct {
	// Topic is the full topic name, projects/PROJECT/topics/TOPIC
	// (required).
	Topic string
	// Deployment names the certfn deployment in every message (the detail's
	// deployment and the attribute), so that deployments sharing a topic
	// can be told apart (required; Google Cloud mode uses the secret
	// prefix, as the Certificate Manager importer's labels do).
	Deployment string
	// Timeout bounds one Notify (default DefaultTimeout).
	Timeout time.Duration
}

// Notifier implements ports.Notifier over Pub/Sub. Safe for concurrent
// use.
type Notifier struct {
	api  API
	opts Options
}

var _ ports.Notifier = (*Notifier)(nil)

// New returns a Notifier publishing through api. A missing client, topic
// or deployment is a permanent error naming the field.
func New(api API, opts Options) (*Notifier, error) {
	if api == nil {
		return nil, errs.Permanentf("pubsub notifier: client: must not be nil")
	}
	if !topicName.MatchString(opts.Topic) {
		return nil, errs.Permanentf("pubsub notifier: topic: want projects/PROJECT/topics/TOPIC, got %q", opts.Topic)
	}
	t, err := certevent.CheckPublisher(opts.Deployment, opts.Timeout, DefaultTimeout)
	if err != nil {
		return nil, errs.Permanent(fmt.Errorf("pubsub notifier: %w", err))
	}
	opts.Timeout = t
	return &Notifier{api: api, opts: opts}, nil
}

// Topic is the topic the notifier publishes on.
func (n *Notifier) Topic() string { return n.opts.Topic }

// Message returns the message Notify publishes for note.
func Message(deployment string, note ports.Notification) (*pb.PubsubMessage, error) {
	data, err := json.Marshal(certevent.New(deployment, note))
	if err != nil {
		return nil, err
	}
	return &pb.PubsubMessage{Data: data, Attributes: map[string]string{
		AttrSource: certevent.Source, AttrVersion: certevent.Version, AttrType: string(note.Type),
		AttrDetailType: certevent.DetailTypes[note.Type], AttrDeployment: deployment,
		AttrNamespace: note.Certificate.Namespace, AttrName: note.Certificate.Name, AttrID: note.ID(),
	}}, nil
}

// Notify implements ports.Notifier: one Publish of one message.
func (n *Notifier) Notify(ctx context.Context, note ports.Notification) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("pubsub: notify %s: %w", note, err)
	}
	if err := note.Validate(); err != nil {
		return errs.Permanent(fmt.Errorf("pubsub: %w", err))
	}
	msg, err := Message(n.opts.Deployment, note)
	if err != nil {
		return errs.Permanent(fmt.Errorf("pubsub: encode %s: %w", note, err))
	}
	ctx, cancel := context.WithTimeout(ctx, n.opts.Timeout)
	defer cancel()
	out, err := n.api.Publish(ctx, &pb.PublishRequest{Topic: n.opts.Topic, Messages: []*pb.PubsubMessage{msg}})
	if err != nil {
		return classify(fmt.Errorf("pubsub: publish %s on %s: %w", note, n.opts.Topic, err))
	}
	if len(out.GetMessageIds()) != 1 {
		return fmt.Errorf("pubsub: publish %s on %s: %d message IDs in the answer, want 1", note, n.opts.Topic, len(out.GetMessageIds()))
	}
	return nil
}

// permanentCodes are the gRPC codes retrying cannot fix.
var permanentCodes = map[codes.Code]bool{
	codes.NotFound:           true, // the topic does not exist
	codes.PermissionDenied:   true,
	codes.Unauthenticated:    true,
	codes.InvalidArgument:    true,
	codes.FailedPrecondition: true,
}

// classify marks Pub/Sub errors permanent or transient (core/errs).
func classify(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if s, ok := status.FromError(err); ok && permanentCodes[s.Code()] {
		return errs.Permanent(err)
	}
	return err
}

// ParseMessage reads a certfn message (its data and attributes) back into
// the notification it was made from. It refuses messages of another
// source, details of another version, and attributes that contradict the
// data.
func ParseMessage(data []byte, attrs map[string]string) (ports.Notification, error) {
	if attrs[AttrSource] != certevent.Source {
		return ports.Notification{}, fmt.Errorf("pubsubnotify: attribute source %q, want %q", attrs[AttrSource], certevent.Source)
	}
	var d certevent.Detail
	if err := json.Unmarshal(data, &d); err != nil {
		return ports.Notification{}, fmt.Errorf("pubsubnotify: data: %w", err)
	}
	n, err := d.Notification()
	if err != nil {
		return ports.Notification{}, fmt.Errorf("pubsubnotify: %w", err)
	}
	for attr, want := range map[string]string{AttrVersion: d.Version, AttrType: d.Type, AttrDetailType: certevent.DetailTypes[n.Type],
		AttrDeployment: d.Deployment, AttrNamespace: d.Namespace, AttrName: d.Name, AttrID: d.ID} {
		if attrs[attr] != want {
			return ports.Notification{}, fmt.Errorf("pubsubnotify: attribute %s %q, but the data says %q", attr, attrs[attr], want)
		}
	}
	return n, nil
}
