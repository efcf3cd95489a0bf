package awsmode

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/engine"
)

// Follow-ups (worker only). Every write the engine makes wakes the written
// key and, when it cares, its owner: with one step per message, an ACME
// issuance is some twenty queue messages, each a Lambda invocation. The
// worker instead handles the keys woken at once (delay 0) while handling a
// message in the same invocation, one step each exactly as if they had
// come from the queue, up to Settings.FollowUps steps and while more than
// followUpReserve of the invocation's time is left; what remains is sent
// to the worker queue. Waits (delays) still go to the queue, so nothing
// sleeps. A follow-up that fails transiently is sent back to the queue
// with its backoff as delay.
//
// If the invocation dies with follow-ups not yet handled, they are lost
// like a message lost between a write and its enqueue (DESIGN.md §3): the
// records' nextRunAt brings them back through the scheduler's sweep. That
// is the design's safety net already; it costs latency only in that case.

// followUpReserve is the invocation time left unused by follow-ups.
const followUpReserve = 10 * time.Second

// followUps is the FIFO of keys woken while handling one message (each
// key at most once while it waits).
type followUps struct {
	mu      sync.Mutex
	keys    []api.Key
	pending map[api.Key]bool
}

func (f *followUps) add(k api.Key) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pending[k] {
		return
	}
	f.pending[k] = true
	f.keys = append(f.keys, k)
}

func (f *followUps) pop() (api.Key, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.keys) == 0 {
		return api.Key{}, false
	}
	k := f.keys[0]
	f.keys = f.keys[1:]
	delete(f.pending, k)
	return k, true
}

func (f *followUps) drain() []api.Key {
	f.mu.Lock()
	defer f.mu.Unlock()
	ks := f.keys
	f.keys, f.pending = nil, map[api.Key]bool{}
	return ks
}

// newFollowUps returns the follow-ups of one message, or nil when this
// function does not run them (then woken keys go to the worker queue).
func (rt *Runtime) newFollowUps() *followUps {
	if rt.Role != RoleWorker || rt.Settings.FollowUps <= 0 {
		return nil
	}
	return &followUps{pending: map[api.Key]bool{}}
}

// route delivers the keys the step of key woke (d.Woken): as follow-ups
// when fu is set, else to the worker queue. A failure to send turns an
// acknowledged disposition into a retry: the message is handled again, and
// its step wakes the keys again.
func (rt *Runtime) route(ctx context.Context, key api.Key, attempt int, d engine.Disposition, fu *followUps) engine.Disposition {
	if fu != nil {
		for _, k := range d.Woken {
			fu.add(k)
		}
		return d
	}
	if err := rt.sendWoken(ctx, key, d.Woken); err != nil && d.Ack {
		return engine.Disposition{RetryAfter: engine.RetryBackoff(attempt), Err: err}
	}
	return d
}

// runFollowUps handles fu's keys (collecting the keys they wake in turn)
// within the step and time budget, and sends what is left to the worker
// queue. It returns how many it handled; an error means keys could not be
// sent.
func (rt *Runtime) runFollowUps(ctx context.Context, fu *followUps) (int, error) {
	steps := 0
	for {
		k, ok := fu.pop()
		if !ok {
			return steps, nil
		}
		if steps >= rt.Settings.FollowUps || lowOnTime(ctx) {
			rest := append([]api.Key{k}, fu.drain()...)
			if err := rt.Queue.EnqueueBatch(ctx, rest, 0); err != nil {
				return steps, fmt.Errorf("send %d follow-ups to the worker queue: %w", len(rest), err)
			}
			return steps, nil
		}
		steps++
		rt.inc("certfn_follow_ups_total")
		d := rt.route(ctx, k, 1, rt.handle(ctx, k, 1), fu)
		switch {
		case d.Ack && d.Err != nil:
			rt.Log.Warn("follow-up acknowledged without retry", "key", k.String(), "err", d.Err)
		case !d.Ack:
			rt.Log.Warn("follow-up will retry", "key", k.String(), "retryAfter", d.RetryAfter.String(), "err", d.Err)
			// Straight to the queue: a retry is never a follow-up.
			if err := rt.Queue.Enqueue(ctx, k, d.RetryAfter); err != nil {
				return steps, fmt.Errorf("send follow-up %s back to the worker queue: %w", k, err)
			}
		}
	}
}

// lowOnTime reports whether the invocation has less than followUpReserve left.
func lowOnTime(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && time.Until(dl) < followUpReserve
}
