package memory

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// DefaultVisibility is the lease of a received message when NewQueue is
// given no positive visibility timeout.
const DefaultVisibility = 5 * time.Minute

// ErrLeaseLost is returned by Ack and Nack for a delivery whose lease is no
// longer current: the message was delivered again after its visibility
// timeout, or was acknowledged already.
var ErrLeaseLost = errors.New("lease lost: the message was redelivered or acknowledged already")

// Delivery is one message handed out by Queue.Receive.
type Delivery struct {
	Key api.Key
	// Attempt counts the deliveries of this key since it was last
	// acknowledged: 1 for the first, more after visibility timeouts and Nacks.
	Attempt int
	lease   uint64
}

// Queue is a ports.Queue in memory, with the consumer side (Receive, Ack,
// Nack) a test or an in-process worker drives.
//
// Contract (the one of ports.Queue, checked by porttest.QueueSuite):
//
//   - Enqueue(key, delay) makes key visible after delay (now if not
//     positive), measured on the injected clock: tests drive it with
//     clock.Fake and never sleep. It de-duplicates by key: a key already
//     waiting keeps the earlier of its two due times.
//   - Receive leases up to n visible messages for the visibility timeout,
//     each taken from the namespace (of the key; "" for cluster-scoped
//     keys) with the fewest messages in flight among those with a visible
//     one, earliest due first within it and between namespaces in flight
//     alike (FIFO among equal times): with many consumers, a namespace
//     with a backlog holds no more than its share of them while another
//     namespace's key waits (fairness is this queue's, not ports.Queue's:
//     a cloud queue delivers in its own order). An unacknowledged
//     message becomes visible again when its lease ends, with its Attempt
//     counted up. Receive never blocks; NextDue tells when it will next
//     return something.
//   - Ack removes a received message for good; Nack makes it visible again
//     after a delay. Both return ErrLeaseLost for a delivery that is not
//     the current one of its key.
//   - A key enqueued while its message is in flight is not delivered twice
//     at once: it waits, and is delivered again after the Ack (no lost
//     wake-up).
//   - Changed signals the changes that may bring NextDue forward, so that
//     a consumer on a real clock can sleep until NextDue and still wake
//     for new work; the queue itself keeps no timer.
//
// Queue is safe for concurrent use.
type Queue struct {
	clock      ports.Clock
	visibility time.Duration

	mu    sync.Mutex
	items map[api.Key]*qitem
	// spaces holds, per namespace, its items by the time they become
	// visible and how many of them are in flight.
	spaces map[string]*space
	seq    uint64
	leases uint64
	// changed is closed, and cleared, when NextDue may have moved earlier;
	// nil while nobody holds it from Changed.
	changed chan struct{}
}

var _ ports.Queue = (*Queue)(nil)

// space is the queue of one namespace.
type space struct {
	order    qheap // items by the time they become visible
	inFlight int   // leased items
}

// qitem is the state of one key. It is in its namespace's heap as long
// as it is pending or leased.
type qitem struct {
	key        api.Key
	sp         *space
	pending    bool      // a message is waiting to be delivered
	due        time.Time // when the pending message becomes visible
	leased     bool      // a delivery is in flight
	leaseUntil time.Time
	lease      uint64
	attempts   int
	seq        uint64 // FIFO among equal times
	index      int    // position in the heap
}

// visibleAt is when the item can next be received: the end of its lease if
// in flight (an expired lease is redelivered, folding in a pending copy),
// else its due time.
func (it *qitem) visibleAt() time.Time {
	if it.leased {
		return it.leaseUntil
	}
	return it.due
}

// qheap is a min-heap of items by visibleAt, then seq.
type qheap []*qitem

func (h qheap) Len() int           { return len(h) }
func (h qheap) Less(i, j int) bool { return before(h[i], h[j]) }

// before orders two items by visibleAt, then seq.
func before(a, b *qitem) bool {
	if c := a.visibleAt().Compare(b.visibleAt()); c != 0 {
		return c < 0
	}
	return a.seq < b.seq
}
func (h qheap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *qheap) Push(x any) {
	it := x.(*qitem)
	it.index = len(*h)
	*h = append(*h, it)
}
func (h *qheap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	it.index = -1
	return it
}

// NewQueue returns an empty queue on clock whose leases last visibility
// (DefaultVisibility if not positive).
func NewQueue(clock ports.Clock, visibility time.Duration) *Queue {
	if visibility <= 0 {
		visibility = DefaultVisibility
	}
	return &Queue{clock: clock, visibility: visibility, items: map[api.Key]*qitem{}, spaces: map[string]*space{}}
}

// Visibility returns the lease duration of a received message.
func (q *Queue) Visibility() time.Duration { return q.visibility }

// Enqueue schedules key to be delivered after delay (not positive: now).
// If key is already waiting, it keeps the earlier due time; if it is in
// flight, it is delivered again after the Ack.
func (q *Queue) Enqueue(ctx context.Context, key api.Key, delay time.Duration) error {
	if err := key.Validate(); err != nil {
		return errs.Permanentf("memory queue: enqueue %s: key.%w", key, err)
	}
	if err := live(ctx, "memory queue: enqueue "+key.String()); err != nil {
		return err
	}
	due := q.clock.Now().Add(max(delay, 0))
	q.mu.Lock()
	defer q.mu.Unlock()
	it, ok := q.items[key]
	if !ok {
		q.seq++
		sp := q.spaces[key.Namespace]
		if sp == nil {
			sp = &space{}
			q.spaces[key.Namespace] = sp
		}
		it = &qitem{key: key, sp: sp, pending: true, due: due, seq: q.seq}
		q.items[key] = it
		heap.Push(&sp.order, it)
		q.signal()
		return nil
	}
	if it.pending && !due.Before(it.due) {
		return nil
	}
	it.pending, it.due = true, due
	if !it.leased {
		heap.Fix(&it.sp.order, it.index)
		q.signal()
	}
	return nil
}

// Receive leases and returns up to n messages visible now (waiting keys
// whose due time has come and in-flight keys whose lease has ended), one
// at a time from the namespace with the fewest messages in flight, then
// earliest first. It never blocks. Each message costs a look at every
// namespace with queued keys.
func (q *Queue) Receive(ctx context.Context, n int) ([]Delivery, error) {
	if err := live(ctx, "memory queue: receive"); err != nil {
		return nil, err
	}
	now := q.clock.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []Delivery
	for len(out) < n {
		sp := q.fairest(now)
		if sp == nil {
			break
		}
		it := sp.order[0]
		if !it.leased {
			sp.inFlight++
		}
		q.leases++
		it.pending, it.leased = false, true
		it.leaseUntil, it.lease = now.Add(q.visibility), q.leases
		it.attempts++
		heap.Fix(&sp.order, 0)
		out = append(out, Delivery{Key: it.key, Attempt: it.attempts, lease: it.lease})
	}
	return out, nil
}

// fairest returns the namespace Receive takes its next message from: of
// those whose earliest item is visible at now, the one with the fewest
// items in flight, then the earliest (visibleAt, seq) item; nil if none
// is visible. The order is total (seq is unique), so the choice does not
// depend on the map's iteration order. q.mu must be held.
func (q *Queue) fairest(now time.Time) *space {
	var best *space
	for _, sp := range q.spaces {
		head := sp.order[0]
		if head.visibleAt().After(now) {
			continue
		}
		if best == nil || sp.inFlight < best.inFlight ||
			(sp.inFlight == best.inFlight && before(head, best.order[0])) {
			best = sp
		}
	}
	return best
}

// leased returns d's item if d's lease is current; q.mu must be held.
func (q *Queue) leased(op string, d Delivery) (*qitem, error) {
	it, ok := q.items[d.Key]
	if !ok || !it.leased || it.lease != d.lease {
		return nil, fmt.Errorf("memory queue: %s %s: %w", op, d.Key, ErrLeaseLost)
	}
	return it, nil
}

// Ack ends d's lease for good. If the key was enqueued again while in
// flight, that message becomes visible at its due time. ErrLeaseLost if d
// is not the current delivery of its key (an ack after the lease ended but
// before a redelivery still counts).
func (q *Queue) Ack(ctx context.Context, d Delivery) error {
	if err := live(ctx, "memory queue: ack "+d.Key.String()); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	it, err := q.leased("ack", d)
	if err != nil {
		return err
	}
	it.leased, it.attempts = false, 0
	it.sp.inFlight--
	if !it.pending {
		heap.Remove(&it.sp.order, it.index)
		delete(q.items, d.Key)
		if len(it.sp.order) == 0 {
			delete(q.spaces, d.Key.Namespace)
		}
		return nil
	}
	heap.Fix(&it.sp.order, it.index)
	q.signal()
	return nil
}

// Nack ends d's lease early and makes the key visible again after delay
// (or earlier, if it was enqueued again with a shorter delay meanwhile).
// The attempt count is kept. ErrLeaseLost if d is not current.
func (q *Queue) Nack(ctx context.Context, d Delivery, delay time.Duration) error {
	if err := live(ctx, "memory queue: nack "+d.Key.String()); err != nil {
		return err
	}
	due := q.clock.Now().Add(max(delay, 0))
	q.mu.Lock()
	defer q.mu.Unlock()
	it, err := q.leased("nack", d)
	if err != nil {
		return err
	}
	if !it.pending || due.Before(it.due) {
		it.due = due
	}
	it.leased, it.pending = false, true
	it.sp.inFlight--
	heap.Fix(&it.sp.order, it.index)
	q.signal()
	return nil
}

// Len returns the number of keys waiting or in flight.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

// NextDue returns the earliest time at which Receive will return something
// (a due time or the end of a lease), and false if the queue is empty. A
// run-until-idle loop on a fake clock advances the clock to it.
func (q *Queue) NextDue() (time.Time, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var (
		next time.Time
		ok   bool
	)
	for _, sp := range q.spaces {
		if t := sp.order[0].visibleAt(); !ok || t.Before(next) {
			next, ok = t, true
		}
	}
	return next, ok
}

// Changed returns a channel that is closed at the next change that may
// make NextDue earlier than it was when Changed was called: an Enqueue
// that adds a key or brings a waiting key's due time forward, a Nack, or
// an Ack of a key enqueued again while in flight. Every caller holding the
// channel sees the close (a broadcast); after it, Changed returns a new
// channel. A change may be signalled that leaves NextDue where it was, but
// none that moves it earlier is missed by a caller that takes the channel
// before reading NextDue.
//
// The passing of time is not signalled: a due time or the end of a lease
// arriving on the clock closes nothing. A consumer on a real clock waits
// for the earlier of the channel and NextDue (local.MemQueue.Wait); one on
// a fake clock advances it to NextDue.
func (q *Queue) Changed() <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.changed == nil {
		q.changed = make(chan struct{})
	}
	return q.changed
}

// signal closes the channel Changed handed out, if any; q.mu must be held.
func (q *Queue) signal() {
	if q.changed != nil {
		close(q.changed)
		q.changed = nil
	}
}
