package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/memory"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/ports/porttest"
)

// The contract suites of every adapter, run against the in-memory ports.

func TestStoreContract(t *testing.T) {
	porttest.StoreSuite(t, func(t *testing.T) ports.Store { return memory.NewStore() })
}

func TestFeedContract(t *testing.T) {
	porttest.FeedSuite(t, func(t *testing.T) porttest.FeedStore { return memory.NewStore() })
}

func TestSecretContract(t *testing.T) {
	porttest.SecretSuite(t, func(t *testing.T) ports.SecretStore { return memory.NewSecrets() })
}

// testableQueue adapts Queue to porttest.TestableQueue: the porttest
// delivery carries the memory delivery as its handle.
type testableQueue struct{ *memory.Queue }

func (q testableQueue) Receive(ctx context.Context, max int) ([]porttest.Delivery, error) {
	ds, err := q.Queue.Receive(ctx, max)
	out := make([]porttest.Delivery, len(ds))
	for i, d := range ds {
		out[i] = porttest.Delivery{Key: d.Key, Handle: d}
	}
	return out, err
}

func (q testableQueue) Ack(ctx context.Context, d porttest.Delivery) error {
	return q.Queue.Ack(ctx, d.Handle.(memory.Delivery))
}

var qt0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func TestQueueContract(t *testing.T) {
	porttest.QueueSuite(t, func(t *testing.T) porttest.QueueHarness {
		clk := clock.NewFake(qt0)
		return porttest.QueueHarness{
			Queue:      testableQueue{memory.NewQueue(clk, time.Minute)},
			Visibility: time.Minute,
			Delay:      10 * time.Minute,
			Advance:    clk.Advance,
		}
	})
}

func TestNotifierContract(t *testing.T) {
	porttest.NotifierSuite(t, func(t *testing.T) porttest.NotifierHarness {
		n := memory.NewNotifier()
		return porttest.NotifierHarness{Notifier: n, Delivered: func(*testing.T, int) []ports.Notification { return n.Delivered() }}
	})
}

func TestImporterContract(t *testing.T) {
	porttest.ImporterSuite(t, func(t *testing.T) porttest.ImporterHarness {
		im := memory.NewImporter()
		return porttest.ImporterHarness{Importer: im, Now: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC),
			Held:   func(_ *testing.T, ref string) (string, bool) { b, ok := im.Held(ref); return string(b), ok },
			Delete: func(_ *testing.T, ref string) { im.Delete(ref) }}
	})
}
