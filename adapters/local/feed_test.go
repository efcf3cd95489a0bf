package local

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
)

func certRec(name string) ports.Record {
	return ports.Record{Key: api.Key{Kind: api.KindCertificate, Namespace: "default", Name: name}, Data: []byte(`{}`)}
}

// Compaction keeps the newest feedKeep changes and answers a read from
// before them with the revision it may resume after.
func TestFeedCompaction(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
	s.feedKeep = 10
	for i := range 30 {
		if _, err := s.Create(ctx, certRec(fmt.Sprintf("c%02d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.compact(ctx); err != nil {
		t.Fatalf("compact: %v", err)
	}
	for _, tc := range []struct {
		after     int64
		compacted bool
		n         int
	}{{0, true, 0}, {19, true, 0}, {20, false, 10}, {25, false, 5}, {30, false, 0}} {
		cs, err := s.Changes(ctx, tc.after, 100)
		var ce *ports.CompactedError
		switch {
		case tc.compacted && (!errors.As(err, &ce) || ce.Compacted != 20 || ce.After != tc.after):
			t.Errorf("Changes(after %d): %v, want a CompactedError at 20", tc.after, err)
		case !tc.compacted && (err != nil || len(cs) != tc.n):
			t.Errorf("Changes(after %d): %d changes, %v; want %d", tc.after, len(cs), err, tc.n)
		}
	}
	var rows int
	if err := s.db.QueryRow(`SELECT COUNT(*) FROM changes`).Scan(&rows); err != nil || rows != 10 {
		t.Errorf("changes table: %d rows (%v), want 10", rows, err)
	}
	// compacting again with nothing new to drop changes nothing
	if err := s.compact(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Changes(ctx, 20, 100); err != nil {
		t.Errorf("after a second compaction: %v", err)
	}
}

// Writes compact the feed themselves, every compactEvery writes of a
// process.
func TestFeedCompactsAsItWrites(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
	s.feedKeep = 5
	r, err := s.Create(ctx, certRec("web"))
	if err != nil {
		t.Fatal(err)
	}
	for range compactEvery {
		if r, err = s.Update(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	var rows, compacted int64
	if err := s.db.QueryRow(`SELECT (SELECT COUNT(*) FROM changes), compacted FROM feed`).Scan(&rows, &compacted); err != nil {
		t.Fatal(err)
	}
	if want := int64(compactEvery - 5); compacted != want || rows > compactEvery-int64(want)+1 {
		t.Errorf("after %d writes: compacted up to %d with %d rows kept, want %d", compactEvery+1, compacted, rows, want)
	}
}

// Two handles on one file (two processes) take distinct revisions, in
// commit order, and the feed holds every write of both.
func TestFeedAcrossHandles(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "certfn.db")
	var handles []*Store
	for range 2 {
		h, err := OpenStore(path)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		handles = append(handles, h)
	}
	const perHandle = 40
	revs := make([][]int64, len(handles))
	var wg sync.WaitGroup
	for i, h := range handles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range perHandle {
				r, err := h.Create(ctx, certRec(fmt.Sprintf("h%d-%02d", i, n)))
				if err != nil {
					t.Errorf("handle %d: %v", i, err)
					return
				}
				revs[i] = append(revs[i], r.Revision)
			}
		}()
	}
	wg.Wait()
	cs, err := handles[1].Changes(ctx, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2*perHandle {
		t.Fatalf("%d changes, want %d", len(cs), 2*perHandle)
	}
	seen := map[int64]bool{}
	for i, c := range cs {
		if c.Revision != int64(i+1) {
			t.Fatalf("change %d has revision %d: the feed has a gap or is out of order", i, c.Revision)
		}
		seen[c.Revision] = true
	}
	for i, rs := range revs {
		for _, r := range rs {
			if !seen[r] {
				t.Errorf("handle %d's write at revision %d is not in the feed", i, r)
			}
		}
	}
}

// A file of schema version 1 (no change feed) is migrated when opened: its
// records get distinct revisions, the feed starts compacted after them (a
// watch from before lists again), and new writes continue from there.
func TestStoreMigratesVersion1(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "certfn.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`CREATE TABLE resources (kind TEXT NOT NULL, namespace TEXT NOT NULL DEFAULT '', name TEXT NOT NULL,
			version INTEGER NOT NULL, owner TEXT NOT NULL DEFAULT '', next_run_at INTEGER NOT NULL DEFAULT 0,
			data BLOB NOT NULL, PRIMARY KEY (kind, namespace, name))`,
		`CREATE INDEX resources_due ON resources (next_run_at, kind, namespace, name) WHERE next_run_at > 0`,
		`CREATE INDEX resources_owner ON resources (kind, owner, namespace, name)`,
		`CREATE TABLE inbox (id INTEGER PRIMARY KEY, key TEXT NOT NULL, enqueued_at INTEGER NOT NULL)`,
		`INSERT INTO resources (kind, namespace, name, version, data) VALUES ('Certificate', 'default', 'a', 3, '{"a":1}')`,
		`INSERT INTO resources (kind, namespace, name, version, data) VALUES ('Certificate', 'default', 'b', 1, '{"b":1}')`,
		`PRAGMA user_version = 1`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	db.Close()

	s, err := OpenStore(path)
	if err != nil {
		t.Fatalf("OpenStore of a version-1 file: %v", err)
	}
	defer s.Close()
	a, err := s.Get(ctx, certRec("a").Key)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Get(ctx, certRec("b").Key)
	if err != nil {
		t.Fatal(err)
	}
	if a.Version != 3 || string(a.Data) != `{"a":1}` || a.Revision <= 0 || b.Revision <= 0 || a.Revision == b.Revision {
		t.Fatalf("after the migration: a %+v, b %+v; want the data kept and distinct revisions", a, b)
	}
	h, err := s.Head(ctx)
	if err != nil || h != max(a.Revision, b.Revision) {
		t.Fatalf("Head %d (%v), want %d", h, err, max(a.Revision, b.Revision))
	}
	if _, err := s.Changes(ctx, 0, 10); !errors.Is(err, ports.ErrCompacted) {
		t.Errorf("Changes from before the migration: %v, want ErrCompacted", err)
	}
	a, err = s.Update(ctx, a)
	if err != nil || a.Revision != h+1 || a.Version != 4 {
		t.Fatalf("Update after the migration: %+v %v, want revision %d version 4", a, err, h+1)
	}
	cs, err := s.Changes(ctx, h, 10)
	if err != nil || len(cs) != 1 || cs[0].Type != ports.ChangeModified || cs[0].Revision != h+1 {
		t.Errorf("Changes after the migration's head: %+v %v", cs, err)
	}
	var version int
	if err := s.db.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil || version != schemaVersion {
		t.Errorf("user_version %d (%v), want %d", version, err, schemaVersion)
	}
	s.Close()
	// opening again finds it done
	s2, err := OpenStore(path)
	if err != nil {
		t.Fatalf("reopening the migrated file: %v", err)
	}
	s2.Close()
}
