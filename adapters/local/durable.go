package local

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
)

// walSync makes the Store's commits durable, in groups.
//
// The database runs in WAL mode with synchronous=NORMAL: SQLite keeps it
// consistent after a crash or a power loss (a commit is whole or absent:
// WAL frames are checksummed and recovery stops at the first incomplete
// commit), syncs the WAL before each checkpoint and the database file
// after it, and restarts the WAL only after a checkpoint. What NORMAL does
// not do is fsync the WAL at each commit, so on a power loss (not a
// process crash: the kernel still has the pages) the last commits could
// be lost after the write had returned.
//
// The Store closes that gap itself: after each commit, before the write
// returns, it waits until the WAL file has been fsynced by a call that
// began after the commit (wait). A returned write is then on disk, as
// with synchronous=FULL, and the WAL is all that needs syncing: every
// commit not yet checkpointed is in it, and checkpointed ones are in the
// synced database file. Unlike FULL, the fsync runs outside SQLite's write
// lock and is shared: the commits that finish while one fsync runs wait
// for the next one, which covers them all (group commit), so concurrent
// writers pay one fsync per group instead of one each while holding the
// lock. The price: between its commit and the fsync, a write is visible
// to other readers (with FULL it is not); a power loss in that window can
// lose a write that was read but never returned to its writer, the same
// window a crash of the writer would leave, which conditional writes and
// idempotent steps already handle.
type walSync struct {
	wal, db string // the -wal file and the database file

	mu      sync.Mutex
	cond    *sync.Cond
	issued  uint64 // tickets handed out (one per commit)
	synced  uint64 // every ticket <= synced is durable
	running bool   // an fsync is under way
	// failLo < t <= failHi: tickets whose fsync failed (their durability
	// is unknown: a failed fsync may drop the dirty pages).
	failLo, failHi uint64
	failErr        error
	f              *os.File // the open WAL, reopened when SQLite replaces it
	// syncFn is sync, replaced by tests.
	syncFn func() error
}

func newWALSync(dbPath string) *walSync {
	w := &walSync{wal: dbPath + "-wal", db: dbPath}
	w.cond = sync.NewCond(&w.mu)
	w.syncFn = w.sync
	return w
}

// ticket registers a commit that has completed (its frames are written
// to the WAL) and returns its ticket for wait.
func (w *walSync) ticket() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.issued++
	return w.issued
}

// wait returns once ticket t is durable: nil when an fsync that began
// after t's commit succeeded, else that fsync's error.
func (w *walSync) wait(t uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		switch {
		case t > w.failLo && t <= w.failHi:
			return w.failErr
		case t <= w.synced:
			return nil
		case !w.running:
			w.running = true
			lo, target := w.synced, w.issued
			w.mu.Unlock()
			err := w.syncFn()
			w.mu.Lock()
			w.running = false
			if err != nil {
				w.failLo, w.failHi, w.failErr = lo, target, fmt.Errorf("store: make the commit durable (fsync %s): %w", w.wal, err)
			}
			w.synced = max(w.synced, target)
			w.cond.Broadcast()
		default:
			w.cond.Wait()
		}
	}
}

// sync fdatasyncs the WAL (as SQLite does on Linux), reopening it when SQLite has replaced it (it
// deletes the file when its last connection closes). Without a WAL every
// commit is in the database file, which is synced instead.
func (w *walSync) sync() error {
	fi, err := os.Stat(w.wal)
	if errors.Is(err, fs.ErrNotExist) {
		w.closeFile()
		return syncPath(w.db)
	}
	if err != nil {
		return err
	}
	if w.f != nil {
		if cur, err := w.f.Stat(); err != nil || !os.SameFile(cur, fi) {
			w.closeFile()
		}
	}
	if w.f == nil {
		if w.f, err = os.Open(w.wal); err != nil {
			return err
		}
	}
	return dataSync(w.f)
}

func (w *walSync) closeFile() {
	if w.f != nil {
		_ = w.f.Close()
		w.f = nil
	}
}

// close releases the WAL file.
func (w *walSync) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closeFile()
}

// syncPath fsyncs the file at path.
func syncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
