package sqsq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/certfn/certfn/adapters/aws/awscfg"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports/porttest"
	"github.com/certfn/certfn/tests/emulators"
)

var fastRetry = awscfg.Retry{MaxAttempts: 3, MaxBackoff: 20 * time.Millisecond}

// testable adapts Queue to porttest.TestableQueue; a delivery's handle is
// its receipt handle.
type testable struct {
	*Queue
	t *testing.T
}

func (q testable) Receive(ctx context.Context, max int) ([]porttest.Delivery, error) {
	msgs, err := q.Queue.Receive(ctx, max)
	out := make([]porttest.Delivery, len(msgs))
	for i, m := range msgs {
		if m.Err != nil {
			q.t.Errorf("received an undecodable message %s: %v", m.ID, m.Err)
		}
		out[i] = porttest.Delivery{Key: m.Key, Handle: m.ReceiptHandle}
	}
	return out, err
}

func (q testable) Ack(ctx context.Context, d porttest.Delivery) error {
	return q.Queue.Ack(ctx, d.Handle.(string))
}

// env is one SQS endpoint (local-aws-sqs, or AWS_ENDPOINT_URL[_SQS]).
type env struct{ client *sqs.Client }

func newEnv(t *testing.T) *env {
	t.Helper()
	ep := emulators.Endpoint(t, emulators.SQS)
	return &env{client: sqs.NewFromConfig(awscfg.ForEndpoint(ep, fastRetry))}
}

var queueSeq atomic.Int64

// newQueue creates a fresh queue with attrs (deleted when t ends) and
// returns its URL.
func (e *env) newQueue(t *testing.T, attrs map[string]string) string {
	t.Helper()
	name := fmt.Sprintf("certfn-test-%d-%d", time.Now().UnixNano()%1e9, queueSeq.Add(1))
	out, err := e.client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatalf("CreateQueue: %v", err)
	}
	t.Cleanup(func() {
		if _, err := e.client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl}); err != nil {
			t.Errorf("DeleteQueue: %v", err)
		}
	})
	return aws.ToString(out.QueueUrl)
}

// queue returns a Queue on a fresh queue with a visibility timeout of vis.
func (e *env) queue(t *testing.T, vis time.Duration, attrs map[string]string) *Queue {
	t.Helper()
	a := map[string]string{"VisibilityTimeout": fmt.Sprint(int(vis.Seconds()))}
	for k, v := range attrs {
		a[k] = v
	}
	q, err := New(e.client, Options{QueueURL: e.newQueue(t, a)})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func TestQueueContract(t *testing.T) {
	e := newEnv(t)
	const vis = 2 * time.Second
	porttest.QueueSuite(t, func(t *testing.T) porttest.QueueHarness {
		return porttest.QueueHarness{
			Queue:      testable{e.queue(t, vis, nil), t},
			Visibility: vis,
			Delay:      2 * time.Second,
			Advance:    time.Sleep,
			Patience:   2 * time.Second,
		}
	})
}

func cert(ns, name string) api.Key {
	return api.Key{Kind: api.KindCertificate, Namespace: ns, Name: name}
}

// receiveAll receives until n messages arrived or patience ran out.
func receiveAll(t *testing.T, q *Queue, n int, patience time.Duration) []Message {
	t.Helper()
	var out []Message
	deadline := time.Now().Add(patience)
	for len(out) < n && time.Now().Before(deadline) {
		msgs, err := q.Receive(context.Background(), MaxBatch)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, msgs...)
		if len(msgs) == 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	return out
}

// The wire format: the body is the key, the format attribute is set.
func TestMessageFormat(t *testing.T) {
	e := newEnv(t)
	q := e.queue(t, 5*time.Second, nil)
	ctx := context.Background()
	keys := []api.Key{cert("default", "web"), {Kind: api.KindClusterIssuer, Name: "ca"}, {Kind: api.KindOrder, Namespace: "a", Name: "web-1-123"}}
	for _, k := range keys {
		if err := q.Enqueue(ctx, k, 0); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := e.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.URL()), MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for _, m := range raw.Messages {
		bodies = append(bodies, aws.ToString(m.Body))
		if v := m.MessageAttributes[FormatAttribute]; aws.ToString(v.StringValue) != FormatVersion || aws.ToString(v.DataType) != "String" {
			t.Errorf("message %s: attribute %s = %+v, want String %q", aws.ToString(m.Body), FormatAttribute, v, FormatVersion)
		}
	}
	slices.Sort(bodies)
	if want := []string{"Certificate/default/web", "ClusterIssuer/ca", "Order/a/web-1-123"}; !slices.Equal(bodies, want) {
		t.Errorf("bodies %v, want %v", bodies, want)
	}
}

// EnqueueBatch sends in batches of 10; every key arrives.
func TestEnqueueBatch(t *testing.T) {
	e := newEnv(t)
	q := e.queue(t, 30*time.Second, nil)
	var keys []api.Key
	want := map[api.Key]bool{}
	for i := 0; i < 25; i++ {
		k := cert(fmt.Sprintf("ns%d", i%3), fmt.Sprintf("c%d", i))
		keys = append(keys, k)
		want[k] = true
	}
	if err := q.EnqueueBatch(context.Background(), keys, 0); err != nil {
		t.Fatal(err)
	}
	for _, m := range receiveAll(t, q, len(keys), 5*time.Second) {
		if m.Err != nil {
			t.Errorf("undecodable message: %v", m.Err)
		}
		delete(want, m.Key)
	}
	if len(want) > 0 {
		t.Errorf("%d keys not delivered: %v", len(want), want)
	}
}

// Retry hides a received message for the backoff; with the queue's redrive
// policy, a message retried until maxReceiveCount moves to the dead-letter
// queue, where it still decodes. (local-aws-sqs also counts a visibility
// change as a receive and moves the message when its visibility expires,
// so the test bounds the number of deliveries instead of fixing it.)
func TestRetryAndDeadLetter(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const maxReceives = 3
	dlqURL := e.newQueue(t, nil)
	arn, err := e.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(dlqURL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	q := e.queue(t, 30*time.Second, map[string]string{
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"%d"}`, arn.Attributes["QueueArn"], maxReceives),
	})
	dlq, err := New(e.client, Options{QueueURL: dlqURL})
	if err != nil {
		t.Fatal(err)
	}
	k := cert("default", "web")
	if err := q.Enqueue(ctx, k, 0); err != nil {
		t.Fatal(err)
	}
	// Delivery 1: retried after 1 s — hidden until then, visible after.
	first := receiveAll(t, q, 1, 3*time.Second)
	if len(first) != 1 || first[0].Key != k {
		t.Fatalf("first delivery: %+v", first)
	}
	if err := q.Retry(ctx, first[0].ReceiptHandle, time.Second); err != nil {
		t.Fatal(err)
	}
	retried := time.Now()
	if got := receiveAll(t, q, 1, 300*time.Millisecond); len(got) != 0 && time.Since(retried) < time.Second {
		t.Fatalf("retried message visible before its backoff: %+v", got)
	}
	deliveries := 1
	// Then retried at once until the redrive policy moves it.
	for {
		got := receiveAll(t, q, 1, 3*time.Second)
		if len(got) == 0 {
			break
		}
		deliveries++
		if got[0].Key != k {
			t.Fatalf("delivery %d: %+v", deliveries, got[0])
		}
		if deliveries > maxReceives {
			t.Fatalf("delivered %d times despite maxReceiveCount %d", deliveries, maxReceives)
		}
		if err := q.Retry(ctx, got[0].ReceiptHandle, 0); err != nil {
			t.Fatal(err)
		}
	}
	if deliveries < 2 {
		t.Errorf("a message retried after 1 s was not delivered again")
	}
	dead := receiveAll(t, dlq, 1, 3*time.Second)
	if len(dead) != 1 || dead[0].Key != k || dead[0].Err != nil {
		t.Fatalf("dead-letter queue: %+v, want %s", dead, k)
	}
	if err := dlq.Ack(ctx, dead[0].ReceiptHandle); err != nil {
		t.Fatal(err)
	}
}

// fakeSQS is a hand-written API double that records sends.
type fakeSQS struct {
	API
	sends   []*sqs.SendMessageInput
	batches []*sqs.SendMessageBatchInput
	batchFn func(*sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error)
}

func (f *fakeSQS) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	f.sends = append(f.sends, in)
	return &sqs.SendMessageOutput{}, nil
}

func (f *fakeSQS) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	f.batches = append(f.batches, in)
	return f.batchFn(in)
}

// Delays become DelaySeconds: rounded up, capped at 15 minutes.
func TestDelaySeconds(t *testing.T) {
	tests := []struct {
		delay time.Duration
		want  int32
	}{
		{-time.Second, 0},
		{0, 0},
		{time.Millisecond, 1},
		{1200 * time.Millisecond, 2},
		{time.Minute, 60},
		{15 * time.Minute, 900},
		{15*time.Minute + time.Second, 900},
		{90 * 24 * time.Hour, 900},
	}
	for _, tc := range tests {
		t.Run(tc.delay.String(), func(t *testing.T) {
			f := &fakeSQS{}
			q, err := New(f, Options{QueueURL: "http://q"})
			if err != nil {
				t.Fatal(err)
			}
			if err := q.Enqueue(context.Background(), cert("default", "web"), tc.delay); err != nil {
				t.Fatal(err)
			}
			if got := f.sends[0].DelaySeconds; got != tc.want {
				t.Errorf("DelaySeconds = %d, want %d", got, tc.want)
			}
		})
	}
}

// A partly failed batch names the keys not sent; sender faults alone are
// permanent, anything else transient.
func TestEnqueueBatchPartialFailure(t *testing.T) {
	keys := []api.Key{cert("a", "one"), cert("a", "two"), cert("a", "three")}
	tests := []struct {
		name      string
		failed    []types.BatchResultErrorEntry
		callErr   error
		wantClass errs.Class
		wantKeys  []string
	}{
		{"server fault", []types.BatchResultErrorEntry{{Id: aws.String("1"), Code: aws.String("InternalError"), SenderFault: false}},
			nil, errs.Transient, []string{"Certificate/a/two"}},
		{"sender fault", []types.BatchResultErrorEntry{{Id: aws.String("2"), Code: aws.String("InvalidMessageContents"), SenderFault: true}},
			nil, errs.PermanentClass, []string{"Certificate/a/three"}},
		{"call failed", nil, errors.New("connection reset"), errs.Transient, []string{"Certificate/a/one", "Certificate/a/two", "Certificate/a/three"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeSQS{batchFn: func(in *sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error) {
				return &sqs.SendMessageBatchOutput{Failed: tc.failed}, tc.callErr
			}}
			q, err := New(f, Options{QueueURL: "http://q"})
			if err != nil {
				t.Fatal(err)
			}
			err = q.EnqueueBatch(context.Background(), keys, 0)
			if err == nil {
				t.Fatal("EnqueueBatch: no error")
			}
			if got := errs.Classify(err); got != tc.wantClass {
				t.Errorf("class %v, want %v (%v)", got, tc.wantClass, err)
			}
			for _, k := range tc.wantKeys {
				if !strings.Contains(err.Error(), k) {
					t.Errorf("error %q does not name %s", err, k)
				}
			}
		})
	}
}

// Bodies from a Lambda event or Receive decode to keys; anything else is a
// permanent error naming the problem.
func TestDecodeBody(t *testing.T) {
	fmtAttr := map[string]string{FormatAttribute: FormatVersion}
	tests := []struct {
		name  string
		body  string
		attrs map[string]string
		want  api.Key
		err   string
	}{
		{"namespaced", "Certificate/default/web", fmtAttr, cert("default", "web"), ""},
		{"cluster-scoped", "ClusterIssuer/ca", fmtAttr, api.Key{Kind: api.KindClusterIssuer, Name: "ca"}, ""},
		{"no attribute", "Certificate/default/web", nil, cert("default", "web"), ""},
		{"trailing newline", "Certificate/default/web\n", nil, cert("default", "web"), ""},
		{"future format", "Certificate/default/web", map[string]string{FormatAttribute: "2"}, api.Key{}, `format "2" is not supported`},
		{"unknown kind", "Pod/default/web", nil, api.Key{}, `unknown kind "Pod"`},
		{"JSON body", `{"key":"Certificate/default/web"}`, nil, api.Key{}, "body:"},
		{"namespace on a cluster kind", "ClusterIssuer/x/ca", nil, api.Key{}, "cluster-scoped"},
		{"empty", "", nil, api.Key{}, "body:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeBody(tc.body, tc.attrs)
			if tc.err == "" {
				if err != nil || got != tc.want {
					t.Errorf("DecodeBody = %v, %v; want %v", got, err, tc.want)
				}
				return
			}
			if !errs.IsPermanent(err) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("DecodeBody error %v, want a permanent error containing %q", err, tc.err)
			}
		})
	}
}

// Options and arguments are checked with errors naming the field.
func TestBadInput(t *testing.T) {
	if _, err := New(&fakeSQS{}, Options{}); !errs.IsPermanent(err) || !strings.Contains(err.Error(), "queueURL") {
		t.Errorf("New without URL: %v", err)
	}
	if _, err := New(&fakeSQS{}, Options{QueueURL: "u", WaitTime: time.Minute}); !errs.IsPermanent(err) || !strings.Contains(err.Error(), "waitTime") {
		t.Errorf("New with a long wait: %v", err)
	}
	q, err := New(&fakeSQS{}, Options{QueueURL: "u"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := q.Enqueue(ctx, api.Key{Kind: "Pod", Namespace: "a", Name: "b"}, 0); !errs.IsPermanent(err) || !strings.Contains(err.Error(), "unknown kind") {
		t.Errorf("Enqueue of an unknown kind: %v", err)
	}
	if err := q.EnqueueBatch(ctx, []api.Key{cert("a", "b"), {Kind: api.KindCertificate, Name: "b"}}, 0); !errs.IsPermanent(err) || !strings.Contains(err.Error(), "keys[1]") {
		t.Errorf("EnqueueBatch with a bad key: %v", err)
	}
	if _, err := q.Receive(ctx, 0); !errs.IsPermanent(err) || !strings.Contains(err.Error(), "max") {
		t.Errorf("Receive(0): %v", err)
	}
}
