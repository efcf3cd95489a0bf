package awsmode

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/certfn/certfn/adapters/aws/sqsq"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/engine"
)

// Routing between the worker and the signer, and the follow-ups of one
// delivery, are core/app's Deliverer (the same on every cloud); the
// Runtime's Deliverer is built in FromEnvWith for the worker and signer.

// batchQueue is the scheduler's engine queue: the sweep's immediate
// enqueues are collected and sent by Flush with SendMessageBatch (10 keys
// per request instead of one); delayed ones are sent at once.
type batchQueue struct {
	q    *sqsq.Queue
	mu   sync.Mutex
	keys []api.Key
}

// Enqueue implements ports.Queue.
func (b *batchQueue) Enqueue(ctx context.Context, key api.Key, delay time.Duration) error {
	if delay > 0 {
		return b.q.Enqueue(ctx, key, delay)
	}
	b.mu.Lock()
	b.keys = append(b.keys, key)
	b.mu.Unlock()
	return nil
}

// Flush sends the collected keys and returns how many it tried to send. A
// key that was not sent stays due and is found by the next sweep.
func (b *batchQueue) Flush(ctx context.Context) (int, error) {
	b.mu.Lock()
	keys := b.keys
	b.keys = nil
	b.mu.Unlock()
	if len(keys) == 0 {
		return 0, nil
	}
	return len(keys), b.q.EnqueueBatch(ctx, keys, 0)
}

// Handle runs one received key for the worker or the signer, sends the
// keys its step woke to the worker queue and returns what to do with the
// message (app.Deliverer.DeliverOne: no follow-ups).
func (rt *Runtime) Handle(ctx context.Context, key api.Key, attempt int) engine.Disposition {
	if rt.deliver == nil {
		return engine.Disposition{Ack: true, Err: fmt.Errorf("the %s function consumes no queue: %s dropped", rt.Role, key)}
	}
	return rt.deliver.DeliverOne(ctx, key, attempt)
}

func (rt *Runtime) inc(name string, labels ...string) {
	if rt.metrics != nil {
		rt.metrics.Inc(name, labels...)
	}
}
