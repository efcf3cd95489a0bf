package pubsubnotify_test

// The notifier on Google's official Pub/Sub emulator (tests/emulators: one
// shared process per test binary, or PUBSUB_EMULATOR_HOST; a missing one
// fails the tests). What a notifier published is read back the way a user
// routes it: a pull subscription on the topic, and one whose filter keeps
// only a deployment's failures.

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/certfn/certfn/adapters/gcp/pubsubnotify"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/ports/porttest"
	"github.com/certfn/certfn/tests/emulators"
)

// patience is how long a published message may take to be pulled.
const patience = 5 * time.Second

// emu is one project on the emulator.
type emu struct {
	project string
	client  *pubsub.Client
}

func newEmu(t *testing.T) *emu {
	t.Helper()
	host := emulators.PubSub(t)
	conn, err := grpc.NewClient(host, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	e := &emu{project: emulators.NewProjectID()}
	if e.client, err = pubsub.NewClient(context.Background(), e.project, option.WithGRPCConn(conn)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.client.Close(); _ = conn.Close() })
	return e
}

var seq atomic.Int64

func (e *emu) topic(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("projects/%s/topics/notifications-%d", e.project, seq.Add(1))
	if _, err := e.client.TopicAdminClient.CreateTopic(context.Background(), &pb.Topic{Name: name}); err != nil {
		t.Fatalf("CreateTopic %s: %v", name, err)
	}
	return name
}

// subscription creates a pull subscription on topic with filter ("":
// every message).
func (e *emu) subscription(t *testing.T, topic, filter string) string {
	t.Helper()
	name := fmt.Sprintf("projects/%s/subscriptions/s-%d", e.project, seq.Add(1))
	if _, err := e.client.SubscriptionAdminClient.CreateSubscription(context.Background(),
		&pb.Subscription{Name: name, Topic: topic, AckDeadlineSeconds: 10, Filter: filter}); err != nil {
		t.Fatalf("CreateSubscription %s: %v", name, err)
	}
	return name
}

// pull receives and acknowledges messages of sub until it has want or
// patience ran out, and parses each (a message it cannot parse fails t).
func (e *emu) pull(t *testing.T, sub string, want int) []ports.Notification {
	t.Helper()
	ctx := context.Background()
	var out []ports.Notification
	deadline := time.Now().Add(patience)
	for len(out) < want && time.Now().Before(deadline) {
		//lint:ignore SA1019 returnImmediately is discouraged for production pulls; the test polls until its patience runs out
		res, err := e.client.SubscriptionAdminClient.Pull(ctx, &pb.PullRequest{Subscription: sub, MaxMessages: 100, ReturnImmediately: true})
		if err != nil {
			t.Fatalf("Pull %s: %v", sub, err)
		}
		var acks []string
		for _, m := range res.ReceivedMessages {
			n, err := pubsubnotify.ParseMessage(m.GetMessage().GetData(), m.GetMessage().GetAttributes())
			if err != nil {
				t.Fatalf("ParseMessage(%s %v): %v", m.GetMessage().GetData(), m.GetMessage().GetAttributes(), err)
			}
			out = append(out, n)
			acks = append(acks, m.GetAckId())
		}
		if len(acks) > 0 {
			if err := e.client.SubscriptionAdminClient.Acknowledge(ctx, &pb.AcknowledgeRequest{Subscription: sub, AckIds: acks}); err != nil {
				t.Fatalf("Acknowledge: %v", err)
			}
		} else {
			time.Sleep(50 * time.Millisecond)
		}
	}
	return out
}

func (e *emu) notifier(t *testing.T, topic, deployment string) *pubsubnotify.Notifier {
	t.Helper()
	n, err := pubsubnotify.New(e.client.TopicAdminClient, pubsubnotify.Options{Topic: topic, Deployment: deployment})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestNotifierContract(t *testing.T) {
	porttest.NotifierSuite(t, func(t *testing.T) porttest.NotifierHarness {
		e := newEmu(t)
		topic := e.topic(t)
		sub := e.subscription(t, topic, "")
		var got []ports.Notification
		return porttest.NotifierHarness{Notifier: e.notifier(t, topic, "pki"), Delivered: func(t *testing.T, want int) []ports.Notification {
			got = append(got, e.pull(t, sub, want-len(got))...)
			return got
		}}
	})
}

// TestRouting: two deployments on one topic; each message's attributes
// name its deployment, type and Certificate as its data does
// (ParseMessage checks that), which is what a subscription filter such as
// `attributes.deployment = "pki" AND attributes.type = "Failed"` selects
// on. Emulator gap: the emulator accepts a subscription's filter but does
// not apply it (every message reaches every subscription), so the
// filtering itself is Pub/Sub's and is not exercised here.
func TestRouting(t *testing.T) {
	e := newEmu(t)
	topic := e.topic(t)
	all := e.subscription(t, topic, "")
	for _, dep := range []string{"pki", "other"} {
		n := e.notifier(t, topic, dep)
		for _, typ := range ports.NotificationTypes {
			if err := n.Notify(context.Background(), porttest.FullNotification(typ, "prod", "shop-"+dep)); err != nil {
				t.Fatalf("Notify(%s %s): %v", dep, typ, err)
			}
		}
	}
	got := e.pull(t, all, 8)
	byDeployment := map[string]int{}
	for _, n := range got {
		byDeployment[n.Certificate.Name]++
	}
	if len(got) != 8 || byDeployment["shop-pki"] != 4 || byDeployment["shop-other"] != 4 {
		t.Errorf("received %d messages %v, want 4 of each deployment", len(got), byDeployment)
	}
}

// A topic that does not exist is a permanent error (the step tries again
// an hour later instead of every backoff).
func TestMissingTopic(t *testing.T) {
	e := newEmu(t)
	n := e.notifier(t, "projects/"+e.project+"/topics/never-created", "pki")
	err := n.Notify(context.Background(), porttest.FullNotification(ports.NotificationIssued, "prod", "shop"))
	if !errs.IsPermanent(err) {
		t.Fatalf("Notify to a missing topic = %v, want a permanent error", err)
	}
}
