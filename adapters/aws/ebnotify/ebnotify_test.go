package ebnotify_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/smithy-go"

	"github.com/certfn/certfn/adapters/aws/ebnotify"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/ports/porttest"
)

// stub is a TEST DOUBLE of the EventBridge API: it records the inputs and
// answers with out or err.
type stub struct {
	ins []*eventbridge.PutEventsInput
	out *eventbridge.PutEventsOutput
	err error
}

func (s *stub) PutEvents(_ context.Context, in *eventbridge.PutEventsInput, _ ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error) {
	s.ins = append(s.ins, in)
	if s.err != nil {
		return nil, s.err
	}
	if s.out != nil {
		return s.out, nil
	}
	return &eventbridge.PutEventsOutput{Entries: []ebtypes.PutEventsResultEntry{{EventId: aws.String("e-1")}}}, nil
}

// One entry per notification: source certfn, the type's detail-type, the
// configured bus, the Certificate's URN, the notification's time.
func TestEntry(t *testing.T) {
	for _, bus := range []string{"", "arn:aws:events:us-east-1:123456789012:event-bus/pki"} {
		s := &stub{}
		n, err := ebnotify.New(s, ebnotify.Options{EventBus: bus, Deployment: "pki"})
		if err != nil {
			t.Fatal(err)
		}
		for _, typ := range ports.NotificationTypes {
			note := porttest.FullNotification(typ, "prod", "shop")
			if err := n.Notify(context.Background(), note); err != nil {
				t.Fatalf("Notify(%s): %v", note, err)
			}
			in := s.ins[len(s.ins)-1]
			if len(in.Entries) != 1 {
				t.Fatalf("%d entries, want 1", len(in.Entries))
			}
			e := in.Entries[0]
			wantBus := bus
			if wantBus == "" {
				wantBus = "default"
			}
			if aws.ToString(e.Source) != "certfn" || aws.ToString(e.DetailType) != ebnotify.DetailTypes[typ] ||
				aws.ToString(e.EventBusName) != wantBus || len(e.Resources) != 1 || e.Resources[0] != "urn:certfn:certificate:pki:prod/shop" ||
				e.Time == nil || !e.Time.Equal(note.Time) {
				t.Errorf("%s: entry source %q detail-type %q bus %q resources %v time %v", typ,
					aws.ToString(e.Source), aws.ToString(e.DetailType), aws.ToString(e.EventBusName), e.Resources, e.Time)
			}
			var d ebnotify.Detail
			if err := json.Unmarshal([]byte(aws.ToString(e.Detail)), &d); err != nil || d.ID != note.ID() || d.Type != string(typ) || d.Deployment != "pki" {
				t.Errorf("%s: detail %s: %v", typ, aws.ToString(e.Detail), err)
			}
			if n.EventBus() != wantBus {
				t.Errorf("EventBus() = %q", n.EventBus())
			}
		}
	}
	if got := len(ebnotify.DetailTypes); got != len(ports.NotificationTypes) {
		t.Errorf("%d detail-types for %d notification types", got, len(ports.NotificationTypes))
	}
}

func apiErr(code string) error {
	return &smithy.GenericAPIError{Code: code, Message: "test " + code}
}

// Errors are classified as core/errs expects: refused entries are errors,
// what retrying cannot fix is permanent.
func TestErrorsAreClassified(t *testing.T) {
	refused := func(code string) *eventbridge.PutEventsOutput {
		return &eventbridge.PutEventsOutput{FailedEntryCount: 1, Entries: []ebtypes.PutEventsResultEntry{{ErrorCode: aws.String(code), ErrorMessage: aws.String("refused by a test")}}}
	}
	for _, tc := range []struct {
		name      string
		s         *stub
		permanent bool
		says      string
	}{
		{"access denied", &stub{err: apiErr("AccessDeniedException")}, true, "AccessDeniedException"},
		{"no such bus", &stub{err: apiErr("ResourceNotFoundException")}, true, "ResourceNotFoundException"},
		{"validation", &stub{err: apiErr("ValidationException")}, true, "ValidationException"},
		{"throttled (after the SDK's retries)", &stub{err: apiErr("ThrottlingException")}, false, "ThrottlingException"},
		{"internal", &stub{err: apiErr("InternalException")}, false, "InternalException"},
		{"network", &stub{err: errors.New("dial tcp: connection refused")}, false, "connection refused"},
		{"entry throttled", &stub{out: refused("ThrottlingException")}, false, "entry refused: ThrottlingException"},
		{"entry internal failure", &stub{out: refused("InternalFailure")}, false, "InternalFailure"},
		{"entry not authorized for the source", &stub{out: refused("NotAuthorizedForSourceException")}, true, "NotAuthorizedForSourceException"},
		{"entry access denied", &stub{out: refused("AccessDeniedException")}, true, "AccessDeniedException"},
		{"entry malformed", &stub{out: refused("MalformedDetail")}, true, "MalformedDetail"},
		{"no result entry", &stub{out: &eventbridge.PutEventsOutput{}}, false, "no result entry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := ebnotify.New(tc.s, ebnotify.Options{Deployment: "pki"})
			if err != nil {
				t.Fatal(err)
			}
			err = n.Notify(context.Background(), porttest.FullNotification(ports.NotificationIssued, "prod", "shop"))
			if err == nil || errs.IsPermanent(err) != tc.permanent || !strings.Contains(err.Error(), tc.says) ||
				!strings.Contains(err.Error(), "Issued Certificate/prod/shop") {
				t.Errorf("Notify = %v; want an error saying %q and naming the event, permanent %v", err, tc.says, tc.permanent)
			}
			var ee *ebnotify.EntryError
			if tc.s.out != nil && len(tc.s.out.Entries) > 0 && (!errors.As(err, &ee) || ee.Code == "") {
				t.Errorf("Notify = %v, want an *EntryError", err)
			}
		})
	}
}

func TestNew(t *testing.T) {
	if _, err := ebnotify.New(nil, ebnotify.Options{Deployment: "x"}); !errs.IsPermanent(err) {
		t.Errorf("New(nil) = %v, want a permanent error", err)
	}
	if _, err := ebnotify.New(&stub{}, ebnotify.Options{Deployment: " "}); !errs.IsPermanent(err) || !strings.Contains(err.Error(), "deployment") {
		t.Errorf("New without a deployment = %v", err)
	}
}

// ParseEvent reads back what Notify sent and refuses what is not a certfn
// event.
func TestParseEvent(t *testing.T) {
	s := &stub{}
	n, _ := ebnotify.New(s, ebnotify.Options{Deployment: "pki"})
	note := porttest.FullNotification(ports.NotificationFailed, "prod", "shop")
	if err := n.Notify(context.Background(), note); err != nil {
		t.Fatal(err)
	}
	e := s.ins[0].Entries[0]
	event := func(source, detailType, detail string) []byte {
		b, _ := json.Marshal(map[string]any{"version": "0", "id": "x", "source": source, "detail-type": detailType,
			"time": "2030-03-04T05:06:07Z", "resources": e.Resources, "detail": json.RawMessage(detail)})
		return b
	}
	got, err := ebnotify.ParseEvent(event("certfn", aws.ToString(e.DetailType), aws.ToString(e.Detail)))
	if err != nil || got.ID() != note.ID() || got.Message != note.Message || !got.RetryAfter.Equal(note.RetryAfter) {
		t.Fatalf("ParseEvent = %+v, %v", got, err)
	}
	for name, body := range map[string][]byte{
		"not JSON":               []byte("{"),
		"another source":         event("aws.acm", aws.ToString(e.DetailType), aws.ToString(e.Detail)),
		"detail-type mismatch":   event("certfn", "Certificate Issued", aws.ToString(e.Detail)),
		"another detail version": event("certfn", aws.ToString(e.DetailType), strings.Replace(aws.ToString(e.Detail), `"version":"1"`, `"version":"2"`, 1)),
		"bad time":               event("certfn", aws.ToString(e.DetailType), strings.Replace(aws.ToString(e.Detail), `"time":"2030-03-04T05:06:07Z"`, `"time":"yesterday"`, 1)),
	} {
		if _, err := ebnotify.ParseEvent(body); err == nil {
			t.Errorf("%s: ParseEvent accepted it", name)
		}
	}
}
