package awse2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/certfn/certfn/adapters/aws/awscfg"
	"github.com/certfn/certfn/adapters/aws/ebnotify"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/internal/awsmode"
	"github.com/certfn/certfn/internal/awsmode/awstest"
	"github.com/certfn/certfn/tests/emulators"
)

// Notifications on AWS: the worker (CERTFN_NOTIFY_EVENT_BUS=default)
// publishes "Certificate Issued" when a leaf from a CA ClusterIssuer is
// issued through the worker and signer functions, and "Certificate
// Renewed" after the scheduler's sweep renews it; a rule on the default
// bus, {"source": ["certfn"], "detail": {"deployment": [<name_prefix>]}},
// delivers them to an SQS queue, where the test reads them. Nothing more is
// published on later resyncs.
//
// EventBridge and the rule's queue are moto's (tests/emulators.Moto) or,
// in the subtest endpoint, the environment's (AWS_ENDPOINT_URL or
// AWS_ENDPOINT_URL_EVENTBRIDGE and _SQS: LocalStack, AWS); the rest of the
// deployment is the harness's.
func TestNotificationsOnAWS(t *testing.T) {
	t.Run("moto", func(t *testing.T) {
		ep := emulators.Moto(t)
		testNotifications(t, ep, ep)
	})
	t.Run("endpoint", func(t *testing.T) {
		eb, ok1 := emulators.External(emulators.Service("EVENTBRIDGE"))
		q, ok2 := emulators.External(emulators.SQS)
		if !ok1 || !ok2 {
			t.Skip("AWS_ENDPOINT_URL (or AWS_ENDPOINT_URL_EVENTBRIDGE and _SQS) unset: no external EventBridge to run against (LocalStack, AWS)")
		}
		testNotifications(t, eb, q)
	})
}

func testNotifications(t *testing.T, ebEP, sqsEP string) {
	ctx := context.Background()
	deploymentName := fmt.Sprintf("certfn-e2e-%d", time.Now().UnixNano()%1_000_000_000)
	eb := eventbridge.NewFromConfig(awscfg.ForEndpoint(ebEP, awstest.FastRetry))
	q := sqs.NewFromConfig(awscfg.ForEndpoint(sqsEP, awstest.FastRetry))

	// The user's side: a rule routing this deployment's events to a queue.
	out, err := q.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(deploymentName + "-events")})
	if err != nil {
		t.Fatal(err)
	}
	queueURL := aws.ToString(out.QueueUrl)
	t.Cleanup(func() {
		_, _ = q.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(queueURL)})
	})
	attrs, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(queueURL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	queueARN := attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	policy, _ := json.Marshal(map[string]any{"Version": "2012-10-17", "Statement": []any{map[string]any{
		"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": queueARN, "Principal": map[string]any{"Service": "events.amazonaws.com"}}}})
	if _, err := q.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(queueURL), Attributes: map[string]string{"Policy": string(policy)}}); err != nil {
		t.Fatal(err)
	}
	pattern, _ := json.Marshal(map[string]any{"source": []string{"certfn"}, "detail": map[string]any{"deployment": []string{deploymentName}}})
	rule := deploymentName + "-all"
	if _, err := eb.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String(rule), EventPattern: aws.String(string(pattern))}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = eb.RemoveTargets(context.Background(), &eventbridge.RemoveTargetsInput{Rule: aws.String(rule), Ids: []string{"queue"}})
		_, _ = eb.DeleteRule(context.Background(), &eventbridge.DeleteRuleInput{Name: aws.String(rule)})
	})
	if _, err := eb.PutTargets(ctx, &eventbridge.PutTargetsInput{Rule: aws.String(rule), Targets: []ebtypes.Target{{Id: aws.String("queue"), Arn: aws.String(queueARN)}}}); err != nil {
		t.Fatal(err)
	}

	// The deployment: the worker notifies on the default bus.
	e := awstest.New(t)
	e.Vars[awsmode.EnvNotifyEventBus] = "default"
	d := &deployment{Env: e, t: t, api: e.Runtime(awsmode.RoleAPI), signer: e.Runtime(awsmode.RoleSigner), sched: e.Runtime(awsmode.RoleScheduler),
		worker: e.Runtime(awsmode.RoleWorker, func(o *awsmode.Options) {
			o.EventBridge = eb
			getenv := o.Getenv
			o.Getenv = func(k string) string {
				if k == "AWS_LAMBDA_FUNCTION_NAME" { // what Lambda sets: the deployment's name
					return deploymentName + "-worker"
				}
				return getenv(k)
			}
		})}

	// received reads the queue until it holds at least want events and
	// then answers empty once (a duplicate still in flight is collected
	// too), and returns them with duplicates dropped by ID: delivery is at
	// least once (a reconcile that published and then lost its write race
	// to a concurrent one publishes again; docs/aws.md, "Notifications"),
	// and consumers deduplicate by the notification's ID.
	received := func(want int) []ports.Notification {
		t.Helper()
		var got []ports.Notification
		seen := map[string]bool{}
		deadline := time.Now().Add(10 * time.Second)
		for {
			m, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, msg := range m.Messages {
				n, err := ebnotify.ParseEvent([]byte(aws.ToString(msg.Body)))
				if err != nil {
					t.Fatalf("ParseEvent(%s): %v", aws.ToString(msg.Body), err)
				}
				var ev ebnotify.Event
				_ = json.Unmarshal([]byte(aws.ToString(msg.Body)), &ev)
				if ev.DetailType != ebnotify.DetailTypes[n.Type] || !slices.Equal(ev.Resources, []string{ebnotify.ResourceURN(deploymentName, n.Certificate)}) {
					t.Errorf("event detail-type %q resources %v", ev.DetailType, ev.Resources)
				}
				if !seen[n.ID()] {
					seen[n.ID()] = true
					got = append(got, n)
				} else {
					t.Logf("duplicate delivery of %s (at least once)", n.ID())
				}
				_, _ = q.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(queueURL), ReceiptHandle: msg.ReceiptHandle})
			}
			if (len(got) >= want && len(m.Messages) == 0) || time.Now().After(deadline) {
				return got
			}
		}
	}
	key := api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "app"}
	check := func(n ports.Notification, typ ports.NotificationType, rev int) {
		t.Helper()
		l := leaf(t, d.secret("default", "app-tls").Data["tls.crt"])
		if n.Type != typ || n.Certificate != key || n.Revision != rev || n.Serial != certificates.FormatACMSerial(l.SerialNumber) ||
			!slices.Equal(n.DNSNames, []string{"app.example.internal"}) || n.IssuerRef.Name != "ops-ca" || n.SecretName != "app-tls" ||
			!n.NotAfter.Equal(l.NotAfter) || !n.Time.Equal(d.Clock.Now().Truncate(time.Second)) {
			t.Errorf("notification %+v, want %s of revision %d of the stored certificate (serial %s)", n, typ, rev, certificates.FormatACMSerial(l.SerialNumber))
		}
	}

	d.installCA("ops-ca")
	d.apply(leafYAML("app", "ops-ca"))
	d.run()
	app := d.requireReady("default", "app")
	got := received(1)
	if len(got) != 1 {
		t.Fatalf("after the issuance, %d events, want 1 Certificate Issued: %v", len(got), got)
	}
	check(got[0], ports.NotificationIssued, 1)
	if nr := d.cert("default", "app").Status.NotifiedRevision; nr == nil || *nr != 1 {
		t.Errorf("notifiedRevision = %v, want 1", nr)
	}

	// A resync publishes nothing; the renewal publishes "Certificate Renewed".
	d.Clock.Advance(25 * time.Hour)
	d.sweep()
	if got := received(0); len(got) != 0 {
		t.Fatalf("a resync published %v", got)
	}
	d.Clock.Set(app.Status.RenewalTime.Add(time.Minute))
	d.sweep()
	if revision(d.requireReady("default", "app")) != 2 {
		t.Fatal("not renewed")
	}
	got = received(1)
	if len(got) != 1 {
		t.Fatalf("after the renewal, %d events, want 1 Certificate Renewed: %v", len(got), got)
	}
	check(got[0], ports.NotificationRenewed, 2)
	if n := d.VisibleMessages(d.WorkerDLQURL) + d.VisibleMessages(d.SignerDLQURL); n != 0 {
		t.Errorf("%d messages in the dead-letter queues", n)
	}
}
