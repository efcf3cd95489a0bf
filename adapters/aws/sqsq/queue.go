// Package sqsq implements ports.Queue on an Amazon SQS standard queue
// (docs/design/one-step.md). See docs/deploy/aws.md.
//
//   - A message body is the reconcile key, api.Key.String(); a message
//     attribute FormatAttribute carries the body's format version.
//   - Delays up to MaxDelay (SQS's 15 minutes) use DelaySeconds, rounded
//     up to whole seconds; longer delays are capped there: the handler finds
//     the record's nextRunAt still in the future and the scheduler enqueues
//     it again when it is due (the queue may deliver early, never lose).
//   - The dead-letter queue is the queue's redrive policy (Terraform's
//     job): a message received more than maxReceiveCount times moves there.
//     The adapter gives the handler what it needs around it: Receive with
//     receive counts, Ack (DeleteMessage), Retry (ChangeMessageVisibility,
//     the backoff of a transient failure) and DecodeBody for Lambda events.
package sqsq

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// API is the subset of *sqs.Client the queue calls.
type API interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
}

var _ API = (*sqs.Client)(nil)

// SQS limits.
const (
	// MaxDelay is the longest DelaySeconds SQS accepts.
	MaxDelay = 900 * time.Second
	// MaxVisibility is the longest visibility timeout SQS accepts.
	MaxVisibility = 12 * time.Hour
	// MaxBatch is the most messages one send or receive call handles.
	MaxBatch = 10
	// maxWait is the longest long-poll wait.
	maxWait = 20 * time.Second
)

// The message attribute that tags the body's format.
const (
	// FormatAttribute names the String attribute carrying the format.
	FormatAttribute = "certfn-format"
	// FormatVersion is the format this adapter writes: the body is
	// api.Key.String(). A message without the attribute is read as this
	// format too (e.g. one sent by hand or by a scheduler target).
	FormatVersion = "1"
)

// Options configure a Queue.
type Options struct {
	// QueueURL is the queue's URL (required).
	QueueURL string
	// WaitTime is Receive's long-poll wait (0 to 20 s; rounded up to whole
	// seconds). Zero polls once and returns at once.
	WaitTime time.Duration
	// Metrics, when set, counts certfn_sqs_messages_total{op}.
	Metrics ports.Metrics
}

// Queue is the ports.Queue on SQS. It is safe for concurrent use.
type Queue struct {
	client API
	url    string
	wait   int32
	m      ports.Metrics
}

var _ ports.Queue = (*Queue)(nil)

// New returns a Queue on opts.QueueURL through client. It makes no call.
func New(client API, opts Options) (*Queue, error) {
	if opts.QueueURL == "" {
		return nil, errs.Permanentf("sqs queue: queueURL: must not be empty")
	}
	if opts.WaitTime < 0 || opts.WaitTime > maxWait {
		return nil, errs.Permanentf("sqs queue: waitTime: must be 0 to %s, got %s", maxWait, opts.WaitTime)
	}
	return &Queue{client: client, url: opts.QueueURL, wait: seconds(opts.WaitTime, maxWait), m: opts.Metrics}, nil
}

// URL returns the queue URL.
func (q *Queue) URL() string { return q.url }

// seconds rounds d up to whole seconds within [0, limit].
func seconds(d, limit time.Duration) int32 {
	if d <= 0 {
		return 0
	}
	d = min(d, limit)
	return int32(math.Ceil(d.Seconds()))
}

// DelaySeconds is the DelaySeconds Enqueue sends for delay: rounded up to
// whole seconds (never earlier than asked), capped at MaxDelay.
func DelaySeconds(delay time.Duration) int32 { return seconds(delay, MaxDelay) }

func (q *Queue) inc(op string, n int) {
	if q.m == nil {
		return
	}
	for range n {
		q.m.Inc("certfn_sqs_messages_total", "op", op)
	}
}

// formatAttrs are the message attributes of every message sent.
func formatAttrs() map[string]types.MessageAttributeValue {
	return map[string]types.MessageAttributeValue{
		FormatAttribute: {DataType: aws.String("String"), StringValue: aws.String(FormatVersion)},
	}
}

// checkKey rejects a key that DecodeBody could not read back.
func checkKey(k api.Key) error {
	if _, err := api.ParseKey(k.String()); err != nil {
		return errs.Permanentf("key: %w", err)
	}
	return nil
}

// Enqueue sends key with delay (see DelaySeconds). Delivery is at least
// once; a delay over MaxDelay is delivered after MaxDelay.
func (q *Queue) Enqueue(ctx context.Context, key api.Key, delay time.Duration) error {
	if err := checkKey(key); err != nil {
		return fmt.Errorf("sqs: enqueue %s: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sqs: enqueue %s: %w", key, err)
	}
	_, err := q.client.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:          aws.String(q.url),
		MessageBody:       aws.String(key.String()),
		DelaySeconds:      DelaySeconds(delay),
		MessageAttributes: formatAttrs(),
	})
	if err != nil {
		return fmt.Errorf("sqs: enqueue %s: %w", key, err)
	}
	q.inc("send", 1)
	return nil
}

// EnqueueBatch sends keys with one delay, MaxBatch per SendMessageBatch
// call (the scheduler's sweep). It sends every batch it can and returns an
// error naming the keys that were not sent (permanent only if every
// failure was the sender's fault and nothing else failed).
func (q *Queue) EnqueueBatch(ctx context.Context, keys []api.Key, delay time.Duration) error {
	for i, k := range keys {
		if err := checkKey(k); err != nil {
			return fmt.Errorf("sqs: enqueue batch: keys[%d] %s: %w", i, k, err)
		}
	}
	var (
		failed    []string
		causes    []error
		transient bool
	)
	for start := 0; start < len(keys); start += MaxBatch {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("sqs: enqueue batch: %w", err)
		}
		batch := keys[start:min(start+MaxBatch, len(keys))]
		entries := make([]types.SendMessageBatchRequestEntry, len(batch))
		for i, k := range batch {
			entries[i] = types.SendMessageBatchRequestEntry{
				Id:                aws.String(strconv.Itoa(i)),
				MessageBody:       aws.String(k.String()),
				DelaySeconds:      DelaySeconds(delay),
				MessageAttributes: formatAttrs(),
			}
		}
		out, err := q.client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.url), Entries: entries})
		if err != nil {
			for _, k := range batch {
				failed = append(failed, k.String())
			}
			causes = append(causes, err)
			transient = true
			continue
		}
		q.inc("send", len(out.Successful))
		for _, f := range out.Failed {
			i, err := strconv.Atoi(aws.ToString(f.Id))
			if err != nil || i < 0 || i >= len(batch) {
				return fmt.Errorf("sqs: enqueue batch: unexpected entry id %q in the reply", aws.ToString(f.Id))
			}
			failed = append(failed, batch[i].String())
			causes = append(causes, fmt.Errorf("%s: %s: %s", batch[i], aws.ToString(f.Code), aws.ToString(f.Message)))
			transient = transient || !f.SenderFault
		}
	}
	if len(failed) == 0 {
		return nil
	}
	err := fmt.Errorf("sqs: enqueue batch: %d of %d keys not sent (%s): %w", len(failed), len(keys), strings.Join(failed, ", "), errors.Join(causes...))
	if !transient {
		return errs.Permanent(err)
	}
	return err
}

// Message is one received message.
type Message struct {
	// Key is the reconcile key (zero when Err is set).
	Key api.Key
	// Err is set when the body is not a key this version can read
	// (permanent: acknowledge the message, retrying cannot help).
	Err error
	// ID is SQS's message id (the Lambda batch item identifier).
	ID string
	// ReceiptHandle acknowledges or retries this delivery.
	ReceiptHandle string
	// ReceiveCount is SQS's ApproximateReceiveCount (0 when the backend
	// does not report it): 1 on the first delivery.
	ReceiveCount int
}

// Receive returns up to max (1 to MaxBatch; larger is capped) visible
// messages and hides them for the queue's visibility timeout, waiting up to
// Options.WaitTime for the first one.
func (q *Queue) Receive(ctx context.Context, max int) ([]Message, error) {
	if max <= 0 {
		return nil, errs.Permanentf("sqs: receive: max: must be > 0, got %d", max)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sqs: receive: %w", err)
	}
	out, err := q.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(q.url),
		MaxNumberOfMessages:         int32(min(max, MaxBatch)),
		WaitTimeSeconds:             q.wait,
		MessageAttributeNames:       []string{FormatAttribute},
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount},
	})
	if err != nil {
		return nil, fmt.Errorf("sqs: receive: %w", err)
	}
	msgs := make([]Message, len(out.Messages))
	for i, m := range out.Messages {
		attrs := map[string]string{}
		for name, v := range m.MessageAttributes {
			attrs[name] = aws.ToString(v.StringValue)
		}
		msgs[i] = Message{ID: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle)}
		msgs[i].Key, msgs[i].Err = DecodeBody(aws.ToString(m.Body), attrs)
		if n, err := strconv.Atoi(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)]); err == nil {
			msgs[i].ReceiveCount = n
		}
	}
	q.inc("receive", len(msgs))
	return msgs, nil
}

// Ack deletes a received message for good. An expired receipt handle may be
// an error (the message will be delivered again: at least once).
func (q *Queue) Ack(ctx context.Context, receiptHandle string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sqs: ack: %w", err)
	}
	if _, err := q.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.url), ReceiptHandle: aws.String(receiptHandle)}); err != nil {
		return fmt.Errorf("sqs: ack: %w", err)
	}
	q.inc("ack", 1)
	return nil
}

// Retry makes a received message visible again after delay (rounded up to
// whole seconds, capped at MaxVisibility): the backoff of a transient
// failure. Each delivery counts towards the redrive policy's
// maxReceiveCount, after which SQS moves the message to the dead-letter
// queue.
func (q *Queue) Retry(ctx context.Context, receiptHandle string, delay time.Duration) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sqs: retry: %w", err)
	}
	_, err := q.client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl:          aws.String(q.url),
		ReceiptHandle:     aws.String(receiptHandle),
		VisibilityTimeout: seconds(delay, MaxVisibility),
	})
	if err != nil {
		return fmt.Errorf("sqs: retry: %w", err)
	}
	q.inc("retry", 1)
	return nil
}

// DecodeBody reads a message body and its String message attributes (as a
// Lambda SQS event or Receive gives them) into a reconcile key. Errors are
// permanent: an unknown format version, or a body that is not the key of a
// known kind.
func DecodeBody(body string, attrs map[string]string) (api.Key, error) {
	if v, ok := attrs[FormatAttribute]; ok && v != FormatVersion {
		return api.Key{}, errs.Permanentf("sqs message: attribute %s: format %q is not supported (want %q)", FormatAttribute, v, FormatVersion)
	}
	k, err := api.ParseKey(strings.TrimSpace(body))
	if err != nil {
		return api.Key{}, errs.Permanentf("sqs message: body: %w", err)
	}
	return k, nil
}
