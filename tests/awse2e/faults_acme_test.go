package awse2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/certfn/certfn/adapters/aws/sqsq"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/internal/awsmode"
	"github.com/certfn/certfn/tests/faultsweep"
)

// The fault harness of TestFaultHarnessOnLambda on an ACME issuance
// (HTTP-01, Pebble in this process): the worker registers the
// ClusterIssuer's account, orders, answers the challenge (the http01
// function answers Pebble's validation from DynamoDB) and finalizes; the
// signer is never involved. Every AWS request of the api, worker, signer
// and scheduler and every ACME HTTP request of the worker go through the
// counting transport and are faulted the same three ways (an ACME request
// "crashed" reached Pebble, then the invocation died; a "lost" one reached
// Pebble and its answer was lost). The http01 function's own reads are not
// faulted (Pebble's VA calls it on its own goroutine, outside the
// invocation being faulted).
//
// Pebble validates and issues asynchronously, on the wall clock; so that
// every run makes the same calls, the ACME transport waits for it and
// normalizes its answers (faultsweep.ACMECall). The worker's short SQS delays
// (its ACME polls, at most sqsDelayCap) are sent without DelaySeconds and
// the fake clock is moved by the delay before the next delivery, so that
// runs take no wall time waiting for SQS. Authorization reuse is off
// (PEBBLE_AUTHZREUSE=0; Pebble still reuses one in a hundred, which only a
// second Order of a faulted run can meet), and a first issuance sends no
// "replaces".
//
// On top of the CA flow's invariants it asserts: one finalize reached
// Pebble (one certificate issued), one Order valid, every Order and
// Challenge final, the secrets are web-tls and the account key and
// nothing else, the certificate verifies against Pebble's roots, Pebble's
// VA was answered by the http01 function, and no state item nor log line
// holds private key material. The bound is acmeLambdaBound.
//
// The ACME flow is sparser in `make test` (acmeStride) than the CA one:
// CERTFN_FAULTS_STRIDE=1 faults every request as every kind:
// `CERTFN_FAULTS_STRIDE=1 go test -count=1 -run TestFaultHarnessOnLambdaACME -v ./tests/awse2e/`.
func TestFaultHarnessOnLambdaACME(t *testing.T) {
	f := newACMEFlow(t)
	faultsweep.SweepStride(t, "fault harness on the Lambda functions (dynalite, local-aws-sqs, Secrets Manager double, Pebble), ACME HTTP-01 issuance",
		acmeLambdaBound, acmeStride, func(n int, kind string) faultsweep.Result { return runLambdaFaults(t, n, kind, f) })
}

// acmeStride is the ACME sweep's default stride (CERTFN_FAULTS_STRIDE
// overrides it): three requests in every 18, each as one of the kinds in
// turn, so that `make test` spends at most about 30 s on it (a run takes
// about a second; the clean run makes about 160 requests).
const acmeStride = 18

// acmeLambdaBound is the CA flow's bound (the worker's visibility timeout
// plus a sweep) plus the ACME polls that follow the redelivery (each poll
// a DelaySeconds of at most 2 s: the worker's acme.DefaultPollMax; 10 s
// covers the challenge's and the order's).
const acmeLambdaBound = lambdaBound + 10*time.Second

// sqsDelayCap is the longest delay the ACME flow moves onto the fake
// clock (the ACME polls'); longer ones are SQS's.
const sqsDelayCap = 10 * time.Second

// acmeFlow is what the ACME runs share: Pebble, and the HTTP-01 address
// Pebble's VA calls, served by the current run's http01 function.
type acmeFlow struct {
	t       *testing.T
	peb     *pebbleServer
	h01Addr string
	mu      sync.Mutex
	cur     *acmeWorld
}

func newACMEFlow(t *testing.T) *acmeFlow {
	t.Helper()
	port := freePort(t)
	f := &acmeFlow{t: t, h01Addr: fmt.Sprintf("127.0.0.1:%d", port)}
	f.peb = startPebble(t, port)
	faultsweep.ServeHTTP01(t, f.h01Addr, func(rw http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		a := f.cur
		f.mu.Unlock()
		if a == nil {
			http.Error(rw, "no run", http.StatusServiceUnavailable)
			return
		}
		a.serveHTTP01(rw, r)
	})
	return f
}

// world makes w the current run of the flow.
func (f *acmeFlow) world(w *lambdaWorld) *acmeWorld {
	// Pebble issues on the wall clock: the fake clock starts a minute
	// ahead, so a new certificate is never "not yet valid".
	w.env.Clock.Set(time.Now().UTC().Truncate(time.Second).Add(time.Minute))
	a := &acmeWorld{f: f, w: w, h01: w.env.Runtime(app.HTTP01.Name), pebble: &faultsweep.Pebble{}}
	f.mu.Lock()
	f.cur = a
	f.mu.Unlock()
	return a
}

// acmeWorld is one ACME run.
type acmeWorld struct {
	f      *acmeFlow
	w      *lambdaWorld
	h01    *awsmode.Runtime // unfaulted
	pebble *faultsweep.Pebble

	mu sync.Mutex
	// delay is the longest SQS delay sent since the last delivery.
	delay time.Duration
}

// setUp applies the ClusterIssuer and the Certificate.
func (a *acmeWorld) setUp() {
	a.w.observer.apply(a.f.peb.http01IssuerYAML() + `---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web, namespace: default}
spec:
  secretName: web-tls
  dnsNames: [web.example.com]
  privateKey: {algorithm: ECDSA, size: 256}
  issuerRef: {name: pebble, kind: ClusterIssuer}
`)
}

// options points a function built over rt at Pebble.
func (a *acmeWorld) options(rt *faultRT, o *awsmode.Options) {
	o.ACME.HTTP01SelfCheckAddr = a.f.h01Addr
	o.ACME.WrapTransport = func(next http.RoundTripper) http.RoundTripper {
		return acmeRT{a: a, f: rt, next: next}
	}
	o.SQS = delaySQS{API: o.SQS, a: a}
}

// elapse moves the fake clock by the SQS delay sent since the last
// delivery (its messages are visible now).
func (a *acmeWorld) elapse() {
	a.mu.Lock()
	d := a.delay
	a.delay = 0
	a.mu.Unlock()
	if d > 0 {
		a.w.env.Clock.Advance(d)
	}
}

// serveHTTP01 plays the http01 function's Function URL (see serveHTTP01).
func (a *acmeWorld) serveHTTP01(rw http.ResponseWriter, r *http.Request) {
	a.pebble.Served(r.UserAgent(), invokeHTTP01(a.h01, rw, r))
}

// delaySQS sends the short delays (at most sqsDelayCap) without
// DelaySeconds and records them for elapse.
type delaySQS struct {
	sqsq.API
	a *acmeWorld
}

func (q delaySQS) short(s int32) bool {
	d := time.Duration(s) * time.Second
	if s <= 0 || d > sqsDelayCap {
		return false
	}
	q.a.mu.Lock()
	q.a.delay = max(q.a.delay, d)
	q.a.mu.Unlock()
	return true
}

func (q delaySQS) SendMessage(ctx context.Context, in *sqs.SendMessageInput, o ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	if q.short(in.DelaySeconds) {
		c := *in
		c.DelaySeconds = 0
		in = &c
	}
	return q.API.SendMessage(ctx, in, o...)
}

func (q delaySQS) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, o ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	c := *in
	c.Entries = append(c.Entries[:0:0], in.Entries...)
	for i := range c.Entries {
		if q.short(c.Entries[i].DelaySeconds) {
			c.Entries[i].DelaySeconds = 0
		}
	}
	return q.API.SendMessageBatch(ctx, &c, o...)
}

// acmeRT counts and faults the worker's ACME requests through the
// sandbox's faultRT and normalizes Pebble's answers (faultsweep.ACMECall).
type acmeRT struct {
	a    *acmeWorld
	f    *faultRT
	next http.RoundTripper
}

func (r acmeRT) RoundTrip(req *http.Request) (*http.Response, error) {
	c := r.a.pebble.Call(req)
	resp, err := r.f.roundTrip(req, c.Label, pebbleSide{c: c, next: r.next})
	if err != nil {
		return resp, err
	}
	return c.Settle(resp)
}

// pebbleSide sees Pebble's answers before a fault discards them.
type pebbleSide struct {
	c    faultsweep.ACMECall
	next http.RoundTripper
}

func (p pebbleSide) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := p.next.RoundTrip(req)
	if err == nil {
		p.c.Answered(resp)
	}
	return resp, err
}

// converged says whether every Order and Challenge is final.
func (a *acmeWorld) converged() (bool, string) {
	for _, kind := range []string{api.KindOrder, api.KindChallenge} {
		objs, err := a.w.observer.api.Repo.List(a.w.env.Ctx, kind, "default")
		if err != nil {
			return false, err.Error()
		}
		for _, o := range objs {
			final := false
			switch v := o.(type) {
			case *api.Order:
				final = v.IsFinal()
			case *api.Challenge:
				final = v.IsFinal()
			}
			if !final {
				return false, kind + " " + o.GetObjectMeta().Name + " not final"
			}
		}
	}
	return true, ""
}

// check asserts the ACME invariants of a converged run (tlsCrt: web-tls's).
func (a *acmeWorld) check(tlsCrt []byte) []string {
	ctx := a.w.env.Ctx
	orders, err := a.w.observer.api.Repo.List(ctx, api.KindOrder, "default")
	if err != nil {
		return []string{err.Error()}
	}
	valid := 0
	for _, o := range orders {
		if o.(*api.Order).Status.State == api.StateValid {
			valid++
		}
	}
	bad := a.pebble.Check(valid, len(orders))
	names := a.w.env.SM.Names()
	for _, n := range names {
		if n != "certfn/default/web-tls" && n != "certfn/cert-manager/pebble-account" {
			bad = append(bad, "orphaned secret "+n)
		}
	}
	if len(names) != 2 {
		bad = append(bad, fmt.Sprintf("%d secrets, want web-tls and the account key: %v", len(names), names))
	}
	if len(tlsCrt) > 0 {
		if err := faultsweep.Verify(tlsCrt, a.f.peb.roots, "web.example.com"); err != nil {
			bad = append(bad, "web-tls does not verify against Pebble's roots: "+err.Error())
		}
	}
	if err := keysOutsideSecrets(ctx, a.w.env.DynamoDB, a.w.env.Table); err != nil {
		bad = append(bad, err.Error())
	}
	if strings.Contains(a.w.logs.String(), "PRIVATE KEY") {
		bad = append(bad, "a log line holds private key material")
	}
	return bad
}

// keysOutsideSecrets scans the state table for private key material (the
// error-returning form of scanForKeys).
func keysOutsideSecrets(ctx context.Context, db *dynamodb.Client, table string) error {
	out, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table)})
	if err != nil {
		return err
	}
	for _, it := range out.Items {
		for name, v := range it {
			if strings.Contains(fmt.Sprint(v), "PRIVATE KEY") {
				return fmt.Errorf("state item attribute %s holds private key material", name)
			}
		}
	}
	return nil
}
