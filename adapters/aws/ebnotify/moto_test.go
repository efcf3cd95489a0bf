package ebnotify_test

// The notifier against EventBridge: moto (tests/emulators.Moto, one
// moto_server per test binary; a missing one fails the tests) always, and
// the endpoints of the environment (AWS_ENDPOINT_URL_EVENTBRIDGE, _SQS,
// _SNS or AWS_ENDPOINT_URL: LocalStack, AWS) when set. What a notifier
// published is read back the way a user routes it: a rule on
// {"source": ["certfn"], "detail": {"deployment": [...]}} with an SQS
// queue as target, and a second rule whose target is an SNS topic with an
// SQS subscription.
//
// moto gap (moto 5.2.1): its EventBridge delivers to SQS, CloudWatch Logs
// and event buses only; a rule with an SNS target makes PutEvents fail
// with a 500 (NotImplementedError in moto's send_to_targets). On moto the
// SNS rule's target is therefore a relay queue, and the test publishes
// each relayed event to the topic itself, as EventBridge's SNS target does
// (the SNS message is the event JSON); the topic → subscription → queue
// leg is moto's own. On an external endpoint the rule targets the topic.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/certfn/certfn/adapters/aws/awscfg"
	"github.com/certfn/certfn/adapters/aws/ebnotify"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/ports/porttest"
	"github.com/certfn/certfn/tests/emulators"
)

var fastRetry = awscfg.Retry{MaxAttempts: 3, MaxBackoff: 50 * time.Millisecond}

// backend is EventBridge with SQS and SNS to read what it routed.
type backend struct {
	eb       *eventbridge.Client
	sqs      *sqs.Client
	sns      *sns.Client
	moto     bool          // route SNS targets through a relay queue (moto gap above)
	patience time.Duration // how long a routed event may take to arrive
}

// forEachBackend runs f on moto and, when the environment names one, on
// an external endpoint.
func forEachBackend(t *testing.T, f func(t *testing.T, b *backend)) {
	t.Run("moto", func(t *testing.T) {
		ep := emulators.Moto(t)
		f(t, newBackend(ep, ep, ep, true, 3*time.Second))
	})
	t.Run("endpoint", func(t *testing.T) {
		eb, ok1 := emulators.External(emulators.Service("EVENTBRIDGE"))
		q, ok2 := emulators.External(emulators.SQS)
		s, ok3 := emulators.External(emulators.Service("SNS"))
		if !ok1 || !ok2 || !ok3 {
			t.Skip("AWS_ENDPOINT_URL (or AWS_ENDPOINT_URL_EVENTBRIDGE, _SQS and _SNS) unset: no external EventBridge to run against (LocalStack, AWS)")
		}
		f(t, newBackend(eb, q, s, false, 30*time.Second))
	})
}

func newBackend(ebEP, sqsEP, snsEP string, moto bool, patience time.Duration) *backend {
	return &backend{
		eb:   eventbridge.NewFromConfig(awscfg.ForEndpoint(ebEP, fastRetry)),
		sqs:  sqs.NewFromConfig(awscfg.ForEndpoint(sqsEP, fastRetry)),
		sns:  sns.NewFromConfig(awscfg.ForEndpoint(snsEP, fastRetry)),
		moto: moto, patience: patience,
	}
}

var seq atomic.Int64

// unique returns a name no other test of any run uses.
func unique(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%1e9, seq.Add(1))
}

// newQueue creates a queue that EventBridge and SNS may send to, deleted
// when the test ends, and returns its URL and ARN.
func (b *backend) newQueue(t *testing.T, name string) (string, string) {
	t.Helper()
	ctx := context.Background()
	q, err := b.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatalf("CreateQueue %s: %v", name, err)
	}
	url := aws.ToString(q.QueueUrl)
	t.Cleanup(func() {
		_, _ = b.sqs.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
	})
	a, err := b.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatalf("GetQueueAttributes %s: %v", name, err)
	}
	arn := a.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	policy, _ := json.Marshal(map[string]any{"Version": "2012-10-17", "Statement": []any{map[string]any{
		"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": arn,
		"Principal": map[string]any{"Service": []string{"events.amazonaws.com", "sns.amazonaws.com"}},
	}}})
	if _, err := b.sqs.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{"Policy": string(policy)}}); err != nil {
		t.Fatalf("SetQueueAttributes %s Policy: %v", name, err)
	}
	return url, arn
}

// newRule creates a rule on the default bus with pattern and one target,
// removed when the test ends.
func (b *backend) newRule(t *testing.T, pattern map[string]any, targetARN string) {
	t.Helper()
	ctx := context.Background()
	name := unique("certfn-test")
	p, _ := json.Marshal(pattern)
	if _, err := b.eb.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String(name), EventPattern: aws.String(string(p))}); err != nil {
		t.Fatalf("PutRule %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = b.eb.RemoveTargets(ctx, &eventbridge.RemoveTargetsInput{Rule: aws.String(name), Ids: []string{"t"}})
		_, _ = b.eb.DeleteRule(ctx, &eventbridge.DeleteRuleInput{Name: aws.String(name)})
	})
	out, err := b.eb.PutTargets(ctx, &eventbridge.PutTargetsInput{Rule: aws.String(name), Targets: []ebtypes.Target{{Id: aws.String("t"), Arn: aws.String(targetARN)}}})
	if err != nil || out.FailedEntryCount > 0 {
		t.Fatalf("PutTargets %s → %s: %v %+v", name, targetARN, err, out)
	}
}

// newTopic creates an SNS topic that EventBridge may publish to, with a
// raw-delivery subscription of a new queue; it returns the topic's ARN and
// the queue's URL.
func (b *backend) newTopic(t *testing.T) (string, string) {
	t.Helper()
	ctx := context.Background()
	topic, err := b.sns.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(unique("certfn-test"))})
	if err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	arn := aws.ToString(topic.TopicArn)
	t.Cleanup(func() {
		_, _ = b.sns.DeleteTopic(context.Background(), &sns.DeleteTopicInput{TopicArn: aws.String(arn)})
	})
	policy, _ := json.Marshal(map[string]any{"Version": "2012-10-17", "Statement": []any{map[string]any{
		"Effect": "Allow", "Action": "sns:Publish", "Resource": arn, "Principal": map[string]any{"Service": "events.amazonaws.com"},
	}}})
	if _, err := b.sns.SetTopicAttributes(ctx, &sns.SetTopicAttributesInput{TopicArn: aws.String(arn), AttributeName: aws.String("Policy"), AttributeValue: aws.String(string(policy))}); err != nil {
		t.Fatalf("SetTopicAttributes Policy: %v", err)
	}
	url, qarn := b.newQueue(t, unique("certfn-test-sns"))
	if _, err := b.sns.Subscribe(ctx, &sns.SubscribeInput{TopicArn: aws.String(arn), Protocol: aws.String("sqs"), Endpoint: aws.String(qarn),
		Attributes: map[string]string{"RawMessageDelivery": "true"}}); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	return arn, url
}

// receive reads (and deletes) messages from url until it has want or the
// backend's patience ran out.
func (b *backend) receive(t *testing.T, url string, want int) []string {
	t.Helper()
	var bodies []string
	deadline := time.Now().Add(b.patience)
	for len(bodies) < want && time.Now().Before(deadline) {
		out, err := b.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatalf("ReceiveMessage: %v", err)
		}
		for _, m := range out.Messages {
			bodies = append(bodies, aws.ToString(m.Body))
			_, _ = b.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle})
		}
	}
	return bodies
}

// parse reads certfn events, checking their envelope: source,
// detail-type, the resource URN of deployment.
func parse(t *testing.T, deployment string, bodies []string) []ports.Notification {
	t.Helper()
	var out []ports.Notification
	for _, body := range bodies {
		n, err := ebnotify.ParseEvent([]byte(body))
		if err != nil {
			t.Fatalf("ParseEvent(%s): %v", body, err)
		}
		var ev ebnotify.Event
		_ = json.Unmarshal([]byte(body), &ev)
		if ev.Source != "certfn" || ev.DetailType != ebnotify.DetailTypes[n.Type] ||
			!slices.Equal(ev.Resources, []string{ebnotify.ResourceURN(deployment, n.Certificate)}) {
			t.Errorf("event envelope: source %q detail-type %q resources %v", ev.Source, ev.DetailType, ev.Resources)
		}
		out = append(out, n)
	}
	return out
}

// routed is a notifier of its own deployment with a rule delivering its
// events to a queue.
type routed struct {
	deployment string
	notifier   *ebnotify.Notifier
	queue      string
}

func newRouted(t *testing.T, b *backend) *routed {
	t.Helper()
	r := &routed{deployment: unique("dep")}
	var arn string
	r.queue, arn = b.newQueue(t, unique("certfn-test"))
	b.newRule(t, map[string]any{"source": []string{"certfn"}, "detail": map[string]any{"deployment": []string{r.deployment}}}, arn)
	var err error
	if r.notifier, err = ebnotify.New(b.eb, ebnotify.Options{Deployment: r.deployment}); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestNotifierContract(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		porttest.NotifierSuite(t, func(t *testing.T) porttest.NotifierHarness {
			r := newRouted(t, b)
			var got []ports.Notification
			return porttest.NotifierHarness{Notifier: r.notifier, Delivered: func(t *testing.T, want int) []ports.Notification {
				got = append(got, parse(t, r.deployment, b.receive(t, r.queue, want-len(got)))...)
				return got
			}}
		})
	})
}

// TestRouting: the rules a user writes — everything of a deployment to a
// queue; failures and expiry to an SNS topic (e-mail, chat) — receive
// what they match, with the documented detail.
func TestRouting(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		r := newRouted(t, b)
		topic, snsQueue := b.newTopic(t)
		pattern := map[string]any{
			"source":      []string{"certfn"},
			"detail-type": []string{"Certificate Issuance Failed", "Certificate Approaching Expiration"},
			"detail":      map[string]any{"deployment": []string{r.deployment}},
		}
		relay := ""
		if b.moto {
			var arn string
			relay, arn = b.newQueue(t, unique("certfn-test-relay"))
			b.newRule(t, pattern, arn)
		} else {
			b.newRule(t, pattern, topic)
		}

		var sent []ports.Notification
		for _, typ := range ports.NotificationTypes {
			n := porttest.FullNotification(typ, "prod", "shop")
			if err := r.notifier.Notify(context.Background(), n); err != nil {
				t.Fatalf("Notify(%s): %v", n, err)
			}
			sent = append(sent, n)
		}
		if b.moto {
			for _, body := range b.receive(t, relay, 2) {
				if _, err := b.sns.Publish(context.Background(), &sns.PublishInput{TopicArn: aws.String(topic), Message: aws.String(body)}); err != nil {
					t.Fatalf("relay to SNS: %v", err)
				}
			}
		}

		all := parse(t, r.deployment, b.receive(t, r.queue, 4))
		if len(all) != 4 {
			t.Fatalf("the deployment's queue received %d events, want 4", len(all))
		}
		paged := b.receive(t, snsQueue, 2)
		var types []string
		for _, n := range parse(t, r.deployment, paged) {
			types = append(types, string(n.Type))
		}
		slices.Sort(types)
		if !slices.Equal(types, []string{"Expiring", "Failed"}) {
			t.Fatalf("the SNS subscription received %v, want Expiring and Failed", types)
		}

		// The detail, field by field, as docs/deploy/aws.md shows it.
		var failed map[string]any
		for _, body := range paged {
			var ev struct {
				DetailType string         `json:"detail-type"`
				Time       string         `json:"time"`
				Detail     map[string]any `json:"detail"`
			}
			if err := json.Unmarshal([]byte(body), &ev); err != nil {
				t.Fatal(err)
			}
			if ev.DetailType == "Certificate Issuance Failed" {
				failed = ev.Detail
			}
			if ev.Time != sent[0].Time.UTC().Format(time.RFC3339) {
				t.Errorf("event time %q, want the notification's %s", ev.Time, sent[0].Time.UTC().Format(time.RFC3339))
			}
		}
		want := map[string]any{
			"version": "1", "id": "Certificate/prod/shop/failure/2030-03-04T05:05:07Z", "type": "Failed", "deployment": r.deployment,
			"namespace": "prod", "name": "shop", "time": "2030-03-04T05:06:07Z", "revision": 3.0,
			"serialNumber": "0a:1b:2c:3d:4e:5f", "notBefore": "2030-03-04T04:06:07Z", "notAfter": "2030-06-02T04:06:07Z",
			"daysToExpiry": 89.0, "commonName": "shop.example.com", "dnsNames": []any{"shop.example.com", "www.shop.example.com"},
			"issuerRef":  map[string]any{"name": "letsencrypt", "kind": "ClusterIssuer", "group": "cert-manager.io"},
			"secretName": "shop-tls", "reason": "Denied", "request": "shop-4",
			"message":     `The certificate request "shop-4" has failed to complete and will be retried: no policy allows it (attempt 2; next attempt after 2030-03-04T07:06:07Z)`,
			"failureTime": "2030-03-04T05:05:07Z", "failedAttempts": 2.0, "retryAfter": "2030-03-04T07:05:07Z",
		}
		gotJSON, _ := json.Marshal(failed)
		wantJSON, _ := json.Marshal(want)
		if string(gotJSON) != string(wantJSON) {
			t.Errorf("Certificate Issuance Failed detail:\n got %s\nwant %s", gotJSON, wantJSON)
		}
		if strings.Contains(string(gotJSON), "PRIVATE KEY") {
			t.Error("key material in an event")
		}
	})
}
