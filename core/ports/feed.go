package ports

import (
	"context"
	"errors"
	"fmt"
)

// ErrCompacted: a ChangeFeed no longer holds the changes after the
// requested revision (Kubernetes answers a watch from such a version with
// 410 Gone, and the client lists again). Use errors.As with *CompactedError
// for the oldest revision a read may still start after.
var ErrCompacted = errors.New("revision compacted")

// CompactedError is the ErrCompacted of a read that asked for changes
// after After when the feed keeps only those after Compacted.
type CompactedError struct {
	After, Compacted int64
}

func (e *CompactedError) Error() string {
	return fmt.Sprintf("changes after revision %d: %v (the feed starts after %d)", e.After, ErrCompacted, e.Compacted)
}

// Is makes errors.Is(err, ErrCompacted) true.
func (e *CompactedError) Is(target error) bool { return target == ErrCompacted }

// ChangeType says what a Change did to its record.
type ChangeType string

// The change types, named as Kubernetes' watch events are.
const (
	ChangeAdded    ChangeType = "ADDED"
	ChangeModified ChangeType = "MODIFIED"
	ChangeDeleted  ChangeType = "DELETED"
)

// Change is one write of a ChangeFeed. Record is the record as the write
// left it (for ChangeDeleted: as it was when deleted), with Record.Revision
// equal to Revision.
type Change struct {
	Revision int64
	Type     ChangeType
	Record   Record
}

// ChangeFeed is a store's log of its writes, numbered by one revision for
// the whole store that increases with every write (kine's revision under
// k3s, etcd's under Kubernetes: what a resourceVersion is). A watch resumes
// from the last revision its client saw.
//
// Contract (porttest.FeedSuite):
//   - Every successful Create, Update and Delete of the store appends one
//     Change, atomically with the write; a failed write appends none. The
//     record a write returns, and every later Get and List of it, carries
//     that change's revision in Record.Revision.
//   - Revisions increase strictly in the order writes take effect. They
//     may skip numbers (a store that allocates revisions before it writes
//     leaves gaps); they never go back, and a change never appears after a
//     change with a higher revision has been returned: once Changes has
//     returned revision r, every later call after any revision < r
//     returns the same changes up to r. Resuming from the last revision
//     seen therefore loses nothing and repeats nothing, with any number of
//     concurrent writers.
//   - Changes returns, oldest first, up to limit (> 0) changes with
//     Revision > after. It fails with a *CompactedError (ErrCompacted) when
//     after is older than the feed keeps; the feed keeps at least the
//     changes of the last FeedRetention writes.
//   - Head returns the revision of the newest change (0 for a store never
//     written). A listing read after Head returned h reflects every change
//     up to h, so a watch from h after that listing misses nothing (it may
//     repeat a change the listing already showed).
type ChangeFeed interface {
	Head(ctx context.Context) (int64, error)
	Changes(ctx context.Context, after int64, limit int) ([]Change, error)
}

// FeedRetention is the number of most recent changes every ChangeFeed
// keeps at least; older ones may be compacted away.
const FeedRetention = 1000
