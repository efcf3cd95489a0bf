package engine

import (
	"context"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
)

// Handler reconciles one kind the engine has no built-in steps for (the
// ACME issuer's Order and Challenge). It takes one step per call, through
// o's write helpers, and calls o.Settle when it did not write.
type Handler interface {
	Reconcile(ctx context.Context, o Objects, rec ports.Record) error
}

// Deleter is implemented by handlers whose resources hold something
// outside the store (a Challenge's DNS-01 record): BeforeDelete runs
// before every deletion of a record of the handler's kind, including
// cascaded ones (a CertificateRequest taking its Order and Challenges
// along). An error stops the deletion; it is retried.
type Deleter interface {
	BeforeDelete(ctx context.Context, o Objects, rec ports.Record) error
}

// Objects is what a Handler (and a signer that works through other
// resources) may do within the current step: read and decode records,
// and write them through the engine, which wakes what a write concerns.
// Writes are conditional on the version given; a lost race is
// ports.ErrConflict.
type Objects interface {
	// Get returns the stored object at key (ports.ErrNotFound if missing).
	Get(ctx context.Context, key api.Key) (api.Object, error)
	// Decode unmarshals a stored record into its typed object.
	Decode(rec ports.Record) (api.Object, error)
	// Store is the state store, for records the handler keeps itself
	// (ChallengeLease) and listings.
	Store() ports.Store
	// Now is the engine clock's time.
	Now() time.Time
	// Metrics is the engine's metrics sink.
	Metrics() ports.Metrics
	// CreateObject stores a new object (uid and creation time set here)
	// due at next, and wakes it and — when it cares — its owner.
	CreateObject(ctx context.Context, obj api.Object, next time.Time) (int64, error)
	// UpdateObject writes obj conditionally on version, due at next.
	UpdateObject(ctx context.Context, obj api.Object, version int64, next time.Time) (int64, error)
	// DeleteObject deletes key (conditionally when version > 0) and
	// everything it owns, then wakes owner (if non-zero).
	DeleteObject(ctx context.Context, key api.Key, version int64, owner api.Key) error
	// Enqueue asks for a reconcile of key after delay.
	Enqueue(ctx context.Context, key api.Key, delay time.Duration) error
	// Settle records that rec wants to run again at want (zero: not at
	// all) when the step wrote nothing.
	Settle(ctx context.Context, rec ports.Record, want time.Time) error
}

var _ Objects = (*run)(nil)

// Finalizer is implemented by kinds whose owner only needs waking once they
// reach a final state (CertificateRequest, Order, Challenge).
type Finalizer interface {
	IsFinal() bool
}

// Decode unmarshals a stored record into its typed object.
func (e *Engine) Decode(rec ports.Record) (api.Object, error) { return decode(rec) }

// Now is the engine clock's time.
func (e *Engine) Now() time.Time { return e.cfg.Clock.Now() }

// Store and Metrics expose the configured ports to handlers.
func (e *Engine) Store() ports.Store     { return e.cfg.Store }
func (e *Engine) Metrics() ports.Metrics { return e.cfg.Metrics }

// CreateObject stores a new object outside a reconcile (tests, seeding),
// enqueueing what it wakes; see Objects.
func (e *Engine) CreateObject(ctx context.Context, obj api.Object, next time.Time) (int64, error) {
	return e.direct().CreateObject(ctx, obj, next)
}

// UpdateObject writes obj outside a reconcile; see Objects.
func (e *Engine) UpdateObject(ctx context.Context, obj api.Object, version int64, next time.Time) (int64, error) {
	return e.direct().update(ctx, obj, version, next)
}

// Enqueue asks for key to be reconciled after delay, outside a reconcile
// (renew of a Certificate already being issued wakes its chain).
func (e *Engine) Enqueue(ctx context.Context, key api.Key, delay time.Duration) error {
	return e.direct().enqueue(ctx, key, delay)
}

// CreateObject implements Objects.
func (r *run) CreateObject(ctx context.Context, obj api.Object, next time.Time) (int64, error) {
	m := obj.GetObjectMeta()
	if m.UID == "" {
		m.UID = newUID()
	}
	if m.CreationTimestamp == nil {
		m.CreationTimestamp = api.NewTime(r.cfg.Clock.Now())
	}
	if m.Generation == 0 {
		m.Generation = 1
	}
	return r.create(ctx, obj, next)
}

// UpdateObject implements Objects.
func (r *run) UpdateObject(ctx context.Context, obj api.Object, version int64, next time.Time) (int64, error) {
	return r.update(ctx, obj, version, next)
}

// DeleteObject implements Objects.
func (r *run) DeleteObject(ctx context.Context, key api.Key, version int64, owner api.Key) error {
	if err := r.deleteTree(ctx, key, version); err != nil {
		return err
	}
	return r.wake(ctx, owner)
}

// Enqueue implements Objects (delays beyond the queue's maximum are left
// to nextRunAt and the scheduler).
func (r *run) Enqueue(ctx context.Context, key api.Key, delay time.Duration) error {
	return r.enqueue(ctx, key, delay)
}

// Settle implements Objects; see settle.
func (r *run) Settle(ctx context.Context, rec ports.Record, want time.Time) error {
	return r.settle(ctx, rec, want)
}
