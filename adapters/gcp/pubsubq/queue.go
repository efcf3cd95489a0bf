// Package pubsubq implements ports.Queue on Google Cloud Pub/Sub, with
// Cloud Tasks for delays (docs/design/one-step.md and docs/ARCHITECTURE.md: Pub/Sub push to Cloud Run,
// Cloud Tasks for short delays).
//
//   - A message's data is the reconcile key, api.Key.String(); the message
//     attribute FormatAttribute carries the data's format version (the same
//     format as adapters/aws/sqsq's bodies).
//   - An immediate Enqueue publishes to the topic. EnqueueBatch (the
//     scheduler's sweep) publishes many keys through the client library's
//     batching (up to 100 messages per Publish call).
//   - Pub/Sub has no per-message delay, and rounding a short wait (DNS
//     propagation, an authorization poll, Retry-After) up to the sweep's
//     minute would slow every ACME flow. A delayed Enqueue therefore creates
//     a Cloud Tasks task scheduled at the due time, whose HTTP request is a
//     Pub/Sub REST publish of the very same message (see publishTask for why
//     the task publishes instead of calling the worker). Enqueue honours
//     delays up to MaxTaskDelay (Cloud Tasks' 30 days). A deployment passes
//     MaxDelay (15 minutes, as SQS's) as app.Ports.MaxQueueDelay: longer
//     waits are left to nextRunAt and the scheduler, as on AWS.
//   - Tasks are named after (topic, key, schedule second) (TaskID): two
//     enqueues of one key for the same second are one wake-up, and the
//     second one's AlreadyExists is success.
//   - Delivery is by a push subscription to the worker (Cloud Run):
//     DecodePush reads the push request. Retries and the dead-letter topic
//     are the subscription's retry and dead-letter policies (Terraform's
//     job); the handler answers 2xx only when the key is done or failed for
//     good, and any other status makes Pub/Sub deliver it again.
//
// Delivery is at least once; duplicates and reordering are expected, as the
// port says.
package pubsubq

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// Limits.
const (
	// MaxDelay is the engine's MaxQueueDelay on Google Cloud (pass it as
	// app.Ports.MaxQueueDelay): the engine enqueues waits up to it and
	// leaves longer ones to nextRunAt and the scheduler's sweep. It is 15
	// minutes, as on AWS, though Cloud Tasks could hold a task for 30 days
	// (MaxTaskDelay): a wait longer than a few sweeps gains nothing from
	// second-exact delivery, and the long waits are the ones that would
	// pile up tasks — a settled Certificate wants a look within the
	// resync interval (24 h) of every reconcile that finds nothing to do,
	// so each such reconcile would add a task, each of which, firing
	// early, would reconcile and add the next one, every day, for good.
	// The sweep holds one nextRunAt per record instead.
	MaxDelay = 15 * time.Minute
	// MaxTaskDelay is the longest delay Enqueue honours: Cloud Tasks
	// schedules a task at most 30 days ahead; a minute less leaves room for
	// the clock of this process running ahead of Google's. A longer delay
	// is delivered after MaxTaskDelay (early: the handler re-checks
	// nextRunAt).
	MaxTaskDelay = 30*24*time.Hour - time.Minute
	// MaxBatch is the most keys one EnqueueBatch call accepts (a Pub/Sub
	// publish request holds at most 1,000 messages; the sweep enqueues
	// fewer).
	MaxBatch = 1000
)

// The message attribute that tags the data's format.
const (
	// FormatAttribute names the attribute carrying the format.
	FormatAttribute = "certfn-format"
	// FormatVersion is the format this adapter writes: the data is
	// api.Key.String(). A message without the attribute is read as this
	// format too (e.g. one published by hand or by a Cloud Scheduler job).
	FormatVersion = "1"
)

// DefaultPublishEndpoint is the Pub/Sub REST API that delayed tasks post to.
const DefaultPublishEndpoint = "https://pubsub.googleapis.com"

// PubSubScope is the OAuth scope of the token Cloud Tasks mints for a
// task's publish request.
const PubSubScope = "https://www.googleapis.com/auth/pubsub"

// taskParallelism bounds the CreateTask calls of one delayed batch.
const taskParallelism = 8

// taskDispatchDeadline bounds one publish attempt of a task (Cloud Tasks
// accepts 15 s to 30 min): a publish takes milliseconds.
const taskDispatchDeadline = 30 * time.Second

var (
	topicName = regexp.MustCompile(`^projects/[A-Za-z0-9.:-]+/topics/[A-Za-z][A-Za-z0-9._~%+-]{2,254}$`)
	queueName = regexp.MustCompile(`^projects/[A-Za-z0-9.:-]+/locations/[A-Za-z0-9-]+/queues/[A-Za-z0-9-]{1,100}$`)
)

// Options configure a Queue.
type Options struct {
	// Topic is the full topic name, projects/PROJECT/topics/TOPIC
	// (required).
	Topic string
	// TaskQueue is the Cloud Tasks queue that holds delayed messages,
	// projects/PROJECT/locations/LOCATION/queues/QUEUE. Its retry
	// configuration retries a failed publish. Empty (with no tasks
	// client) makes a queue for immediate messages only, for a function
	// that never waits (the scheduler, the API): a delayed Enqueue then
	// fails, permanently, naming taskQueue.
	TaskQueue string
	// PublishEndpoint is the base URL of the Pub/Sub REST API the tasks
	// post to (default DefaultPublishEndpoint; a regional endpoint, or
	// http://HOST:PORT for the Pub/Sub emulator).
	PublishEndpoint string
	// TaskServiceAccount is the e-mail of the service account whose OAuth
	// token (scope PubSubScope) Cloud Tasks sends with a task's publish:
	// it needs roles/pubsub.publisher on the topic, and the enqueuing
	// identity needs iam.serviceAccounts.actAs on it. Required with the
	// default endpoint; without it the tasks carry no Authorization header
	// (the emulator).
	TaskServiceAccount string
	// Clock gives the time delays count from (default the wall clock).
	Clock ports.Clock
	// Metrics, when set, counts certfn_pubsub_messages_total{op} (publish)
	// and certfn_cloudtasks_tasks_total{op} (create, duplicate).
	Metrics ports.Metrics
}

// Queue is the ports.Queue on Pub/Sub and Cloud Tasks. It is safe for
// concurrent use; Close stops its publisher.
type Queue struct {
	pub        *pubsub.Publisher
	tasks      TasksAPI
	topic      string
	taskQueue  string
	publishURL string
	sa         string
	clock      ports.Clock
	m          ports.Metrics
}

var _ ports.Queue = (*Queue)(nil)

// New returns a Queue that publishes to opts.Topic through client and
// creates delayed tasks in opts.TaskQueue through tasks (both or neither).
// It makes no call.
func New(client *pubsub.Client, tasks TasksAPI, opts Options) (*Queue, error) {
	if client == nil {
		return nil, errs.Permanentf("pubsub queue: client: must not be nil")
	}
	if !topicName.MatchString(opts.Topic) {
		return nil, errs.Permanentf("pubsub queue: topic: want projects/PROJECT/topics/TOPIC, got %q", opts.Topic)
	}
	ep := strings.TrimRight(opts.PublishEndpoint, "/")
	if ep == "" {
		ep = DefaultPublishEndpoint
	}
	switch {
	case opts.TaskQueue == "" && tasks == nil:
		// Immediate only (a scheduler or API function): delayed
		// enqueues fail.
	case tasks == nil:
		return nil, errs.Permanentf("pubsub queue: tasks: a taskQueue needs a Cloud Tasks client")
	case !queueName.MatchString(opts.TaskQueue):
		return nil, errs.Permanentf("pubsub queue: taskQueue: want projects/PROJECT/locations/LOCATION/queues/QUEUE, got %q", opts.TaskQueue)
	case !strings.HasPrefix(ep, "https://") && !strings.HasPrefix(ep, "http://"):
		return nil, errs.Permanentf("pubsub queue: publishEndpoint: want an http(s) URL, got %q", opts.PublishEndpoint)
	case ep == DefaultPublishEndpoint && opts.TaskServiceAccount == "":
		return nil, errs.Permanentf("pubsub queue: taskServiceAccount: must be set to publish through %s", DefaultPublishEndpoint)
	}
	c := opts.Clock
	if c == nil {
		c = clock.Real{}
	}
	return &Queue{
		pub:        client.Publisher(opts.Topic),
		tasks:      tasks,
		topic:      opts.Topic,
		taskQueue:  opts.TaskQueue,
		publishURL: ep + "/v1/" + opts.Topic + ":publish",
		sa:         opts.TaskServiceAccount,
		clock:      c,
		m:          opts.Metrics,
	}, nil
}

// Topic returns the topic's full name.
func (q *Queue) Topic() string { return q.topic }

// Close sends what is still batched and stops the publisher; Enqueue fails
// afterwards.
func (q *Queue) Close() { q.pub.Stop() }

func (q *Queue) inc(name, op string, n int) {
	if q.m == nil {
		return
	}
	for range n {
		q.m.Inc(name, "op", op)
	}
}

// checkKey rejects a key that DecodePush could not read back.
func checkKey(k api.Key) error {
	if _, err := api.ParseKey(k.String()); err != nil {
		return errs.Permanentf("key: %w", err)
	}
	return nil
}

// formatAttrs are the attributes of every message published.
func formatAttrs() map[string]string { return map[string]string{FormatAttribute: FormatVersion} }

// Enqueue publishes key now (delay <= 0) or creates a task that publishes
// it at ScheduleTime(now, delay). Delivery is at least once.
func (q *Queue) Enqueue(ctx context.Context, key api.Key, delay time.Duration) error {
	if err := checkKey(key); err != nil {
		return fmt.Errorf("pubsub: enqueue %s: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("pubsub: enqueue %s: %w", key, err)
	}
	if delay <= 0 {
		if err := q.publish(ctx, []api.Key{key}); err != nil {
			return fmt.Errorf("pubsub: enqueue %s: %w", key, err)
		}
		return nil
	}
	if err := q.createTask(ctx, key, ScheduleTime(q.clock.Now(), delay)); err != nil {
		return fmt.Errorf("pubsub: enqueue %s after %s: %w", key, delay, err)
	}
	return nil
}

// EnqueueBatch enqueues keys with one delay (the scheduler's sweep): at
// most MaxBatch keys, published together (delay <= 0) or as one task each.
// It sends every key it can and returns an error naming the keys that were
// not sent (permanent only if every failure was).
func (q *Queue) EnqueueBatch(ctx context.Context, keys []api.Key, delay time.Duration) error {
	if len(keys) > MaxBatch {
		return errs.Permanentf("pubsub: enqueue batch: keys: at most %d, got %d", MaxBatch, len(keys))
	}
	for i, k := range keys {
		if err := checkKey(k); err != nil {
			return fmt.Errorf("pubsub: enqueue batch: keys[%d] %s: %w", i, k, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("pubsub: enqueue batch: %w", err)
	}
	if len(keys) == 0 {
		return nil
	}
	if delay <= 0 {
		if err := q.publish(ctx, keys); err != nil {
			return fmt.Errorf("pubsub: enqueue batch: %w", err)
		}
		return nil
	}
	// One task per key, so that a key's task is named as by Enqueue;
	// taskParallelism calls at a time (a named CreateTask is slow).
	at := ScheduleTime(q.clock.Now(), delay)
	results := make([]error, len(keys))
	sem := make(chan struct{}, taskParallelism)
	var wg sync.WaitGroup
	for i, k := range keys {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			results[i] = q.createTask(ctx, k, at)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("pubsub: enqueue batch: %w", err)
	}
	var f failures
	for i, k := range keys {
		f.add(k, results[i])
	}
	if err := f.err(len(keys)); err != nil {
		return fmt.Errorf("pubsub: enqueue batch after %s: %w", delay, err)
	}
	return nil
}

// failures collects the keys a batch could not send.
type failures struct {
	keys      []string
	causes    []error // as returned, for a batch of one
	transient bool
}

func (f *failures) add(k api.Key, err error) {
	if err == nil {
		return
	}
	f.keys = append(f.keys, k.String())
	f.causes = append(f.causes, err)
	f.transient = f.transient || !errs.IsPermanent(err)
}

func (f *failures) err(total int) error {
	switch {
	case len(f.keys) == 0:
		return nil
	case total == 1:
		return f.causes[0] // the one key's error, as it was
	}
	// The causes are flattened (%v): the batch's class is decided here, not
	// by a permanent cause hidden in a join.
	msgs := make([]string, len(f.causes))
	for i, c := range f.causes {
		msgs[i] = f.keys[i] + ": " + c.Error()
	}
	err := fmt.Errorf("%d of %d keys not sent (%s): %s", len(f.keys), total, strings.Join(f.keys, ", "), strings.Join(msgs, "; "))
	if !f.transient {
		return errs.Permanent(err)
	}
	return err
}

// publish publishes one message per key and waits for every result; the
// client library batches them into few Publish calls and retries what is
// retryable.
func (q *Queue) publish(ctx context.Context, keys []api.Key) error {
	results := make([]*pubsub.PublishResult, len(keys))
	for i, k := range keys {
		results[i] = q.pub.Publish(ctx, &pubsub.Message{Data: []byte(k.String()), Attributes: formatAttrs()})
	}
	var f failures
	for i, r := range results {
		_, err := r.Get(ctx)
		if err != nil && ctx.Err() != nil {
			// Given up waiting: the messages may still be published.
			return fmt.Errorf("publish to %s: %w", q.topic, ctx.Err())
		}
		if err == nil {
			q.inc("certfn_pubsub_messages_total", "publish", 1)
		}
		f.add(keys[i], classify("publish to "+q.topic, "topic", err))
	}
	return f.err(len(keys))
}

// classify marks err permanent when retrying cannot help: the request was
// refused as invalid, or the resource (field) is missing or not ours.
func classify(what, field string, err error) error {
	if err == nil {
		return nil
	}
	err = fmt.Errorf("%s: %w", what, err)
	switch status.Code(err) {
	case codes.InvalidArgument, codes.FailedPrecondition, codes.OutOfRange:
		return errs.Permanent(err)
	case codes.NotFound, codes.PermissionDenied:
		return errs.Permanent(fmt.Errorf("%s: %w", field, err))
	}
	return err
}

// ScheduleTime is when a message enqueued at now with delay (> 0) is
// delivered: now + delay rounded up to the whole second (never earlier than
// asked; the second is also the task's deduplication bucket, see TaskID),
// at most now + MaxTaskDelay.
func ScheduleTime(now time.Time, delay time.Duration) time.Time {
	latest := now.Add(MaxTaskDelay)
	at := now.Add(min(delay, MaxTaskDelay))
	if up := at.Truncate(time.Second); up.Before(at) {
		at = up.Add(time.Second)
	}
	if at.After(latest) {
		at = latest.Truncate(time.Second)
	}
	return at.UTC()
}

// TaskID is the ID of the task that publishes key to topic at the schedule
// time at (a whole second): the hex SHA-256 of the three, cut to 32 digits.
//
// Why named tasks: Cloud Tasks refuses a second task of the same name
// (AlreadyExists) while the first is pending and for a while after it ran
// (about an hour, up to a day), so enqueues of one key for one second —
// the at-least-once copies of one reconcile, a step retried after a lost
// race — become one task; Enqueue treats AlreadyExists as success. Unnamed
// tasks would each publish a message: harmless, but every copy costs a
// delivery and a reconcile. The name cannot swallow a wake-up that is
// still needed: a new enqueue's schedule second is later than its own now,
// so it can only collide with a task that has not run yet, whose delivery
// comes after the enqueue and reads the state as it is then (a collision
// with a task that ran moments ago needs this process's clock to lag
// Cloud Tasks' by up to a second; the sweep still finds the key's
// nextRunAt). Cloud Tasks asks for hashed, not sequential, IDs; the hash
// also keeps the key (with its slashes) out of the name.
func TaskID(topic string, key api.Key, at time.Time) string {
	sum := sha256.Sum256([]byte("certfn-task-v1\x00" + topic + "\x00" + key.String() + "\x00" + strconv.FormatInt(at.Unix(), 10)))
	return hex.EncodeToString(sum[:16])
}

// publishRequest is the body of the Pub/Sub REST publish call
// (POST /v1/{topic}:publish). Data is base64 (encoding/json's []byte).
type publishRequest struct {
	Messages []publishMessage `json:"messages"`
}

type publishMessage struct {
	Data       []byte            `json:"data"`
	Attributes map[string]string `json:"attributes,omitempty"`
}

// PublishBody returns the REST publish request a task sends for key.
func PublishBody(key api.Key) []byte {
	b, err := json.Marshal(publishRequest{Messages: []publishMessage{{Data: []byte(key.String()), Attributes: formatAttrs()}}})
	if err != nil {
		panic(err) // strings and a map of strings always marshal
	}
	return b
}
