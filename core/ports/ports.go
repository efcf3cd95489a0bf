// Package ports declares the interfaces core needs from the outside world:
// a state store with conditional writes and a due-time index, a secret store,
// a queue with delays and a metrics sink. Each adapter (adapters/local,
// adapters/aws, adapters/gcp) implements them, and core/memory in memory for
// core's own tests; all of them run the contract suites in ports/porttest
// (ports/porttest/README.md lists who runs what). See
// docs/design/one-step.md and docs/ARCHITECTURE.md.
package ports

import (
	"context"
	"errors"
	"time"

	"github.com/certfn/certfn/core/api"
)

// Sentinel errors every adapter returns (wrapped is fine: use errors.Is).
var (
	// ErrNotFound: the record or secret does not exist.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: Create found an existing record or secret.
	ErrAlreadyExists = errors.New("already exists")
	// ErrConflict: a conditional write lost a race (the stored version
	// differs from the expected one). The caller reloads and retries.
	ErrConflict = errors.New("conflict: stored version changed")
	// ErrInvalidContinue: a ListPage continue token is malformed or belongs
	// to another listing (a permanent error: the caller starts again).
	ErrInvalidContinue = errors.New("continue token is invalid")
)

// Record is one stored resource. Data is the resource's JSON (never key
// material: rule 6). Version is assigned by the store: 1 on create, +1 on
// each update.
type Record struct {
	Key     api.Key
	Version int64
	// Owner is the controlling owner's key (zero if none); List can filter on it.
	Owner api.Key
	// NextRunAt puts the record in the due index; zero removes it.
	NextRunAt time.Time
	Data      []byte
	// Revision is the store revision of the record's last write (see
	// ChangeFeed), set by a store that keeps a change feed (0 otherwise)
	// and ignored on writes: Version is what conditional writes compare.
	Revision int64
}

// ListOptions filters List and ListPage. Kind is required; Namespace ""
// means all namespaces; a non-zero Owner restricts to records it controls.
// Limit and Continue page a ListPage (List ignores them), as Kubernetes'
// list options do: Limit > 0 asks for at most that many records (0: all
// that remain), Continue is the token of the previous page ("" starts).
type ListOptions struct {
	Kind      string
	Namespace string
	Owner     api.Key
	Limit     int
	Continue  string
}

// Page is one page of a listing. Continue is the token of the next page,
// "" when this is the last one.
type Page struct {
	Records  []Record
	Continue string
}

// DueItem is one entry of the due index.
type DueItem struct {
	Key       api.Key
	NextRunAt time.Time
}

// Store is the state store.
//
// Contract (ports/porttest.StoreSuite):
//   - Create fails with ErrAlreadyExists when the key exists, else stores
//     version 1 and returns the stored record.
//   - Update succeeds only when rec.Version equals the stored version
//     (ErrConflict otherwise, ErrNotFound if missing) and returns the record
//     with its new version. It never overwrites a newer version.
//   - Delete with version > 0 is conditional (ErrConflict on mismatch);
//     version 0 deletes unconditionally. Deleting a missing key is ErrNotFound.
//   - Due returns up to limit items whose NextRunAt is non-zero and <= now,
//     oldest first, reading no more than about 2× the due count.
//   - List returns every matching record, sorted by namespace then name.
//   - ListPage returns the matching records a page at a time, in the
//     store's key order (the same for every page of a listing; memory and
//     local: namespace then name; DynamoDB: its key Kind/namespace/name;
//     Firestore: the document ID), reading about Limit records per page,
//     not the whole listing. A page holds at most Limit records, possibly
//     fewer (even none) before the last; Continue is "" on the last page.
//     A listing returns every record that exists from its first page to its
//     last exactly once; one created or deleted meanwhile may or may not
//     appear, none appears twice. Pages are not a snapshot (Kubernetes'
//     are): each page reads the current state. A Continue token is opaque;
//     one that is malformed or from another listing (other kind, namespace
//     or owner) fails with ErrInvalidContinue.
type Store interface {
	Get(ctx context.Context, key api.Key) (Record, error)
	Create(ctx context.Context, rec Record) (Record, error)
	Update(ctx context.Context, rec Record) (Record, error)
	Delete(ctx context.Context, key api.Key, version int64) error
	List(ctx context.Context, opts ListOptions) ([]Record, error)
	ListPage(ctx context.Context, opts ListOptions) (Page, error)
	Due(ctx context.Context, now time.Time, limit int) ([]DueItem, error)
}

// Secret is one entry of the secret store: tls.crt, tls.key, ca.crt and any
// additional outputs, plus metadata (cert-manager's secret annotations and
// the Certificate's secretTemplate).
type Secret struct {
	Namespace   string
	Name        string
	Data        map[string][]byte
	Labels      map[string]string
	Annotations map[string]string
}

// SecretStore keeps private keys and certificates — the only place they live.
//
// Contract (ports/porttest.SecretSuite): Get returns ErrNotFound for a
// missing secret; Create returns ErrAlreadyExists when present; Put creates
// or replaces the whole secret (a previous version may be kept by the
// backend for rollback); Delete of a missing secret returns nil.
// Errors never contain secret data.
type SecretStore interface {
	Get(ctx context.Context, namespace, name string) (Secret, error)
	Create(ctx context.Context, s Secret) error
	Put(ctx context.Context, s Secret) error
	Delete(ctx context.Context, namespace, name string) error
}

// SecretLister is implemented by secret stores that can list the secrets
// they hold (local mode's files, memory): namespace/name pairs sorted by
// namespace then name, in namespace ("" = every namespace). It never
// returns values.
type SecretLister interface {
	ListSecrets(ctx context.Context, namespace string) ([]SecretRef, error)
}

// SecretRef names one secret.
type SecretRef struct{ Namespace, Name string }

// Queue carries reconcile keys. Delivery is at least once; duplicates and
// reordering are expected. Backends may cap delay (SQS: 15 minutes) and
// then deliver early; handlers re-check their nextRunAt.
type Queue interface {
	Enqueue(ctx context.Context, key api.Key, delay time.Duration) error
}

// Clock is injected everywhere core needs the time; core never calls time.Now.
type Clock interface {
	Now() time.Time
}

// Metrics receives counters and observations. Names are snake_case;
// labels are alternating name, value pairs.
type Metrics interface {
	Inc(name string, labels ...string)
	Observe(name string, value float64, labels ...string)
}
