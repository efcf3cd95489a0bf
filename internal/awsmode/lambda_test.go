package awsmode_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/kernel"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/internal/awsmode"
	"github.com/certfn/certfn/internal/awsmode/awstest"
)

const selfSignedYAML = `apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: selfsigned}
spec: {selfSigned: {}}
`

const flakyYAML = `apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: flaky, namespace: default}
spec:
  secretName: flaky-tls
  dnsNames: [flaky.example.com]
  issuerRef: {name: selfsigned, kind: ClusterIssuer}
`

// sqsEvent fills testdata/sqs-batch.json (a Lambda SQS event) with the
// ids and receipt handles of real messages received from url.
func sqsEvent(t *testing.T, e *awstest.Env, url string) events.SQSEvent {
	t.Helper()
	raw, err := os.ReadFile("testdata/sqs-batch.json")
	if err != nil {
		t.Fatal(err)
	}
	var tmpl events.SQSEvent
	if err := json.Unmarshal(raw, &tmpl); err != nil {
		t.Fatal(err)
	}
	for _, r := range tmpl.Records {
		format := ""
		if a, ok := r.MessageAttributes["certfn-format"]; ok {
			format = *a.StringValue
		}
		send(t, e, url, r.Body, format)
	}
	byBody := map[string]sqstypes.Message{}
	for deadline := time.Now().Add(10 * time.Second); len(byBody) < len(tmpl.Records); {
		if time.Now().After(deadline) {
			t.Fatalf("received %d of %d messages", len(byBody), len(tmpl.Records))
		}
		out, err := e.SQS.Client.ReceiveMessage(e.Ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			byBody[aws.ToString(m.Body)] = m
		}
	}
	s := string(raw)
	for i, r := range tmpl.Records {
		m, ok := byBody[r.Body]
		if !ok {
			t.Fatalf("message %q not received", r.Body)
		}
		n := string(rune('1' + i))
		s = strings.NewReplacer("{{ID"+n+"}}", aws.ToString(m.MessageId), "{{RH"+n+"}}", aws.ToString(m.ReceiptHandle),
			"{{MD5_"+n+"}}", aws.ToString(m.MD5OfBody)).Replace(s)
	}
	s = strings.ReplaceAll(s, "{{ARN}}", e.ARN(url))
	var ev events.SQSEvent
	if err := json.Unmarshal([]byte(s), &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

// One SQS batch holds a malformed body, a key of an unknown kind, a body
// of an unknown format version, a good key and a good key whose reconcile
// fails transiently: only the last is reported in batchItemFailures (with
// its visibility set to the engine's backoff for its receive count), the
// others are acknowledged without holding the batch back.
func TestSQSBatchReportsOnlyTransientFailures(t *testing.T) {
	e := awstest.New(t)
	apiRT := e.Runtime(app.API.Name)
	apply(t, apiRT, selfSignedYAML+"---\n"+flakyYAML)
	drain(t, e, e.WorkerQueueURL)
	flaky := api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "flaky"}
	worker := e.Runtime(app.Worker.Name, func(o *awsmode.Options) {
		o.WrapStore = func(s ports.Store) ports.Store { return failGets{Store: s, key: flaky} }
	})
	ev := sqsEvent(t, e, e.WorkerQueueURL)
	e.SQS.Reset()
	resp, err := worker.HandleSQS(e.Ctx, ev)
	if err != nil {
		t.Fatalf("HandleSQS returned an error (Lambda would retry the whole batch): %v", err)
	}
	got, _ := json.Marshal(resp)
	want := `{"batchItemFailures":[{"itemIdentifier":"` + ev.Records[4].MessageId + `"}]}`
	if string(got) != want {
		t.Fatalf("response %s, want %s", got, want)
	}
	// attempt 3 (ApproximateReceiveCount) → the engine's backoff 4 s.
	if vis := e.SQS.VisibilityChanges(); len(vis) != 1 || vis[0] != int32(kernel.RetryBackoff(3)/time.Second) {
		t.Fatalf("visibility changes %v, want [%d]", vis, kernel.RetryBackoff(3)/time.Second)
	}
	if n := e.Metrics.Sum("certfn_bad_messages_total"); n != 3 {
		t.Errorf("bad messages counted %v, want 3", n)
	}
	// The good key was reconciled: the issuer is Ready.
	iss, _ := load(t, apiRT, api.Key{Kind: api.KindClusterIssuer, Name: "selfsigned"})
	if !api.IsTrue(iss.(*api.ClusterIssuer).Status.Conditions, api.IssuerConditionReady) {
		t.Fatalf("selfsigned not Ready: %+v", iss.(*api.ClusterIssuer).Status.Conditions)
	}
	// As the event source mapping does: delete what was not reported. The
	// failed message comes back only after its backoff.
	e.Finish(e.WorkerQueueURL, ev, resp)
	drain(t, e, e.WorkerQueueURL) // the issuer's own wake-up
	if ev := e.Receive(e.WorkerQueueURL, 10); len(ev.Records) != 0 {
		t.Fatalf("redelivered before the backoff: %+v", ev.Records)
	}
	deadline := time.Now().Add(kernel.RetryBackoff(3) + 5*time.Second)
	for {
		ev := e.Receive(e.WorkerQueueURL, 10)
		if len(ev.Records) == 1 && ev.Records[0].Body == flaky.String() {
			break
		}
		if len(ev.Records) > 0 || time.Now().After(deadline) {
			t.Fatalf("after the backoff got %+v, want only %s", ev.Records, flaky)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// Copies of one key in a batch are handled once and all acknowledged.
func TestSQSBatchHandlesDuplicatesOnce(t *testing.T) {
	e := awstest.New(t)
	apiRT := e.Runtime(app.API.Name)
	apply(t, apiRT, selfSignedYAML)
	drain(t, e, e.WorkerQueueURL)
	worker := e.Runtime(app.Worker.Name)
	for range 3 {
		send(t, e, e.WorkerQueueURL, "ClusterIssuer/selfsigned", "1")
	}
	var ev events.SQSEvent
	for deadline := time.Now().Add(10 * time.Second); len(ev.Records) < 3; {
		if time.Now().After(deadline) {
			t.Fatalf("received %d of 3 messages", len(ev.Records))
		}
		ev.Records = append(ev.Records, e.Receive(e.WorkerQueueURL, 10).Records...)
	}
	resp, err := worker.HandleSQS(e.Ctx, ev)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("resp %+v err %v, want every copy acknowledged", resp, err)
	}
	// One reconcile for the three copies (plus the follow-up its write woke).
	if n := e.Metrics.Sum("certfn_reconciles_total") - e.Metrics.Sum("certfn_follow_ups_total"); n != 1 {
		t.Errorf("reconciles of the message %v, want 1", n)
	}
	if n := e.Metrics.Sum("certfn_duplicate_messages_total"); n != 2 {
		t.Errorf("duplicates %v, want 2", n)
	}
}

// Out of time (the invocation's deadline passed): nothing is handled and
// every message is reported, so none is lost.
func TestSQSBatchAfterDeadlineReportsEverything(t *testing.T) {
	e := awstest.New(t)
	worker := e.Runtime(app.Worker.Name)
	ctx, cancel := context.WithCancel(e.Ctx)
	cancel()
	ev := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "a", Body: "ClusterIssuer/x"}, {MessageId: "b", Body: "ClusterIssuer/y"}}}
	resp, err := worker.HandleSQS(ctx, ev)
	if err != nil || len(resp.BatchItemFailures) != 2 {
		t.Fatalf("resp %+v err %v, want both reported", resp, err)
	}
}

func TestScheduleSendsDueKeysInBatches(t *testing.T) {
	e := awstest.New(t)
	apiRT := e.Runtime(app.API.Name)
	var manifests []string
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"} {
		manifests = append(manifests, strings.ReplaceAll(selfSignedYAML, "selfsigned", "ss-"+n))
	}
	apply(t, apiRT, strings.Join(manifests, "---\n"))
	drain(t, e, e.WorkerQueueURL)
	sched := e.Runtime(app.Scheduler.Name)
	e.SQS.Reset()
	// Nothing is due yet (created with the follow-up grace of 2 minutes).
	if res := e.Sweep(sched); res.Due != 0 {
		t.Fatalf("sweep before due: %+v", res)
	}
	e.Clock.Advance(3 * time.Minute)
	res := e.Sweep(sched)
	if res.Due != 12 || res.Sent != 12 {
		t.Fatalf("sweep: %+v, want 12 due and sent", res)
	}
	if c := e.SQS.Counts(); c["SendMessageBatch"] != 2 || c["SendMessage"] != 0 {
		t.Fatalf("SQS requests %v, want 2 SendMessageBatch and no SendMessage", c)
	}
	if got := drain(t, e, e.WorkerQueueURL); len(got) != 12 || got[0] != "ClusterIssuer/ss-a" {
		t.Fatalf("worker queue holds %v", got)
	}
	// A scheduler has no secret store and no signer.
	if sched.Secrets != nil || len(sched.App.Wiring().Signers) != 0 {
		t.Fatal("scheduler has a secret store or signers")
	}
}

// http01Event fills a testdata HTTP event template; host, when set,
// replaces the template's Host header.
func http01Event(t *testing.T, file, method, path string, host ...string) json.RawMessage {
	t.Helper()
	raw, err := os.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	r := []string{"{{METHOD}}", method, "{{PATH}}", path}
	if len(host) > 0 {
		r = append(r, `"host": "www.example.com"`, `"host": "`+host[0]+`"`, `"www.example.com"`, `"`+host[0]+`"`,
			`"host": "abcdefghijklmnop.lambda-url.us-east-1.on.aws"`, `"host": "`+host[0]+`"`)
	}
	return json.RawMessage(strings.NewReplacer(r...).Replace(string(raw)))
}

func TestHTTP01ServesCurrentTokensOverFunctionURLAndALB(t *testing.T) {
	e := awstest.New(t)
	rt := e.Runtime(app.HTTP01.Name)
	if rt.Kernel != nil || rt.Queue != nil || rt.Secrets != nil {
		t.Fatal("the http01 function has an engine, a queue or a secret store")
	}
	const token, keyAuth = "evaGxfADs6pSRb2LAv9IZf17Dt3juxGJ-PCt92wr-oA", "evaGxfADs6pSRb2LAv9IZf17Dt3juxGJ-PCt92wr-oA.9jg46WB3rR_AHD-EBXdN7cBkH1WOu0tA3M9fm21mqTI"
	ch := &api.Challenge{TypeMeta: api.TypeMeta{APIVersion: api.ACMEV1, Kind: api.KindChallenge},
		ObjectMeta: api.ObjectMeta{Name: "web-1-0-1", Namespace: "default"},
		Spec:       api.ChallengeSpec{Type: api.ACMEChallengeTypeHTTP01, Token: token, Key: keyAuth, DNSName: "www.example.com"},
		Status:     api.ChallengeStatus{Presented: true, State: api.StatePending}}
	worker := e.Runtime(app.Worker.Name) // the http01 function may only read Challenges
	put(t, worker, ch)
	path := "/.well-known/acme-challenge/" + token
	// A Function URL is reached by a redirect from the identifier's web
	// server, which names the host in the path (the Host header names the
	// function); an ALB forwards the identifier's Host header.
	redirected := "/hosts/www.example.com" + path
	for _, tc := range []struct {
		name, file, method, path, host string
		status                         int
		body                           string
	}{
		{"function URL token", "function-url-request.json", "GET", redirected, "", 200, keyAuth},
		{"function URL HEAD", "function-url-request.json", "HEAD", redirected, "", 200, keyAuth},
		{"function URL Host forwarded", "function-url-request.json", "GET", path, "www.example.com", 200, keyAuth},
		{"function URL token for the function's own host", "function-url-request.json", "GET", path, "", 404, ""},
		{"function URL token for another host", "function-url-request.json", "GET", path, "app.team-b.example.com", 404, ""},
		{"function URL redirected for another host", "function-url-request.json", "GET", "/hosts/app.team-b.example.com" + path, "", 404, ""},
		{"function URL unknown token", "function-url-request.json", "GET", "/hosts/www.example.com/.well-known/acme-challenge/unknownToken123", "", 404, ""},
		{"function URL other path", "function-url-request.json", "GET", "/", "", 404, ""},
		{"function URL POST", "function-url-request.json", "POST", redirected, "", 405, ""},
		{"ALB token", "alb-request.json", "GET", path, "", 200, keyAuth},
		{"ALB token, Host with a port", "alb-request.json", "GET", path, "WWW.example.com:80", 200, keyAuth},
		{"ALB token for another host", "alb-request.json", "GET", path, "app.team-b.example.com", 404, ""},
		{"ALB multi-value headers", "alb-request-multivalue.json", "GET", path, "", 200, keyAuth},
		{"ALB multi-value headers, another host", "alb-request-multivalue.json", "GET", path, "app.team-b.example.com", 404, ""},
		{"ALB other path", "alb-request.json", "GET", "/admin", "", 404, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var host []string
			if tc.host != "" {
				host = []string{tc.host}
			}
			out, err := rt.HandleHTTP(e.Ctx, http01Event(t, tc.file, tc.method, tc.path, host...))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(out)
			if tc.status != 200 && strings.Contains(string(b), keyAuth) {
				t.Fatalf("a key authorization leaked into a %d response: %s", tc.status, b)
			}
			switch r := out.(type) {
			case events.LambdaFunctionURLResponse:
				if !strings.HasPrefix(tc.file, "function-url") {
					t.Fatalf("answered a %s event with a Function URL response", tc.file)
				}
				if r.StatusCode != tc.status || (tc.body != "" && r.Body != tc.body) {
					t.Fatalf("response %s, want %d %q", b, tc.status, tc.body)
				}
				if tc.status == 200 && r.Headers["Content-Type"] != "text/plain" {
					t.Errorf("Content-Type %q", r.Headers["Content-Type"])
				}
			case events.ALBTargetGroupResponse:
				if !strings.HasPrefix(tc.file, "alb") {
					t.Fatalf("answered a %s event with an ALB response", tc.file)
				}
				if r.StatusCode != tc.status || (tc.body != "" && r.Body != tc.body) || r.StatusDescription != http.StatusText(tc.status) && !strings.HasSuffix(r.StatusDescription, http.StatusText(tc.status)) {
					t.Fatalf("response %s, want %d %q", b, tc.status, tc.body)
				}
				multi := strings.Contains(tc.file, "multivalue")
				if multi != (r.MultiValueHeaders != nil) || multi == (r.Headers != nil) {
					t.Errorf("multi-value request %v answered with headers %v / multiValueHeaders %v", multi, r.Headers, r.MultiValueHeaders)
				}
			default:
				t.Fatalf("response of type %T", out)
			}
		})
	}
	// A final Challenge's token is no longer served.
	ch.Status.State = api.StateValid
	ch.Status.Presented = false
	data, _ := json.Marshal(ch)
	if _, err := worker.Store.Update(e.Ctx, ports.Record{Key: api.KeyOf(ch), Version: 1, Data: data}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // the token cache's TTL (1 s, wall clock)
	out, err := rt.HandleHTTP(e.Ctx, http01Event(t, "function-url-request.json", "GET", redirected))
	if err != nil || out.(events.LambdaFunctionURLResponse).StatusCode != 404 {
		t.Fatalf("token of a final challenge: %+v %v, want 404", out, err)
	}
	if _, err := rt.HandleHTTP(e.Ctx, json.RawMessage(`not json`)); err == nil {
		t.Fatal("a malformed event gave no error")
	}
}
