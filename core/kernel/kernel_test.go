package kernel_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app/apptest"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/kernel"
	"github.com/certfn/certfn/core/ports"
)

func TestHandleAcknowledgesWhatCannotBeRetried(t *testing.T) {
	for _, tc := range []struct {
		body    string
		wantErr string // "" = acknowledged without error
	}{
		{"", "want Kind/namespace/name"},
		{"garbage", "want Kind/namespace/name"},
		{"a/b/c/d", "want Kind/namespace/name"},
		{"Widget/default/x", `unknown kind "Widget"`},
		{"Certificate/web", "namespaced and needs a namespace"},
		{"ClusterIssuer/default/x", "cluster-scoped"},
		{"Certificate/default/", "empty name"},
		{strings.Repeat("x", 600), "longer than 512 bytes"},
		{"Certificate/default/does-not-exist", ""},
		{"ClusterIssuer/gone", ""},
	} {
		t.Run(tc.body, func(t *testing.T) {
			r := apptest.NewRig(t)
			d := r.Kernel.HandleBody(r.Ctx, tc.body, 1)
			if !d.Ack || d.RetryAfter != 0 {
				t.Fatalf("disposition %+v, want ack", d)
			}
			if tc.wantErr == "" {
				if d.Err != nil {
					t.Fatalf("missing resource reported as error: %v", d.Err)
				}
				return
			}
			if d.Err == nil || !strings.Contains(d.Err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", d.Err, tc.wantErr)
			}
			if r.Metrics.Get("certfn_bad_messages_total") != 1 {
				t.Error("bad message not counted")
			}
		})
	}
}

func TestHandleRetries(t *testing.T) {
	transient := errors.New("connection reset")
	for _, tc := range []struct {
		name      string
		err       error
		attempt   int
		wantAck   bool
		wantRetry time.Duration
		metric    string
	}{
		{"transient, first attempt", transient, 1, false, time.Second, "certfn_transient_errors_total"},
		{"transient, fourth attempt", transient, 4, false, 8 * time.Second, "certfn_transient_errors_total"},
		{"transient, capped", transient, 30, false, 5 * time.Minute, "certfn_transient_errors_total"},
		{"suggested delay", errs.RetryAfter(transient, 42*time.Second), 1, false, 42 * time.Second, "certfn_transient_errors_total"},
		{"lost race: at once", fmt.Errorf("update: %w", ports.ErrConflict), 3, false, 0, "certfn_conflicts_total"},
		{"permanent: recorded and acknowledged", errs.Permanentf("bad spec"), 1, true, 0, "certfn_permanent_errors_total"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := apptest.NewRig(t)
			r.Store.SetGetErr(tc.err)
			d := r.Kernel.Handle(r.Ctx, kernel.Message{Key: apptest.CertKey, Attempt: tc.attempt})
			if d.Ack != tc.wantAck || d.RetryAfter != tc.wantRetry || !errors.Is(d.Err, tc.err) {
				t.Fatalf("disposition %+v, want ack=%v retry=%s err %v", d, tc.wantAck, tc.wantRetry, tc.err)
			}
			if !strings.Contains(d.Err.Error(), "load Certificate/default/web") {
				t.Errorf("error lacks context: %v", d.Err)
			}
			if r.Metrics.Get(tc.metric) != 1 {
				t.Errorf("%s not counted: %v", tc.metric, r.Metrics.Counts)
			}
		})
	}
}

func TestRetryBackoff(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		attempt int
		want    time.Duration
	}{
		{0, s}, {1, s}, {2, 2 * s}, {3, 4 * s}, {5, 16 * s}, {9, 256 * s}, {10, 5 * time.Minute}, {100, 5 * time.Minute},
	} {
		if got := kernel.RetryBackoff(tc.attempt); got != tc.want {
			t.Errorf("RetryBackoff(%d) = %s, want %s", tc.attempt, got, tc.want)
		}
	}
}

// settle keeps the due index right when no step writes.
func TestReconcileSettlesTheDueTime(t *testing.T) {
	r := apptest.NewRig(t)
	r.Apply(apptest.CAIssuerYAML) // the CA secret does not exist: not ready, re-checked every WaitPoll
	if got := r.Rec(apptest.CAKey); got.Version != 1 || !got.NextRunAt.Equal(ct.T0.Add(2*time.Minute)) {
		t.Fatalf("after apply: version %d nextRunAt %s", got.Version, got.NextRunAt)
	}
	r.Reconcile(apptest.CAKey)
	rec := r.Rec(apptest.CAKey)
	if rec.Version != 2 || !rec.NextRunAt.Equal(ct.T0.Add(apptest.WaitPoll)) {
		t.Fatalf("after the status write: version %d nextRunAt %s, want 2 and T0+WaitPoll", rec.Version, rec.NextRunAt)
	}

	// Nothing changed: no write.
	r.Reconcile(apptest.CAKey)
	if got := r.Rec(apptest.CAKey); got.Version != 2 || !got.NextRunAt.Equal(rec.NextRunAt) {
		t.Fatalf("unchanged reconcile wrote: version %d nextRunAt %s", got.Version, got.NextRunAt)
	}
	// The short wait also went on the queue, delayed.
	r.ClearQueue()
	r.Reconcile(apptest.CAKey)
	if due, ok := r.Queue.NextDue(); !ok || !due.Equal(ct.T0.Add(apptest.WaitPoll)) {
		t.Fatalf("queue next due = %s %v, want T0+WaitPoll", due, ok)
	}

	// Past its due time, the record moves to the time it wants now.
	r.Clock.Advance(25 * time.Minute)
	r.Reconcile(apptest.CAKey)
	rec = r.Rec(apptest.CAKey)
	if rec.Version != 3 || !rec.NextRunAt.Equal(r.Clock.Now().Add(apptest.WaitPoll)) {
		t.Fatalf("stale due time: version %d nextRunAt %s, want 3 and now+WaitPoll", rec.Version, rec.NextRunAt)
	}
	r.Reconcile(apptest.CAKey)
	if got := r.Rec(apptest.CAKey); got.Version != 3 {
		t.Fatalf("rescheduled twice: version %d", got.Version)
	}

	// A record due later than it wants is moved earlier.
	late := rec
	late.NextRunAt = r.Clock.Now().Add(48 * time.Hour)
	if _, err := r.Store.Store.Update(r.Ctx, late); err != nil {
		t.Fatal(err)
	}
	r.Reconcile(apptest.CAKey)
	if got := r.Rec(apptest.CAKey); !got.NextRunAt.Equal(r.Clock.Now().Add(apptest.WaitPoll)) {
		t.Fatalf("late due time not pulled in: %s", got.NextRunAt)
	}
}

func TestReconcileKindsWithoutStepsLeaveTheIndex(t *testing.T) {
	r := apptest.NewRig(t)
	r.Apply(`{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}`)
	k := api.Key{Kind: api.KindNamespace, Name: "team-a"}
	r.Clock.Advance(3 * time.Minute)
	r.Reconcile(k)
	rec := r.Rec(k)
	if !rec.NextRunAt.IsZero() || rec.Version != 2 {
		t.Fatalf("namespace: nextRunAt %s version %d, want none and 2", rec.NextRunAt, rec.Version)
	}
	r.Reconcile(k)
	if got := r.Rec(k); got.Version != 2 {
		t.Fatalf("second reconcile wrote (version %d)", got.Version)
	}
}

func TestSweepEnqueuesOnlyDueKeys(t *testing.T) {
	r := apptest.NewRig(t)
	mk := func(name string, next time.Time) {
		_, err := r.Store.Store.Create(r.Ctx, ports.Record{Key: api.Key{Kind: api.KindNamespace, Name: name}, NextRunAt: next,
			Data: []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + name + `"}}`)})
		if err != nil {
			t.Fatal(err)
		}
	}
	mk("due-old", ct.T0.Add(-time.Hour))
	mk("due-now", ct.T0)
	mk("later", ct.T0.Add(time.Second))
	mk("never", time.Time{})
	mk("due-recent", ct.T0.Add(-time.Minute))

	n, err := r.Kernel.Sweep(r.Ctx, 2)
	if err != nil || n != 2 {
		t.Fatalf("Sweep(limit 2) = %d, %v", n, err)
	}
	if got := strings.Join(r.Visible(), ","); got != "Namespace/due-old,Namespace/due-recent" {
		t.Fatalf("limit 2 enqueued %s, want the two oldest", got)
	}
	r.ClearQueue()
	n, err = r.Kernel.Sweep(r.Ctx, 100)
	if err != nil || n != 3 {
		t.Fatalf("Sweep = %d, %v; want 3", n, err)
	}
	got := r.Visible()
	if strings.Contains(strings.Join(got, ","), "later") || strings.Contains(strings.Join(got, ","), "never") || len(got) != 3 {
		t.Fatalf("enqueued %v; want only due keys", got)
	}
	if r.Metrics.Get("certfn_sweeps_total") != 2 {
		t.Error("sweeps not counted")
	}
}

func TestNewRequiresItsPorts(t *testing.T) {
	r := apptest.NewRig(t)
	full := kernel.Config{Store: r.Store, Queue: r.Queue, Clock: r.Clock}
	for _, tc := range []struct {
		name string
		drop func(*kernel.Config)
		want string
	}{
		{"store", func(c *kernel.Config) { c.Store = nil }, "Store is required"},
		{"queue", func(c *kernel.Config) { c.Queue = nil }, "Queue is required"},
		{"clock", func(c *kernel.Config) { c.Clock = nil }, "Clock is required"},
	} {
		cfg := full
		tc.drop(&cfg)
		if _, err := kernel.New(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s missing: err = %v", tc.name, err)
		}
	}
	k, err := kernel.New(full)
	if err != nil {
		t.Fatal(err)
	}
	c := k.Config()
	if c.MaxQueueDelay != 15*time.Minute || c.Metrics == nil {
		t.Fatalf("defaults not applied: %+v", c)
	}
}
