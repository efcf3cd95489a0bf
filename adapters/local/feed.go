package local

import (
	"context"
	"fmt"

	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// The change feed (ports.ChangeFeed) of the Store.
//
// Every write statement takes revision feed.head + 1 and its triggers
// append the change to the changes table and advance feed.head, all in
// that one statement (see schema). SQLite admits one writer at a time,
// across processes too, so revisions are assigned in commit order: a
// reader never sees revision r+1 committed before r, and the feed has no
// gaps. That is kine's design on SQLite (k3s's datastore), without its gap
// filling, which only databases with concurrent writers need.
//
// A change is visible to readers once committed, before the WAL fsync that
// makes it durable (durable.go): a power loss in that window can drop a
// change a watcher has already seen, the window a write that never
// returned to its writer always had.

// defaultFeedKeep is how many of the newest changes compaction keeps (at
// least ports.FeedRetention); compactEvery how many writes of this process
// run between compactions.
const (
	defaultFeedKeep = 5 * ports.FeedRetention
	compactEvery    = 256
)

var _ ports.ChangeFeed = (*Store)(nil)

// Head returns the revision of the newest change (0 for a new store).
func (s *Store) Head(ctx context.Context) (int64, error) {
	var head int64
	if err := s.stmts.queryRow(ctx, `SELECT head FROM feed WHERE id = 1`).Scan(&head); err != nil {
		return 0, fmt.Errorf("store: head: %w", err)
	}
	return head, nil
}

// Changes returns up to limit (> 0) changes after revision after, oldest
// first, or a *ports.CompactedError when compaction removed some of them.
//
// It reads the rows first and the compaction mark second: compaction only
// ever raises the mark, so a mark not above after, read after the rows,
// proves no row the query wanted had been removed when it ran.
func (s *Store) Changes(ctx context.Context, after int64, limit int) ([]ports.Change, error) {
	if limit <= 0 {
		return nil, errs.Permanentf("store: changes: limit: must be > 0, got %d", limit)
	}
	if after < 0 {
		return nil, errs.Permanentf("store: changes: after: must be >= 0, got %d", after)
	}
	rows, err := s.stmts.query(ctx, `SELECT revision, type, kind, namespace, name, version, owner, next_run_at, data
		FROM changes WHERE revision > ? ORDER BY revision LIMIT ?`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("store: changes after %d: %w", after, err)
	}
	var out []ports.Change
	for rows.Next() {
		var (
			c     ports.Change
			typ   string
			owner string
			next  int64
		)
		if err := rows.Scan(&c.Revision, &typ, &c.Record.Key.Kind, &c.Record.Key.Namespace, &c.Record.Key.Name,
			&c.Record.Version, &owner, &next, &c.Record.Data); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: changes after %d: %w", after, err)
		}
		o, err := decodeKey(owner)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: changes after %d: revision %d: owner column: %w", after, c.Revision, err)
		}
		c.Type = ports.ChangeType(typ)
		c.Record.Owner, c.Record.NextRunAt, c.Record.Revision = o, fromNanos(next), c.Revision
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return nil, fmt.Errorf("store: changes after %d: %w", after, err)
	}
	rows.Close()
	var compacted int64
	if err := s.stmts.queryRow(ctx, `SELECT compacted FROM feed WHERE id = 1`).Scan(&compacted); err != nil {
		return nil, fmt.Errorf("store: changes after %d: %w", after, err)
	}
	if after < compacted {
		return nil, fmt.Errorf("store: %w", &ports.CompactedError{After: after, Compacted: compacted})
	}
	return out, nil
}

// afterWrite counts this process's writes and compacts the feed every
// compactEvery of them. Compaction is housekeeping: its failure (another
// process holding the lock past busy_timeout, a cancelled context) leaves
// the rows to the next one and is not the write's failure.
func (s *Store) afterWrite(ctx context.Context) {
	if s.writes.Add(1)%compactEvery != 0 {
		return
	}
	_ = s.compact(ctx)
}

// compact removes the changes older than the newest s.feedKeep and raises
// the compaction mark to the newest revision removed, in one transaction.
func (s *Store) compact(ctx context.Context) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: compact: %w", err)
	}
	defer tx.Rollback()
	var head, compacted int64
	if err := tx.QueryRowContext(ctx, `SELECT head, compacted FROM feed WHERE id = 1`).Scan(&head, &compacted); err != nil {
		return fmt.Errorf("store: compact: %w", err)
	}
	mark := head - s.feedKeep
	if mark <= compacted {
		return nil // nothing older than what is kept
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM changes WHERE revision <= ?`, mark); err != nil {
		return fmt.Errorf("store: compact: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE feed SET compacted = ? WHERE id = 1`, mark); err != nil {
		return fmt.Errorf("store: compact: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: compact: %w", err)
	}
	return nil
}
