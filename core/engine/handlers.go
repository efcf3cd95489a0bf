package engine

import (
	"context"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
)

// Handler reconciles one kind the engine has no built-in steps for (the
// ACME issuer's Order and Challenge). It takes one step per call, through
// the engine's exported write helpers, and calls e.Settle when it did not
// write.
type Handler interface {
	Reconcile(ctx context.Context, e *Engine, rec ports.Record) error
}

// Deleter is implemented by handlers whose resources hold something
// outside the store (a Challenge's DNS-01 record): BeforeDelete runs
// before every deletion of a record of the handler's kind, including
// cascaded ones (a CertificateRequest taking its Order and Challenges
// along). An error stops the deletion; it is retried.
type Deleter interface {
	BeforeDelete(ctx context.Context, e *Engine, rec ports.Record) error
}

// Finalizer is implemented by kinds whose owner only needs waking once they
// reach a final state (CertificateRequest, Order, Challenge).
type Finalizer interface {
	IsFinal() bool
}

// Decode unmarshals a stored record into its typed object.
func (e *Engine) Decode(rec ports.Record) (api.Object, error) { return decode(rec) }

// Now is the engine clock's time.
func (e *Engine) Now() time.Time { return e.cfg.Clock.Now() }

// Store, Secrets and Metrics expose the configured ports to handlers.
func (e *Engine) Store() ports.Store         { return e.cfg.Store }
func (e *Engine) Secrets() ports.SecretStore { return e.cfg.Secrets }
func (e *Engine) Metrics() ports.Metrics     { return e.cfg.Metrics }

// CreateObject stores a new object (uid and creation time set here) due at
// next, and enqueues it and — when it cares — its owner.
func (e *Engine) CreateObject(ctx context.Context, obj api.Object, next time.Time) (int64, error) {
	m := obj.GetObjectMeta()
	if m.UID == "" {
		m.UID = newUID()
	}
	if m.CreationTimestamp == nil {
		m.CreationTimestamp = api.NewTime(e.cfg.Clock.Now())
	}
	if m.Generation == 0 {
		m.Generation = 1
	}
	return e.create(ctx, obj, next)
}

// UpdateObject writes obj conditionally on version, due at next.
func (e *Engine) UpdateObject(ctx context.Context, obj api.Object, version int64, next time.Time) (int64, error) {
	return e.update(ctx, obj, version, next)
}

// DeleteObject deletes key (conditionally when version > 0) and everything
// it owns, then wakes owner (if non-zero).
func (e *Engine) DeleteObject(ctx context.Context, key api.Key, version int64, owner api.Key) error {
	if err := e.deleteTree(ctx, key, version); err != nil {
		return err
	}
	return e.wake(ctx, owner)
}

// Enqueue asks for a reconcile of key after delay (delays beyond the
// queue's maximum are left to nextRunAt and the scheduler).
func (e *Engine) Enqueue(ctx context.Context, key api.Key, delay time.Duration) error {
	return e.enqueue(ctx, key, delay)
}

// Settle records that rec wants to run again at want (zero: not at all)
// without other changes; see settle.
func (e *Engine) Settle(ctx context.Context, rec ports.Record, want time.Time) error {
	return e.settle(ctx, rec, want)
}

// OwnerKey returns the key of obj's controlling owner (zero if none).
func OwnerKey(obj api.Object) api.Key { return ownerKey(obj) }
