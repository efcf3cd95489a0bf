package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
)

// Disposition tells the queue adapter what to do with a message.
type Disposition struct {
	// Ack: delete the message (done, or permanently failed and recorded).
	Ack bool
	// RetryAfter: make the message visible again after this delay.
	RetryAfter time.Duration
	// Err is what went wrong, for the adapter's log (never key material).
	Err error
}

// Handle processes one queue message body (a reconcile key) delivered for
// the attempt-th time (1-based). Malformed or unknown keys are acknowledged
// and reported: retrying cannot fix them and they must not block a batch.
// Lost races retry at once; transient errors back off exponentially from
// 1 s up to 5 minutes, or as the error suggests (Retry-After). Every other
// failure is also recorded as a Warning Event on the object (api.Event).
func (e *Engine) Handle(ctx context.Context, body string, attempt int) Disposition {
	key, err := api.ParseKey(body)
	if err != nil {
		e.cfg.Metrics.Inc("certfn_bad_messages_total")
		return Disposition{Ack: true, Err: fmt.Errorf("dropped malformed message: %w", err)}
	}
	err = e.Reconcile(ctx, key)
	if err == nil {
		return Disposition{Ack: true}
	}
	class := errs.Classify(err)
	if class == errs.Conflict {
		e.cfg.Metrics.Inc("certfn_conflicts_total", "kind", key.Kind)
		return Disposition{RetryAfter: 0, Err: err}
	}
	if rerr := e.recordFailure(ctx, key, class, err); rerr != nil {
		err = fmt.Errorf("%w (and the Event could not be recorded: %v)", err, rerr)
	}
	if class == errs.PermanentClass {
		e.cfg.Metrics.Inc("certfn_permanent_errors_total", "kind", key.Kind)
		return Disposition{Ack: true, Err: err}
	}
	e.cfg.Metrics.Inc("certfn_transient_errors_total", "kind", key.Kind)
	if d, ok := errs.SuggestedDelay(err); ok {
		return Disposition{RetryAfter: d, Err: err}
	}
	return Disposition{RetryAfter: RetryBackoff(attempt), Err: err}
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
func (e *Engine) Sweep(ctx context.Context, limit int) (int, error) {
	items, err := e.cfg.Store.Due(ctx, e.cfg.Clock.Now(), limit)
	if err != nil {
		return 0, fmt.Errorf("query due index: %w", err)
	}
	for _, it := range items {
		if err := e.enqueue(ctx, it.Key, 0); err != nil {
			return 0, err
		}
	}
	e.cfg.Metrics.Inc("certfn_sweeps_total")
	return len(items), nil
}
