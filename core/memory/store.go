package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// Store is a ports.Store in memory.
//
// Contract (the one of ports.Store, checked by porttest.StoreSuite):
//   - Create stores version 1 (the caller's Version is ignored) and
//     returns the stored record; ports.ErrAlreadyExists if the key exists.
//   - Update succeeds only when rec.Version equals the stored version, and
//     returns the record with version+1; ports.ErrConflict when the stored
//     version differs, ports.ErrNotFound when the key is missing. A failed
//     write changes nothing.
//   - Delete with version > 0 is conditional (ports.ErrConflict on a
//     mismatch); version 0 deletes unconditionally; a missing key is
//     ports.ErrNotFound; a negative version is a permanent error.
//   - List returns the records of opts.Kind (required), optionally of one
//     namespace and of one owner, ordered by namespace, then name.
//   - Due returns up to limit (> 0) items whose NextRunAt is set and not
//     after now, oldest first (ties in kind, namespace, name order). It
//     walks a sorted due index, so it reads only the items it returns.
//
// Times come back in UTC without a monotonic reading, as from a database.
// Record data is copied on the way in and out. Store is safe for
// concurrent use: each method is atomic.
type Store struct {
	mu   sync.RWMutex
	recs map[api.Key]ports.Record
	// due is the due index: every record with a NextRunAt, sorted by
	// compareDue.
	due []ports.DueItem
	// rev is the store's revision (the newest change's); changes the
	// change feed, oldest first, holding every change after compacted.
	rev       int64
	changes   []ports.Change
	compacted int64
}

var (
	_ ports.Store      = (*Store)(nil)
	_ ports.ChangeFeed = (*Store)(nil)
)

// feedKeep is how many changes the feed keeps after a compaction; it
// compacts when it holds twice as many.
const feedKeep = ports.FeedRetention

// record appends the change a successful write made, stamping rec with
// its revision, and compacts the feed when it has grown to 2×feedKeep;
// s.mu must be held for writing. It returns the stamped record.
func (s *Store) record(typ ports.ChangeType, rec ports.Record) ports.Record {
	s.rev++
	rec.Revision = s.rev
	s.changes = append(s.changes, ports.Change{Revision: s.rev, Type: typ, Record: copyRecord(rec)})
	if len(s.changes) >= 2*feedKeep {
		drop := len(s.changes) - feedKeep
		s.compacted = s.changes[drop-1].Revision
		s.changes = slices.Clone(s.changes[drop:])
	}
	return rec
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{recs: map[api.Key]ports.Record{}}
}

// compareKeys orders keys by kind, namespace, name.
func compareKeys(a, b api.Key) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

// compareDue orders due items by time, then key.
func compareDue(a, b ports.DueItem) int {
	return cmp.Or(a.NextRunAt.Compare(b.NextRunAt), compareKeys(a.Key, b.Key))
}

// normTime returns t in UTC without a monotonic reading (zero stays zero).
func normTime(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}

// copyRecord returns rec with its own copy of Data and a normalised time.
func copyRecord(rec ports.Record) ports.Record {
	rec.Data = slices.Clone(rec.Data)
	rec.NextRunAt = normTime(rec.NextRunAt)
	return rec
}

// checkRecord validates a record's key and owner before a write.
func checkRecord(op string, rec ports.Record) error {
	if err := rec.Key.Validate(); err != nil {
		return errs.Permanentf("memory store: %s %s: key.%w", op, rec.Key, err)
	}
	if !rec.Owner.IsZero() {
		if err := rec.Owner.Validate(); err != nil {
			return errs.Permanentf("memory store: %s %s: owner.%w", op, rec.Key, err)
		}
	}
	return nil
}

// index adds (add) or removes rec's entry of the due index; s.mu must be
// held for writing.
func (s *Store) index(rec ports.Record, add bool) {
	if rec.NextRunAt.IsZero() {
		return
	}
	it := ports.DueItem{Key: rec.Key, NextRunAt: rec.NextRunAt}
	i, found := slices.BinarySearchFunc(s.due, it, compareDue)
	switch {
	case add && !found:
		s.due = slices.Insert(s.due, i, it)
	case !add && found:
		s.due = slices.Delete(s.due, i, i+1)
	}
}

// Get returns the record stored under key, or ports.ErrNotFound.
func (s *Store) Get(ctx context.Context, key api.Key) (ports.Record, error) {
	if err := live(ctx, "memory store: get "+key.String()); err != nil {
		return ports.Record{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	rec, ok := s.recs[key]
	if !ok {
		return ports.Record{}, fmt.Errorf("memory store: get %s: %w", key, ports.ErrNotFound)
	}
	return copyRecord(rec), nil
}

// Create stores rec at version 1 and returns the stored record;
// ports.ErrAlreadyExists if the key exists.
func (s *Store) Create(ctx context.Context, rec ports.Record) (ports.Record, error) {
	if err := checkRecord("create", rec); err != nil {
		return ports.Record{}, err
	}
	if err := live(ctx, "memory store: create "+rec.Key.String()); err != nil {
		return ports.Record{}, err
	}
	rec = copyRecord(rec)
	rec.Version = 1
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.recs[rec.Key]; ok {
		return ports.Record{}, fmt.Errorf("memory store: create %s: %w", rec.Key, ports.ErrAlreadyExists)
	}
	rec = s.record(ports.ChangeAdded, rec)
	s.recs[rec.Key] = rec
	s.index(rec, true)
	return copyRecord(rec), nil
}

// Update replaces the record if the stored version equals rec.Version and
// returns it with the new version; ports.ErrConflict if the stored version
// differs, ports.ErrNotFound if the key is missing.
func (s *Store) Update(ctx context.Context, rec ports.Record) (ports.Record, error) {
	if err := checkRecord("update", rec); err != nil {
		return ports.Record{}, err
	}
	if err := live(ctx, "memory store: update "+rec.Key.String()); err != nil {
		return ports.Record{}, err
	}
	rec = copyRecord(rec)
	s.mu.Lock()
	defer s.mu.Unlock()
	old, err := s.current("update", rec.Key, rec.Version, true)
	if err != nil {
		return ports.Record{}, err
	}
	rec.Version = old.Version + 1
	rec = s.record(ports.ChangeModified, rec)
	s.index(old, false)
	s.recs[rec.Key] = rec
	s.index(rec, true)
	return copyRecord(rec), nil
}

// current returns the stored record of key, and when conditional only if
// its version is want; s.mu must be held.
func (s *Store) current(op string, key api.Key, want int64, conditional bool) (ports.Record, error) {
	rec, ok := s.recs[key]
	switch {
	case !ok:
		return ports.Record{}, fmt.Errorf("memory store: %s %s: %w", op, key, ports.ErrNotFound)
	case conditional && rec.Version != want:
		return ports.Record{}, fmt.Errorf("memory store: %s %s at version %d (stored %d): %w", op, key, want, rec.Version, ports.ErrConflict)
	}
	return rec, nil
}

// Delete removes key: conditionally on version when it is > 0,
// unconditionally when it is 0. ports.ErrNotFound for a missing key,
// ports.ErrConflict for a version mismatch.
func (s *Store) Delete(ctx context.Context, key api.Key, version int64) error {
	if version < 0 {
		return errs.Permanentf("memory store: delete %s: version: must be >= 0 (0 = unconditional), got %d", key, version)
	}
	if err := live(ctx, "memory store: delete "+key.String()); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, err := s.current("delete", key, version, version > 0)
	if err != nil {
		return err
	}
	s.index(old, false)
	delete(s.recs, key)
	s.record(ports.ChangeDeleted, old)
	return nil
}

// Head returns the revision of the newest change (0 before any write).
func (s *Store) Head(ctx context.Context) (int64, error) {
	if err := live(ctx, "memory store: head"); err != nil {
		return 0, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.rev, nil
}

// Changes returns up to limit (> 0) changes after revision after, oldest
// first; a *ports.CompactedError when after is older than the feed keeps.
func (s *Store) Changes(ctx context.Context, after int64, limit int) ([]ports.Change, error) {
	if limit <= 0 {
		return nil, errs.Permanentf("memory store: changes: limit: must be > 0, got %d", limit)
	}
	if after < 0 {
		return nil, errs.Permanentf("memory store: changes: after: must be >= 0, got %d", after)
	}
	if err := live(ctx, "memory store: changes"); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if after < s.compacted {
		return nil, fmt.Errorf("memory store: %w", &ports.CompactedError{After: after, Compacted: s.compacted})
	}
	i, _ := slices.BinarySearchFunc(s.changes, after+1, func(c ports.Change, r int64) int { return cmp.Compare(c.Revision, r) })
	var out []ports.Change
	for _, c := range s.changes[i:] {
		if len(out) == limit {
			break
		}
		c.Record = copyRecord(c.Record)
		out = append(out, c)
	}
	return out, nil
}

// List returns the records of opts.Kind (required), optionally restricted
// to one namespace and to one owner, ordered by namespace and name.
func (s *Store) List(ctx context.Context, opts ports.ListOptions) ([]ports.Record, error) {
	if opts.Kind == "" {
		return nil, errs.Permanentf("memory store: list: kind: must not be empty")
	}
	if err := live(ctx, "memory store: list "+opts.Kind); err != nil {
		return nil, err
	}
	s.mu.RLock()
	var out []ports.Record
	for k, rec := range s.recs {
		if k.Kind != opts.Kind || (opts.Namespace != "" && k.Namespace != opts.Namespace) ||
			(!opts.Owner.IsZero() && rec.Owner != opts.Owner) {
			continue
		}
		out = append(out, copyRecord(rec))
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b ports.Record) int { return compareKeys(a.Key, b.Key) })
	return out, nil
}

// ListPage returns a page of the matching records in key order (namespace,
// then name), after the continue token's key. It scans every record of
// the store (a map) for each page: memory is for tests.
func (s *Store) ListPage(ctx context.Context, opts ports.ListOptions) (ports.Page, error) {
	if opts.Limit < 0 {
		return ports.Page{}, errs.Permanentf("memory store: list: limit: must be >= 0, got %d", opts.Limit)
	}
	after, err := ports.DecodeContinue(opts, 2)
	if err != nil {
		return ports.Page{}, errs.Permanent(fmt.Errorf("memory store: list %s: %w", opts.Kind, err))
	}
	recs, err := s.List(ctx, opts)
	if err != nil {
		return ports.Page{}, err
	}
	if after != nil {
		from := api.Key{Kind: opts.Kind, Namespace: after[0], Name: after[1]}
		i, found := slices.BinarySearchFunc(recs, from, func(r ports.Record, k api.Key) int { return compareKeys(r.Key, k) })
		if found {
			i++
		}
		recs = recs[i:]
	}
	if opts.Limit == 0 || len(recs) <= opts.Limit {
		return ports.Page{Records: recs}, nil
	}
	last := recs[opts.Limit-1].Key
	return ports.Page{Records: recs[:opts.Limit:opts.Limit], Continue: ports.EncodeContinue(opts, last.Namespace, last.Name)}, nil
}

// Due returns up to limit (> 0) items whose NextRunAt is set and not after
// now, oldest first.
func (s *Store) Due(ctx context.Context, now time.Time, limit int) ([]ports.DueItem, error) {
	if limit <= 0 {
		return nil, errs.Permanentf("memory store: due: limit: must be > 0, got %d", limit)
	}
	if err := live(ctx, "memory store: due"); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []ports.DueItem
	for _, it := range s.due {
		if len(out) == limit || it.NextRunAt.After(now) {
			break
		}
		out = append(out, it)
	}
	return out, nil
}

// Len returns the number of stored records.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.recs)
}
