package kernel

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"reflect"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/repo"
)

// Objects is a controller's view of one step (and of a signer that works
// through other resources, signers.Objects): read and decode records, and
// write them through the kernel, which wakes what a write concerns. Writes
// are conditional on the version given; a lost race is ports.ErrConflict.
type Objects interface {
	// Get returns the stored object at key (ports.ErrNotFound if missing).
	Get(ctx context.Context, key api.Key) (api.Object, error)
	// Decode unmarshals a stored record into its typed object.
	Decode(rec ports.Record) (api.Object, error)
	// Store is the state store, for records a controller keeps itself
	// (ChallengeLease) and listings.
	Store() ports.Store
	// Now is the kernel clock's time.
	Now() time.Time
	// Metrics is the kernel's metrics sink.
	Metrics() ports.Metrics
	// CreateObject stores a new object (uid, creation time and generation
	// set here when empty) due at next, and wakes it and — when it cares —
	// its owner.
	CreateObject(ctx context.Context, obj api.Object, next time.Time) (int64, error)
	// UpdateObject writes obj conditionally on version, due at next, and
	// wakes it and — when it cares — its owner.
	UpdateObject(ctx context.Context, obj api.Object, version int64, next time.Time) (int64, error)
	// DeleteObject deletes key (conditionally when version > 0) and
	// everything it owns (Row.Owns), then wakes owner (if non-zero).
	DeleteObject(ctx context.Context, key api.Key, version int64, owner api.Key) error
	// Enqueue asks for a reconcile of key after delay (delays beyond the
	// queue's maximum are left to nextRunAt and the scheduler).
	Enqueue(ctx context.Context, key api.Key, delay time.Duration) error
	// Settle records, when the step wrote nothing, that rec wants to run
	// again at want (zero: not at all): see settle.
	Settle(ctx context.Context, rec ports.Record, want time.Time) error
	// RecordEvent records n about key, aggregated as mode says (see
	// recordEvent). Within a reconcile it is written only once the step's
	// state write succeeded (or, for a step that writes nothing, once the
	// reconcile returned without error): a step records what it did with
	// the write that did it, in any order.
	RecordEvent(ctx context.Context, key api.Key, n Note, mode EventMode) error
	// Explain records why each step did nothing, when none wrote, for the
	// caller's debug logs (Disposition.Why).
	Explain(why []string)
}

var _ Objects = (*run)(nil)

// DecodeAs decodes rec through o as T, the type of the kind a controller
// reconciles; a record of another type is an error naming it.
func DecodeAs[T api.Object](o Objects, rec ports.Record) (T, error) {
	var zero T
	obj, err := o.Decode(rec)
	if err != nil {
		return zero, err
	}
	t, ok := obj.(T)
	if !ok {
		return zero, fmt.Errorf("record %s is not a %s", rec.Key, reflect.TypeFor[T]())
	}
	return t, nil
}

// Get implements Objects.
func (r *run) Get(ctx context.Context, key api.Key) (api.Object, error) {
	return r.repo.Get(ctx, key)
}

// Decode implements Objects.
func (r *run) Decode(rec ports.Record) (api.Object, error) { return repo.Decode(rec) }

// Store implements Objects.
func (r *run) Store() ports.Store { return r.cfg.Store }

// Now implements Objects.
func (r *run) Now() time.Time { return r.cfg.Clock.Now() }

// Metrics implements Objects.
func (r *run) Metrics() ports.Metrics { return r.cfg.Metrics }

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

// Enqueue implements Objects.
func (r *run) Enqueue(ctx context.Context, key api.Key, delay time.Duration) error {
	return r.enqueue(ctx, key, delay)
}

// Settle implements Objects; see settle.
func (r *run) Settle(ctx context.Context, rec ports.Record, want time.Time) error {
	return r.settle(ctx, rec, want)
}

// RecordEvent implements Objects; see recordEvent.
func (r *run) RecordEvent(ctx context.Context, key api.Key, n Note, mode EventMode) error {
	return r.noteEvent(ctx, key, n, mode)
}

// Explain implements Objects.
func (r *run) Explain(why []string) {
	if r.why != nil {
		*r.why = append(*r.why, why...)
	}
}

// newUID returns a random UID for a created object.
func newUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
