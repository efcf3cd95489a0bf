package local

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Commits that wait at once share fsyncs: 40 concurrent waiters are
// served by far fewer than 40 syncs, and each returns only after a sync
// that began after its ticket.
func TestWALSyncGroupsCommits(t *testing.T) {
	w := newWALSync(filepath.Join(t.TempDir(), "db"))
	var syncs, began atomic.Int64
	var lastIssued atomic.Uint64
	w.syncFn = func() error {
		began.Store(int64(lastIssued.Load()))
		syncs.Add(1)
		time.Sleep(5 * time.Millisecond)
		return nil
	}
	var wg sync.WaitGroup
	const n = 40
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tk := w.ticket()
			for {
				if cur := lastIssued.Load(); tk <= cur || lastIssued.CompareAndSwap(cur, tk) {
					break
				}
			}
			if err := w.wait(tk); err != nil {
				t.Errorf("wait(%d): %v", tk, err)
			}
			w.mu.Lock()
			synced := w.synced
			w.mu.Unlock()
			if synced < tk {
				t.Errorf("wait(%d) returned with synced = %d", tk, synced)
			}
		}()
	}
	wg.Wait()
	if s := syncs.Load(); s == 0 || s >= n {
		t.Errorf("%d syncs for %d concurrent commits, want at least 1 and fewer than %d", s, n, n)
	}
}

// A failed sync fails the commits it covered (their durability is
// unknown), and later commits are synced again.
func TestWALSyncFailure(t *testing.T) {
	w := newWALSync(filepath.Join(t.TempDir(), "db"))
	boom := errors.New("disk on fire")
	fail := true
	w.syncFn = func() error {
		if fail {
			fail = false
			return boom
		}
		return nil
	}
	first := w.ticket()
	if err := w.wait(first); !errors.Is(err, boom) {
		t.Fatalf("wait after a failed sync = %v, want %v", err, boom)
	}
	if err := w.wait(first); !errors.Is(err, boom) {
		t.Fatalf("waiting again on the failed commit = %v, want %v", err, boom)
	}
	if err := w.wait(w.ticket()); err != nil {
		t.Fatalf("next commit after a failed sync: %v", err)
	}
}

// The real sync: the WAL file when it exists (reopened when replaced),
// the database file when it does not.
func TestWALSyncFiles(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "db")
	if err := os.WriteFile(db, []byte("db"), 0o600); err != nil {
		t.Fatal(err)
	}
	w := newWALSync(db)
	defer w.close()
	if err := w.wait(w.ticket()); err != nil || w.f != nil {
		t.Fatalf("without a WAL: %v (WAL open: %v)", err, w.f != nil)
	}
	if err := os.WriteFile(db+"-wal", []byte("frames"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := w.wait(w.ticket()); err != nil || w.f == nil {
		t.Fatalf("with a WAL: %v (WAL open: %v)", err, w.f != nil)
	}
	old := w.f
	if err := os.Remove(db + "-wal"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db+"-wal", []byte("new frames"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := w.wait(w.ticket()); err != nil || w.f == nil || w.f == old {
		t.Fatalf("with a replaced WAL: %v (reopened: %v)", err, w.f != nil && w.f != old)
	}
}
