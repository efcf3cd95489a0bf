package local

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/ports/porttest"
)

// testableMemQueue adapts MemQueue to porttest.TestableQueue: the porttest
// delivery carries the MemQueue delivery as its handle.
type testableMemQueue struct{ *MemQueue }

func (q testableMemQueue) Receive(ctx context.Context, max int) ([]porttest.Delivery, error) {
	ds, err := q.MemQueue.Receive(ctx, max)
	out := make([]porttest.Delivery, len(ds))
	for i, d := range ds {
		out[i] = porttest.Delivery{Key: d.Key, Handle: d}
	}
	return out, err
}

func (q testableMemQueue) Ack(ctx context.Context, d porttest.Delivery) error {
	return q.MemQueue.Ack(ctx, d.Handle.(Delivery))
}

var qt0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func TestMemQueueContract(t *testing.T) {
	porttest.QueueSuite(t, func(t *testing.T) porttest.QueueHarness {
		clk := clock.NewFake(qt0)
		return porttest.QueueHarness{
			Queue:      testableMemQueue{NewMemQueue(clk, time.Minute)},
			Visibility: time.Minute,
			Delay:      10 * time.Minute,
			Advance:    clk.Advance,
		}
	})
}

// The suite's real-time mode (the one an SQS adapter uses) also passes on
// the wall clock, with short durations.
func TestMemQueueContractRealTime(t *testing.T) {
	porttest.QueueSuite(t, func(t *testing.T) porttest.QueueHarness {
		return porttest.QueueHarness{
			Queue:      testableMemQueue{NewMemQueue(clock.Real{}, 600*time.Millisecond)},
			Visibility: 600 * time.Millisecond,
			Delay:      time.Second,
			Advance:    time.Sleep,
			Patience:   800 * time.Millisecond,
		}
	})
}

// key builds a Certificate key in namespace default.
func key(name string) api.Key {
	return api.Key{Kind: api.KindCertificate, Namespace: "default", Name: name}
}

// qstep is one action on a MemQueue in a scripted test.
type qstep struct {
	do      string        // enqueue, receive, ack, ack-stale, nack, advance
	key     string        // for enqueue/ack/nack
	d       time.Duration // delay or advance
	want    string        // receive: "a,b" keys in order with attempts, e.g. "a#1,b#2"
	wantErr error         // ack/nack
}

// runScript runs steps on a fresh queue (visibility 1m) and checks each.
func runScript(t *testing.T, steps []qstep) *MemQueue {
	t.Helper()
	ctx := context.Background()
	clk := clock.NewFake(qt0)
	q := NewMemQueue(clk, time.Minute)
	held := map[string][]Delivery{} // deliveries per key name, oldest first
	for i, st := range steps {
		switch st.do {
		case "enqueue":
			if err := q.Enqueue(ctx, key(st.key), st.d); err != nil {
				t.Fatalf("step %d: Enqueue: %v", i, err)
			}
		case "advance":
			clk.Advance(st.d)
		case "receive":
			ds, err := q.Receive(ctx, 10)
			if err != nil {
				t.Fatalf("step %d: Receive: %v", i, err)
			}
			var got []string
			for _, d := range ds {
				got = append(got, fmt.Sprintf("%s#%d", d.Key.Name, d.Attempt))
				held[d.Key.Name] = append(held[d.Key.Name], d)
			}
			if g := strings.Join(got, ","); g != st.want {
				t.Fatalf("step %d: Receive at +%v = %q, want %q", i, clk.Now().Sub(qt0), g, st.want)
			}
		case "ack", "ack-stale", "nack":
			ds := held[st.key]
			if len(ds) == 0 {
				t.Fatalf("step %d: no delivery of %s held", i, st.key)
			}
			d := ds[len(ds)-1]
			var err error
			switch st.do {
			case "ack":
				err = q.Ack(ctx, d)
			case "ack-stale":
				err = q.Ack(ctx, ds[0])
			default:
				err = q.Nack(ctx, d, st.d)
			}
			if !errors.Is(err, st.wantErr) || (st.wantErr == nil && err != nil) {
				t.Fatalf("step %d: %s(%s) = %v, want %v", i, st.do, st.key, err, st.wantErr)
			}
		default:
			t.Fatalf("step %d: unknown action %q", i, st.do)
		}
	}
	return q
}

func TestMemQueueScripts(t *testing.T) {
	tests := []struct {
		name    string
		steps   []qstep
		wantLen int
	}{
		{"earliest due first", []qstep{
			{do: "enqueue", key: "c", d: 3 * time.Second},
			{do: "enqueue", key: "a", d: time.Second},
			{do: "enqueue", key: "b", d: 2 * time.Second},
			{do: "enqueue", key: "now"},
			{do: "receive", want: "now#1"},
			{do: "advance", d: 5 * time.Second},
			{do: "receive", want: "a#1,b#1,c#1"},
		}, 4},
		{"same due time keeps enqueue order", []qstep{
			{do: "enqueue", key: "x"}, {do: "enqueue", key: "y"}, {do: "enqueue", key: "a"},
			{do: "receive", want: "x#1,y#1,a#1"},
		}, 3},
		{"dedup keeps the earlier due time (later enqueue shorter)", []qstep{
			{do: "enqueue", key: "a", d: 10 * time.Minute},
			{do: "enqueue", key: "a", d: time.Minute},
			{do: "advance", d: time.Minute},
			{do: "receive", want: "a#1"},
			{do: "ack", key: "a"},
			{do: "advance", d: 10 * time.Minute},
			{do: "receive", want: ""},
		}, 0},
		{"dedup keeps the earlier due time (later enqueue longer)", []qstep{
			{do: "enqueue", key: "a", d: time.Minute},
			{do: "enqueue", key: "a", d: 10 * time.Minute},
			{do: "advance", d: time.Minute},
			{do: "receive", want: "a#1"},
			{do: "ack", key: "a"},
			{do: "advance", d: 10 * time.Minute},
			{do: "receive", want: ""},
		}, 0},
		{"negative delay is now", []qstep{
			{do: "enqueue", key: "a", d: -time.Hour},
			{do: "receive", want: "a#1"},
		}, 1},
		{"in flight: not delivered twice at once, again after ack", []qstep{
			{do: "enqueue", key: "a"},
			{do: "receive", want: "a#1"},
			{do: "enqueue", key: "a"},
			{do: "receive", want: ""},
			{do: "advance", d: 30 * time.Second},
			{do: "receive", want: ""},
			{do: "ack", key: "a"},
			{do: "receive", want: "a#1"},
			{do: "ack", key: "a"},
		}, 0},
		{"in flight with a delayed re-enqueue: delivered at its due time", []qstep{
			{do: "enqueue", key: "a"},
			{do: "receive", want: "a#1"},
			{do: "enqueue", key: "a", d: 2 * time.Minute},
			{do: "ack", key: "a"},
			{do: "receive", want: ""},
			{do: "advance", d: 2 * time.Minute},
			{do: "receive", want: "a#1"},
		}, 1},
		{"lease expiry redelivers once, folding in a pending copy", []qstep{
			{do: "enqueue", key: "a"},
			{do: "receive", want: "a#1"},
			{do: "enqueue", key: "a"},
			{do: "advance", d: time.Minute},
			{do: "receive", want: "a#2"},
			{do: "ack", key: "a"},
			{do: "receive", want: ""},
		}, 0},
		{"ack after the lease expired but before redelivery still counts", []qstep{
			{do: "enqueue", key: "a"},
			{do: "receive", want: "a#1"},
			{do: "advance", d: 2 * time.Minute},
			{do: "ack", key: "a"},
			{do: "receive", want: ""},
		}, 0},
		{"stale ack after redelivery is refused", []qstep{
			{do: "enqueue", key: "a"},
			{do: "receive", want: "a#1"},
			{do: "advance", d: time.Minute},
			{do: "receive", want: "a#2"},
			{do: "ack-stale", key: "a", wantErr: ErrLeaseLost},
			{do: "receive", want: ""},
			{do: "ack", key: "a"},
			{do: "ack", key: "a", wantErr: ErrLeaseLost},
		}, 0},
		{"nack delays and keeps the attempt count", []qstep{
			{do: "enqueue", key: "a"},
			{do: "receive", want: "a#1"},
			{do: "nack", key: "a", d: 30 * time.Second},
			{do: "receive", want: ""},
			{do: "advance", d: 30 * time.Second},
			{do: "receive", want: "a#2"},
			{do: "nack", key: "a"},
			{do: "receive", want: "a#3"},
			{do: "ack", key: "a"},
			{do: "nack", key: "a", wantErr: ErrLeaseLost},
		}, 0},
		{"nack keeps an earlier pending due time", []qstep{
			{do: "enqueue", key: "a"},
			{do: "receive", want: "a#1"},
			{do: "enqueue", key: "a", d: 10 * time.Second},
			{do: "nack", key: "a", d: time.Hour},
			{do: "advance", d: 10 * time.Second},
			{do: "receive", want: "a#2"},
		}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := runScript(t, tc.steps)
			if got := q.Len(); got != tc.wantLen {
				t.Errorf("Len = %d, want %d", got, tc.wantLen)
			}
		})
	}
}

func TestMemQueueReceiveLimit(t *testing.T) {
	ctx := context.Background()
	q := NewMemQueue(clock.NewFake(qt0), time.Minute)
	for i := 0; i < 5; i++ {
		if err := q.Enqueue(ctx, key(fmt.Sprint(i)), 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []int{2, 2, 1, 0} {
		ds, err := q.Receive(ctx, 2)
		if err != nil || len(ds) != want {
			t.Fatalf("Receive(2) = %d messages, %v; want %d", len(ds), err, want)
		}
	}
	if ds, _ := q.Receive(ctx, 0); len(ds) != 0 {
		t.Errorf("Receive(0) = %v", ds)
	}
}

func TestMemQueueRejectsBadKey(t *testing.T) {
	q := NewMemQueue(clock.NewFake(qt0), 0)
	if q.Visibility() != DefaultVisibility {
		t.Errorf("visibility %v, want the default %v", q.Visibility(), DefaultVisibility)
	}
	for _, k := range []api.Key{{}, {Kind: "Certificate", Namespace: "default"}, {Kind: "Certificate", Name: "a/b"}} {
		if err := q.Enqueue(context.Background(), k, 0); err == nil {
			t.Errorf("Enqueue(%#v): want an error", k)
		}
	}
	if q.Len() != 0 {
		t.Errorf("Len = %d after rejected enqueues", q.Len())
	}
}

// A run-until-idle loop on a fake clock: receive, handle, and when nothing
// is visible jump the clock to NextDue. Handlers here re-enqueue with a
// delay (as a step that must wait does), and the loop ends when Len is 0.
func TestMemQueueRunUntilIdle(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(qt0)
	q := NewMemQueue(clk, time.Minute)
	if _, ok := q.NextDue(); ok {
		t.Fatal("NextDue of an empty queue reported a time")
	}
	// Each key needs this many more runs, 90 s apart.
	runsLeft := map[string]int{"a": 2, "b": 0, "c": 1}
	for _, k := range []string{"a", "b", "c"} {
		if err := q.Enqueue(ctx, key(k), 0); err != nil {
			t.Fatal(err)
		}
	}
	var log []string
	for steps := 0; q.Len() > 0; steps++ {
		if steps > 100 {
			t.Fatal("not idle after 100 steps")
		}
		ds, err := q.Receive(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) == 0 {
			next, ok := q.NextDue()
			if !ok || !next.After(clk.Now()) {
				t.Fatalf("nothing visible, NextDue = %v, %v at %v", next, ok, clk.Now())
			}
			clk.Set(next)
			continue
		}
		for _, d := range ds {
			log = append(log, fmt.Sprintf("%s@%v", d.Key.Name, clk.Now().Sub(qt0)))
			if runsLeft[d.Key.Name] > 0 {
				runsLeft[d.Key.Name]--
				if err := q.Enqueue(ctx, d.Key, 90*time.Second); err != nil {
					t.Fatal(err)
				}
			}
			if err := q.Ack(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := "a@0s b@0s c@0s a@1m30s c@1m30s a@3m0s"
	if got := strings.Join(log, " "); got != want {
		t.Errorf("deliveries %q, want %q", got, want)
	}
}

// Wait wakes a real-time worker when something becomes visible.
func TestMemQueueWait(t *testing.T) {
	ctx := context.Background()
	t.Run("woken by an enqueue", func(t *testing.T) {
		q := NewMemQueue(clock.Real{}, time.Minute)
		woke := make(chan error, 1)
		go func() { woke <- q.Wait(ctx) }()
		time.Sleep(20 * time.Millisecond)
		if err := q.Enqueue(ctx, key("a"), 0); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-woke:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Wait did not return after an Enqueue")
		}
		if ds, _ := q.Receive(ctx, 1); len(ds) != 1 {
			t.Errorf("Receive after Wait: %v", ds)
		}
	})
	t.Run("returns when a delay ends", func(t *testing.T) {
		q := NewMemQueue(clock.Real{}, time.Minute)
		if err := q.Enqueue(ctx, key("a"), 50*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := q.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited < 40*time.Millisecond {
			t.Errorf("Wait returned after %v, before the 50ms delay", waited)
		}
		if ds, _ := q.Receive(ctx, 1); len(ds) != 1 {
			t.Errorf("Receive after Wait: %v", ds)
		}
	})
	t.Run("an in-flight message does not wake it early", func(t *testing.T) {
		q := NewMemQueue(clock.Real{}, time.Hour)
		if err := q.Enqueue(ctx, key("a"), 0); err != nil {
			t.Fatal(err)
		}
		if ds, _ := q.Receive(ctx, 1); len(ds) != 1 {
			t.Fatalf("Receive: %v", ds)
		}
		short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		if err := q.Wait(short); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Wait with only a leased message: %v, want the context's deadline", err)
		}
	})
	t.Run("canceled", func(t *testing.T) {
		q := NewMemQueue(clock.Real{}, time.Minute)
		c, cancel := context.WithCancel(ctx)
		cancel()
		if err := q.Wait(c); !errors.Is(err, context.Canceled) {
			t.Errorf("Wait on an empty queue with a canceled context: %v", err)
		}
	})
}

var _ ports.Queue = testableMemQueue{}
