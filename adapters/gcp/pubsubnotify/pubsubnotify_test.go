package pubsubnotify_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/certfn/certfn/adapters/aws/ebnotify"
	"github.com/certfn/certfn/adapters/gcp/pubsubnotify"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/ports/porttest"
)

const topic = "projects/my-project/topics/certfn-notifications"

// stub is a TEST DOUBLE of the Pub/Sub publisher API: it records the
// requests and answers with err, else one message ID per message.
type stub struct {
	reqs     []*pb.PublishRequest
	err      error
	deadline bool // the request's context had a deadline
	noIDs    bool
}

func (s *stub) Publish(ctx context.Context, req *pb.PublishRequest, _ ...gax.CallOption) (*pb.PublishResponse, error) {
	s.reqs = append(s.reqs, req)
	_, s.deadline = ctx.Deadline()
	if s.err != nil {
		return nil, s.err
	}
	if s.noIDs {
		return &pb.PublishResponse{}, nil
	}
	ids := make([]string, len(req.Messages))
	for i := range ids {
		ids[i] = "m-1"
	}
	return &pb.PublishResponse{MessageIds: ids}, nil
}

// One message per notification on the topic: the detail as data, byte
// for byte the EventBridge notifier's detail, and the attributes a
// subscription filters on.
func TestMessage(t *testing.T) {
	s := &stub{}
	n, err := pubsubnotify.New(s, pubsubnotify.Options{Topic: topic, Deployment: "pki"})
	if err != nil {
		t.Fatal(err)
	}
	for i, typ := range ports.NotificationTypes {
		note := porttest.FullNotification(typ, "prod", "shop")
		if err := n.Notify(context.Background(), note); err != nil {
			t.Fatalf("Notify(%s): %v", note, err)
		}
		if len(s.reqs) != i+1 || s.reqs[i].Topic != topic || len(s.reqs[i].Messages) != 1 || !s.deadline {
			t.Fatalf("%s: request %+v (deadline %v), want one message on %s with a deadline", typ, s.reqs, s.deadline, topic)
		}
		msg := s.reqs[i].Messages[0]
		want, _ := json.Marshal(ebnotify.NewDetail("pki", note))
		if string(msg.Data) != string(want) {
			t.Errorf("%s: data\n got %s\nwant %s (the EventBridge detail)", typ, msg.Data, want)
		}
		wantAttrs := map[string]string{"source": "certfn", "version": "1", "type": string(typ), "detailType": ebnotify.DetailTypes[typ],
			"deployment": "pki", "namespace": "prod", "name": "shop", "id": note.ID()}
		if len(msg.Attributes) != len(wantAttrs) {
			t.Errorf("%s: attributes %v, want %v", typ, msg.Attributes, wantAttrs)
		}
		for k, v := range wantAttrs {
			if msg.Attributes[k] != v {
				t.Errorf("%s: attribute %s = %q, want %q", typ, k, msg.Attributes[k], v)
			}
		}
		back, err := pubsubnotify.ParseMessage(msg.Data, msg.Attributes)
		if err != nil || back.ID() != note.ID() || !back.NotAfter.Equal(note.NotAfter) {
			t.Errorf("%s: ParseMessage = %v, %v", typ, back, err)
		}
	}
}

// Errors are classified as core/errs expects: what retrying cannot fix is
// permanent, the rest transient; every error names the event and topic.
func TestErrorsAreClassified(t *testing.T) {
	for _, tc := range []struct {
		name      string
		s         *stub
		permanent bool
		says      string
	}{
		{"no topic", &stub{err: status.Error(codes.NotFound, "Resource not found (resource=certfn-notifications).")}, true, "NotFound"},
		{"no permission", &stub{err: status.Error(codes.PermissionDenied, "User not authorized to perform this action.")}, true, "PermissionDenied"},
		{"bad credentials", &stub{err: status.Error(codes.Unauthenticated, "invalid token")}, true, "Unauthenticated"},
		{"refused message", &stub{err: status.Error(codes.InvalidArgument, "attribute too long")}, true, "InvalidArgument"},
		{"unavailable (after the library's retries)", &stub{err: status.Error(codes.Unavailable, "try again")}, false, "Unavailable"},
		{"quota", &stub{err: status.Error(codes.ResourceExhausted, "quota")}, false, "ResourceExhausted"},
		{"deadline", &stub{err: context.DeadlineExceeded}, false, "deadline exceeded"},
		{"network", &stub{err: errors.New("dial tcp: connection refused")}, false, "connection refused"},
		{"no message ID", &stub{noIDs: true}, false, "0 message IDs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := pubsubnotify.New(tc.s, pubsubnotify.Options{Topic: topic, Deployment: "pki"})
			if err != nil {
				t.Fatal(err)
			}
			err = n.Notify(context.Background(), porttest.FullNotification(ports.NotificationIssued, "prod", "shop"))
			if err == nil || errs.IsPermanent(err) != tc.permanent || !strings.Contains(err.Error(), tc.says) ||
				!strings.Contains(err.Error(), "Issued Certificate/prod/shop") || !strings.Contains(err.Error(), topic) {
				t.Errorf("Notify = %v; want an error saying %q and naming the event and topic, permanent %v", err, tc.says, tc.permanent)
			}
		})
	}
}

func TestNew(t *testing.T) {
	for _, tc := range []struct {
		name string
		api  pubsubnotify.API
		o    pubsubnotify.Options
		says string
	}{
		{"no client", nil, pubsubnotify.Options{Topic: topic, Deployment: "x"}, "client"},
		{"no topic", &stub{}, pubsubnotify.Options{Deployment: "x"}, "topic"},
		{"short topic name", &stub{}, pubsubnotify.Options{Topic: "certfn-notifications", Deployment: "x"}, "projects/PROJECT/topics/TOPIC"},
		{"no deployment", &stub{}, pubsubnotify.Options{Topic: topic, Deployment: " "}, "deployment"},
		{"negative timeout", &stub{}, pubsubnotify.Options{Topic: topic, Deployment: "x", Timeout: -time.Second}, "timeout"},
	} {
		if _, err := pubsubnotify.New(tc.api, tc.o); !errs.IsPermanent(err) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: New = %v, want a permanent error naming %s", tc.name, err, tc.says)
		}
	}
}

// ParseMessage refuses what is not a certfn message, or one whose
// attributes contradict its data.
func TestParseMessageRefuses(t *testing.T) {
	good, err := pubsubnotify.Message("pki", porttest.FullNotification(ports.NotificationFailed, "prod", "shop"))
	if err != nil {
		t.Fatal(err)
	}
	edit := func(f func(data map[string]any, attrs map[string]string)) ([]byte, map[string]string) {
		var d map[string]any
		_ = json.Unmarshal(good.Data, &d)
		attrs := map[string]string{}
		for k, v := range good.Attributes {
			attrs[k] = v
		}
		f(d, attrs)
		b, _ := json.Marshal(d)
		return b, attrs
	}
	for _, tc := range []struct {
		name string
		edit func(map[string]any, map[string]string)
		says string
	}{
		{"other source", func(_ map[string]any, a map[string]string) { a["source"] = "other" }, "source"},
		{"other version", func(d map[string]any, a map[string]string) { d["version"] = "2"; a["version"] = "2" }, "version"},
		{"type attribute lies", func(_ map[string]any, a map[string]string) { a["type"] = "Issued" }, "attribute type"},
		{"deployment attribute lies", func(_ map[string]any, a map[string]string) { a["deployment"] = "other" }, "attribute deployment"},
		{"bad time", func(d map[string]any, _ map[string]string) { d["time"] = "yesterday" }, "detail.time"},
		{"invalid notification", func(d map[string]any, _ map[string]string) { delete(d, "failureTime") }, "failureTime"},
	} {
		data, attrs := edit(tc.edit)
		if _, err := pubsubnotify.ParseMessage(data, attrs); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: ParseMessage = %v, want an error naming %s", tc.name, err, tc.says)
		}
	}
	if _, err := pubsubnotify.ParseMessage([]byte("{"), good.Attributes); err == nil {
		t.Error("ParseMessage of bad JSON succeeded")
	}
}
