package challenges

import (
	"context"
	"fmt"
	"github.com/certfn/certfn/core/kernel"
	"sort"
	"strings"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
)

// schedule starts the Challenge (status.processing) when a slot is free:
// fewer than MaxInFlight Challenges are processing, no processing
// Challenge has the same DNS name and type, no older waiting Challenge
// would take the last free slot, and the Challenge holds the lease of its
// DNS name and type (lease.go). The lease is claimed first, the
// processing write follows in the same step; a crash in between leaves the
// lease held by this Challenge, which its next step finds and carries on
// with (a holder starts at the next free slot whatever its place in the
// line, so that it never waits for a Challenge that waits for its lease).
// Otherwise it looks again after SchedulePoll (finishing Challenges also
// wake the waiting ones).
//
// The list only guards the name and type as a fast path (and against
// Challenges marked processing without a lease by earlier versions); the
// lease is what makes it atomic. The in-flight bound is not atomic: see
// docs/reference/acme.md.
func (r *run) schedule(ctx context.Context) error {
	all, err := r.listAll(ctx)
	if err != nil {
		return err
	}
	inFlight := 0
	var waiting []*api.Challenge
	for _, o := range all {
		if o.IsFinal() {
			continue
		}
		if o.Status.Processing {
			inFlight++
			if o.UID != r.c.UID && conflicts(o, r.c) {
				return r.wait(ctx)
			}
			continue
		}
		waiting = append(waiting, o)
	}
	free := r.h.cfg.MaxInFlight - inFlight
	if free <= 0 {
		return r.wait(ctx)
	}
	sl, exists, err := getLease(ctx, r.e, r.c)
	if err != nil {
		return err
	}
	if !exists || !heldBy(sl.lease, r.c) {
		sort.Slice(waiting, func(i, j int) bool { return older(waiting[i], waiting[j]) })
		pos := 0
		for _, w := range waiting {
			if w.UID == r.c.UID {
				break
			}
			pos++
		}
		if pos >= free {
			return r.wait(ctx)
		}
		held, err := claimRead(ctx, r.e, r.c, sl, exists, r.now)
		if err != nil {
			return fmt.Errorf("challenge %s: claim %s: %w", r.rec.Key, LeaseKey(r.c), err)
		}
		if !held {
			return r.wait(ctx)
		}
	}
	r.c.Status.Processing = true
	r.c.Status.Reason = "Scheduled"
	r.note(ctx, kernel.Normal("Started", "Challenge scheduled for processing"))
	return r.write(ctx, r.now, "start processing")
}

// wait looks again after SchedulePoll, without a write.
func (r *run) wait(ctx context.Context) error {
	return r.e.Settle(ctx, r.rec, r.now.Add(r.h.cfg.SchedulePoll))
}

// conflicts: two Challenges for the same name and type must not run at once.
func conflicts(a, b *api.Challenge) bool {
	return a.Spec.Type == b.Spec.Type && strings.EqualFold(a.Spec.DNSName, b.Spec.DNSName)
}

func older(a, b *api.Challenge) bool {
	ta, tb := a.CreationTimestamp, b.CreationTimestamp
	switch {
	case ta != nil && tb != nil && !ta.Equal(tb.Time):
		return ta.Before(tb.Time)
	case a.Namespace != b.Namespace:
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}

// listAll reads every Challenge (all namespaces).
func (r *run) listAll(ctx context.Context) ([]*api.Challenge, error) {
	recs, err := r.e.Store().List(ctx, ports.ListOptions{Kind: api.KindChallenge})
	if err != nil {
		return nil, fmt.Errorf("list challenges: %w", err)
	}
	out := make([]*api.Challenge, 0, len(recs))
	for _, rec := range recs {
		obj, err := r.e.Decode(rec)
		if err != nil {
			return nil, err
		}
		out = append(out, obj.(*api.Challenge))
	}
	return out, nil
}

// wakeWaiting enqueues the Challenges waiting for a slot, after this one
// freed its own.
func (r *run) wakeWaiting(ctx context.Context) error {
	all, err := r.listAll(ctx)
	if err != nil {
		return err
	}
	for _, o := range all {
		if !o.IsFinal() && !o.Status.Processing {
			if err := r.e.Enqueue(ctx, api.KeyOf(o), 0); err != nil {
				return err
			}
		}
	}
	return nil
}
