// Package awstest runs certfn's Lambda functions in-process against the
// AWS emulators, for the tests of internal/awsmode and the end-to-end
// suite in tests/awse2e: DynamoDB on dynalite and SQS on local-aws-sqs
// (tests/emulators; or LocalStack when AWS_ENDPOINT_URL is set), and
// Secrets Manager on the HAND-WRITTEN TEST DOUBLE of
// adapters/aws/secrets/secretstest (not AWS), or on the endpoint the
// environment names (AWS_ENDPOINT_URL[_SECRETS_MANAGER]) or a test chooses
// (UseSecretsManager, e.g. moto).
//
// An Env is one deployment: a fresh table, a worker queue and a signer
// queue (each with a dead-letter queue), a fake clock shared by every
// function, and request counters. Deliver plays the part of Lambda's SQS
// event source mapping: it receives a batch, invokes the function's
// handler with the event Lambda would send, and deletes the messages the
// handler did not report as failed.
package awstest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/certfn/certfn/adapters/aws/awscfg"
	"github.com/certfn/certfn/adapters/aws/dynamo"
	"github.com/certfn/certfn/adapters/aws/secrets"
	"github.com/certfn/certfn/adapters/aws/secrets/secretstest"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/internal/awsmode"
	"github.com/certfn/certfn/tests/emulators"
)

// T0 is the fake clock's start.
var T0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// FastRetry keeps SDK retries quick against emulators.
var FastRetry = awscfg.Retry{MaxAttempts: 4, MaxBackoff: 20 * time.Millisecond}

// MaxReceiveCount is the test queues' redrive policy.
const MaxReceiveCount = 5

var (
	sharedMu  sync.Mutex
	sharedEPs = map[emulators.Service]string{}
	// sharedStops keeps the emulators' stop functions reachable: they hold
	// the child's stdin, whose closing (also by the garbage collector)
	// stops it.
	sharedStops []func()
	seq         atomic.Int64
)

// Endpoint returns svc's endpoint: the environment's (LocalStack), else one
// emulator process per test binary, started on first use (it exits with
// the test process). A missing emulator fails t, never skips it.
func Endpoint(t testing.TB, svc emulators.Service) string {
	t.Helper()
	if ep, ok := emulators.External(svc); ok {
		return ep
	}
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if ep, ok := sharedEPs[svc]; ok {
		return ep
	}
	if err := emulators.Installed(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("AWS emulators missing in CI (make test installs them): %v", err)
		}
		t.Fatalf("AWS emulators not installed: run `make emulators`: %v", err)
	}
	arg := map[emulators.Service]string{emulators.DynamoDB: "dynamodb", emulators.SQS: "sqs"}[svc]
	ep, stop, err := emulators.Start(arg)
	if err != nil {
		t.Fatalf("start %s emulator: %v", svc, err)
	}
	sharedEPs[svc] = ep
	sharedStops = append(sharedStops, stop)
	return ep
}

// Env is one in-process deployment of the functions.
type Env struct {
	T     testing.TB
	Ctx   context.Context
	Clock *clock.Fake
	// EngineClock, when set before functions are built, replaces Clock as
	// their clock (e.g. one that follows the wall clock, when a test
	// relies on SQS's real-time delays).
	EngineClock ports.Clock
	// Metrics counts what the functions report (engine, adapters).
	Metrics *Counters
	// SQS counts every SQS request, the functions' and Deliver's.
	SQS *CountingSQS
	// DynamoDB is the raw client (table setup, inspection).
	DynamoDB *dynamodb.Client
	// SM is the Secrets Manager test double, started for every Env; the
	// functions use it unless SMEndpoint names another Secrets Manager.
	SM *secretstest.Double
	// SMEndpoint is the Secrets Manager the functions and InstallSecret
	// use: the environment's (AWS_ENDPOINT_URL[_SECRETS_MANAGER]) when
	// set, else SM's URL; UseSecretsManager changes it.
	SMEndpoint string
	// SMCalls counts the functions' secret store calls per operation
	// (Usage), whichever Secrets Manager or Parameter Store they use.
	SMCalls *SecretCounts
	// SSMEndpoint, when set (UseSSM), is the Parameter Store the worker
	// and signer keep secrets in (CERTFN_SECRET_STORE=ssm) instead of
	// Secrets Manager.
	SSMEndpoint string

	Table                          string
	WorkerQueueURL, SignerQueueURL string
	WorkerDLQURL, SignerDLQURL     string
	// Vars is the functions' environment (the names Terraform sets).
	Vars map[string]string
	// Log receives the functions' logs (discarded unless CERTFN_TEST_LOG=1).
	Log *slog.Logger
	// ExpectIAMDenials, when set, lets a test end with DynamoDB calls the
	// IAM guard refused (it inspects IAMDenied itself); otherwise any
	// refusal fails the test at cleanup.
	ExpectIAMDenials bool
	// WorkerManagesCACertificates mirrors the Terraform module's
	// worker_manages_ca_certificates for the IAM guard of Secrets Manager:
	// the worker may then read and write issued-ca secrets (the examples'
	// self-signed CA Certificate). Set it before functions are built.
	WorkerManagesCACertificates bool

	mu          sync.Mutex
	arns        map[string]string // queue URL -> ARN
	invocations map[string]int
	messages    map[string]int
	durations   map[string]time.Duration
	runtimes    []*awsmode.Runtime
	guards      []*IAMGuard
	smGuards    []*SecretsGuard
	ssmGuards   []*SSMGuard
}

// New creates a table and the two queues with their dead-letter queues,
// and starts the Secrets Manager double.
func New(t testing.TB) *Env {
	t.Helper()
	ctx := context.Background()
	ddbEP, sqsEP := Endpoint(t, emulators.DynamoDB), Endpoint(t, emulators.SQS)
	e := &Env{T: t, Ctx: ctx, Clock: clock.NewFake(T0), Metrics: NewCounters(),
		DynamoDB: dynamodb.NewFromConfig(awscfg.ForEndpoint(ddbEP, FastRetry)),
		SQS:      NewCountingSQS(sqs.NewFromConfig(awscfg.ForEndpoint(sqsEP, FastRetry))),
		SM:       secretstest.New(t), SMCalls: &SecretCounts{}, arns: map[string]string{},
		invocations: map[string]int{}, messages: map[string]int{}, durations: map[string]time.Duration{}}
	e.SMEndpoint = e.SM.URL()
	e.Log = slog.New(slog.NewJSONHandler(io.Discard, nil))
	if os.Getenv("CERTFN_TEST_LOG") == "1" {
		e.Log = slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	n := seq.Add(1)
	base := fmt.Sprintf("certfn-%d-%d", time.Now().UnixNano()%1e8, n)
	e.Table = base
	if err := dynamo.CreateTable(ctx, e.DynamoDB, e.Table, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = e.DynamoDB.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(e.Table)})
	})
	e.WorkerDLQURL = e.createQueue(base+"-worker-dlq", nil)
	e.SignerDLQURL = e.createQueue(base+"-signer-dlq", nil)
	e.WorkerQueueURL = e.createQueue(base+"-worker", map[string]string{"RedrivePolicy": e.redrive(e.WorkerDLQURL)})
	e.SignerQueueURL = e.createQueue(base+"-signer", map[string]string{"RedrivePolicy": e.redrive(e.SignerDLQURL)})
	e.SQS.Reset()
	t.Cleanup(func() {
		if d := e.IAMDenied(); len(d) > 0 && !e.ExpectIAMDenials {
			t.Errorf("calls that infra/terraform/aws/iam.tf does not allow (IAM TEST DOUBLE):\n  %s", strings.Join(d, "\n  "))
		}
	})
	e.Vars = map[string]string{
		awsmode.EnvTable:          e.Table,
		awsmode.EnvQueueURL:       e.WorkerQueueURL,
		awsmode.EnvSignerQueueURL: e.SignerQueueURL,
		awsmode.EnvSecretPrefix:   "certfn",
		awsmode.EnvAutoApprove:    "*",
	}
	if ep, ok := emulators.External(emulators.SecretsManager); ok {
		e.UseSecretsManager(ep)
	}
	return e
}

func (e *Env) createQueue(name string, attrs map[string]string) string {
	e.T.Helper()
	a := map[string]string{"VisibilityTimeout": "30"}
	for k, v := range attrs {
		a[k] = v
	}
	out, err := e.SQS.Client.CreateQueue(e.Ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: a})
	if err != nil {
		e.T.Fatalf("CreateQueue %s: %v", name, err)
	}
	url := aws.ToString(out.QueueUrl)
	e.T.Cleanup(func() {
		_, _ = e.SQS.Client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
	})
	return url
}

func (e *Env) redrive(dlqURL string) string {
	return fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"%d"}`, e.ARN(dlqURL), MaxReceiveCount)
}

// ARN returns a queue's ARN (what Lambda puts in eventSourceARN).
func (e *Env) ARN(url string) string {
	e.T.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if a, ok := e.arns[url]; ok {
		return a
	}
	out, err := e.SQS.Client.GetQueueAttributes(e.Ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		e.T.Fatalf("GetQueueAttributes %s: %v", url, err)
	}
	a := out.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	e.arns[url] = a
	return a
}

// Getenv reads e.Vars plus CERTFN_FUNCTION = role and, with Parameter
// Store (UseSSM), the role's CERTFN_SECRET_CLASSES as lambda.tf sets it.
func (e *Env) Getenv(role string) func(string) string {
	return func(k string) string {
		switch {
		case k == awsmode.EnvFunction:
			return string(role)
		case k == awsmode.EnvSecretClasses && e.SSMEndpoint != "":
			read, _ := SSMClasses(role, e.WorkerManagesCACertificates)
			var b strings.Builder
			for i, c := range read {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(string(c))
			}
			return b.String()
		}
		return e.Vars[k]
	}
}

// Options are the awsmode.Options of a function of this Env.
func (e *Env) Options(role string) awsmode.Options {
	ddb, _, smc := awsmode.ClientsForEndpoints(Endpoint(e.T, emulators.DynamoDB), "", e.SMEndpoint, FastRetry)
	var clk ports.Clock = e.Clock
	if e.EngineClock != nil {
		clk = e.EngineClock
	}
	guard := NewIAMGuard(ddb, role, e.Table)
	smGuard := NewSecretsGuard(countingSecrets{api: smc, counts: e.SMCalls}, role, e.WorkerManagesCACertificates)
	smGuard.Tags = e.secretTags(smc) // uncounted: Usage reports the functions' calls only
	smGuard.Prefix = e.Vars[awsmode.EnvSecretPrefix]
	o := awsmode.Options{Getenv: e.Getenv(role), Clock: clk, Logger: e.Log.With("function", string(role)),
		Metrics: e.Metrics, DynamoDB: guard, SQS: e.SQS, SecretsManager: smGuard}
	e.mu.Lock()
	e.guards = append(e.guards, guard)
	e.smGuards = append(e.smGuards, smGuard)
	if e.SSMEndpoint != "" {
		g := NewSSMGuard(countingSSM{api: ssm.NewFromConfig(awscfg.ForEndpoint(e.SSMEndpoint, FastRetry)), counts: e.SMCalls},
			role, e.Vars[awsmode.EnvSecretPrefix], e.WorkerManagesCACertificates)
		e.ssmGuards = append(e.ssmGuards, g)
		o.SSM = g
	}
	e.mu.Unlock()
	return o
}

// IAMDenied lists the DynamoDB and Secrets Manager calls the IAM guards
// refused, every function's (see IAMGuard, SecretsGuard).
func (e *Env) IAMDenied() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, g := range e.guards {
		out = append(out, g.Denied()...)
	}
	for _, g := range e.smGuards {
		out = append(out, g.Denied()...)
	}
	for _, g := range e.ssmGuards {
		out = append(out, g.Denied()...)
	}
	return out
}

// UseSecretsManager points the functions (built after the call) and
// InstallSecret at the Secrets Manager at endpoint (moto, LocalStack)
// instead of the double. Secret names are prefixed by the Env's table
// name, so Envs sharing one endpoint do not meet.
func (e *Env) UseSecretsManager(endpoint string) {
	e.SMEndpoint = endpoint
	e.Vars[awsmode.EnvSecretPrefix] = "certfn/" + e.Table
}

// UseSSM makes the worker and signer (built after the call) keep their
// secrets in the Parameter Store at endpoint (moto, LocalStack;
// CERTFN_SECRET_STORE=ssm), as the Terraform module's secret_store = "ssm"
// deploys them; InstallSecret and PreviousSecret follow. Parameter paths
// are prefixed by the Env's table name, so Envs sharing one endpoint do
// not meet.
func (e *Env) UseSSM(endpoint string) {
	e.SSMEndpoint = endpoint
	e.Vars[awsmode.EnvSecretStore] = awsmode.SecretStoreSSM
	e.Vars[awsmode.EnvSecretPrefix] = "certfn/" + e.Table
}

// secretTags returns the guard's tag lookup: the double's state when the
// functions use it, else DescribeSecret through api (not counted).
func (e *Env) secretTags(api secrets.API) func(id string) map[string]string {
	if e.SMEndpoint == e.SM.URL() {
		return e.SM.Tags
	}
	return func(id string) map[string]string {
		out, err := api.DescribeSecret(e.Ctx, &secretsmanager.DescribeSecretInput{SecretId: aws.String(id)})
		if err != nil {
			return nil // not found (or unreadable): the guard treats it as absent
		}
		m := map[string]string{}
		for _, t := range out.Tags {
			m[aws.ToString(t.Key)] = aws.ToString(t.Value)
		}
		return m
	}
}

// Runtime builds role's function; mods adjust its options.
func (e *Env) Runtime(role string, mods ...func(*awsmode.Options)) *awsmode.Runtime {
	e.T.Helper()
	o := e.Options(role)
	for _, m := range mods {
		m(&o)
	}
	rt, err := awsmode.FromEnvWith(e.Ctx, role, o)
	if err != nil {
		e.T.Fatalf("FromEnvWith(%s): %v", role, err)
	}
	e.mu.Lock()
	e.runtimes = append(e.runtimes, rt)
	e.mu.Unlock()
	return rt
}

// Receive receives up to max visible messages of queueURL as Lambda's
// event source mapping does, and returns the event it would send.
func (e *Env) Receive(queueURL string, max int) events.SQSEvent {
	e.T.Helper()
	out, err := e.SQS.ReceiveMessage(e.Ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL),
		MaxNumberOfMessages: int32(max), MessageAttributeNames: []string{"All"},
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
	if err != nil {
		e.T.Fatalf("ReceiveMessage: %v", err)
	}
	arn := e.ARN(queueURL)
	ev := events.SQSEvent{Records: []events.SQSMessage{}}
	for _, m := range out.Messages {
		rec := events.SQSMessage{MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle),
			Body: aws.ToString(m.Body), Md5OfBody: aws.ToString(m.MD5OfBody), Attributes: m.Attributes,
			MessageAttributes: map[string]events.SQSMessageAttribute{}, EventSourceARN: arn, EventSource: "aws:sqs", AWSRegion: "us-east-1"}
		if rec.Attributes == nil {
			rec.Attributes = map[string]string{}
		}
		for k, v := range m.MessageAttributes {
			rec.MessageAttributes[k] = events.SQSMessageAttribute{StringValue: v.StringValue, DataType: aws.ToString(v.DataType)}
		}
		ev.Records = append(ev.Records, rec)
	}
	return ev
}

// Finish deletes the messages of ev that resp did not report as failed
// (DeleteMessageBatch, as the event source mapping does).
func (e *Env) Finish(queueURL string, ev events.SQSEvent, resp events.SQSEventResponse) {
	e.T.Helper()
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	var entries []sqstypes.DeleteMessageBatchRequestEntry
	for i, r := range ev.Records {
		if !failed[r.MessageId] {
			entries = append(entries, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: aws.String(r.ReceiptHandle)})
		}
	}
	if len(entries) == 0 {
		return
	}
	out, err := e.SQS.DeleteMessageBatch(e.Ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: entries})
	if err != nil {
		e.T.Fatalf("DeleteMessageBatch: %v", err)
	}
	if len(out.Failed) > 0 {
		e.T.Fatalf("DeleteMessageBatch: %d failed", len(out.Failed))
	}
}

// Deliver runs one event source mapping poll of queueURL into rt: receive
// up to 10 messages, invoke rt.HandleSQS if there are any, delete the
// ones not reported. It returns the number of messages and the failures.
func (e *Env) Deliver(rt *awsmode.Runtime, queueURL string) (int, int) {
	e.T.Helper()
	ev := e.Receive(queueURL, 10)
	if len(ev.Records) == 0 {
		// An empty poll is the event source mapping's idle cost, not the
		// work's: counted apart (see Usage.TotalSQS).
		e.SQS.relabel("ReceiveMessage", "ReceiveMessage"+IdlePoll)
		return 0, 0
	}
	for _, r := range ev.Records {
		// A queue message carries a reconcile key and nothing else.
		if _, err := api.ParseKey(r.Body); err != nil {
			e.T.Errorf("queue message body %q is not a reconcile key: %v", r.Body, err)
		}
	}
	if os.Getenv("CERTFN_TRACE") != "" {
		for _, r := range ev.Records {
			fmt.Fprintf(os.Stderr, "TRACE %s %s %s\n", time.Now().Format("05.000"), rt.Role.Name, r.Body)
		}
	}
	start := time.Now()
	resp, err := rt.HandleSQS(e.Ctx, ev)
	took := time.Since(start)
	if err != nil {
		e.T.Fatalf("%s HandleSQS returned an error (would retry the whole batch): %v", rt.Role.Name, err)
	}
	e.Finish(queueURL, ev, resp)
	e.mu.Lock()
	e.invocations[rt.Role.Name]++
	e.messages[rt.Role.Name] += len(ev.Records)
	e.durations[rt.Role.Name] += took
	e.mu.Unlock()
	return len(ev.Records), len(resp.BatchItemFailures)
}

// Sweep invokes the scheduler once.
func (e *Env) Sweep(rt *awsmode.Runtime) awsmode.SweepResult {
	e.T.Helper()
	start := time.Now()
	res, err := rt.HandleSchedule(e.Ctx, []byte(`{}`))
	took := time.Since(start)
	if err != nil {
		e.T.Fatalf("scheduler: %v", err)
	}
	e.mu.Lock()
	e.invocations[rt.Role.Name]++
	e.durations[rt.Role.Name] += took
	e.mu.Unlock()
	return res
}

// RunUntilIdle delivers the worker and signer queues until neither has a
// visible message (at most maxPolls polls, then it fails t: a loop).
func (e *Env) RunUntilIdle(worker, signer *awsmode.Runtime, maxPolls int) {
	e.T.Helper()
	for polls := 0; polls < maxPolls; {
		n1, _ := e.Deliver(worker, e.WorkerQueueURL)
		n2, _ := e.Deliver(signer, e.SignerQueueURL)
		polls++
		if n1 == 0 && n2 == 0 {
			return
		}
	}
	e.T.Fatalf("queues still busy after %d polls (a message loop?)", maxPolls)
}

// Usage is what a piece of work cost.
type Usage struct {
	// Invocations and Messages per role (Lambda invocations, SQS messages handled).
	Invocations map[string]int
	Messages    map[string]int
	// HandlerTime is the wall time spent in the handlers (in-process,
	// against emulators: not Lambda's billed duration).
	HandlerTime time.Duration
	// DynamoDB sums every function's Store.Counts().
	DynamoDB dynamo.Counts
	// SQSRequests counts SQS API requests per operation (functions and the
	// event source mapping's receive/delete).
	SQSRequests map[string]int
	// SecretStore counts the functions' secret store calls per operation
	// (Secrets Manager's, or Parameter Store's with UseSSM).
	SecretStore map[string]int
}

// TotalInvocations sums Invocations.
func (u Usage) TotalInvocations() int { return sum(u.Invocations) }

// IdlePoll suffixes the SQS operation of an empty receive (the event
// source mapping's polling while idle, a fixed cost per queue).
const IdlePoll = " (empty)"

// TotalSQS sums SQSRequests, without the idle polls.
func (u Usage) TotalSQS() int {
	n := 0
	for op, v := range u.SQSRequests {
		if !strings.HasSuffix(op, IdlePoll) {
			n += v
		}
	}
	return n
}

// HandledMessages sums Messages: the invocations of the worker and signer
// when every message arrives alone (no batching), as work spread over
// time does.
func (u Usage) HandledMessages() int { return sum(u.Messages) }

// TotalSecrets sums SecretStore.
func (u Usage) TotalSecrets() int { return sum(u.SecretStore) }

func sum[K comparable](m map[K]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// String is a one-line summary.
func (u Usage) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invocations %d %v, messages %v; dynamodb reads %d (items %d, units %.1f) writes %d (items %d, units %.1f); sqs requests %d %v; secret store calls %d %v",
		u.TotalInvocations(), u.Invocations, u.Messages, u.DynamoDB.Reads, u.DynamoDB.ItemsRead, u.DynamoDB.ReadUnits,
		u.DynamoDB.Writes, u.DynamoDB.ItemsWritten, u.DynamoDB.WriteUnits, u.TotalSQS(), u.SQSRequests, u.TotalSecrets(), u.SecretStore)
	return b.String()
}

// ResetUsage zeroes every counter (after setup, before the measured work).
func (e *Env) ResetUsage() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.invocations, e.messages, e.durations = map[string]int{}, map[string]int{}, map[string]time.Duration{}
	for _, rt := range e.runtimes {
		rt.Store.ResetCounts()
	}
	e.SQS.Reset()
	e.SM.ResetCalls()
	e.SMCalls.Reset()
}

// Usage returns the counts since the last ResetUsage.
func (e *Env) Usage() Usage {
	e.mu.Lock()
	defer e.mu.Unlock()
	u := Usage{Invocations: map[string]int{}, Messages: map[string]int{}, SQSRequests: e.SQS.Counts(), SecretStore: e.SMCalls.Counts()}
	for k, v := range e.invocations {
		u.Invocations[k] = v
	}
	for k, v := range e.messages {
		u.Messages[k] = v
	}
	for _, v := range e.durations {
		u.HandlerTime += v
	}
	for _, rt := range e.runtimes {
		c := rt.Store.Counts()
		u.DynamoDB.Reads += c.Reads
		u.DynamoDB.Writes += c.Writes
		u.DynamoDB.ReadUnits += c.ReadUnits
		u.DynamoDB.WriteUnits += c.WriteUnits
		u.DynamoDB.ItemsRead += c.ItemsRead
		u.DynamoDB.ItemsWritten += c.ItemsWritten
	}
	return u
}

// VisibleMessages returns the approximate number of visible messages of queueURL.
func (e *Env) VisibleMessages(queueURL string) int {
	e.T.Helper()
	out, err := e.SQS.Client.GetQueueAttributes(e.Ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(queueURL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages}})
	if err != nil {
		e.T.Fatalf("GetQueueAttributes: %v", err)
	}
	var n int
	_, _ = fmt.Sscan(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)], &n)
	return n
}

// WallClock follows the wall clock, shifted by what Advance added: for
// tests whose waits are SQS delays (real time) but which also jump ahead.
type WallClock struct {
	mu  sync.Mutex
	off time.Duration
}

// Now implements ports.Clock.
func (c *WallClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().UTC().Add(c.off)
}

// Advance moves the clock forward by d.
func (c *WallClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}
