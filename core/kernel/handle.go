package kernel

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// Disposition tells the queue adapter what to do with a message.
type Disposition struct {
	// Ack: delete the message (done, or permanently failed and recorded).
	Ack bool
	// RetryAfter: make the message visible again after this delay.
	RetryAfter time.Duration
	// Err is what went wrong, for the adapter's log (never key material).
	Err error
	// Why says, when the reconcile wrote nothing, why each step did
	// nothing ("step: why; ..."), for debug logs.
	Why string
	// Woken lists the keys the reconcile woke for an immediate run, in
	// order, each once, when the kernel defers wake-ups
	// (Config.DeferWakes); the caller must deliver them (run them now or
	// enqueue them). Set whatever the outcome: a write that succeeded
	// before a later failure still wakes its keys.
	Woken []api.Key
}

// Message is one delivery of a reconcile key.
type Message struct {
	Key api.Key
	// Attempt is the delivery count, 1-based (it sets the retry backoff).
	Attempt int
	// Loaded, when set, is Key's record as the caller read it just before
	// (a router that looked at the record to decide where the key goes);
	// the reconcile uses it instead of reading it again.
	Loaded *ports.Record
}

// Handle runs one step for a delivered key and says what to do with the
// message. Lost races retry at once; transient errors back off
// exponentially from 1 s up to 5 minutes, or as the error suggests
// (Retry-After). Every other failure is also recorded as a Warning Event
// on the object (api.Event).
func (k *Kernel) Handle(ctx context.Context, m Message) Disposition {
	var why []string
	r := &run{Kernel: k, why: &why, buffer: true}
	if k.cfg.DeferWakes {
		r.woken = &wakeSet{}
	}
	err := r.reconcile(ctx, m.Key, m.Loaded)
	r.flushEvents(ctx, err)
	d := k.dispose(ctx, m, err)
	d.Woken, d.Why = r.woken.list(), strings.Join(why, "; ")
	return d
}

// HandleBody is Handle for a transport that carries raw message bodies
// (Key.String()). A malformed body or unknown key is acknowledged and
// reported (certfn_bad_messages_total): retrying cannot fix it and it
// must not block a batch.
func (k *Kernel) HandleBody(ctx context.Context, body string, attempt int) Disposition {
	key, err := api.ParseKey(body)
	if err != nil {
		k.cfg.Metrics.Inc("certfn_bad_messages_total")
		return Disposition{Ack: true, Err: fmt.Errorf("dropped malformed message: %w", err)}
	}
	return k.Handle(ctx, Message{Key: key, Attempt: attempt})
}

// dispose turns a reconcile's error into the message's disposition.
func (k *Kernel) dispose(ctx context.Context, m Message, err error) Disposition {
	key := m.Key
	if err == nil {
		return Disposition{Ack: true}
	}
	class := errs.Classify(err)
	if class == errs.Conflict {
		k.cfg.Metrics.Inc("certfn_conflicts_total", "kind", key.Kind)
		return Disposition{RetryAfter: 0, Err: err}
	}
	if rerr := k.recordFailure(ctx, key, class, err); rerr != nil {
		err = fmt.Errorf("%w (and the Event could not be recorded: %v)", err, rerr)
	}
	if class == errs.PermanentClass {
		k.cfg.Metrics.Inc("certfn_permanent_errors_total", "kind", key.Kind)
		return Disposition{Ack: true, Err: err}
	}
	k.cfg.Metrics.Inc("certfn_transient_errors_total", "kind", key.Kind)
	d, ok := errs.SuggestedDelay(err)
	if !ok {
		d = RetryBackoff(m.Attempt)
	}
	if rerr := k.deferDue(ctx, key, k.cfg.Clock.Now().Add(d)); rerr != nil {
		err = fmt.Errorf("%w (and its due time could not be deferred: %v)", err, rerr)
	}
	return Disposition{RetryAfter: d, Err: err}
}

// deferDue moves a record's due time that has passed (or comes before at)
// to at, after a transient failure: otherwise every sweep finds the record
// due and enqueues it at once, and the failing step runs at the sweep's
// pace instead of backing off (an ACME server answering 500 was
// asked every sweep). A record that is not in the due index, or is due
// later, is left alone; a lost race is no failure (the writer rescheduled
// it).
func (k *Kernel) deferDue(ctx context.Context, key api.Key, at time.Time) error {
	if key.Kind == api.KindEvent {
		return nil
	}
	rec, err := k.cfg.Store.Get(ctx, key)
	if errors.Is(err, ports.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if rec.NextRunAt.IsZero() || !rec.NextRunAt.Before(at) {
		return nil
	}
	rec.NextRunAt = at
	if _, err := k.cfg.Store.Update(ctx, rec); err != nil && errs.Classify(err) != errs.Conflict {
		return err
	}
	k.cfg.Metrics.Inc("certfn_state_writes_total", "kind", key.Kind)
	return nil
}

// RetryBackoff is 1 s doubling per attempt, capped at 5 minutes.
func RetryBackoff(attempt int) time.Duration {
	d := time.Second
	for i := 1; i < attempt && d < 5*time.Minute; i++ {
		d *= 2
	}
	if d > 5*time.Minute {
		d = 5 * time.Minute
	}
	return d
}

// Sweep is the scheduler: it enqueues up to limit keys whose nextRunAt has
// passed, reading only the due index. It returns how many it enqueued.
func (k *Kernel) Sweep(ctx context.Context, limit int) (int, error) {
	items, err := k.cfg.Store.Due(ctx, k.cfg.Clock.Now(), limit)
	if err != nil {
		return 0, fmt.Errorf("query due index: %w", err)
	}
	r := k.direct()
	for _, it := range items {
		if err := r.enqueue(ctx, it.Key, 0); err != nil {
			return 0, err
		}
	}
	k.cfg.Metrics.Inc("certfn_sweeps_total")
	return len(items), nil
}
