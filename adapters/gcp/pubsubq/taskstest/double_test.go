package taskstest

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

const queue = "projects/demo-certfn/locations/europe-west1/queues/delays"

var t0 = time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)

// rec is a handler answering with a settable status and recording the
// requests.
type rec struct {
	mu     sync.Mutex
	status int
	reqs   []*http.Request
	bodies []string
}

func (h *rec) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reqs = append(h.reqs, r)
	h.bodies = append(h.bodies, string(b))
	w.WriteHeader(h.status)
}

func newDouble(t *testing.T, status int) (*Double, *rec, *time.Time) {
	t.Helper()
	now := t0
	h := &rec{status: status}
	d := New(h, func() time.Time { return now })
	d.AddQueue(queue)
	return d, h, &now
}

func task(id string, at time.Time, body string) *cloudtaskspb.CreateTaskRequest {
	name := ""
	if id != "" {
		name = queue + "/tasks/" + id
	}
	var st *timestamppb.Timestamp
	if !at.IsZero() {
		st = timestamppb.New(at)
	}
	return &cloudtaskspb.CreateTaskRequest{Parent: queue, Task: &cloudtaskspb.Task{
		Name: name, ScheduleTime: st,
		MessageType: &cloudtaskspb.Task_HttpRequest{HttpRequest: &cloudtaskspb.HttpRequest{
			Url: "https://pubsub.googleapis.com/v1/projects/demo-certfn/topics/reconcile:publish", HttpMethod: cloudtaskspb.HttpMethod_POST,
			Headers: map[string]string{"Content-Type": "application/json"}, Body: []byte(body),
			AuthorizationHeader: &cloudtaskspb.HttpRequest_OauthToken{OauthToken: &cloudtaskspb.OAuthToken{
				ServiceAccountEmail: "sa@demo-certfn.iam.gserviceaccount.com", Scope: "https://www.googleapis.com/auth/pubsub"}},
		}},
	}}
}

func code(err error) codes.Code { return status.Code(err) }

// A task runs at or after its schedule time, when Due says so, with its
// request and Cloud Tasks' headers; a 2xx completes it.
func TestDispatchAtScheduleTime(t *testing.T) {
	d, h, _ := newDouble(t, http.StatusOK)
	got, err := d.CreateTask(context.Background(), task("a1", t0.Add(10*time.Second), `{"x":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != queue+"/tasks/a1" || got.GetHttpRequest().GetBody() != nil || got.View != cloudtaskspb.Task_BASIC {
		t.Errorf("CreateTask returned %v (want the BASIC view, without the body)", got)
	}
	if n := d.Due(t0.Add(9 * time.Second)); n != 0 {
		t.Fatalf("dispatched %d before the schedule time", n)
	}
	if n := d.Due(t0.Add(10 * time.Second)); n != 1 {
		t.Fatalf("dispatched %d at the schedule time, want 1", n)
	}
	r := h.reqs[0]
	if r.Method != http.MethodPost || r.URL.String() != "https://pubsub.googleapis.com/v1/projects/demo-certfn/topics/reconcile:publish" || h.bodies[0] != `{"x":1}` {
		t.Errorf("request %s %s %q", r.Method, r.URL, h.bodies[0])
	}
	for k, want := range map[string]string{
		"Content-Type":                    "application/json",
		"Authorization":                   "Bearer taskstest-oauth:sa@demo-certfn.iam.gserviceaccount.com:https://www.googleapis.com/auth/pubsub",
		"X-CloudTasks-QueueName":          "delays",
		"X-CloudTasks-TaskName":           "a1",
		"X-CloudTasks-TaskRetryCount":     "0",
		"X-CloudTasks-TaskExecutionCount": "0",
		"User-Agent":                      "Google-Cloud-Tasks",
	} {
		if got := r.Header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	if len(d.Tasks()) != 0 || d.Due(t0.Add(time.Hour)) != 0 {
		t.Error("a completed task is still there")
	}
}

// Tasks run oldest first; a missing or past schedule time is now.
func TestOrderAndPastSchedule(t *testing.T) {
	d, h, _ := newDouble(t, http.StatusNoContent)
	for _, c := range []struct {
		id string
		at time.Time
	}{{"late", t0.Add(3 * time.Second)}, {"past", t0.Add(-time.Hour)}, {"early", t0.Add(time.Second)}, {"unset", time.Time{}}} {
		if _, err := d.CreateTask(context.Background(), task(c.id, c.at, "")); err != nil {
			t.Fatal(err)
		}
	}
	ts := d.Tasks()
	if !ts[0].ScheduleTime.AsTime().Equal(t0) || !ts[1].ScheduleTime.AsTime().Equal(t0) {
		t.Errorf("past and unset schedule times: %v, %v; want now", ts[0].ScheduleTime.AsTime(), ts[1].ScheduleTime.AsTime())
	}
	if n := d.Due(t0.Add(time.Minute)); n != 4 {
		t.Fatalf("dispatched %d, want 4", n)
	}
	var order []string
	for _, r := range h.reqs {
		order = append(order, r.Header.Get("X-CloudTasks-TaskName"))
	}
	if got := strings.Join(order, ","); got != "past,unset,early,late" {
		t.Errorf("order %s, want past,unset,early,late", got)
	}
}

// A name is AlreadyExists while its task is pending and within the window
// after it ran; free afterwards. Unnamed tasks never collide.
func TestNamesDeduplicate(t *testing.T) {
	d, _, now := newDouble(t, http.StatusOK)
	ctx := context.Background()
	if _, err := d.CreateTask(ctx, task("same", t0.Add(time.Second), "")); err != nil {
		t.Fatal(err)
	}
	if _, err := d.CreateTask(ctx, task("same", t0.Add(time.Minute), "")); code(err) != codes.AlreadyExists {
		t.Fatalf("pending duplicate: %v, want AlreadyExists", err)
	}
	d.Due(t0.Add(time.Second))
	*now = t0.Add(30 * time.Minute)
	if _, err := d.CreateTask(ctx, task("same", time.Time{}, "")); code(err) != codes.AlreadyExists {
		t.Fatalf("duplicate of a task that ran 30 min ago: %v, want AlreadyExists", err)
	}
	*now = t0.Add(time.Second + DefaultWindow)
	if _, err := d.CreateTask(ctx, task("same", time.Time{}, "")); err != nil {
		t.Fatalf("after the window: %v", err)
	}
	a, err := d.CreateTask(ctx, task("", time.Time{}, ""))
	if err != nil {
		t.Fatal(err)
	}
	b, err := d.CreateTask(ctx, task("", time.Time{}, ""))
	if err != nil || a.Name == b.Name || !strings.HasPrefix(a.Name, queue+"/tasks/") {
		t.Errorf("unnamed tasks %s and %s, %v", a.Name, b.Name, err)
	}
}

// A failed dispatch is retried after the backoff until MaxAttempts, then
// dropped (and its name stays taken).
func TestRetryAndDrop(t *testing.T) {
	d, h, now := newDouble(t, http.StatusInternalServerError)
	d.SetRetry(RetryConfig{MaxAttempts: 3, MinBackoff: time.Second, MaxBackoff: 10 * time.Second, MaxDoublings: 2})
	if _, err := d.CreateTask(context.Background(), task("flaky", t0, "")); err != nil {
		t.Fatal(err)
	}
	if n := d.Due(t0); n != 1 {
		t.Fatalf("first attempt: %d dispatches", n)
	}
	if n := d.Due(t0.Add(999 * time.Millisecond)); n != 0 {
		t.Fatal("retried before the backoff")
	}
	if n := d.Due(t0.Add(time.Second)); n != 1 {
		t.Fatal("not retried after the backoff")
	}
	if got := h.reqs[1].Header.Get("X-CloudTasks-TaskRetryCount"); got != "1" {
		t.Errorf("retry count header %q", got)
	}
	if n := d.Due(t0.Add(2 * time.Second)); n != 0 {
		t.Fatal("second retry before its 2 s backoff")
	}
	if n := d.Due(t0.Add(3 * time.Second)); n != 1 {
		t.Fatal("third attempt missing")
	}
	as := d.Attempts()
	if len(as) != 3 || !as[2].Dropped || as[1].Dropped || as[0].Status != http.StatusInternalServerError {
		t.Errorf("attempts %+v", as)
	}
	if len(d.Tasks()) != 0 {
		t.Error("dropped task still pending")
	}
	*now = t0.Add(5 * time.Second)
	if _, err := d.CreateTask(context.Background(), task("flaky", time.Time{}, "")); code(err) != codes.AlreadyExists {
		t.Errorf("name of a dropped task: %v, want AlreadyExists", err)
	}
}

func TestBackoff(t *testing.T) {
	c := RetryConfig{MinBackoff: time.Second, MaxBackoff: time.Minute, MaxDoublings: 3}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 24 * time.Second, 32 * time.Second, time.Minute}
	for i, w := range want {
		n := i + 1
		if n == len(want) {
			n = 100
		}
		if got := c.Backoff(n); got != w {
			t.Errorf("Backoff(%d) = %s, want %s", n, got, w)
		}
	}
	if got := DefaultRetry.Backoff(1); got != 100*time.Millisecond {
		t.Errorf("default first backoff %s", got)
	}
}

// CreateTask's checks: queue, request, name, schedule time, size.
func TestCreateTaskChecks(t *testing.T) {
	d, _, _ := newDouble(t, http.StatusOK)
	ctx := context.Background()
	edit := func(f func(*cloudtaskspb.CreateTaskRequest)) *cloudtaskspb.CreateTaskRequest {
		r := task("ok", t0.Add(time.Second), "{}")
		f(r)
		return r
	}
	tests := []struct {
		name string
		req  *cloudtaskspb.CreateTaskRequest
		want codes.Code
	}{
		{"unknown queue", edit(func(r *cloudtaskspb.CreateTaskRequest) {
			r.Parent = "projects/demo-certfn/locations/europe-west1/queues/other"
			r.Task.Name = ""
		}), codes.NotFound},
		{"bad parent", edit(func(r *cloudtaskspb.CreateTaskRequest) { r.Parent = "queues/delays" }), codes.InvalidArgument},
		{"no task", edit(func(r *cloudtaskspb.CreateTaskRequest) { r.Task = nil }), codes.InvalidArgument},
		{"no HTTP request", edit(func(r *cloudtaskspb.CreateTaskRequest) { r.Task.MessageType = nil }), codes.InvalidArgument},
		{"relative URL", edit(func(r *cloudtaskspb.CreateTaskRequest) { r.Task.GetHttpRequest().Url = "/push" }), codes.InvalidArgument},
		{"long URL", edit(func(r *cloudtaskspb.CreateTaskRequest) {
			r.Task.GetHttpRequest().Url = "https://x/" + strings.Repeat("a", MaxURLLength)
		}), codes.InvalidArgument},
		{"body with GET", edit(func(r *cloudtaskspb.CreateTaskRequest) {
			r.Task.GetHttpRequest().HttpMethod = cloudtaskspb.HttpMethod_GET
		}), codes.InvalidArgument},
		{"name in another queue", edit(func(r *cloudtaskspb.CreateTaskRequest) {
			r.Task.Name = "projects/demo-certfn/locations/europe-west1/queues/other/tasks/x"
		}), codes.InvalidArgument},
		{"name with a slash", edit(func(r *cloudtaskspb.CreateTaskRequest) { r.Task.Name = queue + "/tasks/a/b" }), codes.InvalidArgument},
		{"more than 30 days ahead", edit(func(r *cloudtaskspb.CreateTaskRequest) {
			r.Task.ScheduleTime = timestamppb.New(t0.Add(MaxScheduleAhead + time.Second))
		}), codes.InvalidArgument},
		{"over 1 MB", edit(func(r *cloudtaskspb.CreateTaskRequest) {
			r.Task.GetHttpRequest().Body = make([]byte, MaxTaskSize)
		}), codes.InvalidArgument},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := d.CreateTask(ctx, tc.req); code(err) != tc.want {
				t.Errorf("CreateTask: %v, want %v", err, tc.want)
			}
		})
	}
	if len(d.Tasks()) != 0 {
		t.Errorf("refused tasks were stored: %v", d.Tasks())
	}
	if _, err := d.CreateTask(ctx, task("edge", t0.Add(MaxScheduleAhead), "")); err != nil {
		t.Errorf("exactly 30 days ahead: %v", err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := d.CreateTask(canceled, task("c", t0, "")); code(err) != codes.Canceled {
		t.Errorf("canceled context: %v", err)
	}
	d.FailCreate(func(*cloudtaskspb.CreateTaskRequest) error { return status.Error(codes.Unavailable, "injected") })
	if _, err := d.CreateTask(ctx, task("f", t0, "")); code(err) != codes.Unavailable {
		t.Errorf("injected failure: %v", err)
	}
}

// A handler may create tasks while Due runs; those already due run in the
// same call.
func TestHandlerCreatesTasks(t *testing.T) {
	var d *Double
	n := 0
	d = New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		if n == 1 {
			if _, err := d.CreateTask(r.Context(), task("child", t0, "")); err != nil {
				t.Error(err)
			}
		}
	}), func() time.Time { return t0 })
	d.AddQueue(queue)
	if _, err := d.CreateTask(context.Background(), task("parent", t0, "")); err != nil {
		t.Fatal(err)
	}
	if got := d.Due(t0); got != 2 {
		t.Errorf("Due dispatched %d, want parent and child", got)
	}
}

// Forward sends a dispatch on to its URL and answers with the response.
func TestForward(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/projects/p/topics/t:publish" || string(b) != `{"m":1}` || r.Header.Get("X-CloudTasks-TaskName") != "fw" {
			http.Error(w, "unexpected "+r.URL.Path+" "+string(b), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer target.Close()
	d := New(Forward(nil), func() time.Time { return t0 })
	d.AddQueue(queue)
	req := task("fw", t0, `{"m":1}`)
	req.Task.GetHttpRequest().Url = target.URL + "/v1/projects/p/topics/t:publish"
	if _, err := d.CreateTask(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	d.Due(t0)
	if a := d.Attempts(); len(a) != 1 || a[0].Status != http.StatusAccepted {
		t.Errorf("attempts %+v", a)
	}
}
