package awsmode

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-lambda-go/events"

	"github.com/certfn/certfn/adapters/aws/sqsq"
	"github.com/certfn/certfn/core/app"
)

// HandleSQS is the Lambda handler of the worker and the signer (SQS event
// source mapping with ReportBatchItemFailures). It handles the batch's
// messages with up to Settings.BatchParallelism at once:
//
//   - a body that is not a reconcile key (malformed, unknown kind, unknown
//     format attribute) is acknowledged — dropped with a log line —
//     because retrying cannot fix it and it must not hold the batch back;
//   - a key whose step succeeded or failed permanently (recorded in status)
//     is acknowledged; the worker then handles the keys that step woke in
//     the same invocation (follow-ups, see followups.go);
//   - copies of a key in the same batch are acknowledged: the key is
//     handled once;
//   - a key that must be retried (transient error, lost race) is reported
//     in batchItemFailures, after its visibility timeout was set to the
//     engine's backoff (ChangeMessageVisibility), so the redelivery honours
//     it; the queue's redrive policy moves it to the dead-letter queue
//     after maxReceiveCount receives.
//
// It never returns an error: that would make Lambda retry the whole batch.
func (rt *Runtime) HandleSQS(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	defer rt.flushMetrics()
	failed := make([]bool, len(ev.Records))
	// A key that appears several times in one batch (a wake-up and a sweep,
	// say) is handled once: the handler reads fresh state, so the copies
	// add nothing; they are acknowledged and the first one carries the
	// outcome.
	first := map[string]int{}
	sem := make(chan struct{}, max(1, rt.Settings.BatchParallelism))
	var wg sync.WaitGroup
	for i, m := range ev.Records {
		if ctx.Err() != nil { // out of time: the rest comes back after its visibility timeout
			failed[i] = true
			continue
		}
		dup := strings.TrimSpace(m.Body) + "\x00" + stringAttr(m, sqsq.FormatAttribute)
		if _, seen := first[dup]; seen {
			rt.inc("certfn_duplicate_messages_total")
			continue
		}
		first[dup] = i
		sem <- struct{}{}
		wg.Add(1)
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			failed[i] = !rt.handleRecord(ctx, ev.Records[i])
		}(i)
	}
	wg.Wait()
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for i, f := range failed {
		if f {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: ev.Records[i].MessageId})
		}
	}
	return resp, nil
}

func stringAttr(m events.SQSMessage, name string) string {
	if a, ok := m.MessageAttributes[name]; ok && a.StringValue != nil {
		return *a.StringValue
	}
	return ""
}

// handleRecord handles one message and reports whether it may be deleted.
func (rt *Runtime) handleRecord(ctx context.Context, m events.SQSMessage) bool {
	attrs := make(map[string]string, len(m.MessageAttributes))
	for k, v := range m.MessageAttributes {
		if v.StringValue != nil {
			attrs[k] = *v.StringValue
		}
	}
	key, err := sqsq.DecodeBody(m.Body, attrs)
	if err != nil {
		rt.inc("certfn_bad_messages_total")
		rt.Log.Warn("dropped a message that is not a reconcile key", "messageId", m.MessageId, "err", err)
		return true
	}
	attempt, _ := strconv.Atoi(m.Attributes["ApproximateReceiveCount"])
	if attempt < 1 {
		attempt = 1
	}
	if rt.deliver == nil {
		rt.Log.Warn("dropped: this function consumes no queue", "key", key.String())
		return true
	}
	d := rt.deliver.Deliver(ctx, key, attempt)
	if d.Err == nil && d.Why != "" {
		rt.Log.Debug("nothing to do", "key", key.String(), "why", d.Why)
	}
	if d.Ack {
		if d.Err != nil {
			rt.Log.Warn("acknowledged without retry", "key", key.String(), "attempt", attempt, "err", d.Err)
		}
		return true
	}
	rt.Log.Warn("will retry", "key", key.String(), "attempt", attempt, "retryAfter", d.RetryAfter.String(), "err", d.Err)
	q, err := rt.consumedQueue(m.EventSourceARN)
	if err == nil {
		err = q.Retry(ctx, m.ReceiptHandle, d.RetryAfter)
	}
	if err != nil {
		// The message still comes back, after the queue's visibility timeout.
		rt.Log.Warn("could not set the retry delay", "key", key.String(), "err", err)
	}
	return false
}

// consumedQueue returns the queue a message came from, for Retry: the
// configured queue whose name matches the event source ARN's (the worker
// queue for the worker, CERTFN_SIGNER_QUEUE_URL for the signer), else one
// whose URL is derived from the ARN (QueueURLFromARN).
func (rt *Runtime) consumedQueue(arn string) (*sqsq.Queue, error) {
	rt.qmu.Lock()
	defer rt.qmu.Unlock()
	if q, ok := rt.queues[arn]; ok {
		return q, nil
	}
	name := arn[strings.LastIndex(arn, ":")+1:]
	var known []*sqsq.Queue
	switch rt.Role.Consumes {
	case app.WorkQueue:
		known = append(known, rt.Queue)
	case app.SignerQueue:
		if rt.SignerQueue != nil {
			known = append(known, rt.SignerQueue)
		}
	}
	for _, q := range known {
		if u := q.URL(); name != "" && u[strings.LastIndex(u, "/")+1:] == name {
			rt.queues[arn] = q
			return q, nil
		}
	}
	endpoint := rt.getenv("AWS_ENDPOINT_URL_SQS")
	if endpoint == "" {
		endpoint = rt.getenv("AWS_ENDPOINT_URL")
	}
	u, err := QueueURLFromARN(arn, endpoint)
	if err != nil {
		return nil, err
	}
	q, err := sqsq.New(rt.sqs, sqsq.Options{QueueURL: u, Metrics: rt.metrics})
	if err != nil {
		return nil, err
	}
	rt.queues[arn] = q
	return q, nil
}

// QueueURLFromARN returns the URL of the SQS queue arn
// (arn:<partition>:sqs:<region>:<account>:<name>): <endpoint>/<account>/<name>
// when endpoint is set (LocalStack, emulators), else AWS's
// https://sqs.<region>.amazonaws.com/<account>/<name> (.amazonaws.com.cn
// in the aws-cn partition).
func QueueURLFromARN(arn, endpoint string) (string, error) {
	p := strings.Split(arn, ":")
	if len(p) != 6 || p[0] != "arn" || p[2] != "sqs" || p[3] == "" || p[4] == "" || p[5] == "" {
		return "", fmt.Errorf("eventSourceARN %q: not an SQS queue ARN (arn:aws:sqs:<region>:<account>:<name>)", arn)
	}
	if endpoint != "" {
		return strings.TrimRight(endpoint, "/") + "/" + p[4] + "/" + p[5], nil
	}
	domain := "amazonaws.com"
	if p[1] == "aws-cn" {
		domain = "amazonaws.com.cn"
	}
	return "https://sqs." + p[3] + "." + domain + "/" + p[4] + "/" + p[5], nil
}

// SweepResult is the scheduler's answer (visible in the invocation's log).
type SweepResult struct {
	// Due is how many due keys the sweep found (at most SweepLimit).
	Due int `json:"due"`
	// Sent is how many of them were sent to the worker queue.
	Sent int `json:"sent"`
}

// HandleSchedule is the Lambda handler of the scheduler (EventBridge
// Scheduler, every minute; the event's content is ignored). It sweeps the
// due index for up to Settings.SweepLimit keys and sends them to the
// worker queue with SendMessageBatch. An error fails the invocation (the
// schedule's retry policy applies); keys not sent stay due for the next
// sweep.
func (rt *Runtime) HandleSchedule(ctx context.Context, _ json.RawMessage) (SweepResult, error) {
	defer rt.flushMetrics()
	if rt.Kernel == nil || rt.batch == nil {
		return SweepResult{}, fmt.Errorf("%s function: scheduler handler: %w", rt.Role.Name, errNoEngine)
	}
	n, err := rt.Kernel.Sweep(ctx, rt.Settings.SweepLimit)
	sent, ferr := rt.batch.Flush(ctx)
	if err != nil {
		return SweepResult{Due: n}, fmt.Errorf("sweep: %w", err)
	}
	if ferr != nil {
		return SweepResult{Due: n}, fmt.Errorf("sweep: send due keys: %w", ferr)
	}
	if n > 0 {
		rt.Log.Info("sweep", "due", n, "sent", sent)
	}
	return SweepResult{Due: n, Sent: sent}, nil
}

// httpEvent tells a Function URL (or API Gateway HTTP API, payload 2.0)
// request from an ALB target group request.
type httpEvent struct {
	RequestContext struct {
		ELB *json.RawMessage `json:"elb"`
	} `json:"requestContext"`
}

// HandleHTTP is the Lambda handler of the http01 function, behind a
// Function URL (buffered) or as an ALB target: it serves the HTTP-01
// responder (GET /.well-known/acme-challenge/{token} of a current
// challenge; 404 for anything else) and answers in the event's own format.
func (rt *Runtime) HandleHTTP(ctx context.Context, raw json.RawMessage) (any, error) {
	if rt.HTTP01 == nil {
		return nil, fmt.Errorf("%s function has no HTTP handler", rt.Role.Name)
	}
	var kind httpEvent
	if err := json.Unmarshal(raw, &kind); err != nil {
		return nil, fmt.Errorf("http01: event: %w", err)
	}
	if kind.RequestContext.ELB != nil {
		var req events.ALBTargetGroupRequest
		if err := json.Unmarshal(raw, &req); err != nil {
			return nil, fmt.Errorf("http01: ALB event: %w", err)
		}
		return rt.serveALB(ctx, req), nil
	}
	var req events.LambdaFunctionURLRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return nil, fmt.Errorf("http01: Function URL event: %w", err)
	}
	return rt.serveURL(ctx, req), nil
}

func (rt *Runtime) serve(ctx context.Context, method, path string, header http.Header) *httptest.ResponseRecorder {
	if method == "" {
		method = http.MethodGet
	}
	if path == "" {
		path = "/"
	}
	w := httptest.NewRecorder()
	r, err := http.NewRequestWithContext(ctx, method, "http://http01.invalid/", nil)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return w
	}
	r.URL.Path, r.RequestURI, r.Header = path, path, header
	// The responder serves a token only for its Challenge's host: the
	// event's Host header is the request's host, as net/http sets it.
	r.Host = header.Get("Host")
	header.Del("Host")
	rt.HTTP01.ServeHTTP(w, r)
	return w
}

func (rt *Runtime) serveURL(ctx context.Context, req events.LambdaFunctionURLRequest) events.LambdaFunctionURLResponse {
	h := http.Header{}
	for k, v := range req.Headers {
		h.Set(k, v)
	}
	path := req.RawPath
	if path == "" {
		path = req.RequestContext.HTTP.Path
	}
	w := rt.serve(ctx, req.RequestContext.HTTP.Method, path, h)
	resp := events.LambdaFunctionURLResponse{StatusCode: w.Code, Headers: map[string]string{}, Body: w.Body.String()}
	for k := range w.Header() {
		resp.Headers[k] = w.Header().Get(k)
	}
	return resp
}

func (rt *Runtime) serveALB(ctx context.Context, req events.ALBTargetGroupRequest) events.ALBTargetGroupResponse {
	h := http.Header{}
	for k, v := range req.Headers {
		h.Set(k, v)
	}
	for k, vs := range req.MultiValueHeaders {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	w := rt.serve(ctx, req.HTTPMethod, req.Path, h)
	resp := events.ALBTargetGroupResponse{StatusCode: w.Code,
		StatusDescription: strconv.Itoa(w.Code) + " " + http.StatusText(w.Code), Body: w.Body.String()}
	// A target group with multi-value headers expects them in the answer too.
	if req.MultiValueHeaders != nil {
		resp.MultiValueHeaders = map[string][]string(w.Header().Clone())
	} else {
		resp.Headers = map[string]string{}
		for k := range w.Header() {
			resp.Headers[k] = w.Header().Get(k)
		}
	}
	return resp
}
