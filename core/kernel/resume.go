package kernel

import (
	"context"
	"fmt"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/repo"
)

// UnfinishedFunc returns which objects of its row's kinds may have had
// work in flight when a process stopped (see WakeUnfinished), read from l.
// The first are woken before any other row's objects, the rest after the
// rest of the rows before it in the table.
type UnfinishedFunc func(ctx context.Context, l *Listing) (first, rest []api.Key, err error)

// Listing is what WakeUnfinished reads: every record of a kind, listed
// and decoded once, on first use, whichever rows look at it.
type Listing struct {
	store ports.Store
	kinds map[string][]Listed
}

// Listed is a stored record and its decoded object.
type Listed struct {
	Rec ports.Record
	Obj api.Object
}

// Objects returns every stored record of kind, decoded (one List of the
// kind per Listing).
func (l *Listing) Objects(ctx context.Context, kind string) ([]Listed, error) {
	if objs, ok := l.kinds[kind]; ok {
		return objs, nil
	}
	recs, err := l.store.List(ctx, ports.ListOptions{Kind: kind})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", kind, err)
	}
	objs := make([]Listed, 0, len(recs))
	for _, rec := range recs {
		o, err := repo.Decode(rec)
		if err != nil {
			return nil, err
		}
		objs = append(objs, Listed{Rec: rec, Obj: o})
	}
	l.kinds[kind] = objs
	return objs, nil
}

// WakeUnfinished enqueues, for an immediate reconcile, every object whose
// work may have been in flight when a process stopped, so that a restart
// picks it up at once instead of at a safety net (an Order's WaitPoll, a
// Certificate's FollowUpGrace): a wake-up a crashed process had not
// delivered yet (it lived in its in-memory queue) is then never waited for.
// `certfn serve` calls it when it starts, with and without --until-idle.
//
// Each row of the table with an Unfinished function says which of its
// objects to wake, reading one List per kind (shared by the rows) and no
// secret. The keys every row puts first are enqueued first (in table
// order), then the rest of each row, in table order. Final objects are
// left alone (they wake nothing), and so are objects that wait for a
// later time of their own (nextRunAt and the sweep keep them). It returns
// how many keys it enqueued.
func (k *Kernel) WakeUnfinished(ctx context.Context) (int, error) {
	l := &Listing{store: k.cfg.Store, kinds: map[string][]Listed{}}
	var first, rest []api.Key
	for _, row := range k.cfg.Controllers {
		if row.Unfinished == nil {
			continue
		}
		f, r, err := row.Unfinished(ctx, l)
		if err != nil {
			return 0, fmt.Errorf("wake unfinished work: %w", err)
		}
		first, rest = append(first, f...), append(rest, r...)
	}
	r := k.direct()
	for _, key := range append(first, rest...) {
		if err := r.enqueue(ctx, key, 0); err != nil {
			return 0, fmt.Errorf("wake unfinished work: %w", err)
		}
	}
	return len(first) + len(rest), nil
}
