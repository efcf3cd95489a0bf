package awse2e

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	sm "github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/certfn/certfn/adapters/aws/awscfg"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/internal/awsmode"
	"github.com/certfn/certfn/internal/awsmode/awstest"
	"github.com/certfn/certfn/tests/emulators"
	"github.com/certfn/certfn/tests/faultsweep"
)

// The fault harness of tests/faults on the Lambda functions themselves:
// the worker, signer, scheduler and api built by
// awsmode.FromEnvWith as Lambda runs them, handling SQS events received
// from local-aws-sqs, with their state in dynalite and their secrets in the
// Secrets Manager double. Every AWS request the functions make goes
// through one HTTP transport that counts it and faults the N-th:
//
//   - crash: the request takes effect, then the invocation's sandbox dies:
//     every later request of it fails, its messages are not deleted and
//     come back after the queue's visibility timeout (the clock moves by
//     the Terraform module's timeout: worker 720 s, signer 360 s), and
//     the functions are built again (a cold start);
//   - transient: the request fails before it is sent (a connection reset);
//     the SDK's retryer usually sends it again;
//   - lost: the request takes effect and its answer is lost (the SDK
//     retries: a conditional write then meets its own change, a message
//     is sent twice, a secret is created twice).
//
// For every N it asserts: the Certificate is Ready at revision 1 with a
// key pair that matches, one CertificateRequest was created, every request
// is final, no next-private-key secret is left, nothing is in a
// dead-letter queue, and it converged within one visibility timeout plus
// one sweep of fake time after the fault. The requests of one invocation
// may run concurrently, so the order of the calls is not asserted.
//
// Each run is a deployment of its own (a table and four queues), so a
// run costs about a second: by default each request is faulted as one of
// the three kinds in turn (request n as kind n mod 3), which `make test`
// runs; CERTFN_FAULTS_STRIDE=1 faults every request as every kind:
// `CERTFN_FAULTS_STRIDE=1 go test -count=1 -run 'TestFaultHarnessOnLambda$' -v ./tests/awse2e/`.
func TestFaultHarnessOnLambda(t *testing.T) {
	faultsweep.Sweep(t, "fault harness on the Lambda functions (dynalite, local-aws-sqs, Secrets Manager double), CA issuance",
		lambdaBound, func(n int, kind string) faultsweep.Result { return runLambdaFaults(t, n, kind, nil) })
}

// lambdaBound is one visibility timeout (the worker's, the longer) plus
// one sweep.
const lambdaBound = 720*time.Second + time.Minute

// Visibility timeouts of the Terraform module (6 × the function timeout).
var lambdaVisibility = map[string]time.Duration{app.Worker.Name: 720 * time.Second, app.Signer.Name: 360 * time.Second}

var errSandboxDied = errors.New("fault harness: the invocation's sandbox died")

// faultRT is the HTTP transport of the functions' AWS clients.
type faultRT struct {
	mu       sync.Mutex
	counting bool
	labels   []string
	at       int
	kind     string
	fired    string
	firedAt  time.Time
	now      func() time.Time // the functions' (fake) clock
	dead     bool
}

func (f *faultRT) RoundTrip(req *http.Request) (*http.Response, error) {
	return f.roundTrip(req, awsOperation(req), http.DefaultTransport)
}

// roundTrip counts req as label and sends it through next, faulted when
// it is the at-th counted request.
func (f *faultRT) roundTrip(req *http.Request, label string, next http.RoundTripper) (*http.Response, error) {
	f.mu.Lock()
	if f.dead {
		f.mu.Unlock()
		return nil, errSandboxDied
	}
	fault := ""
	if f.counting {
		f.labels = append(f.labels, label)
		if len(f.labels) == f.at && f.fired == "" {
			fault, f.fired, f.firedAt = f.kind, label, f.now()
		}
	}
	f.mu.Unlock()
	if fault == "transient" {
		return nil, fmt.Errorf("fault harness: connection reset before %s was sent", label)
	}
	resp, err := next.RoundTrip(req)
	switch fault {
	case "crash", "lost":
		if resp != nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if fault == "crash" {
			f.mu.Lock()
			f.dead = true
			f.mu.Unlock()
			return nil, errSandboxDied
		}
		return nil, fmt.Errorf("fault harness: the answer to %s was lost: %w", label, io.ErrUnexpectedEOF)
	}
	return resp, err
}

func (f *faultRT) isDead() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dead
}

// awsOperation names an AWS request "service.Operation": the JSON
// protocols' X-Amz-Target (DynamoDB, Secrets Manager, SQS), else the query
// protocol's Action.
func awsOperation(req *http.Request) string {
	if t := req.Header.Get("X-Amz-Target"); t != "" {
		svc, op, _ := strings.Cut(t, ".")
		switch {
		case strings.HasPrefix(svc, "DynamoDB"):
			svc = "dynamodb"
		case strings.HasPrefix(svc, "AmazonSQS"):
			svc = "sqs"
		case strings.HasPrefix(strings.ToLower(svc), "secretsmanager"):
			svc = "secretsmanager"
		}
		return svc + "." + op
	}
	if a := req.URL.Query().Get("Action"); a != "" {
		return req.URL.Host + "." + a
	}
	if req.Body != nil && req.GetBody != nil {
		if b, err := req.GetBody(); err == nil {
			raw, _ := io.ReadAll(b)
			if v, err := url.ParseQuery(string(raw)); err == nil && v.Get("Action") != "" {
				return "sqs." + v.Get("Action")
			}
		}
	}
	return req.URL.Host + req.URL.Path
}

// lambdaWorld is one deployment (a table and queues of its own).
type lambdaWorld struct {
	t        *testing.T
	env      *awstest.Env
	rt       *faultRT
	fns      map[string]*awsmode.Runtime
	observer *deployment // unfaulted functions, for reads
	restarts int
	logs     *syncBuffer // the functions' warnings
	// trace is what happened to each message the functions received.
	trace map[string][]string
	// acme, when set, is the ACME flow's world (faults_acme_test.go).
	acme *acmeWorld
}

// syncBuffer is a bytes.Buffer for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// boot builds the four functions over clients whose requests go through
// w.rt (a new sandbox for each: a cold start).
func (w *lambdaWorld) boot() {
	hc := &http.Client{Transport: w.rt}
	cfg := func(ep string) aws.Config {
		c := awscfg.ForEndpoint(ep, awstest.FastRetry)
		c.HTTPClient = hc
		return c
	}
	w.fns = map[string]*awsmode.Runtime{}
	for _, role := range []string{app.API.Name, app.Worker.Name, app.Signer.Name, app.Scheduler.Name} {
		w.fns[role] = w.env.Runtime(role, func(o *awsmode.Options) {
			o.DynamoDB = dynamodb.NewFromConfig(cfg(awstest.Endpoint(w.t, emulators.DynamoDB)))
			o.SQS = sqs.NewFromConfig(cfg(awstest.Endpoint(w.t, emulators.SQS)))
			o.SecretsManager = sm.NewFromConfig(cfg(w.env.SMEndpoint))
			if w.acme != nil {
				w.acme.options(w.rt, o)
			}
		})
	}
}

// deliver is one event source mapping poll of role's queue. A crash
// leaves the batch's messages undeleted: they come back after the
// visibility timeout (made visible at once, the clock moved by it). A
// message reported failed comes back at once (its retry delay is on the
// wall clock; the clock moves by a second).
func (w *lambdaWorld) deliver(role string, queueURL string) int {
	ev := w.env.Receive(queueURL, 10)
	if len(ev.Records) == 0 {
		return 0
	}
	resp, err := w.fns[role].HandleSQS(w.env.Ctx, ev)
	failedIDs := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failedIDs[f.ItemIdentifier] = true
	}
	for _, r := range ev.Records {
		what := "handled"
		switch {
		case w.rt.isDead():
			what = "died"
		case failedIDs[r.MessageId]:
			what = "failed"
		}
		w.trace[r.MessageId] = append(w.trace[r.MessageId], fmt.Sprintf("%s receive %s: %s", role, r.Attributes["ApproximateReceiveCount"], what))
	}
	if w.rt.isDead() {
		w.visible(queueURL, ev.Records)
		w.env.Clock.Advance(lambdaVisibility[role])
		w.restart()
		return len(ev.Records)
	}
	if err != nil {
		w.t.Fatalf("%s HandleSQS: %v", role, err)
	}
	w.env.Finish(queueURL, ev, resp)
	if len(resp.BatchItemFailures) > 0 {
		failed := map[string]bool{}
		for _, f := range resp.BatchItemFailures {
			failed[f.ItemIdentifier] = true
		}
		var again []events.SQSMessage
		for _, r := range ev.Records {
			if failed[r.MessageId] {
				again = append(again, r)
			}
		}
		w.visible(queueURL, again)
		w.env.Clock.Advance(time.Second)
	}
	return len(ev.Records)
}

// restart replaces the dead sandbox: new functions (a cold start) whose
// requests succeed again; the fault does not fire twice.
func (w *lambdaWorld) restart() {
	old := w.rt
	old.mu.Lock()
	w.rt = &faultRT{counting: true, at: old.at, kind: old.kind, fired: old.fired, firedAt: old.firedAt, now: old.now, labels: old.labels}
	old.mu.Unlock()
	w.restarts++
	w.boot()
}

func (w *lambdaWorld) visible(queueURL string, recs []events.SQSMessage) {
	for _, r := range recs {
		_, _ = w.env.SQS.ChangeMessageVisibility(w.env.Ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(queueURL),
			ReceiptHandle: aws.String(r.ReceiptHandle), VisibilityTimeout: 0})
	}
}

// converged says whether the flow reached its end, and why not.
func (w *lambdaWorld) converged() (bool, string) {
	o := w.observer
	c, err := o.api.Repo.Get(w.env.Ctx, api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "web"})
	if err != nil {
		return false, err.Error()
	}
	crt := c.(*api.Certificate)
	if !api.IsTrue(crt.Status.Conditions, api.CertificateConditionReady) || api.IsTrue(crt.Status.Conditions, api.CertificateConditionIssuing) ||
		revision(crt) != 1 {
		return false, fmt.Sprintf("Certificate not Ready at revision 1: %+v", crt.Status.Conditions)
	}
	if crt.Status.NextPrivateKeySecretName != nil {
		return false, "the next private key is still named"
	}
	if w.acme != nil {
		if ok, why := w.acme.converged(); !ok {
			return false, why
		}
	}
	reqs, err := o.api.Repo.List(w.env.Ctx, api.KindCertificateRequest, "default")
	if err != nil {
		return false, err.Error()
	}
	for _, r := range reqs {
		if !r.(*api.CertificateRequest).IsFinal() {
			return false, "request " + r.GetObjectMeta().Name + " not final"
		}
	}
	return true, ""
}

// check asserts the invariants of a converged run.
func (w *lambdaWorld) check() error {
	o := w.observer
	var bad []string
	reqs, _ := o.api.Repo.List(w.env.Ctx, api.KindCertificateRequest, "default")
	if len(reqs) != 1 {
		bad = append(bad, fmt.Sprintf("%d CertificateRequests, want 1", len(reqs)))
	}
	sec, err := o.worker.Secrets.Get(w.env.Ctx, "default", "web-tls")
	if err != nil {
		bad = append(bad, "web-tls: "+err.Error())
	} else if !keyPairMatches(sec.Data["tls.crt"], sec.Data["tls.key"]) {
		bad = append(bad, "web-tls: tls.key does not match tls.crt")
	} else if _, err := pki.ParseChainPEM(sec.Data["tls.crt"]); err != nil {
		bad = append(bad, "web-tls: "+err.Error())
	}
	if _, err := o.worker.Secrets.Get(w.env.Ctx, "default", "web-next-private-key"); err == nil {
		bad = append(bad, "orphaned web-next-private-key secret")
	}
	if w.acme != nil {
		bad = append(bad, w.acme.check(sec.Data["tls.crt"])...)
	}
	for _, q := range []string{w.env.WorkerDLQURL, w.env.SignerDLQURL} {
		if n := w.env.VisibleMessages(q); n > 0 {
			var keys []string
			for _, r := range w.env.Receive(q, 10).Records {
				keys = append(keys, r.Body+" "+r.MessageId+": "+strings.Join(w.trace[r.MessageId], ", "))
			}
			bad = append(bad, fmt.Sprintf("%d messages in dead-letter queue %s: %v; the functions' warnings:\n%s", n, q, keys, w.logs.String()))
		}
	}
	if len(bad) > 0 {
		return errors.New(strings.Join(bad, "; "))
	}
	return nil
}

// runLambdaFaults runs the CA issuance flow (acme nil) or the ACME one
// with AWS request at faulted as kind (at 0: a clean run).
func runLambdaFaults(t *testing.T, at int, kind string, acme *acmeFlow) faultsweep.Result {
	t.Helper()
	env := awstest.New(t)
	// local-aws-sqs counts a ChangeMessageVisibility towards the redrive
	// policy's maxReceiveCount as if it were a receive (measured: a message
	// received 3 times with one visibility change each goes to the
	// dead-letter queue at maxReceiveCount 5); here each failure makes two
	// (the function's retry delay, the harness's "now"). SQS counts
	// receives only: twice the Terraform default models it.
	for _, q := range []struct{ url, dlq string }{{env.WorkerQueueURL, env.WorkerDLQURL}, {env.SignerQueueURL, env.SignerDLQURL}} {
		if _, err := env.SQS.Client.SetQueueAttributes(env.Ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(q.url), Attributes: map[string]string{
			"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"%d"}`, env.ARN(q.dlq), 2*awstest.MaxReceiveCount)}}); err != nil {
			t.Fatal(err)
		}
	}
	w := &lambdaWorld{t: t, env: env, rt: &faultRT{at: at, kind: kind, now: env.Clock.Now}, logs: &syncBuffer{}, trace: map[string][]string{}}
	env.Log = slog.New(slog.NewTextHandler(w.logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if acme != nil {
		w.acme = acme.world(w)
	}
	w.observer = &deployment{Env: env, t: t, api: env.Runtime(app.API.Name), worker: env.Runtime(app.Worker.Name)}
	w.boot()
	if w.acme != nil {
		w.acme.setUp()
	} else {
		w.observer.installCA("ca")
		w.observer.apply(leafYAML("web", "ca"))
	}
	w.rt.mu.Lock()
	w.rt.counting = true
	w.rt.mu.Unlock()

	var run faultsweep.Result
	var ref, convergedAt time.Time
	for steps := 0; steps < 500; steps++ {
		if w.acme != nil {
			w.acme.elapse()
		}
		if ref.IsZero() && w.rt.fired != "" {
			ref = w.rt.firedAt
		}
		ok, why := w.converged()
		if ok && convergedAt.IsZero() {
			convergedAt = env.Clock.Now()
		} else if !ok {
			convergedAt = time.Time{}
		}
		n := w.deliver(app.Worker.Name, env.WorkerQueueURL) + w.deliver(app.Signer.Name, env.SignerQueueURL)
		if n > 0 {
			continue
		}
		res, err := w.fns[app.Scheduler.Name].HandleSchedule(env.Ctx, []byte(`{}`))
		if w.rt.isDead() {
			w.restart()
			continue
		}
		if err == nil && res.Sent > 0 {
			continue
		}
		if ok {
			run.Labels, run.Fired, run.Logs = w.rt.labels, w.rt.fired, w.logs.String()
			if kind == "crash" && w.restarts != 1 && run.Fired != "" {
				run.Err = fmt.Errorf("%d restarts after a crash", w.restarts)
				return run
			}
			if !ref.IsZero() && convergedAt.After(ref) {
				run.Lag = convergedAt.Sub(ref)
			}
			run.Err = w.check()
			return run
		}
		if !ref.IsZero() && env.Clock.Now().Sub(ref) > 2*time.Hour {
			run.Err = fmt.Errorf("stuck 2 h after the fault: %s", why)
			return run
		}
		env.Clock.Advance(time.Minute) // the next sweep
	}
	run.Labels, run.Fired = w.rt.labels, w.rt.fired
	run.Err = errors.New("no end after 500 steps")
	return run
}
