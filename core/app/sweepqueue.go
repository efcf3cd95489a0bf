package app

import (
	"context"
	"sync"
	"time"

	"github.com/certfn/certfn/core/api"
)

// SweepQueue is a scheduler role's kernel queue: the immediate enqueues of
// a sweep are collected and sent by Flush in batches (SQS: 10 keys a
// request, Pub/Sub: one publish batch) instead of one call each; delayed
// ones are sent at once. Every cloud's scheduler uses it around
// Kernel.Sweep.
type SweepQueue struct {
	Q BatchQueue
	// MaxBatch bounds the keys of one EnqueueBatch call (0: no bound).
	MaxBatch int

	mu   sync.Mutex
	keys []api.Key
}

// Enqueue implements ports.Queue.
func (b *SweepQueue) Enqueue(ctx context.Context, key api.Key, delay time.Duration) error {
	if delay > 0 {
		return b.Q.Enqueue(ctx, key, delay)
	}
	b.mu.Lock()
	b.keys = append(b.keys, key)
	b.mu.Unlock()
	return nil
}

// Flush sends the collected keys and returns how many it tried to send. A
// key that was not sent stays due and is found by the next sweep.
func (b *SweepQueue) Flush(ctx context.Context) (int, error) {
	b.mu.Lock()
	keys := b.keys
	b.keys = nil
	b.mu.Unlock()
	for i := 0; i < len(keys); {
		n := len(keys) - i
		if b.MaxBatch > 0 && n > b.MaxBatch {
			n = b.MaxBatch
		}
		if err := b.Q.EnqueueBatch(ctx, keys[i:i+n], 0); err != nil {
			return len(keys), err
		}
		i += n
	}
	return len(keys), nil
}
