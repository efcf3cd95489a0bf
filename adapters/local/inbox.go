package local

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// Inbox carries wake-ups between processes that share a Store file: the
// CLI (`certfn apply` in another terminal) pushes the keys it wrote, and a
// running `certfn serve` drains them every ~200 ms into its MemQueue. It is
// the table inbox(key, enqueued_at) in the store's file.
type Inbox struct {
	s     *Store
	clock ports.Clock
}

// Inbox returns the inbox in s's file; clock stamps enqueued_at.
func (s *Store) Inbox(clock ports.Clock) *Inbox { return &Inbox{s: s, clock: clock} }

// Push records a wake-up for key. It never blocks on the reader.
func (in *Inbox) Push(ctx context.Context, key api.Key) error {
	if err := key.Validate(); err != nil {
		return errs.Permanentf("inbox: push %s: key.%w", key, err)
	}
	in.s.wmu.Lock()
	defer in.s.wmu.Unlock()
	if _, err := in.s.stmts.exec(ctx, `INSERT INTO inbox (key, enqueued_at) VALUES (?, ?)`,
		key.String(), toNanos(in.clock.Now())); err != nil {
		return fmt.Errorf("inbox: push %s: %w", key, err)
	}
	return nil
}

// Drain removes and returns every pushed key, oldest first and without
// duplicates. An idle inbox costs one read and takes no write lock. A row
// that does not hold a valid key is removed too and reported in the error,
// next to the valid keys, which the caller should still handle.
func (in *Inbox) Drain(ctx context.Context) ([]api.Key, error) {
	var pending bool
	if err := in.s.stmts.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM inbox)`).Scan(&pending); err != nil {
		return nil, fmt.Errorf("inbox: drain: %w", err)
	}
	if !pending {
		return nil, nil
	}
	type row struct {
		id  int64
		key string
	}
	var got []row
	in.s.wmu.Lock()
	err := func() error {
		defer in.s.wmu.Unlock()
		rows, err := in.s.stmts.query(ctx, `DELETE FROM inbox RETURNING id, key`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.id, &r.key); err != nil {
				return err
			}
			got = append(got, r)
		}
		return rows.Err()
	}()
	if err != nil {
		return nil, fmt.Errorf("inbox: drain: %w", err)
	}
	sort.Slice(got, func(i, j int) bool { return got[i].id < got[j].id })
	var (
		keys []api.Key
		bad  []error
		seen = map[api.Key]bool{}
	)
	for _, r := range got {
		k, err := decodeKey(r.key)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	if len(bad) > 0 {
		return keys, fmt.Errorf("inbox: drain: dropped %d invalid rows: %w", len(bad), errors.Join(bad...))
	}
	return keys, nil
}

// Forward drains the inbox into q (delay 0) and returns how many keys it
// enqueued. serve calls it on a ~200 ms ticker. If an Enqueue fails, the
// keys not yet enqueued are pushed back so that no wake-up is lost.
func (in *Inbox) Forward(ctx context.Context, q ports.Queue) (int, error) {
	keys, drainErr := in.Drain(ctx)
	for i, k := range keys {
		if err := q.Enqueue(ctx, k, 0); err != nil {
			err = fmt.Errorf("inbox: forward %s: %w", k, err)
			for _, back := range keys[i:] {
				if perr := in.Push(context.WithoutCancel(ctx), back); perr != nil {
					err = errors.Join(err, perr)
				}
			}
			return i, errors.Join(err, drainErr)
		}
	}
	return len(keys), drainErr
}
