package pubsubq

// Tests on Google's official Pub/Sub emulator (tests/emulators: one shared
// process per test binary, or PUBSUB_EMULATOR_HOST). Each test uses a
// project of its own. Delays go through the Cloud Tasks double, whose
// dispatches Forward to the emulator's REST publish: the path a delayed
// message takes in Google Cloud, with the double in Cloud Tasks' place.
// The two tests run in parallel: the push test waits on the emulator's
// redelivery backoff (~30 s), the contract suite on visibility timeouts.

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/certfn/certfn/adapters/gcp/pubsubq/taskstest"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/ports/porttest"
	"github.com/certfn/certfn/tests/emulators"
)

// emu is one project on the Pub/Sub emulator, with a Cloud Tasks double on
// a fake clock that forwards dispatches to the emulator.
type emu struct {
	host, project string
	client        *pubsub.Client
	clock         *clock.Fake
	tasks         *taskstest.Double
	taskQueue     string
}

func newEmu(t *testing.T) *emu {
	t.Helper()
	e := &emu{host: emulators.PubSub(t), project: emulators.NewProjectID(), clock: clock.NewFake(t0)}
	e.client = grpcClient(t, e.host, e.project)
	e.tasks = taskstest.New(taskstest.Forward(nil), e.clock.Now)
	e.taskQueue = "projects/" + e.project + "/locations/europe-west1/queues/delays"
	e.tasks.AddQueue(e.taskQueue)
	return e
}

func (e *emu) topic(t *testing.T, id string) string {
	t.Helper()
	name := "projects/" + e.project + "/topics/" + id
	if _, err := e.client.TopicAdminClient.CreateTopic(context.Background(), &pb.Topic{Name: name}); err != nil {
		t.Fatalf("CreateTopic %s: %v", name, err)
	}
	return name
}

func (e *emu) subscription(t *testing.T, s *pb.Subscription) string {
	t.Helper()
	s.Name = "projects/" + e.project + "/subscriptions/" + s.Name
	if _, err := e.client.SubscriptionAdminClient.CreateSubscription(context.Background(), s); err != nil {
		t.Fatalf("CreateSubscription %s: %v", s.Name, err)
	}
	return s.Name
}

// queue returns a Queue on topic whose tasks publish through the
// emulator's REST API (no service account: the emulator takes none).
func (e *emu) queue(t *testing.T, topic string) *Queue {
	t.Helper()
	q, err := New(e.client, e.tasks, Options{Topic: topic, TaskQueue: e.taskQueue, PublishEndpoint: "http://" + e.host, Clock: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Close)
	return q
}

// advance moves the fake clock by d and dispatches the tasks then due.
func (e *emu) advance(d time.Duration) int {
	e.clock.Advance(d)
	return e.tasks.Due(e.clock.Now())
}

// pull receives up to max messages without waiting (the emulator's pull
// otherwise holds an empty request open for seconds).
func (e *emu) pull(ctx context.Context, sub string, max int) ([]*pb.ReceivedMessage, error) {
	//lint:ignore SA1019 returnImmediately is discouraged for production pulls; a test that checks for "nothing visible" needs it
	out, err := e.client.SubscriptionAdminClient.Pull(ctx, &pb.PullRequest{Subscription: sub, MaxMessages: int32(max), ReturnImmediately: true})
	if err != nil {
		return nil, err
	}
	return out.ReceivedMessages, nil
}

// testable adapts Queue to porttest.TestableQueue with a pull subscription
// on its topic (push delivery has no Receive): a delivery's handle is its
// ack ID, and Receive shortens the ack deadline to the harness's
// visibility (Pub/Sub's minimum for a subscription is 10 s; a lease may be
// set shorter).
type testable struct {
	*Queue
	e          *emu
	sub        string
	visibility time.Duration
	t          *testing.T
}

func (q testable) Receive(ctx context.Context, max int) ([]porttest.Delivery, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	msgs, err := q.e.pull(ctx, q.sub, max)
	if err != nil {
		return nil, err
	}
	out := make([]porttest.Delivery, len(msgs))
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		k, err := DecodeData(m.GetMessage().GetData(), m.GetMessage().GetAttributes())
		if err != nil {
			q.t.Errorf("received an undecodable message %s: %v", m.GetMessage().GetMessageId(), err)
		}
		out[i] = porttest.Delivery{Key: k, Handle: m.GetAckId()}
		ids[i] = m.GetAckId()
	}
	if len(ids) > 0 {
		err = q.e.client.SubscriptionAdminClient.ModifyAckDeadline(ctx, &pb.ModifyAckDeadlineRequest{
			Subscription: q.sub, AckIds: ids, AckDeadlineSeconds: int32(q.visibility / time.Second)})
	}
	return out, err
}

func (q testable) Ack(ctx context.Context, d porttest.Delivery) error {
	return q.e.client.SubscriptionAdminClient.Acknowledge(ctx, &pb.AcknowledgeRequest{Subscription: q.sub, AckIds: []string{d.Handle.(string)}})
}

func TestQueueContract(t *testing.T) {
	t.Parallel()
	const vis = time.Second
	var n int
	porttest.QueueSuite(t, func(t *testing.T) porttest.QueueHarness {
		e := newEmu(t)
		n++
		topic := e.topic(t, fmt.Sprintf("reconcile-%d", n))
		sub := e.subscription(t, &pb.Subscription{Name: fmt.Sprintf("worker-%d", n), Topic: topic, AckDeadlineSeconds: 10})
		return porttest.QueueHarness{
			Queue:      testable{Queue: e.queue(t, topic), e: e, sub: sub, visibility: vis, t: t},
			Visibility: vis,
			Delay:      time.Second,
			// Real time for the leases, the fake clock for Cloud Tasks.
			Advance:  func(d time.Duration) { time.Sleep(d); e.advance(d) },
			Patience: 2 * time.Second,
		}
	})
}

// pushLog records what the push handler saw.
type pushLog struct {
	mu       sync.Mutex
	pushes   map[api.Key]int
	attempts map[api.Key][]int
	bad      []string
}

// End to end on the emulator: a push subscription to a handler that uses
// DecodePush, with a retry policy and a dead-letter topic (at most 5
// deliveries). A good key, published at once, is pushed once. A key the
// handler keeps failing (500) — enqueued with a delay, so it also shows
// the Cloud Tasks path ending in a push — is pushed again and again and
// then lands on the dead-letter topic, still decodable. A message that is
// not a key is acknowledged as DecodePush's contract says, and pushed
// once.
func TestPushRetryAndDeadLetter(t *testing.T) {
	t.Parallel()
	e := newEmu(t)
	good, failing := cert("default", "web"), cert("default", "broken")
	log := &pushLog{pushes: map[api.Key]int{}, attempts: map[api.Key][]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, attempt, err := DecodePush(r, 0)
		log.mu.Lock()
		defer log.mu.Unlock()
		if err != nil {
			log.bad = append(log.bad, err.Error())
			w.WriteHeader(http.StatusNoContent) // permanent: acknowledged
			return
		}
		log.pushes[key]++
		log.attempts[key] = append(log.attempts[key], attempt)
		if key == failing {
			http.Error(w, "transient failure", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	topic, dead := e.topic(t, "reconcile"), e.topic(t, "reconcile-dead")
	e.subscription(t, &pb.Subscription{
		Name: "worker", Topic: topic, AckDeadlineSeconds: 10,
		PushConfig:       &pb.PushConfig{PushEndpoint: srv.URL + "/push"},
		RetryPolicy:      &pb.RetryPolicy{MinimumBackoff: durationpb.New(time.Second), MaximumBackoff: durationpb.New(2 * time.Second)},
		DeadLetterPolicy: &pb.DeadLetterPolicy{DeadLetterTopic: dead, MaxDeliveryAttempts: 5},
	})
	deadSub := e.subscription(t, &pb.Subscription{Name: "dead-reader", Topic: dead, AckDeadlineSeconds: 10})
	q := e.queue(t, topic)

	ctx := context.Background()
	start := time.Now()
	if err := q.Enqueue(ctx, good, 0); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, failing, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	junk := e.client.Publisher(topic)
	if _, err := junk.Publish(ctx, &pubsub.Message{Data: []byte("not a key"), Attributes: formatAttrs()}).Get(ctx); err != nil {
		t.Fatal(err)
	}
	junk.Stop()
	if n := e.advance(time.Second); n != 0 {
		t.Fatalf("a task due in 2 s was dispatched after 1 s")
	}
	if n := e.advance(time.Second); n != 1 {
		t.Fatalf("%d tasks dispatched at the schedule time, want 1 (attempts %+v)", n, e.tasks.Attempts())
	}
	if a := e.tasks.Attempts(); len(a) != 1 || a[0].Status != http.StatusOK {
		t.Fatalf("the task's publish through the emulator's REST API: %+v", a)
	}

	// Wait for the failing key on the dead-letter topic.
	var deadMsgs []*pb.ReceivedMessage
	deadline := time.Now().Add(50 * time.Second)
	for len(deadMsgs) == 0 && time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
		var err error
		if deadMsgs, err = e.pull(ctx, deadSub, 10); err != nil {
			t.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	log.mu.Lock()
	defer log.mu.Unlock()
	t.Logf("after %s: pushes %v, attempts reported %v, bad %d", elapsed.Round(100*time.Millisecond), log.pushes, log.attempts, len(log.bad))
	if len(deadMsgs) != 1 {
		t.Fatalf("dead-letter topic: %d messages after %s, want the failing key", len(deadMsgs), elapsed)
	}
	m := deadMsgs[0].GetMessage()
	if k, err := DecodeData(m.GetData(), m.GetAttributes()); err != nil || k != failing {
		t.Errorf("dead-lettered message %q %v decodes to %v, %v; want %v", m.GetData(), m.GetAttributes(), k, err, failing)
	}
	if n := log.pushes[failing]; n < 2 || n > 5 {
		t.Errorf("failing key pushed %d times, want 2 to 5 (redelivered, at most the dead-letter policy's 5)", n)
	}
	for _, a := range log.attempts[failing] {
		if a < 1 {
			t.Errorf("attempt %d reported", a)
		}
	}
	if n := log.pushes[good]; n != 1 {
		t.Errorf("good key pushed %d times, want 1", n)
	}
	if len(log.bad) != 1 {
		t.Errorf("bad pushes %v, want the one message that is not a key, once", log.bad)
	}
	t.Logf("bad push errors: %q", log.bad)
}
