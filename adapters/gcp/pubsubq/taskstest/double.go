// TEST DOUBLE: NOT GOOGLE CLOUD TASKS.
// Package taskstest holds a hand-written, in-process test double of the
// Cloud Tasks API for HTTP-target tasks: the one call adapters/gcp/pubsubq
// makes (CreateTask, as pubsubq.TasksAPI) and a dispatcher the test drives.
//
// No Cloud Tasks emulator exists on these machines (none is published by
// Google, and the module proxy refuses the third-party ones), so the delayed
// path of the Pub/Sub queue is tested against Double. It keeps the
// semantics Google documents for v2 queues:
//
//   - CreateTask needs an existing queue (AddQueue; NotFound otherwise) and
//     an HTTP request (an http:// or https:// URL of at most 2,083
//     characters; a body only with POST, PUT or PATCH; the task at most
//     1 MB); violations are InvalidArgument.
//   - A named task's ID has letters, digits, hyphens and underscores (at
//     most 500); a name that is pending, or that ran or was dropped within
//     the deduplication window (Window; the service keeps names about an
//     hour, up to a day), is AlreadyExists. An unnamed task gets a random
//     ID.
//   - A schedule time that is missing or past becomes now; one more than
//     30 days ahead is InvalidArgument.
//   - A task is dispatched at or after its schedule time, and only when
//     the test says what time it is: Due(now) sends every task scheduled at
//     or before now to the Handler as an HTTP request (method, URL, headers
//     and body of the task, Cloud Tasks' X-CloudTasks-* headers, and an
//     Authorization header naming the OAuth or OIDC service account). A 2xx
//     answer completes the task; any other answer is retried after the
//     queue's backoff (RetryConfig, Cloud Tasks' defaults), until
//     MaxAttempts, after which the task is dropped.
//
// It is not Cloud Tasks: dispatch is sequential in schedule order (the
// service dispatches concurrently, in no promised order), there are no
// rate limits, App Engine targets, queue states or IAM, and the tokens it
// puts in Authorization headers are labels, not credentials. Forward sends
// the dispatched requests on to their real URLs (the Pub/Sub emulator's
// REST API in the pubsubq tests).
package taskstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Limits of Cloud Tasks the double enforces.
const (
	MaxScheduleAhead = 30 * 24 * time.Hour
	MaxTaskSize      = 1 << 20
	MaxURLLength     = 2083
	// DefaultWindow is how long the double keeps a finished task's name.
	DefaultWindow = time.Hour
)

// RetryConfig is a queue's retry configuration (Cloud Tasks' RetryConfig
// without maxRetryDuration).
type RetryConfig struct {
	MaxAttempts  int
	MinBackoff   time.Duration
	MaxBackoff   time.Duration
	MaxDoublings int
}

// DefaultRetry is Cloud Tasks' default retry configuration.
var DefaultRetry = RetryConfig{MaxAttempts: 100, MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Hour, MaxDoublings: 16}

// Backoff is the wait before the retry that follows the n-th failed
// attempt (n >= 1): MinBackoff doubled MaxDoublings times, then growing
// linearly by the last doubled interval, capped at MaxBackoff.
func (c RetryConfig) Backoff(n int) time.Duration {
	if n < 1 {
		n = 1
	}
	d := c.MinBackoff
	for i := 1; i < n && i <= c.MaxDoublings && d < c.MaxBackoff; i++ {
		d *= 2
	}
	if extra := n - 1 - c.MaxDoublings; extra > 0 && d < c.MaxBackoff {
		d += time.Duration(extra) * d
	}
	return min(d, c.MaxBackoff)
}

// Attempt is one dispatch the double made.
type Attempt struct {
	// Task is the task's full name.
	Task string
	// At is the Due time of the dispatch; Scheduled the task's schedule
	// time then.
	At, Scheduled time.Time
	// Status is the handler's answer.
	Status int
	// Dropped is set on the last failed attempt.
	Dropped bool
}

type entry struct {
	task     *cloudtaskspb.Task // FULL view, as created
	attempts int
	leased   bool // being dispatched
}

// Double is the Cloud Tasks test double. Its zero value is not usable:
// call New. It is safe for concurrent use; the handler is called without
// the double's lock held, so it may create tasks.
type Double struct {
	handler http.Handler
	now     func() time.Time

	mu       sync.Mutex
	retry    RetryConfig
	window   time.Duration
	queues   map[string]bool
	tasks    map[string]*entry
	used     map[string]time.Time // finished task name → when it is free again
	attempts []Attempt
	fail     func(*cloudtaskspb.CreateTaskRequest) error
	creates  int
}

// New returns a Double that dispatches to h and reads the time of
// CreateTask from now (time.Now when nil). Due takes its time as an
// argument: pass the same clock's time.
func New(h http.Handler, now func() time.Time) *Double {
	if now == nil {
		now = time.Now
	}
	return &Double{handler: h, now: now, retry: DefaultRetry, window: DefaultWindow,
		queues: map[string]bool{}, tasks: map[string]*entry{}, used: map[string]time.Time{}}
}

var (
	queueName = regexp.MustCompile(`^projects/[A-Za-z0-9.:-]+/locations/[A-Za-z0-9-]+/queues/[A-Za-z0-9-]{1,100}$`)
	taskID    = regexp.MustCompile(`^[A-Za-z0-9_-]{1,500}$`)
)

// AddQueue creates the queue (projects/P/locations/L/queues/Q).
func (d *Double) AddQueue(name string) {
	if !queueName.MatchString(name) {
		panic(fmt.Sprintf("taskstest: invalid queue name %q", name))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.queues[name] = true
}

// SetRetry sets the retry configuration of every queue.
func (d *Double) SetRetry(c RetryConfig) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.retry = c
}

// SetWindow sets how long a finished task's name stays taken.
func (d *Double) SetWindow(w time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.window = w
}

// FailCreate makes CreateTask return f's error when f returns one (before
// any other check; nil f removes it).
func (d *Double) FailCreate(f func(*cloudtaskspb.CreateTaskRequest) error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.fail = f
}

// CreateTask implements pubsubq.TasksAPI with Cloud Tasks' checks. The
// returned task is the BASIC view (no body).
func (d *Double) CreateTask(ctx context.Context, req *cloudtaskspb.CreateTaskRequest, _ ...gax.CallOption) (*cloudtaskspb.Task, error) {
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.creates++
	if d.fail != nil {
		if err := d.fail(req); err != nil {
			return nil, err
		}
	}
	now := d.now()
	parent := req.GetParent()
	if !queueName.MatchString(parent) {
		return nil, status.Errorf(codes.InvalidArgument, "Invalid resource field value in the request: parent %q", parent)
	}
	if !d.queues[parent] {
		return nil, status.Errorf(codes.NotFound, "Requested entity was not found: queue %s", parent)
	}
	t := req.GetTask()
	if t == nil {
		return nil, status.Error(codes.InvalidArgument, "Task is required")
	}
	hr := t.GetHttpRequest()
	if hr == nil {
		return nil, status.Error(codes.InvalidArgument, "Task.http_request is required (the double supports HTTP targets only)")
	}
	if err := checkHTTP(hr); err != nil {
		return nil, err
	}
	if n := proto.Size(t); n > MaxTaskSize {
		return nil, status.Errorf(codes.InvalidArgument, "Task size %d exceeds the maximum of %d bytes", n, MaxTaskSize)
	}
	t = proto.Clone(t).(*cloudtaskspb.Task)
	if t.Name == "" {
		t.Name = parent + "/tasks/" + randomID()
	} else {
		id, ok := strings.CutPrefix(t.Name, parent+"/tasks/")
		if !ok || !taskID.MatchString(id) {
			return nil, status.Errorf(codes.InvalidArgument, "Task name %q must be %s/tasks/ID with an ID of letters, digits, hyphens or underscores (at most 500)", t.Name, parent)
		}
		if _, pending := d.tasks[t.Name]; pending {
			return nil, status.Errorf(codes.AlreadyExists, "Requested entity already exists: %s", t.Name)
		}
		if free, ok := d.used[t.Name]; ok && now.Before(free) {
			return nil, status.Errorf(codes.AlreadyExists, "Requested entity already exists: %s (ran or was deleted recently)", t.Name)
		}
	}
	if t.ScheduleTime == nil || t.ScheduleTime.AsTime().Before(now) {
		t.ScheduleTime = timestamppb.New(now)
	}
	if t.ScheduleTime.AsTime().After(now.Add(MaxScheduleAhead)) {
		return nil, status.Errorf(codes.InvalidArgument, "The Task.scheduleTime %s is more than 30 days in the future", t.ScheduleTime.AsTime().Format(time.RFC3339))
	}
	t.ScheduleTime = timestamppb.New(t.ScheduleTime.AsTime().Truncate(time.Microsecond))
	t.CreateTime = timestamppb.New(now.Truncate(time.Second))
	t.View = cloudtaskspb.Task_FULL
	d.tasks[t.Name] = &entry{task: t}
	basic := proto.Clone(t).(*cloudtaskspb.Task)
	basic.View = cloudtaskspb.Task_BASIC
	basic.GetHttpRequest().Body = nil
	return basic, nil
}

func checkHTTP(hr *cloudtaskspb.HttpRequest) error {
	u := hr.GetUrl()
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return status.Errorf(codes.InvalidArgument, "HttpRequest.url %q must begin with http:// or https://", u)
	}
	if len(u) > MaxURLLength {
		return status.Errorf(codes.InvalidArgument, "HttpRequest.url is longer than %d characters", MaxURLLength)
	}
	switch hr.GetHttpMethod() {
	case cloudtaskspb.HttpMethod_POST, cloudtaskspb.HttpMethod_PUT, cloudtaskspb.HttpMethod_PATCH, cloudtaskspb.HttpMethod_HTTP_METHOD_UNSPECIFIED:
	default:
		if len(hr.GetBody()) > 0 {
			return status.Errorf(codes.InvalidArgument, "HttpRequest.body is allowed only with POST, PUT or PATCH, not %s", hr.GetHttpMethod())
		}
	}
	return nil
}

func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Due dispatches every task scheduled at or before now, oldest first, and
// returns the number of dispatches (tasks the handler creates that are due
// by now are dispatched in the same call). A failed task is rescheduled at
// now plus the backoff, so it is not dispatched again by this call.
func (d *Double) Due(now time.Time) int {
	n := 0
	for {
		d.mu.Lock()
		var next *entry
		for _, e := range d.tasks {
			if e.leased || e.task.ScheduleTime.AsTime().After(now) {
				continue
			}
			if next == nil || before(e.task, next.task) {
				next = e
			}
		}
		if next == nil {
			d.mu.Unlock()
			return n
		}
		// Leased while dispatched: a concurrent Due skips it, and its
		// name stays taken.
		next.leased = true
		next.attempts++
		t := next.task
		d.mu.Unlock()

		code := d.dispatch(t, next.attempts, now)
		n++

		d.mu.Lock()
		a := Attempt{Task: t.Name, At: now, Scheduled: t.ScheduleTime.AsTime(), Status: code}
		next.leased = false
		switch {
		case code >= 200 && code < 300:
			delete(d.tasks, t.Name)
			d.used[t.Name] = now.Add(d.window)
		case d.retry.MaxAttempts > 0 && next.attempts >= d.retry.MaxAttempts:
			a.Dropped = true
			delete(d.tasks, t.Name)
			d.used[t.Name] = now.Add(d.window)
		default:
			t.ScheduleTime = timestamppb.New(now.Add(d.retry.Backoff(next.attempts)))
		}
		d.attempts = append(d.attempts, a)
		d.mu.Unlock()
	}
}

func before(a, b *cloudtaskspb.Task) bool {
	ta, tb := a.ScheduleTime.AsTime(), b.ScheduleTime.AsTime()
	if !ta.Equal(tb) {
		return ta.Before(tb)
	}
	return a.Name < b.Name
}

// dispatch serves t's request to the handler and returns its status.
func (d *Double) dispatch(t *cloudtaskspb.Task, attempt int, now time.Time) int {
	hr := t.GetHttpRequest()
	method := hr.GetHttpMethod().String()
	if hr.GetHttpMethod() == cloudtaskspb.HttpMethod_HTTP_METHOD_UNSPECIFIED {
		method = http.MethodPost
	}
	r := httptest.NewRequest(method, hr.GetUrl(), strings.NewReader(string(hr.GetBody())))
	for k, v := range hr.GetHeaders() {
		r.Header.Set(k, v)
	}
	queue, id, _ := strings.Cut(t.Name, "/tasks/")
	r.Header.Set("User-Agent", "Google-Cloud-Tasks")
	r.Header.Set("X-CloudTasks-QueueName", queue[strings.LastIndex(queue, "/")+1:])
	r.Header.Set("X-CloudTasks-TaskName", id)
	r.Header.Set("X-CloudTasks-TaskRetryCount", strconv.Itoa(attempt-1))
	r.Header.Set("X-CloudTasks-TaskExecutionCount", strconv.Itoa(attempt-1))
	r.Header.Set("X-CloudTasks-TaskETA", strconv.FormatFloat(float64(t.ScheduleTime.AsTime().UnixMicro())/1e6, 'f', 6, 64))
	switch a := hr.GetAuthorizationHeader().(type) {
	case *cloudtaskspb.HttpRequest_OauthToken:
		r.Header.Set("Authorization", "Bearer taskstest-oauth:"+a.OauthToken.GetServiceAccountEmail()+":"+a.OauthToken.GetScope())
	case *cloudtaskspb.HttpRequest_OidcToken:
		r.Header.Set("Authorization", "Bearer taskstest-oidc:"+a.OidcToken.GetServiceAccountEmail()+":"+a.OidcToken.GetAudience())
	}
	w := httptest.NewRecorder()
	d.handler.ServeHTTP(w, r)
	return w.Code
}

// Tasks returns copies of the pending tasks (FULL view), oldest schedule
// first.
func (d *Double) Tasks() []*cloudtaskspb.Task {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]*cloudtaskspb.Task, 0, len(d.tasks))
	for _, e := range d.tasks {
		out = append(out, proto.Clone(e.task).(*cloudtaskspb.Task))
	}
	slices.SortFunc(out, func(a, b *cloudtaskspb.Task) int {
		if before(a, b) {
			return -1
		}
		if before(b, a) {
			return 1
		}
		return 0
	})
	return out
}

// Attempts returns every dispatch made so far.
func (d *Double) Attempts() []Attempt {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.attempts)
}

// Creates returns the number of CreateTask calls (failed ones included).
func (d *Double) Creates() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.creates
}

// Forward returns a handler that sends each request on to its absolute URL
// with client (http.DefaultClient when nil) and answers with the response's
// status, headers and body: the double then dispatches to the real target.
func Forward(client *http.Client) http.Handler {
	if client == nil {
		client = http.DefaultClient
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out, err := http.NewRequestWithContext(r.Context(), r.Method, r.URL.String(), r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		out.Header = r.Header.Clone()
		out.ContentLength = r.ContentLength
		resp, err := client.Do(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	})
}
