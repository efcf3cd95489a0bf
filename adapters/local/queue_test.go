package local

import (
	"context"
	"errors"
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

// MemQueue's queue semantics are memory.Queue's, tested in core/memory
// (scripts, receive limit, bad keys, run-until-idle) and by the contract
// suites above; the tests here cover what the wrapper adds.

func TestNewMemQueue(t *testing.T) {
	if got := NewMemQueue(clock.NewFake(qt0), 0).Visibility(); got != DefaultVisibility {
		t.Errorf("visibility %v, want the default %v", got, DefaultVisibility)
	}
	if got := NewMemQueue(clock.NewFake(qt0), time.Second).Visibility(); got != time.Second {
		t.Errorf("visibility %v, want 1s", got)
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
	t.Run("woken by an enqueue that brings a due time forward", func(t *testing.T) {
		q := NewMemQueue(clock.Real{}, time.Minute)
		if err := q.Enqueue(ctx, key("a"), time.Hour); err != nil {
			t.Fatal(err)
		}
		wakes(t, q, "an earlier Enqueue", func() error { return q.Enqueue(ctx, key("a"), 0) })
		if ds, _ := q.Receive(ctx, 1); len(ds) != 1 {
			t.Errorf("Receive after Wait: %v", ds)
		}
	})
	t.Run("woken by a Nack", func(t *testing.T) {
		q := NewMemQueue(clock.Real{}, time.Hour)
		d := enqueueReceive(t, q, "a")
		wakes(t, q, "a Nack", func() error { return q.Nack(ctx, d, 0) })
		if ds, _ := q.Receive(ctx, 1); len(ds) != 1 || ds[0].Attempt != 2 {
			t.Errorf("Receive after Wait: %v, want a#2", ds)
		}
	})
	t.Run("woken by the Ack of a key enqueued again in flight", func(t *testing.T) {
		q := NewMemQueue(clock.Real{}, time.Hour)
		d := enqueueReceive(t, q, "a")
		if err := q.Enqueue(ctx, key("a"), 0); err != nil {
			t.Fatal(err)
		}
		wakes(t, q, "the Ack", func() error { return q.Ack(ctx, d) })
		if ds, _ := q.Receive(ctx, 1); len(ds) != 1 || ds[0].Attempt != 1 {
			t.Errorf("Receive after Wait: %v, want a#1", ds)
		}
	})
	t.Run("returns when a lease ends", func(t *testing.T) {
		q := NewMemQueue(clock.Real{}, 50*time.Millisecond)
		enqueueReceive(t, q, "a")
		start := time.Now()
		if err := q.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited < 40*time.Millisecond {
			t.Errorf("Wait returned after %v, before the 50ms lease ended", waited)
		}
		if ds, _ := q.Receive(ctx, 1); len(ds) != 1 || ds[0].Attempt != 2 {
			t.Errorf("Receive after Wait: %v, want a#2", ds)
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

// enqueueReceive enqueues key(name) and receives its delivery.
func enqueueReceive(t *testing.T, q *MemQueue, name string) Delivery {
	t.Helper()
	ctx := context.Background()
	if err := q.Enqueue(ctx, key(name), 0); err != nil {
		t.Fatal(err)
	}
	ds, err := q.Receive(ctx, 1)
	if err != nil || len(ds) != 1 {
		t.Fatalf("Receive = %v, %v; want one delivery", ds, err)
	}
	return ds[0]
}

// wakes checks that a Wait on q is still blocked after 20ms and returns
// nil soon after do.
func wakes(t *testing.T, q *MemQueue, what string, do func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	woke := make(chan error, 1)
	go func() { woke <- q.Wait(ctx) }()
	select {
	case err := <-woke:
		t.Fatalf("Wait returned %v before %s", err, what)
	case <-time.After(20 * time.Millisecond):
	}
	if err := do(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-woke:
		if err != nil {
			t.Fatalf("Wait after %s: %v", what, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("Wait did not return after %s", what)
	}
}

var _ ports.Queue = testableMemQueue{}
