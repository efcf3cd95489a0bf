package porttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
)

// FeedStore is a store with a change feed.
type FeedStore interface {
	ports.Store
	ports.ChangeFeed
}

// FeedSuite runs the ports.ChangeFeed contract against stores made by
// newStore, which must return an empty store for every call.
func FeedSuite(t *testing.T, newStore func(t *testing.T) FeedStore) {
	t.Run("Empty", func(t *testing.T) { feedEmpty(t, newStore(t)) })
	t.Run("EveryWrite", func(t *testing.T) { feedEveryWrite(t, newStore(t)) })
	t.Run("FailedWritesAppendNothing", func(t *testing.T) { feedFailedWrites(t, newStore(t)) })
	t.Run("Pages", func(t *testing.T) { feedPages(t, newStore(t)) })
	t.Run("ResumeUnderConcurrentWriters", func(t *testing.T) { feedConcurrent(t, newStore(t)) })
	t.Run("Retention", func(t *testing.T) { feedRetention(t, newStore(t)) })
	t.Run("BadArguments", func(t *testing.T) { feedBadArguments(t, newStore(t)) })
}

// head reads Head and fails the test on error.
func head(t *testing.T, s FeedStore) int64 {
	t.Helper()
	h, err := s.Head(context.Background())
	if err != nil {
		t.Fatalf("Head: %v", err)
	}
	return h
}

// changes reads Changes and fails the test on error.
func changes(t *testing.T, s FeedStore, after int64, limit int) []ports.Change {
	t.Helper()
	cs, err := s.Changes(context.Background(), after, limit)
	if err != nil {
		t.Fatalf("Changes(after %d, limit %d): %v", after, limit, err)
	}
	return cs
}

// readAll reads every change after after, limit at a time, resuming from
// the last revision each page returned, and checks their order.
func readAll(t *testing.T, s FeedStore, after int64, limit int) []ports.Change {
	t.Helper()
	var out []ports.Change
	for {
		page := changes(t, s, after, limit)
		if len(page) > limit {
			t.Fatalf("Changes(after %d, limit %d) returned %d changes", after, limit, len(page))
		}
		if len(page) == 0 {
			return out
		}
		for _, c := range page {
			if c.Revision <= after {
				t.Fatalf("Changes(after %d) returned revision %d (not after it, or out of order)", after, c.Revision)
			}
			after = c.Revision
		}
		out = append(out, page...)
	}
}

func feedEmpty(t *testing.T, s FeedStore) {
	if h := head(t, s); h != 0 {
		t.Errorf("Head of an empty store = %d, want 0", h)
	}
	if cs := changes(t, s, 0, 10); len(cs) != 0 {
		t.Errorf("Changes of an empty store: %v", cs)
	}
}

// checkChange compares a change with the write it should record.
func checkChange(t *testing.T, what string, got ports.Change, typ ports.ChangeType, want ports.Record) {
	t.Helper()
	if got.Type != typ {
		t.Errorf("%s: Type = %s, want %s", what, got.Type, typ)
	}
	if got.Record.Revision != got.Revision {
		t.Errorf("%s: Record.Revision = %d, change revision %d", what, got.Record.Revision, got.Revision)
	}
	checkRecord(t, what, got.Record, want)
}

func feedEveryWrite(t *testing.T, s FeedStore) {
	ctx := context.Background()
	k := certKey("default", "web")
	other := reqKey("team-a", "web-1")
	created := mustCreate(t, s, newRec(k, dueAt(t0), ownedBy(other)))
	if created.Revision <= 0 {
		t.Fatalf("Create returned Revision %d, want > 0", created.Revision)
	}
	if got := mustGet(t, s, k); got.Revision != created.Revision {
		t.Errorf("Get after Create: Revision %d, Create returned %d", got.Revision, created.Revision)
	}
	if h := head(t, s); h != created.Revision {
		t.Errorf("Head after Create = %d, want %d", h, created.Revision)
	}
	upd := created
	upd.Data = []byte(`{"updated":true}`)
	updated, err := s.Update(ctx, upd)
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if updated.Revision <= created.Revision {
		t.Fatalf("Update returned Revision %d after Create's %d", updated.Revision, created.Revision)
	}
	list, err := s.List(ctx, ports.ListOptions{Kind: k.Kind})
	if err != nil || len(list) != 1 || list[0].Revision != updated.Revision {
		t.Errorf("List after Update: %v %v, want one record at revision %d", list, err, updated.Revision)
	}
	page, err := s.ListPage(ctx, ports.ListOptions{Kind: k.Kind, Limit: 5})
	if err != nil || len(page.Records) != 1 || page.Records[0].Revision != updated.Revision {
		t.Errorf("ListPage after Update: %v %v, want one record at revision %d", page.Records, err, updated.Revision)
	}
	mustCreate(t, s, newRec(other))
	if err := s.Delete(ctx, k, updated.Version); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	h := head(t, s)
	cs := changes(t, s, 0, 100)
	if len(cs) != 4 {
		t.Fatalf("Changes after 4 writes: %d changes: %+v", len(cs), cs)
	}
	checkChange(t, "change 1 (create)", cs[0], ports.ChangeAdded, created)
	checkChange(t, "change 2 (update)", cs[1], ports.ChangeModified, updated)
	if cs[2].Record.Key != other || cs[2].Type != ports.ChangeAdded {
		t.Errorf("change 3: %s %s, want ADDED %s", cs[2].Type, cs[2].Record.Key, other)
	}
	// a deletion records the record as it was when deleted
	checkChange(t, "change 4 (delete)", cs[3], ports.ChangeDeleted, updated)
	for i := 1; i < len(cs); i++ {
		if cs[i].Revision <= cs[i-1].Revision {
			t.Errorf("revisions not increasing: %d then %d", cs[i-1].Revision, cs[i].Revision)
		}
	}
	if cs[0].Revision != created.Revision || cs[1].Revision != updated.Revision || cs[3].Revision != h {
		t.Errorf("revisions %d %d … %d, want Create's %d, Update's %d … Head %d",
			cs[0].Revision, cs[1].Revision, cs[3].Revision, created.Revision, updated.Revision, h)
	}
	if rest := changes(t, s, cs[1].Revision, 100); len(rest) != 2 || rest[0].Revision != cs[2].Revision {
		t.Errorf("Changes after revision %d: %+v, want the last two", cs[1].Revision, rest)
	}
	if rest := changes(t, s, h, 100); len(rest) != 0 {
		t.Errorf("Changes after Head: %+v, want none", rest)
	}
}

func feedFailedWrites(t *testing.T, s FeedStore) {
	ctx := context.Background()
	k := certKey("default", "web")
	cur := mustCreate(t, s, newRec(k))
	h := head(t, s)
	if _, err := s.Create(ctx, newRec(k)); !errors.Is(err, ports.ErrAlreadyExists) {
		t.Fatalf("Create of an existing key: %v", err)
	}
	stale := cur
	stale.Version = cur.Version + 7
	if _, err := s.Update(ctx, stale); !errors.Is(err, ports.ErrConflict) {
		t.Fatalf("stale Update: %v", err)
	}
	if _, err := s.Update(ctx, newRec(certKey("default", "missing"), withVersion(1))); !errors.Is(err, ports.ErrNotFound) {
		t.Fatalf("Update of a missing key: %v", err)
	}
	if err := s.Delete(ctx, k, cur.Version+1); !errors.Is(err, ports.ErrConflict) {
		t.Fatalf("stale Delete: %v", err)
	}
	if err := s.Delete(ctx, certKey("default", "missing"), 0); !errors.Is(err, ports.ErrNotFound) {
		t.Fatalf("Delete of a missing key: %v", err)
	}
	if got := head(t, s); got != h {
		t.Errorf("Head after failed writes = %d, want %d", got, h)
	}
	if cs := changes(t, s, h, 10); len(cs) != 0 {
		t.Errorf("failed writes appended changes: %+v", cs)
	}
	if got := mustGet(t, s, k); got.Revision != cur.Revision {
		t.Errorf("Get after failed writes: Revision %d, want %d", got.Revision, cur.Revision)
	}
}

func feedPages(t *testing.T, s FeedStore) {
	const n = 23
	var want []int64
	for i := range n {
		r := mustCreate(t, s, newRec(certKey("default", fmt.Sprintf("c%02d", i))))
		want = append(want, r.Revision)
	}
	for _, limit := range []int{1, 4, 7, n, n + 5} {
		got := readAll(t, s, 0, limit)
		if len(got) != n {
			t.Errorf("limit %d: %d changes, want %d", limit, len(got), n)
			continue
		}
		for i, c := range got {
			if c.Revision != want[i] || c.Record.Key.Name != fmt.Sprintf("c%02d", i) {
				t.Errorf("limit %d: change %d is %s at %d, want c%02d at %d", limit, i, c.Record.Key.Name, c.Revision, i, want[i])
				break
			}
		}
	}
}

// feedConcurrent: writers create, update and delete their own records and
// race on a shared one, while a reader follows the feed a few changes at a
// time, resuming from the last revision it saw. The reader must see every
// successful write exactly once, in revision order, and the same sequence
// a single read of the whole feed returns afterwards (no change arrives
// behind one with a higher revision).
func feedConcurrent(t *testing.T, s FeedStore) {
	ctx := context.Background()
	shared := certKey("default", "shared")
	mustCreate(t, s, newRec(shared, withData([]byte("0"))))
	start := head(t, s)
	const perWriter = 6
	var (
		mu      sync.Mutex
		written = map[int64]api.Key{} // revision -> key of every successful write
		done    = make(chan struct{})
		seen    []ports.Change
		readErr error
	)
	note := func(r ports.Record) {
		mu.Lock()
		written[r.Revision] = r.Key
		mu.Unlock()
	}
	var reader sync.WaitGroup
	reader.Add(1)
	go func() {
		defer reader.Done()
		after := start
		for {
			select {
			case <-done:
				return
			default:
			}
			page, err := s.Changes(ctx, after, 3)
			for _, c := range page {
				if err == nil && c.Revision <= after {
					err = fmt.Errorf("revision %d after %d", c.Revision, after)
				}
				after = c.Revision
			}
			mu.Lock()
			seen, readErr = append(seen, page...), err
			mu.Unlock()
			if err != nil {
				return
			}
			runtime.Gosched()
		}
	}()
	errs := race(racers, func(i int) error {
		k := certKey("default", fmt.Sprintf("writer-%d", i))
		r, err := s.Create(ctx, newRec(k))
		if err != nil {
			return err
		}
		note(r)
		for n := range perWriter {
			r.Data = []byte(fmt.Sprintf(`{"writer":%d,"n":%d}`, i, n))
			if r, err = s.Update(ctx, r); err != nil {
				return err
			}
			note(r)
			// one contended update of the shared record: a loser appends nothing
			cur, err := s.Get(ctx, shared)
			if err != nil {
				return err
			}
			cur.Data = []byte(fmt.Sprintf("%d-%d", i, n))
			if got, err := s.Update(ctx, cur); err == nil {
				note(got)
			} else if !errors.Is(err, ports.ErrConflict) {
				return err
			}
		}
		if err := s.Delete(ctx, k, r.Version); err != nil {
			return err
		}
		return nil
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
	}
	end := head(t, s)
	// let the reader catch up to Head, then stop it
	for caughtUp := false; !caughtUp; runtime.Gosched() {
		mu.Lock()
		caughtUp = readErr != nil || (len(seen) > 0 && seen[len(seen)-1].Revision >= end)
		mu.Unlock()
	}
	close(done)
	reader.Wait()
	if readErr != nil {
		t.Fatalf("reader: %v", readErr)
	}
	full := readAll(t, s, start, 1000)
	if len(seen) != len(full) {
		t.Fatalf("the reader saw %d changes resuming page by page, one read returns %d", len(seen), len(full))
	}
	deletes := 0
	for i := range full {
		a, b := seen[i], full[i]
		if a.Revision != b.Revision || a.Type != b.Type || a.Record.Key != b.Record.Key || !bytes.Equal(a.Record.Data, b.Record.Data) {
			t.Fatalf("change %d: the reader saw %s %s at %d, one read returns %s %s at %d",
				i, a.Type, a.Record.Key, a.Revision, b.Type, b.Record.Key, b.Revision)
		}
		if b.Type == ports.ChangeDeleted {
			deletes++
			continue
		}
		if k, ok := written[b.Revision]; !ok || k != b.Record.Key {
			t.Errorf("change %s %s at %d matches no successful write (%v)", b.Type, b.Record.Key, b.Revision, k)
		}
		delete(written, b.Revision)
	}
	if len(written) != 0 {
		t.Errorf("%d successful writes missing from the feed: %v", len(written), written)
	}
	if deletes != racers {
		t.Errorf("%d deletions in the feed, want %d", deletes, racers)
	}
}

// feedRetention: the feed keeps at least the last ports.FeedRetention
// changes, and a compacted read names a revision it can resume after.
func feedRetention(t *testing.T, s FeedStore) {
	ctx := context.Background()
	const extra = 20
	per := (ports.FeedRetention + extra) / racers
	revs := make([][]int64, racers) // the revision of every write, by writer
	errs := race(racers, func(i int) error {
		r, err := s.Create(ctx, newRec(certKey("default", fmt.Sprintf("r%d", i))))
		if err != nil {
			return err
		}
		revs[i] = append(revs[i], r.Revision)
		for range per {
			if r, err = s.Update(ctx, r); err != nil {
				return err
			}
			revs[i] = append(revs[i], r.Revision)
		}
		return nil
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
	}
	h := head(t, s)
	// the last FeedRetention writes are readable, from any of them on
	var all []int64
	for _, rs := range revs {
		all = append(all, rs...)
	}
	slices.Sort(all)
	last := all[len(all)-ports.FeedRetention:]
	kept := readAll(t, s, last[0]-1, 500)
	if len(kept) != len(last) || kept[len(kept)-1].Revision != h {
		t.Fatalf("after %d writes: %d changes from the %dth newest write's revision %d, want %d up to Head %d",
			len(all), len(kept), ports.FeedRetention, last[0], len(last), h)
	}
	for i, c := range kept {
		if c.Revision != last[i] {
			t.Fatalf("kept change %d at revision %d, the write returned %d", i, c.Revision, last[i])
		}
	}
	_, err := s.Changes(ctx, 0, 10)
	var ce *ports.CompactedError
	switch {
	case err == nil:
		// this store kept everything so far
	case errors.As(err, &ce) && errors.Is(err, ports.ErrCompacted):
		if ce.Compacted <= 0 || ce.Compacted >= last[0] {
			t.Errorf("compacted up to %d with the %dth newest write at %d: keeps fewer than %d", ce.Compacted, ports.FeedRetention, last[0], ports.FeedRetention)
		}
		if _, err := s.Changes(ctx, ce.Compacted, 10); err != nil {
			t.Errorf("Changes after the compaction mark %d: %v", ce.Compacted, err)
		}
	default:
		t.Errorf("Changes(after 0): %v, want changes or a *ports.CompactedError", err)
	}
}

func feedBadArguments(t *testing.T, s FeedStore) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		after int64
		limit int
	}{{"limit 0", 0, 0}, {"negative limit", 0, -1}, {"negative after", -1, 10}} {
		if _, err := s.Changes(ctx, tc.after, tc.limit); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Changes(cctx, 0, 10); err == nil {
		t.Errorf("Changes with a canceled context: no error")
	}
	if _, err := s.Head(cctx); err == nil {
		t.Errorf("Head with a canceled context: no error")
	}
}
