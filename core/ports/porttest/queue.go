package porttest

import (
	"context"
	"errors"
	"sort"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
)

// Delivery is one received queue message: the key it carries and the
// backend's own handle for acknowledging it (a lease, an SQS receipt handle).
type Delivery struct {
	Key    api.Key
	Handle any
}

// TestableQueue is a ports.Queue the suite can also consume from. Receive
// returns up to max messages that are visible now and hides them for the
// queue's visibility timeout; Ack removes a received message for good.
type TestableQueue interface {
	ports.Queue
	Receive(ctx context.Context, max int) ([]Delivery, error)
	Ack(ctx context.Context, d Delivery) error
}

// QueueHarness is one fresh, empty queue plus what the suite must know to
// drive its time.
type QueueHarness struct {
	Queue TestableQueue
	// Visibility is the queue's visibility timeout: how long a received,
	// unacknowledged message stays hidden.
	Visibility time.Duration
	// Delay is the enqueue delay the suite tests with: a minute or so with a
	// fake clock, a few seconds for a real backend (SQS counts in seconds).
	// For a real backend, Delay and Visibility must each be long enough to
	// receive a message in (well over the backend's receive latency).
	Delay time.Duration
	// Advance moves the queue's time forward by d: clock.Fake.Advance for a
	// queue on a fake clock, time.Sleep for a real backend.
	Advance func(d time.Duration)
	// Patience is how long a real backend may take before a visible message
	// shows up in Receive; the suite keeps receiving until then. Zero means
	// the queue is exact: one Receive returns every visible message (up to
	// max), and the suite never waits in real time.
	Patience time.Duration
}

// QueueSuite runs the queue contract against harnesses made by newQueue,
// which must return a fresh, empty queue for every call.
func QueueSuite(t *testing.T, newQueue func(t *testing.T) QueueHarness) {
	t.Run("EnqueueReceiveAck", func(t *testing.T) { queueEnqueueReceiveAck(t, newQueue(t)) })
	t.Run("ReceiveMax", func(t *testing.T) { queueReceiveMax(t, newQueue(t)) })
	t.Run("Delay", func(t *testing.T) { queueDelay(t, newQueue(t)) })
	t.Run("VisibilityTimeout", func(t *testing.T) { queueVisibility(t, newQueue(t)) })
	t.Run("Duplicates", func(t *testing.T) { queueDuplicates(t, newQueue(t)) })
	t.Run("EnqueueWhileInFlight", func(t *testing.T) { queueNoLostWakeup(t, newQueue(t)) })
	t.Run("CanceledContext", func(t *testing.T) { queueCanceled(t, newQueue(t)) })
}

// queueKeys are the keys the queue suite sends.
var queueKeys = []api.Key{
	certKey("default", "web"),
	certKey("team-a", "api"),
	reqKey("default", "web-1"),
	clusterIssuerKey("ca"),
	certKey("default", "mail"),
}

func mustEnqueue(t *testing.T, h QueueHarness, k api.Key, delay time.Duration) {
	t.Helper()
	if err := h.Queue.Enqueue(context.Background(), k, delay); err != nil {
		t.Fatalf("Enqueue(%s, %v): %v", k, delay, err)
	}
}

func mustAck(t *testing.T, h QueueHarness, ds ...Delivery) {
	t.Helper()
	for _, d := range ds {
		if err := h.Queue.Ack(context.Background(), d); err != nil {
			t.Fatalf("Ack(%s): %v", d.Key, err)
		}
	}
}

func receiveOnce(t *testing.T, h QueueHarness, max int) []Delivery {
	t.Helper()
	ds, err := h.Queue.Receive(context.Background(), max)
	if err != nil {
		t.Fatalf("Receive(%d): %v", max, err)
	}
	if len(ds) > max {
		t.Fatalf("Receive(%d) returned %d messages", max, len(ds))
	}
	return ds
}

// receiveUntil receives until every key in want has been delivered at least
// once (or Patience runs out) and returns all deliveries seen.
func receiveUntil(t *testing.T, h QueueHarness, want ...api.Key) []Delivery {
	t.Helper()
	missing := map[api.Key]bool{}
	for _, k := range want {
		missing[k] = true
	}
	var all []Delivery
	deadline := time.Now().Add(h.Patience)
	for {
		ds := receiveOnce(t, h, 10)
		for _, d := range ds {
			delete(missing, d.Key)
		}
		all = append(all, ds...)
		if len(missing) == 0 {
			return all
		}
		if h.Patience == 0 || time.Now().After(deadline) {
			var left []string
			for k := range missing {
				left = append(left, k.String())
			}
			sort.Strings(left)
			t.Fatalf("not delivered: %v (got %v)", left, deliveredKeys(all))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// receiveNothing checks that no message is visible. A real backend is
// polled for Patience/4. visibleFrom is the wall-clock time from which a
// message may legitimately show up (zero: never); a message received by a
// call that started after it ends the check and is returned, so that a slow
// test machine cannot turn a late check into a failure.
func receiveNothing(t *testing.T, h QueueHarness, why string, visibleFrom time.Time) []Delivery {
	t.Helper()
	deadline := time.Now().Add(h.Patience / 4)
	for {
		started := time.Now()
		if ds := receiveOnce(t, h, 10); len(ds) > 0 {
			if h.Patience == 0 || visibleFrom.IsZero() || started.Before(visibleFrom) {
				t.Fatalf("%s: received %v, want nothing", why, deliveredKeys(ds))
			}
			return ds
		}
		if h.Patience == 0 || time.Now().After(deadline) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// delivered reports whether ds holds a delivery of k.
func delivered(ds []Delivery, k api.Key) bool {
	for _, d := range ds {
		if d.Key == k {
			return true
		}
	}
	return false
}

func deliveredKeys(ds []Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Key.String()
	}
	sort.Strings(out)
	return out
}

// pastVisibility is an advance that surely ends every lease taken before it.
func pastVisibility(h QueueHarness) time.Duration { return h.Visibility + h.Visibility/2 }

func queueEnqueueReceiveAck(t *testing.T, h QueueHarness) {
	for _, k := range queueKeys[:3] {
		mustEnqueue(t, h, k, 0)
	}
	got := receiveUntil(t, h, queueKeys[:3]...)
	for _, d := range got {
		if !containsKey(queueKeys[:3], d.Key) {
			t.Errorf("received unknown key %s", d.Key)
		}
	}
	mustAck(t, h, got...)
	receiveNothing(t, h, "after acking everything", time.Time{})
	h.Advance(pastVisibility(h))
	receiveNothing(t, h, "acked messages after the visibility timeout", time.Time{})
}

func containsKey(keys []api.Key, k api.Key) bool {
	for _, x := range keys {
		if x == k {
			return true
		}
	}
	return false
}

func queueReceiveMax(t *testing.T, h QueueHarness) {
	for _, k := range queueKeys {
		mustEnqueue(t, h, k, 0)
	}
	var first []Delivery
	deadline := time.Now().Add(h.Patience)
	for len(first) == 0 {
		first = receiveOnce(t, h, 2)
		if h.Patience == 0 || time.Now().After(deadline) {
			break
		}
	}
	if h.Patience == 0 && len(first) != 2 {
		t.Fatalf("Receive(2) with 5 visible: got %d messages, want 2", len(first))
	}
	if len(first) == 0 {
		t.Fatalf("Receive(2) with 5 visible: got nothing")
	}
	rest := receiveUntil(t, h, remainingKeys(queueKeys, first)...)
	mustAck(t, h, append(first, rest...)...)
}

func remainingKeys(keys []api.Key, got []Delivery) []api.Key {
	var out []api.Key
	for _, k := range keys {
		found := false
		for _, d := range got {
			found = found || d.Key == k
		}
		if !found {
			out = append(out, k)
		}
	}
	return out
}

func queueDelay(t *testing.T, h QueueHarness) {
	k, now := queueKeys[0], queueKeys[1]
	enqueued := time.Now()
	mustEnqueue(t, h, k, h.Delay)
	mustEnqueue(t, h, now, 0)
	got := receiveUntil(t, h, now)
	if delivered(got, k) && (h.Patience == 0 || time.Since(enqueued) < h.Delay) {
		t.Fatalf("delayed message delivered at once")
	}
	mustAck(t, h, got...)
	h.Advance(h.Delay / 2)
	got = receiveNothing(t, h, "half-way through the delay", enqueued.Add(h.Delay))
	h.Advance(h.Delay - h.Delay/2)
	if !delivered(got, k) {
		got = append(got, receiveUntil(t, h, k)...)
	}
	mustAck(t, h, got...)
}

func queueVisibility(t *testing.T, h QueueHarness) {
	k := queueKeys[0]
	mustEnqueue(t, h, k, 0)
	leased := time.Now()
	first := receiveUntil(t, h, k)
	second := receiveNothing(t, h, "while leased", leased.Add(h.Visibility))
	// Not acknowledged: it comes back once the visibility timeout has passed.
	h.Advance(pastVisibility(h))
	if !delivered(second, k) {
		second = append(second, receiveUntil(t, h, k)...)
	}
	mustAck(t, h, second...)
	h.Advance(pastVisibility(h))
	receiveNothing(t, h, "after acking the redelivery", time.Time{})
	// Acknowledging the stale first delivery must not bring anything back
	// (backends may return an error for an expired handle).
	for _, d := range first {
		_ = h.Queue.Ack(context.Background(), d)
	}
	receiveNothing(t, h, "after acking a stale delivery", time.Time{})
}

func queueDuplicates(t *testing.T, h QueueHarness) {
	k := queueKeys[0]
	for i := 0; i < 3; i++ {
		mustEnqueue(t, h, k, 0)
	}
	got := receiveUntil(t, h, k)
	mustAck(t, h, got...)
	if h.Patience > 0 {
		// Collect (and ack) the other copies a real backend keeps.
		deadline := time.Now().Add(h.Patience / 2)
		for time.Now().Before(deadline) {
			more := receiveOnce(t, h, 10)
			mustAck(t, h, more...)
			got = append(got, more...)
			time.Sleep(100 * time.Millisecond)
		}
	}
	if len(got) < 1 || len(got) > 3 {
		t.Errorf("3 enqueues of one key delivered %d times, want 1 to 3", len(got))
	}
	for _, d := range got {
		if d.Key != k {
			t.Errorf("received %s, want only %s", d.Key, k)
		}
	}
	h.Advance(pastVisibility(h))
	receiveNothing(t, h, "after acking every copy", time.Time{})
}

// queueNoLostWakeup: a key enqueued again while its message is being
// handled must be delivered again after the ack; otherwise a change made
// during the handling would never be reconciled.
func queueNoLostWakeup(t *testing.T, h QueueHarness) {
	k := queueKeys[0]
	mustEnqueue(t, h, k, 0)
	first := receiveUntil(t, h, k)
	mustEnqueue(t, h, k, 0) // written again while in flight
	mustAck(t, h, first...)
	second := receiveUntil(t, h, k)
	mustAck(t, h, second...)
	h.Advance(pastVisibility(h))
	receiveNothing(t, h, "after acking the second delivery", time.Time{})
}

func queueCanceled(t *testing.T, h QueueHarness) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := h.Queue.Enqueue(ctx, queueKeys[0], 0); !errors.Is(err, context.Canceled) {
		t.Errorf("Enqueue with a canceled context: %v, want context.Canceled", err)
	}
	if _, err := h.Queue.Receive(ctx, 10); !errors.Is(err, context.Canceled) {
		t.Errorf("Receive with a canceled context: %v, want context.Canceled", err)
	}
	receiveNothing(t, h, "after a canceled Enqueue", time.Time{})
}
