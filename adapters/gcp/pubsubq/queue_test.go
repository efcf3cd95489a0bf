package pubsubq

// Fast tests: Pub/Sub is Google's in-memory fake (pstest), Cloud Tasks the
// labelled test double (taskstest). The contract suite and the push
// end-to-end test run on the official emulator (emulator_test.go).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/certfn/certfn/adapters/gcp/pubsubq/taskstest"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/errs"
)

const (
	testProject = "demo-certfn"
	testTopic   = "projects/demo-certfn/topics/reconcile"
	testQueue   = "projects/demo-certfn/locations/europe-west1/queues/delays"
	testSA      = "certfn-tasks@demo-certfn.iam.gserviceaccount.com"
)

// t0 is a whole second: schedule times are easy to predict from it.
var t0 = time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)

func cert(ns, name string) api.Key {
	return api.Key{Kind: api.KindCertificate, Namespace: ns, Name: name}
}

// grpcClient returns a Pub/Sub client over an insecure connection to addr
// (pstest or the emulator), closed when t ends.
func grpcClient(t *testing.T, addr, project string) *pubsub.Client {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	c, err := pubsub.NewClient(context.Background(), project, option.WithGRPCConn(conn))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(); _ = conn.Close() })
	return c
}

// fake is a Queue on pstest with the Cloud Tasks double on a fake clock;
// the double's handler records the requests it dispatches.
type fake struct {
	srv    *pstest.Server
	client *pubsub.Client
	clock  *clock.Fake
	tasks  *taskstest.Double
	q      *Queue

	mu       sync.Mutex
	requests []recorded
	status   int // the recording handler's answer (default 200)
}

type recorded struct {
	method, url, auth, contentType, taskName string
	body                                     []byte
}

func newFake(t *testing.T, opts Options) *fake {
	t.Helper()
	f := &fake{srv: pstest.NewServer(), clock: clock.NewFake(t0), status: http.StatusOK}
	t.Cleanup(func() { _ = f.srv.Close() })
	f.client = grpcClient(t, f.srv.Addr, testProject)
	if _, err := f.client.TopicAdminClient.CreateTopic(context.Background(), &pb.Topic{Name: testTopic}); err != nil {
		t.Fatal(err)
	}
	f.tasks = taskstest.New(http.HandlerFunc(f.record), f.clock.Now)
	f.tasks.AddQueue(testQueue)
	if opts.Topic == "" {
		opts.Topic = testTopic
	}
	if opts.TaskQueue == "" {
		opts.TaskQueue = testQueue
	}
	if opts.TaskServiceAccount == "" && opts.PublishEndpoint == "" {
		opts.TaskServiceAccount = testSA
	}
	opts.Clock = f.clock
	q, err := New(f.client, f.tasks, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Close)
	f.q = q
	return f
}

func (f *fake) record(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, recorded{method: r.Method, url: r.URL.String(), auth: r.Header.Get("Authorization"),
		contentType: r.Header.Get("Content-Type"), taskName: r.Header.Get("X-CloudTasks-TaskName"), body: b})
	w.WriteHeader(f.status)
}

func (f *fake) recorded() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

// published returns the data of the messages pstest holds, sorted, and
// fails on a message without the format attribute.
func (f *fake) published(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, m := range f.srv.Messages() {
		if m.Attributes[FormatAttribute] != FormatVersion {
			t.Errorf("message %q: attributes %v, want %s=%s", m.Data, m.Attributes, FormatAttribute, FormatVersion)
		}
		out = append(out, string(m.Data))
	}
	slices.Sort(out)
	return out
}

// The wire format: the data is the key, the format attribute is set.
func TestMessageFormat(t *testing.T) {
	f := newFake(t, Options{})
	keys := []api.Key{cert("default", "web"), {Kind: api.KindClusterIssuer, Name: "ca"}, {Kind: api.KindOrder, Namespace: "a", Name: "web-1-123"}}
	for _, k := range keys {
		if err := f.q.Enqueue(context.Background(), k, 0); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := f.published(t), []string{"Certificate/default/web", "ClusterIssuer/ca", "Order/a/web-1-123"}; !slices.Equal(got, want) {
		t.Errorf("published %v, want %v", got, want)
	}
	if n := len(f.tasks.Tasks()); n != 0 {
		t.Errorf("an immediate enqueue created %d tasks", n)
	}
}

// EnqueueBatch publishes every key; more than MaxBatch is refused whole.
func TestEnqueueBatch(t *testing.T) {
	f := newFake(t, Options{})
	var keys []api.Key
	var want []string
	for i := range 250 {
		k := cert(fmt.Sprintf("ns%d", i%3), fmt.Sprintf("c%03d", i))
		keys = append(keys, k)
		want = append(want, k.String())
	}
	if err := f.q.EnqueueBatch(context.Background(), keys, 0); err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	if got := f.published(t); !slices.Equal(got, want) {
		t.Errorf("published %d keys, want %d", len(got), len(want))
	}
	if err := f.q.EnqueueBatch(context.Background(), nil, 0); err != nil {
		t.Errorf("empty batch: %v", err)
	}
	tooMany := make([]api.Key, MaxBatch+1)
	for i := range tooMany {
		tooMany[i] = cert("default", fmt.Sprint("c", i))
	}
	if err := f.q.EnqueueBatch(context.Background(), tooMany, 0); !errs.IsPermanent(err) || !strings.Contains(err.Error(), "keys: at most 1000") {
		t.Errorf("batch of %d: %v", len(tooMany), err)
	}
}

// A delayed enqueue is a Cloud Tasks task: named after the key and the
// schedule second, scheduled then, publishing the same message through the
// REST API with an OAuth token of the task service account.
func TestDelayedEnqueueCreatesTask(t *testing.T) {
	f := newFake(t, Options{})
	k := cert("default", "web")
	if err := f.q.Enqueue(context.Background(), k, 1500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if n := len(f.srv.Messages()); n != 0 {
		t.Fatalf("a delayed enqueue published %d messages at once", n)
	}
	tasks := f.tasks.Tasks()
	if len(tasks) != 1 {
		t.Fatalf("%d tasks, want 1", len(tasks))
	}
	task := tasks[0]
	at := t0.Add(2 * time.Second)
	if got := task.ScheduleTime.AsTime(); !got.Equal(at) {
		t.Errorf("schedule time %s, want %s (rounded up to the second)", got, at)
	}
	if want := testQueue + "/tasks/" + TaskID(testTopic, k, at); task.Name != want {
		t.Errorf("task name %s, want %s", task.Name, want)
	}
	hr := task.GetHttpRequest()
	if hr.GetUrl() != DefaultPublishEndpoint+"/v1/"+testTopic+":publish" || hr.GetHttpMethod() != cloudtaskspb.HttpMethod_POST {
		t.Errorf("request %s %s", hr.GetHttpMethod(), hr.GetUrl())
	}
	if tok := hr.GetOauthToken(); tok.GetServiceAccountEmail() != testSA || tok.GetScope() != PubSubScope {
		t.Errorf("OAuth token %v", tok)
	}

	// Not dispatched before its time; at its time, the REST publish of the
	// same message.
	if n := f.tasks.Due(t0.Add(1999 * time.Millisecond)); n != 0 {
		t.Fatalf("dispatched %d tasks before the schedule time", n)
	}
	if n := f.tasks.Due(at); n != 1 {
		t.Fatalf("dispatched %d tasks at the schedule time, want 1", n)
	}
	reqs := f.recorded()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.method != http.MethodPost || r.url != hr.GetUrl() || r.contentType != "application/json" ||
		r.auth != "Bearer taskstest-oauth:"+testSA+":"+PubSubScope {
		t.Errorf("dispatched %+v", r)
	}
	var body struct {
		Messages []struct {
			Data       []byte            `json:"data"`
			Attributes map[string]string `json:"attributes"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Fatalf("publish body %s: %v", r.body, err)
	}
	if len(body.Messages) != 1 || string(body.Messages[0].Data) != k.String() || body.Messages[0].Attributes[FormatAttribute] != FormatVersion {
		t.Errorf("publish body %s", r.body)
	}
	if n := len(f.tasks.Tasks()); n != 0 {
		t.Errorf("%d tasks left after a 2xx", n)
	}
}

// Task names make duplicates harmless: one key for one second is one task
// (the second create is AlreadyExists, which is success); another second
// or another key is another task.
func TestTaskDeduplication(t *testing.T) {
	m := &countMetrics{}
	f := newFake(t, Options{Metrics: m})
	ctx := context.Background()
	web, mail := cert("default", "web"), cert("default", "mail")
	for _, d := range []time.Duration{5 * time.Second, 4500 * time.Millisecond, 4001 * time.Millisecond} {
		if err := f.q.Enqueue(ctx, web, d); err != nil {
			t.Fatalf("Enqueue(%s): %v", d, err)
		}
	}
	if n := len(f.tasks.Tasks()); n != 1 {
		t.Fatalf("3 enqueues for one second: %d tasks, want 1", n)
	}
	if err := f.q.Enqueue(ctx, web, 6*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := f.q.Enqueue(ctx, mail, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if n := len(f.tasks.Tasks()); n != 3 {
		t.Fatalf("%d tasks, want 3 (web at +5 s and +6 s, mail at +5 s)", n)
	}
	if got := m.count("certfn_cloudtasks_tasks_total", "duplicate"); got != 2 {
		t.Errorf("duplicate count %d, want 2", got)
	}
	if got := m.count("certfn_cloudtasks_tasks_total", "create"); got != 3 {
		t.Errorf("create count %d, want 3", got)
	}
	// The same name after its task ran (within the dedup window) is still
	// success: that task delivered the wake-up.
	f.tasks.Due(t0.Add(5 * time.Second))
	f.clock.Set(t0)
	if err := f.q.Enqueue(ctx, web, 5*time.Second); err != nil {
		t.Errorf("re-enqueue of a task that ran: %v", err)
	}
	// A different topic never shares names.
	if TaskID(testTopic, web, t0) == TaskID("projects/demo-certfn/topics/signer", web, t0) {
		t.Error("task IDs of two topics collide")
	}
}

type countMetrics struct {
	mu sync.Mutex
	n  map[string]int
}

func (m *countMetrics) Inc(name string, labels ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n == nil {
		m.n = map[string]int{}
	}
	m.n[name+"|"+strings.Join(labels, ",")]++
}

func (m *countMetrics) Observe(string, float64, ...string) {}

func (m *countMetrics) count(name, op string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n[name+"|op,"+op]
}

// Schedule times: rounded up to the second, never earlier than asked,
// capped at MaxTaskDelay. The engine's MaxDelay is far below.
func TestScheduleTime(t *testing.T) {
	odd := t0.Add(300 * time.Millisecond)
	tests := []struct {
		now   time.Time
		delay time.Duration
		want  time.Time
	}{
		{t0, time.Millisecond, t0.Add(time.Second)},
		{t0, time.Second, t0.Add(time.Second)},
		{t0, 1001 * time.Millisecond, t0.Add(2 * time.Second)},
		{odd, time.Second, t0.Add(2 * time.Second)},
		{odd, 700 * time.Millisecond, t0.Add(time.Second)},
		{t0, 15 * time.Minute, t0.Add(15 * time.Minute)},
		{t0, MaxTaskDelay, t0.Add(MaxTaskDelay)},
		{t0, 90 * 24 * time.Hour, t0.Add(MaxTaskDelay)},
		{odd, 90 * 24 * time.Hour, t0.Add(MaxTaskDelay)},
	}
	for _, tc := range tests {
		got := ScheduleTime(tc.now, tc.delay)
		if !got.Equal(tc.want) {
			t.Errorf("ScheduleTime(%s, %s) = %s, want %s", tc.now.Format(time.StampMilli), tc.delay, got, tc.want)
		}
		if got.Before(tc.now.Add(min(tc.delay, MaxTaskDelay))) && tc.delay <= MaxTaskDelay {
			t.Errorf("ScheduleTime(%s, %s) = %s: earlier than asked", tc.now, tc.delay, got)
		}
	}
	// The cap is within Cloud Tasks' 30 days, which the double enforces.
	f := newFake(t, Options{})
	if err := f.q.Enqueue(context.Background(), cert("default", "web"), 365*24*time.Hour); err != nil {
		t.Errorf("a year's delay: %v (want it capped at MaxTaskDelay)", err)
	}
	if tasks := f.tasks.Tasks(); len(tasks) != 1 || !tasks[0].ScheduleTime.AsTime().Equal(t0.Add(MaxTaskDelay)) {
		t.Errorf("a year's delay: tasks %v, want one at now + MaxTaskDelay", tasks)
	}
	if MaxDelay != 15*time.Minute || MaxDelay > MaxTaskDelay {
		t.Errorf("MaxDelay %s: want 15 minutes, as SQS's, within Cloud Tasks' %s", MaxDelay, MaxTaskDelay)
	}
}

// A delayed batch is one task per key (so its names dedup like single
// enqueues); failures name the keys, and the batch is permanent only when
// every failure is.
func TestEnqueueBatchDelayed(t *testing.T) {
	keys := []api.Key{cert("a", "one"), cert("a", "two"), cert("a", "three")}
	f := newFake(t, Options{})
	if err := f.q.EnqueueBatch(context.Background(), keys, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := len(f.tasks.Tasks()); n != 3 {
		t.Fatalf("%d tasks, want 3", n)
	}
	tests := []struct {
		name      string
		fail      map[string]codes.Code
		wantClass errs.Class
	}{
		{"unavailable", map[string]codes.Code{"Certificate/a/two": codes.Unavailable}, errs.Transient},
		{"invalid", map[string]codes.Code{"Certificate/a/three": codes.InvalidArgument}, errs.PermanentClass},
		{"both", map[string]codes.Code{"Certificate/a/one": codes.InvalidArgument, "Certificate/a/two": codes.ResourceExhausted}, errs.Transient},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, Options{})
			f.tasks.FailCreate(func(req *cloudtaskspb.CreateTaskRequest) error {
				body := string(req.GetTask().GetHttpRequest().GetBody())
				for k, c := range tc.fail {
					if strings.Contains(body, `"data":"`+b64(k)+`"`) {
						return status.Error(c, "injected")
					}
				}
				return nil
			})
			err := f.q.EnqueueBatch(context.Background(), keys, time.Minute)
			if err == nil {
				t.Fatal("no error")
			}
			if got := errs.Classify(err); got != tc.wantClass {
				t.Errorf("class %v, want %v (%v)", got, tc.wantClass, err)
			}
			for k := range tc.fail {
				if !strings.Contains(err.Error(), k) {
					t.Errorf("error %q does not name %s", err, k)
				}
			}
			if want := len(keys) - len(tc.fail); len(f.tasks.Tasks()) != want {
				t.Errorf("%d tasks created, want the %d that did not fail", len(f.tasks.Tasks()), want)
			}
		})
	}
}

// Errors: a missing topic or task queue is permanent and names the option;
// a rejected publish is permanent; a bad key never reaches Google.
func TestErrors(t *testing.T) {
	ctx := context.Background()
	k := cert("default", "web")

	f := newFake(t, Options{Topic: "projects/demo-certfn/topics/missing"})
	err := f.q.Enqueue(ctx, k, 0)
	if !errs.IsPermanent(err) || !strings.Contains(err.Error(), "topic:") || !strings.Contains(err.Error(), "missing") {
		t.Errorf("publish to a missing topic: %v", err)
	}

	f = newFake(t, Options{TaskQueue: "projects/demo-certfn/locations/europe-west1/queues/missing"})
	err = f.q.Enqueue(ctx, k, time.Second)
	if !errs.IsPermanent(err) || !strings.Contains(err.Error(), "taskQueue:") {
		t.Errorf("task in a missing queue: %v", err)
	}

	f = newFake(t, Options{})
	f.srv.SetAutoPublishResponse(false)
	f.srv.AddPublishResponse(nil, status.Error(codes.InvalidArgument, "injected"))
	if err := f.q.Enqueue(ctx, k, 0); !errs.IsPermanent(err) || !strings.Contains(err.Error(), "injected") {
		t.Errorf("publish refused as invalid: %v", err)
	}

	f.tasks.FailCreate(func(*cloudtaskspb.CreateTaskRequest) error { return status.Error(codes.Unavailable, "injected") })
	if err := f.q.Enqueue(ctx, k, time.Second); err == nil || errs.IsPermanent(err) {
		t.Errorf("Cloud Tasks unavailable: %v, want a transient error", err)
	}

	for _, bad := range []api.Key{{Kind: "Pod", Namespace: "default", Name: "x"}, {Kind: api.KindCertificate, Name: "no-namespace"}} {
		if err := f.q.Enqueue(ctx, bad, 0); !errs.IsPermanent(err) {
			t.Errorf("Enqueue(%v): %v", bad, err)
		}
		if err := f.q.EnqueueBatch(ctx, []api.Key{k, bad}, 0); !errs.IsPermanent(err) || !strings.Contains(err.Error(), "keys[1]") {
			t.Errorf("EnqueueBatch with %v: %v", bad, err)
		}
	}
	if f.tasks.Creates() != 1 {
		t.Errorf("%d CreateTask calls, want 1", f.tasks.Creates())
	}
}

// A canceled context fails at once with context.Canceled, publishing
// nothing.
func TestCanceledContext(t *testing.T) {
	f := newFake(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	k := cert("default", "web")
	for _, d := range []time.Duration{0, time.Second} {
		if err := f.q.Enqueue(ctx, k, d); !errors.Is(err, context.Canceled) {
			t.Errorf("Enqueue(delay %s): %v", d, err)
		}
		if err := f.q.EnqueueBatch(ctx, []api.Key{k}, d); !errors.Is(err, context.Canceled) {
			t.Errorf("EnqueueBatch(delay %s): %v", d, err)
		}
	}
	if len(f.srv.Messages()) != 0 || f.tasks.Creates() != 0 {
		t.Error("a canceled enqueue reached Pub/Sub or Cloud Tasks")
	}
}

// Options are checked with errors naming the field.
func TestNewOptions(t *testing.T) {
	srv := pstest.NewServer()
	defer srv.Close()
	client := grpcClient(t, srv.Addr, testProject)
	tasks := taskstest.New(http.NotFoundHandler(), nil)
	ok := Options{Topic: testTopic, TaskQueue: testQueue, TaskServiceAccount: testSA}
	tests := []struct {
		name  string
		edit  func(*Options)
		nilTk bool
		field string
	}{
		{"no topic", func(o *Options) { o.Topic = "" }, false, "topic"},
		{"topic ID only", func(o *Options) { o.Topic = "reconcile" }, false, "topic"},
		{"no task queue", func(o *Options) { o.TaskQueue = "" }, false, "taskQueue"},
		{"task queue without location", func(o *Options) { o.TaskQueue = "projects/p/queues/q" }, false, "taskQueue"},
		{"no service account for Google", func(o *Options) { o.TaskServiceAccount = "" }, false, "taskServiceAccount"},
		{"endpoint not a URL", func(o *Options) { o.PublishEndpoint = "pubsub.googleapis.com" }, false, "publishEndpoint"},
		{"no tasks client", func(*Options) {}, true, "tasks"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := ok
			tc.edit(&o)
			var tk TasksAPI = tasks
			if tc.nilTk {
				tk = nil
			}
			_, err := New(client, tk, o)
			if !errs.IsPermanent(err) || !strings.Contains(err.Error(), tc.field+":") {
				t.Errorf("New: %v, want a permanent error naming %s", err, tc.field)
			}
		})
	}
	// Without Cloud Tasks: immediate messages only; a delay is refused for
	// good, naming the missing option.
	imm, err := New(client, nil, Options{Topic: testTopic})
	if err != nil {
		t.Fatalf("New without Cloud Tasks: %v", err)
	}
	defer imm.Close()
	if _, err := client.TopicAdminClient.CreateTopic(context.Background(), &pb.Topic{Name: testTopic}); err != nil {
		t.Fatal(err)
	}
	if err := imm.Enqueue(context.Background(), cert("default", "web"), 0); err != nil {
		t.Errorf("immediate enqueue without Cloud Tasks: %v", err)
	}
	if err := imm.Enqueue(context.Background(), cert("default", "web"), time.Second); !errs.IsPermanent(err) || !strings.Contains(err.Error(), "taskQueue: not set") {
		t.Errorf("delayed enqueue without Cloud Tasks: %v", err)
	}
	if err := imm.EnqueueBatch(context.Background(), []api.Key{cert("a", "b"), cert("a", "c")}, time.Second); !errs.IsPermanent(err) || !strings.Contains(err.Error(), "taskQueue: not set") {
		t.Errorf("delayed batch without Cloud Tasks: %v", err)
	}

	// The emulator needs no service account.
	o := ok
	o.TaskServiceAccount, o.PublishEndpoint = "", "http://127.0.0.1:8085/"
	q, err := New(client, tasks, o)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if q.publishURL != "http://127.0.0.1:8085/v1/"+testTopic+":publish" {
		t.Errorf("publish URL %s", q.publishURL)
	}
	if task := q.publishTask(cert("default", "web"), t0); task.GetHttpRequest().GetAuthorizationHeader() != nil {
		t.Errorf("a task without a service account has an Authorization header: %v", task)
	}
}
