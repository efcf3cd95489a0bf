package kernel

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/repo"
)

// run is the kernel within one reconcile (Handle) or outside one (Direct):
// the Objects of a step. Every write a controller makes goes through it,
// and so do the wake-ups the writes cause. With a wake set, immediate
// wake-ups are collected and returned to the caller (Disposition.Woken)
// instead of enqueued; delayed ones always go to the queue. A run of
// Handle is used by one goroutine.
type run struct {
	*Kernel
	woken *wakeSet // nil: enqueue every wake-up at once
	// why holds, when no step wrote, why each step did nothing (nil: not
	// kept, outside Handle).
	why *[]string
	// buffer holds the notes of a reconcile until its state write
	// succeeded (events; written counts those a write committed).
	buffer  bool
	events  []pendingEvent
	written int
}

// direct is a run whose wake-ups go to the queue at once (writes outside
// a reconcile, and reconciles of a kernel that does not defer wake-ups)
// and that keeps no reasons.
func (k *Kernel) direct() *run { return &run{Kernel: k} }

// wakeSet is the ordered set of keys woken during one Handle call.
type wakeSet struct {
	mu   sync.Mutex
	keys []api.Key
	seen map[api.Key]bool
}

func (w *wakeSet) add(k api.Key) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen[k] {
		return
	}
	if w.seen == nil {
		w.seen = map[api.Key]bool{}
	}
	w.seen[k] = true
	w.keys = append(w.keys, k)
}

func (w *wakeSet) list() []api.Key {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]api.Key(nil), w.keys...)
}

// update writes obj conditionally on version and wakes it and its owner.
func (r *run) update(ctx context.Context, obj api.Object, version int64, next time.Time) (int64, error) {
	data, err := repo.Encode(obj)
	if err != nil {
		return 0, fmt.Errorf("encode %s: %w", api.KeyOf(obj), err)
	}
	key, owner := api.KeyOf(obj), api.OwnerKey(obj)
	out, err := r.cfg.Store.Update(ctx, ports.Record{Key: key, Version: version, Owner: owner, NextRunAt: next, Data: data})
	if err != nil {
		return 0, err
	}
	obj.GetObjectMeta().ResourceVersion = strconv.FormatInt(out.Version, 10)
	r.cfg.Metrics.Inc("certfn_state_writes_total", "kind", key.Kind)
	r.committed()
	if !ownerCares(obj) {
		owner = api.Key{}
	}
	return out.Version, r.wake(ctx, key, owner)
}

// ownerCares reports whether the owner has anything to do after obj was
// written: a Certificate only acts on its request once the request is final
// (issued, failed, denied), so earlier request writes do not wake it. The
// owner's own due time covers a lost message.
func ownerCares(obj api.Object) bool {
	if f, ok := obj.(Finalizer); ok {
		return f.IsFinal()
	}
	return true
}

// create stores a new object and wakes it and its owner.
func (r *run) create(ctx context.Context, obj api.Object, next time.Time) (int64, error) {
	data, err := repo.Encode(obj)
	if err != nil {
		return 0, fmt.Errorf("encode %s: %w", api.KeyOf(obj), err)
	}
	key, owner := api.KeyOf(obj), api.OwnerKey(obj)
	out, err := r.cfg.Store.Create(ctx, ports.Record{Key: key, Owner: owner, NextRunAt: next, Data: data})
	if err != nil {
		return 0, err
	}
	obj.GetObjectMeta().ResourceVersion = strconv.FormatInt(out.Version, 10)
	r.cfg.Metrics.Inc("certfn_state_writes_total", "kind", key.Kind)
	r.committed()
	if !ownerCares(obj) {
		owner = api.Key{}
	}
	return out.Version, r.wake(ctx, key, owner)
}

// wake asks for an immediate reconcile of each non-zero key.
func (r *run) wake(ctx context.Context, keys ...api.Key) error {
	for _, k := range keys {
		if k.IsZero() {
			continue
		}
		if err := r.enqueue(ctx, k, 0); err != nil {
			return err
		}
	}
	return nil
}

// enqueue asks for a reconcile of k after delay: an immediate one is
// collected when the run defers wake-ups; a delay beyond the queue's
// maximum is left to nextRunAt and the scheduler.
func (r *run) enqueue(ctx context.Context, k api.Key, delay time.Duration) error {
	if delay > r.cfg.MaxQueueDelay {
		return nil // nextRunAt and the scheduler take it from here
	}
	if delay < 0 {
		delay = 0
	}
	if delay == 0 && r.woken != nil {
		r.woken.add(k)
		return nil
	}
	if err := r.cfg.Queue.Enqueue(ctx, k, delay); err != nil {
		return fmt.Errorf("enqueue %s: %w", k, err)
	}
	r.cfg.Metrics.Inc("certfn_queue_messages_total")
	return nil
}

// settle is called when no step wrote: it keeps the due index right (a
// record whose due time passed, or that would wake too late, gets the time
// it wants now) and sends a delayed message for a short wait. A final
// object (a CertificateRequest, Order or Challenge) also wakes its owner
// (see wakeOwnerOfFinal).
func (r *run) settle(ctx context.Context, rec ports.Record, want time.Time) error {
	if err := r.wakeOwnerOfFinal(ctx, rec); err != nil {
		return err
	}
	now := r.cfg.Clock.Now()
	stale := !rec.NextRunAt.IsZero() && !rec.NextRunAt.After(now)
	late := !want.IsZero() && (rec.NextRunAt.IsZero() || rec.NextRunAt.After(want))
	if (stale || late) && !rec.NextRunAt.Equal(want) {
		rec.NextRunAt = want
		if _, err := r.cfg.Store.Update(ctx, rec); err != nil {
			return fmt.Errorf("reschedule %s: %w", rec.Key, err)
		}
		r.cfg.Metrics.Inc("certfn_state_writes_total", "kind", rec.Key.Kind)
		r.committed()
	}
	if !want.IsZero() {
		return r.enqueue(ctx, rec.Key, want.Sub(now))
	}
	return nil
}

// wakeOwnerOfFinal wakes the owner of a final object that was reconciled
// again with nothing to do, while the owner still waits for its children.
// The object's final write woke the owner, but a process that died after
// that write and before the wake-up left (an in-memory queue, a Lambda or
// Cloud Run instance killed before it sent the keys it woke) lost it; the
// queue then redelivers the message of the key it was handling, which
// finds the object final and writes nothing. Waking the owner here makes
// that redelivery carry the lost wake-up, so the owner moves on within
// one visibility timeout instead of at its own safety net (an Order's
// WaitPoll, a Certificate's FollowUpGrace). An owner that is final too
// is not woken, but the same goes for it: its owner is woken while that
// waits (a final Order's step wrote its request issued, and that write's
// wake-up of the Certificate may be the one lost). It costs one read of
// each final owner up the tree and of the first one that is not, per
// extra delivery of a final object (an Order's later renewal information
// checks included; at most three: Challenge, Order, request,
// Certificate); an owner that is done (a Certificate not issuing) is not
// woken. Ownership is a tree and no step wakes an existing final child,
// so it cannot loop.
func (r *run) wakeOwnerOfFinal(ctx context.Context, rec ports.Record) error {
	if rec.Owner.IsZero() {
		return nil
	}
	obj, err := repo.Decode(rec)
	if err != nil {
		return err
	}
	if f, ok := obj.(Finalizer); !ok || !f.IsFinal() {
		return nil
	}
	owner := api.OwnerKey(obj)
	orec, err := r.cfg.Store.Get(ctx, owner)
	if errors.Is(err, ports.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("load owner %s of %s: %w", owner, rec.Key, err)
	}
	o, err := repo.Decode(orec)
	if err != nil {
		return err
	}
	switch v := o.(type) {
	case *api.Certificate:
		if !api.IsTrue(v.Status.Conditions, api.CertificateConditionIssuing) {
			return nil
		}
	case Finalizer:
		if v.IsFinal() {
			// The owner is done too, but its own final write (made by the
			// same process: an Order's step writes its request issued)
			// queued a wake-up of its owner that may be the one lost.
			return r.wakeOwnerOfFinal(ctx, orec)
		}
	}
	return r.wake(ctx, owner)
}
