package local

import (
	"context"
	"time"

	"github.com/certfn/certfn/core/memory"
	"github.com/certfn/certfn/core/ports"
)

// DefaultVisibility is the lease of a received message when NewMemQueue is
// given no positive visibility timeout.
const DefaultVisibility = memory.DefaultVisibility

// ErrLeaseLost is returned by Ack and Nack for a delivery whose lease is no
// longer current (memory.ErrLeaseLost).
var ErrLeaseLost = memory.ErrLeaseLost

// Delivery is one message handed out by MemQueue.Receive.
type Delivery = memory.Delivery

// MemQueue is local mode's in-process queue of reconcile keys: a
// memory.Queue (de-duplication by key, delays and leases on the injected
// clock, Receive, Ack, Nack, Len, NextDue; see its contract) plus Wait,
// with which `certfn serve`'s workers sleep until there is work.
//
// It is safe for concurrent use.
type MemQueue struct {
	*memory.Queue
	clock ports.Clock
}

var _ ports.Queue = (*MemQueue)(nil)

// NewMemQueue returns an empty queue on clock whose leases last visibility
// (DefaultVisibility if not positive).
func NewMemQueue(clock ports.Clock, visibility time.Duration) *MemQueue {
	return &MemQueue{Queue: memory.NewQueue(clock, visibility), clock: clock}
}

// Wait blocks until Receive may return something or ctx is done (then it
// returns ctx's error): it returns when NextDue has come on the queue's
// clock, and is woken early by memory.Queue.Changed (an Enqueue, a Nack, an
// Ack of a key enqueued again in flight). It measures the remaining wait on
// the queue's clock but sleeps on a real timer, so it is meant for
// clock.Real (certfn serve); tests on a fake clock use NextDue instead.
func (q *MemQueue) Wait(ctx context.Context) error {
	for {
		// Take the channel before reading NextDue, so that a change in
		// between is seen as a closed channel rather than lost.
		changed := q.Changed()
		next, ok := q.NextDue()
		var (
			timer *time.Timer
			fired <-chan time.Time // nil (never) while the queue is empty
		)
		if ok {
			wait := next.Sub(q.clock.Now())
			if wait <= 0 {
				return nil
			}
			timer = time.NewTimer(wait)
			fired = timer.C
		}
		select {
		case <-ctx.Done():
		case <-changed:
		case <-fired:
		}
		if timer != nil {
			timer.Stop()
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}
