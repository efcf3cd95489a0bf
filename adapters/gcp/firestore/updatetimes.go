package firestore

import (
	"sync"
	"time"
)

// maxUpdateTimes bounds the update times a Store remembers (about 100
// bytes each). A function instance handles few records at a time; a
// long-running process with more records than this only re-reads some
// before writing them.
const maxUpdateTimes = 10_000

// updateTimes remembers, per document, the version and update time the
// store last saw (read or wrote), so that a write conditioned on that
// version needs no read first (see Store.Update). An entry is only a hint:
// the precondition is checked by Firestore, and a write that fails on it
// falls back to reading the document.
type updateTimes struct {
	mu sync.Mutex
	m  map[string]seen
}

type seen struct {
	version int64
	updated time.Time
	expires time.Time // zero: no TTL
}

// remember records st for document id unless a newer update time is
// known already (a document's update time only grows, across delete and
// re-create too, so concurrent readers cannot roll an entry back).
func (u *updateTimes) remember(id string, st stored) {
	if st.updated.IsZero() {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if old, ok := u.m[id]; ok && !st.updated.After(old.updated) {
		return
	}
	if u.m == nil {
		u.m = map[string]seen{}
	}
	if _, ok := u.m[id]; !ok && len(u.m) >= maxUpdateTimes {
		for k := range u.m { // evict an arbitrary entry
			delete(u.m, k)
			break
		}
	}
	u.m[id] = seen{version: st.rec.Version, updated: st.updated, expires: st.expires}
}

// forget drops document id (deleted, or found missing).
func (u *updateTimes) forget(id string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.m, id)
}

// at returns the update time of document id at version (any version when
// version is 0), if known and not expired at now: a write conditioned on
// it succeeds exactly when the document is still at that version.
func (u *updateTimes) at(id string, version int64, now time.Time) (time.Time, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	e, ok := u.m[id]
	if !ok || (version != 0 && e.version != version) || (!e.expires.IsZero() && !now.Before(e.expires)) {
		return time.Time{}, false
	}
	return e.updated, true
}
