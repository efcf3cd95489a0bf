package lambdarie

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// eventSourceMapping is a STAND-IN for Lambda's SQS event source mapping
// (not AWS's poller): it receives a batch of up to the mapping's batch
// size from its queue, invokes the function once with the event Lambda
// sends (sqsEvent, the field names of the Lambda developer guide's
// example event), and, as with ReportBatchItemFailures, deletes every
// message of the batch but those the response names in
// batchItemFailures. A failed invocation, or a response naming a message
// that was not in the batch, deletes nothing: the batch comes back after
// the queue's visibility timeout. One poller per mapping, one invocation
// at a time.
type eventSourceMapping struct {
	m   mapping
	q   queue
	fn  *lambdaFn
	sqs *sqs.Client

	batches, messages, deleted, itemFailures atomic.Int64

	trace bool // CERTFN_TEST_LOG=1: each batch's keys on stderr

	mu       sync.Mutex
	problems []string // invocations that failed, responses that broke the contract
	keys     map[string]int
}

// sqsEvent is Lambda's SQS event.
type sqsEvent struct {
	Records []sqsRecord `json:"Records"`
}

type sqsRecord struct {
	MessageID              string                  `json:"messageId"`
	ReceiptHandle          string                  `json:"receiptHandle"`
	Body                   string                  `json:"body"`
	Attributes             map[string]string       `json:"attributes"`
	MessageAttributes      map[string]sqsAttribute `json:"messageAttributes"`
	MD5OfBody              string                  `json:"md5OfBody"`
	MD5OfMessageAttributes string                  `json:"md5OfMessageAttributes,omitempty"`
	EventSource            string                  `json:"eventSource"`
	EventSourceARN         string                  `json:"eventSourceARN"`
	AWSRegion              string                  `json:"awsRegion"`
}

type sqsAttribute struct {
	StringValue      *string  `json:"stringValue,omitempty"`
	BinaryValue      []byte   `json:"binaryValue,omitempty"`
	StringListValues []string `json:"stringListValues"`
	BinaryListValues [][]byte `json:"binaryListValues"`
	DataType         string   `json:"dataType"`
}

// sqsEventResponse is the partial batch response of a function with
// ReportBatchItemFailures.
type sqsEventResponse struct {
	BatchItemFailures []struct {
		ItemIdentifier string `json:"itemIdentifier"`
	} `json:"batchItemFailures"`
}

// keyPattern is a reconcile key, Kind/namespace/name or Kind/name: what
// a queue message may carry (docs/design/one-step.md).
var keyPattern = regexp.MustCompile(`^[A-Z][A-Za-z]+/[a-z0-9.-]+(/[a-z0-9.-]+)?$`)

// run polls until ctx ends.
func (e *eventSourceMapping) run(ctx context.Context) {
	for ctx.Err() == nil {
		// An empty receive has waited already (WaitTimeSeconds).
		if _, err := e.poll(ctx); err != nil && ctx.Err() == nil {
			e.problem("%v", err)
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// poll receives one batch and delivers it; it returns the batch's size.
func (e *eventSourceMapping) poll(ctx context.Context) (int, error) {
	out, err := e.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(e.q.URL),
		MaxNumberOfMessages: int32(e.m.BatchSize), WaitTimeSeconds: 1,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"}})
	if err != nil {
		return 0, fmt.Errorf("%s: receive: %w", e.q.Name, err)
	}
	if len(out.Messages) == 0 {
		return 0, nil
	}
	ev := sqsEvent{}
	inBatch := map[string]string{}
	for _, m := range out.Messages {
		r := sqsRecord{MessageID: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body),
			Attributes: map[string]string{}, MessageAttributes: map[string]sqsAttribute{}, MD5OfBody: aws.ToString(m.MD5OfBody),
			MD5OfMessageAttributes: aws.ToString(m.MD5OfMessageAttributes), EventSource: "aws:sqs", EventSourceARN: e.q.ARN, AWSRegion: region}
		if r.MD5OfBody == "" {
			sum := md5.Sum([]byte(r.Body))
			r.MD5OfBody = hex.EncodeToString(sum[:])
		}
		for k, v := range m.Attributes {
			r.Attributes[k] = v
		}
		for k, v := range m.MessageAttributes {
			r.MessageAttributes[k] = sqsAttribute{StringValue: v.StringValue, BinaryValue: v.BinaryValue,
				StringListValues: append([]string{}, v.StringListValues...), BinaryListValues: append([][]byte{}, v.BinaryListValues...),
				DataType: aws.ToString(v.DataType)}
		}
		if !keyPattern.MatchString(r.Body) {
			e.problem("%s: message %s has body %q, not a reconcile key", e.q.Name, r.MessageID, r.Body)
		}
		e.mu.Lock()
		e.keys[r.Body]++
		e.mu.Unlock()
		ev.Records = append(ev.Records, r)
		inBatch[r.MessageID] = r.ReceiptHandle
	}
	e.batches.Add(1)
	e.messages.Add(int64(len(ev.Records)))
	if e.trace {
		var ks []string
		for _, r := range ev.Records {
			ks = append(ks, r.Body+"#"+r.Attributes["ApproximateReceiveCount"])
		}
		fmt.Fprintf(os.Stderr, "[esm %s] %s received %v\n", e.q.Name, time.Now().Format("15:04:05.000"), ks)
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		return 0, err
	}
	body, err := e.fn.invoke(ctx, payload)
	if err != nil {
		// Lambda retries the whole batch after the visibility timeout.
		return len(ev.Records), fmt.Errorf("%s: %w", e.fn.fn.Name, err)
	}
	var resp sqsEventResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		return len(ev.Records), fmt.Errorf("%s: response %q is not a partial batch response: %v", e.fn.fn.Name, body, err)
	}
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		if _, ok := inBatch[f.ItemIdentifier]; !ok {
			// Lambda treats the whole batch as failed.
			return len(ev.Records), fmt.Errorf("%s: batchItemFailures names %q, not a message of the batch", e.fn.fn.Name, f.ItemIdentifier)
		}
		failed[f.ItemIdentifier] = true
	}
	e.itemFailures.Add(int64(len(failed)))
	var del []sqstypes.DeleteMessageBatchRequestEntry
	for id, rh := range inBatch {
		if !failed[id] {
			del = append(del, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(len(del))), ReceiptHandle: aws.String(rh)})
		}
	}
	if len(del) > 0 {
		d, err := e.sqs.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(e.q.URL), Entries: del})
		if err != nil {
			return len(ev.Records), fmt.Errorf("%s: delete: %w", e.q.Name, err)
		}
		if len(d.Failed) > 0 {
			return len(ev.Records), fmt.Errorf("%s: delete: %d entries failed: %s", e.q.Name, len(d.Failed), aws.ToString(d.Failed[0].Message))
		}
		e.deleted.Add(int64(len(d.Successful)))
	}
	return len(ev.Records), nil
}

func (e *eventSourceMapping) problem(format string, a ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.problems = append(e.problems, time.Now().Format("15:04:05.000")+" "+fmt.Sprintf(format, a...))
}

func (e *eventSourceMapping) report() (string, []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return fmt.Sprintf("%s → %s: %d batches, %d messages, %d deleted, %d reported as batch item failures, %d distinct keys",
		e.q.Name, e.fn.fn.Name, e.batches.Load(), e.messages.Load(), e.deleted.Load(), e.itemFailures.Load(), len(e.keys)), append([]string(nil), e.problems...)
}

// scheduleStandIn is a STAND-IN for EventBridge Scheduler (not AWS's
// service): it invokes the schedule's target with the target's input —
// the payload the service sends — once when started, then at the
// schedule's rate.
type scheduleStandIn struct {
	s     schedule
	every time.Duration
	fn    *lambdaFn

	mu       sync.Mutex
	runs     int
	due      int
	sent     int
	problems []string
}

// rateExpression is EventBridge Scheduler's rate(value unit).
var rateExpression = regexp.MustCompile(`^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$`)

// parseRate returns the period of a rate expression.
func parseRate(expr string) (time.Duration, error) {
	m := rateExpression.FindStringSubmatch(expr)
	if m == nil {
		return 0, fmt.Errorf("schedule expression %q: not a rate(value unit) expression", expr)
	}
	n, _ := strconv.Atoi(m[1])
	unit := map[string]time.Duration{"minute": time.Minute, "minutes": time.Minute, "hour": time.Hour, "hours": time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour}[m[2]]
	if n < 1 {
		return 0, fmt.Errorf("schedule expression %q: the value must be at least 1", expr)
	}
	return time.Duration(n) * unit, nil
}

func (s *scheduleStandIn) run(ctx context.Context) {
	tick := time.NewTicker(s.every)
	defer tick.Stop()
	for {
		s.fire(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// fire invokes the scheduler once; its answer must be a sweep result
// that sent every due key it found.
func (s *scheduleStandIn) fire(ctx context.Context) {
	body, err := s.fn.invoke(ctx, []byte(s.s.Input))
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runs++
	if err != nil {
		if !errors.Is(ctx.Err(), context.Canceled) {
			s.problems = append(s.problems, err.Error())
		}
		return
	}
	var res struct {
		Due  *int `json:"due"`
		Sent *int `json:"sent"`
	}
	if err := json.Unmarshal(body, &res); err != nil || res.Due == nil || res.Sent == nil || *res.Sent != *res.Due {
		s.problems = append(s.problems, fmt.Sprintf("scheduler answered %s: want {\"due\": n, \"sent\": n}", body))
		return
	}
	s.due += *res.Due
	s.sent += *res.Sent
}
