// Package firestore implements ports.Store on one Cloud Firestore (native
// mode) collection (docs/ARCHITECTURE.md, "On Google Cloud").
//
//   - One document per resource; its ID is the resource key, percent-encoded
//     (docID: reversible, never holds '/', at most 1500 bytes).
//   - Create uses Firestore's create (the document must not exist: a
//     precondition checked by the server) and reports ErrAlreadyExists.
//   - Update and Delete are conditional on the version through an
//     update-time precondition, never a transaction: see Update for why.
//   - The due index is Firestore's single-field index on nextRunAt, which is
//     sparse because the field is absent while a record is not due: Due is
//     one query, Where(nextRunAt <= now).OrderBy(nextRunAt).Limit(n),
//     reading only the due documents it returns.
//   - List filters on the indexed fields kind, namespace and owner
//     (equalities only: no composite index). The payload and the other
//     fields that are never queried are exempt from indexing
//     (IndexExemptFields, declared in Terraform).
//   - A TTL field (expireAt) is set only by an optional policy
//     (Options.ExpiresAt); expired documents are treated as absent by every
//     read and condition, since Firestore deletes them only eventually.
//   - Resource JSON over 8 KiB is gzip-compressed; a document that would
//     still exceed MaxDocBytes is refused with a permanent error.
package firestore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	gfs "cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// DefaultDatabase is the database a Store uses unless Options.Database
// names another (Firestore's "(default)").
const DefaultDatabase = gfs.DefaultDatabaseID

// DefaultCollection is the collection a Store uses unless
// Options.Collection names another.
const DefaultCollection = "certfn"

// Options configure a Store.
type Options struct {
	// Database is the Firestore database ID (default DefaultDatabase).
	// Open connects to it; New checks that its client is connected to it.
	Database string
	// Collection is the top-level collection holding the records (default
	// DefaultCollection). Several deployments may share a database with a
	// collection each.
	Collection string
	// Clock tells the time for TTL checks (default: the wall clock).
	Clock ports.Clock
	// ExpiresAt, when set, is the TTL policy: it returns when a record being
	// written may be garbage-collected (zero: never); the store writes it
	// as expireAt, the field of the collection's TTL policy. Reads and
	// conditions treat expired documents as absent. Nil means no record
	// ever expires.
	ExpiresAt func(rec ports.Record, now time.Time) time.Time
	// Metrics, when set, receives certfn_firestore_requests_total{op} and
	// certfn_firestore_documents{op,kind=read|write} observations.
	Metrics ports.Metrics
	// Timeout bounds each call of the store, the client library's retries
	// of Unavailable and the like included, when ctx has no earlier
	// deadline (default DefaultTimeout; negative: no bound). Without it a
	// call retries for as long as the service is unreachable.
	Timeout time.Duration
}

// DefaultTimeout is the default Options.Timeout.
const DefaultTimeout = 30 * time.Second

// Counts are the requests a Store made and the documents they read or
// wrote, for the cost figures. Firestore bills a read per document a Get or
// query returns and one for a Get or query that returns none
// (BilledReads), a write per document created, updated or deleted.
type Counts struct {
	Reads, Writes int64 // requests: Get, query / Create, Update, Delete (failed ones included)
	DocsRead      int64 // documents returned by reads
	DocsWritten   int64 // documents written or deleted
	BilledReads   int64 // sum over reads of max(1, documents returned)
}

// Store is the ports.Store on Firestore. It is safe for concurrent use.
type Store struct {
	client  *gfs.Client
	owned   bool // Close closes client (Open made it)
	db      string
	col     *gfs.CollectionRef
	clock   ports.Clock
	expire  func(ports.Record, time.Time) time.Time
	m       ports.Metrics
	timeout time.Duration
	updates updateTimes

	mu     sync.Mutex
	counts Counts
}

var _ ports.Store = (*Store)(nil)

// Open connects to the Firestore database opts.Database of project and
// returns a Store on opts.Collection; Close releases the connection. The
// client library reads FIRESTORE_EMULATOR_HOST: when it is set, Open talks
// to that emulator without credentials. It makes no call.
func Open(ctx context.Context, project string, opts Options, clientOpts ...option.ClientOption) (*Store, error) {
	if project == "" {
		return nil, errs.Permanentf("firestore store: project: must not be empty")
	}
	if opts.Database == "" {
		opts.Database = DefaultDatabase
	}
	c, err := gfs.NewClientWithDatabase(ctx, project, opts.Database, clientOpts...)
	if err != nil {
		return nil, fmt.Errorf("firestore store: %w", err)
	}
	s, err := New(c, opts)
	if err != nil {
		c.Close()
		return nil, err
	}
	s.owned = true
	return s, nil
}

// New returns a Store on opts.Collection through client, whose database
// must be opts.Database (when set). It makes no call; Close does not close
// client.
func New(client *gfs.Client, opts Options) (*Store, error) {
	if client == nil {
		return nil, errs.Permanentf("firestore store: client: must not be nil")
	}
	if opts.Collection == "" {
		opts.Collection = DefaultCollection
	}
	if err := checkCollection(opts.Collection); err != nil {
		return nil, err
	}
	db := databaseOf(client)
	if opts.Database != "" && opts.Database != db {
		return nil, errs.Permanentf("firestore store: database: the client is connected to %q, not %q", db, opts.Database)
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	return &Store{
		client:  client,
		db:      db,
		col:     client.Collection(opts.Collection),
		clock:   opts.Clock,
		expire:  opts.ExpiresAt,
		m:       opts.Metrics,
		timeout: opts.Timeout,
	}, nil
}

// checkCollection refuses a collection ID Firestore does not accept.
func checkCollection(c string) error {
	switch {
	case strings.Contains(c, "/"):
		return errs.Permanentf("firestore store: collection: %q must not contain '/'", c)
	case c == "." || c == "..", strings.HasPrefix(c, "__") && strings.HasSuffix(c, "__"):
		return errs.Permanentf("firestore store: collection: %q is reserved", c)
	case len(c) > MaxDocIDBytes || !utf8.ValidString(c):
		return errs.Permanentf("firestore store: collection: must be valid UTF-8 of at most %d bytes", MaxDocIDBytes)
	}
	return nil
}

// databaseOf returns the database ID of client's resource paths
// ("projects/P/databases/D/documents/...").
func databaseOf(client *gfs.Client) string {
	parts := strings.Split(client.Collection("x").Path, "/")
	if len(parts) > 3 && parts[2] == "databases" {
		return parts[3]
	}
	return DefaultDatabase
}

// Close closes the client if Open made it.
func (s *Store) Close() error {
	if s.owned {
		return s.client.Close()
	}
	return nil
}

// Database returns the database ID.
func (s *Store) Database() string { return s.db }

// Collection returns the collection ID.
func (s *Store) Collection() string { return s.col.ID }

// Counts returns the requests made so far.
func (s *Store) Counts() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts
}

// ResetCounts zeroes the counts and returns their previous value.
func (s *Store) ResetCounts() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.counts
	s.counts = Counts{}
	return c
}

// count records one request of op that read or wrote docs documents.
func (s *Store) count(op string, write bool, docs int) {
	s.mu.Lock()
	if write {
		s.counts.Writes++
		s.counts.DocsWritten += int64(docs)
	} else {
		s.counts.Reads++
		s.counts.DocsRead += int64(docs)
		s.counts.BilledReads += int64(max(docs, 1))
	}
	s.mu.Unlock()
	if s.m != nil {
		kind := "read"
		if write {
			kind = "write"
		}
		s.m.Inc("certfn_firestore_requests_total", "op", op)
		s.m.Observe("certfn_firestore_documents", float64(docs), "op", op, "kind", kind)
	}
}

// wrap maps a Firestore error of op on key: NotFound, AlreadyExists and
// (for writes) FailedPrecondition and Aborted become the ports sentinels,
// InvalidArgument is permanent, and a canceled or expired ctx is reported
// as such; every other code (Unavailable, ResourceExhausted, Internal,
// DeadlineExceeded, ...) stays as it is: transient for errs.Classify. The
// gRPC error stays in the chain.
func (s *Store) wrap(ctx context.Context, op string, key fmt.Stringer, write bool, err error) error {
	prefix := fmt.Sprintf("store: %s %s", op, key)
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s: %w (%w)", prefix, ctxErr, err)
	}
	switch code := status.Code(err); {
	case code == codes.NotFound:
		return fmt.Errorf("%s: %w (%w)", prefix, ports.ErrNotFound, err)
	case code == codes.AlreadyExists:
		return fmt.Errorf("%s: %w (%w)", prefix, ports.ErrAlreadyExists, err)
	case write && (code == codes.FailedPrecondition || code == codes.Aborted):
		return fmt.Errorf("%s: %w (%w)", prefix, ports.ErrConflict, err)
	case code == codes.InvalidArgument:
		return errs.Permanent(fmt.Errorf("%s: %w", prefix, err))
	}
	// A query's FailedPrecondition (a missing or still building index)
	// stays transient: the deployment fixes it, the queue retries.
	return fmt.Errorf("%s: %w", prefix, err)
}

// lostPrecondition reports a write refused because the document changed
// (or vanished) since the update time it was conditioned on.
func lostPrecondition(err error) bool {
	c := status.Code(err)
	return c == codes.FailedPrecondition || c == codes.NotFound
}

// bound applies Options.Timeout to ctx. A call that runs out of it fails
// with DeadlineExceeded: transient, like any unreachable service.
func (s *Store) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.timeout < 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, s.timeout)
}

// keyed is a key or a document ID for messages.
type keyed string

func (k keyed) String() string { return string(k) }

// expiry applies the TTL policy.
func (s *Store) expiry(rec ports.Record, now time.Time) time.Time {
	if s.expire == nil {
		return time.Time{}
	}
	return s.expire(rec, now)
}

// read reads document id (a strongly consistent single-document read).
// exists is false when it is missing; an expired document is returned as
// it is (the caller decides).
func (s *Store) read(ctx context.Context, op string, key api.Key, id string) (st stored, exists bool, err error) {
	if err := ctx.Err(); err != nil {
		return stored{}, false, fmt.Errorf("store: %s %s: %w", op, key, err)
	}
	snap, err := s.col.Doc(id).Get(ctx)
	if status.Code(err) == codes.NotFound {
		s.count("Get", false, 0)
		s.updates.forget(id)
		return stored{}, false, nil
	}
	if err != nil {
		return stored{}, false, s.wrap(ctx, op, key, false, err)
	}
	s.count("Get", false, 1)
	st, err = decodeDoc(snap)
	if err != nil {
		return stored{}, false, fmt.Errorf("store: %s %s: %w", op, key, err)
	}
	s.updates.remember(id, st)
	return st, true, nil
}

// Get returns the record stored under key (a strongly consistent read), or
// ports.ErrNotFound.
func (s *Store) Get(ctx context.Context, key api.Key) (ports.Record, error) {
	id, err := docID("key", key)
	if err != nil {
		return ports.Record{}, fmt.Errorf("store: get %s: %w", key, err)
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	st, ok, err := s.read(ctx, "get", key, id)
	if err != nil {
		return ports.Record{}, err
	}
	if !ok || st.expired(s.clock.Now()) {
		return ports.Record{}, fmt.Errorf("store: get %s: %w", key, ports.ErrNotFound)
	}
	return st.rec, nil
}

// prepare validates rec and renders it at version for a write.
func (s *Store) prepare(op string, rec ports.Record, version int64, now time.Time) (id string, next ports.Record, fields map[string]any, expires time.Time, err error) {
	fail := func(err error) (string, ports.Record, map[string]any, time.Time, error) {
		return "", ports.Record{}, nil, time.Time{}, fmt.Errorf("store: %s %s: %w", op, rec.Key, err)
	}
	if id, err = docID("key", rec.Key); err != nil {
		return fail(err)
	}
	if !rec.Owner.IsZero() {
		if _, err := docID("owner", rec.Owner); err != nil {
			return fail(err)
		}
	}
	next = rec
	next.Version = version
	// Firestore keeps microseconds; the store keeps milliseconds, like
	// the other backends, and returns what a read will return.
	next.NextRunAt = rec.NextRunAt.Truncate(time.Millisecond)
	if !next.NextRunAt.IsZero() {
		next.NextRunAt = next.NextRunAt.UTC()
	}
	if next.Data == nil {
		next.Data = []byte{}
	}
	expires = s.expiry(next, now)
	if fields, err = document(id, next, expires); err != nil {
		return fail(err)
	}
	return id, next, fields, expires, nil
}

// Create stores rec at version 1 (rec.Version is ignored) and returns the
// stored record; ports.ErrAlreadyExists if the key exists. One create
// (the server checks that the document does not exist); when it does, one
// read tells an expired document (replaced, conditionally on its update
// time) from a live one.
func (s *Store) Create(ctx context.Context, rec ports.Record) (ports.Record, error) {
	now := s.clock.Now()
	id, next, fields, expires, err := s.prepare("create", rec, 1, now)
	if err != nil {
		return ports.Record{}, err
	}
	if err := ctx.Err(); err != nil {
		return ports.Record{}, fmt.Errorf("store: create %s: %w", rec.Key, err)
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	wr, err := s.col.Doc(id).Create(ctx, forCreate(fields))
	if err == nil {
		s.count("Create", true, 1)
		s.updates.remember(id, stored{rec: next, expires: expires, updated: wr.UpdateTime})
		return next, nil
	}
	if status.Code(err) != codes.AlreadyExists {
		s.count("Create", true, 0)
		return ports.Record{}, s.wrap(ctx, "create", rec.Key, true, err)
	}
	s.count("Create", true, 0)
	// The document exists: it may be expired but not yet deleted.
	st, ok, rerr := s.read(ctx, "create", rec.Key, id)
	if rerr != nil {
		return ports.Record{}, fmt.Errorf("store: create %s: exists, then: %w", rec.Key, rerr)
	}
	if !ok || !st.expired(now) {
		// Live (or deleted since): someone else's create won.
		return ports.Record{}, fmt.Errorf("store: create %s: %w", rec.Key, ports.ErrAlreadyExists)
	}
	wr, err = s.col.Doc(id).Update(ctx, forUpdate(fields), gfs.LastUpdateTime(st.updated))
	if lostPrecondition(err) {
		s.count("Update", true, 0)
		return ports.Record{}, fmt.Errorf("store: create %s over an expired document: %w (%w)", rec.Key, ports.ErrAlreadyExists, err)
	}
	if err != nil {
		s.count("Update", true, 0)
		return ports.Record{}, s.wrap(ctx, "create", rec.Key, true, err)
	}
	s.count("Update", true, 1)
	s.updates.remember(id, stored{rec: next, expires: expires, updated: wr.UpdateTime})
	return next, nil
}

// Update replaces the record if the stored version equals rec.Version and
// returns it with the new version. ports.ErrConflict if the stored version
// differs, ports.ErrNotFound if the key is missing.
//
// Why an update-time precondition and not a transaction: Firestore's only
// server-side write conditions are "exists" and "last update time equals";
// a document's update time changes with every write (and grows across
// delete and re-create), so "update time = T, the time of the write that
// stored version v" is exactly "stored version = v". The write is a single
// optimistic compare-and-set: a lost race fails at once with
// FailedPrecondition (ErrConflict: reload and retry, as the port wants),
// takes no lock and never blocks a concurrent writer. A transaction would
// make the same check with a read inside it, but server-side transactions
// take pessimistic locks: racing writers of one document wait on each
// other (the official emulator holds a loser for seconds before aborting
// it) and the client library retries aborted transactions by itself,
// hiding the conflict the engine must see; it also costs a
// BeginTransaction and a Commit round trip.
//
// The precondition needs the update time of version rec.Version. The
// store remembers it from its own reads and writes (the engine writes the
// record it just read), so the usual Update is one write and no read; when
// it does not know it, or the write fails on it (another writer, or an
// entry older than a delete and re-create), it reads the document, checks
// the version and writes conditioned on the update time it read.
func (s *Store) Update(ctx context.Context, rec ports.Record) (ports.Record, error) {
	now := s.clock.Now()
	id, next, fields, expires, err := s.prepare("update", rec, rec.Version+1, now)
	if err != nil {
		return ports.Record{}, err
	}
	if err := ctx.Err(); err != nil {
		return ports.Record{}, fmt.Errorf("store: update %s: %w", rec.Key, err)
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	doc := s.col.Doc(id)
	updates := forUpdate(fields)
	done := func(wr *gfs.WriteResult) (ports.Record, error) {
		s.count("Update", true, 1)
		s.updates.remember(id, stored{rec: next, expires: expires, updated: wr.UpdateTime})
		return next, nil
	}
	if known, ok := s.updates.at(id, rec.Version, now); ok {
		wr, err := doc.Update(ctx, updates, gfs.LastUpdateTime(known))
		if err == nil {
			return done(wr)
		}
		s.count("Update", true, 0)
		if !lostPrecondition(err) {
			return ports.Record{}, s.wrap(ctx, "update", rec.Key, true, err)
		}
		// Changed since: read to tell a conflict from a missing record.
	}
	st, ok, err := s.read(ctx, "update", rec.Key, id)
	switch {
	case err != nil:
		return ports.Record{}, err
	case !ok || st.expired(now):
		return ports.Record{}, fmt.Errorf("store: update %s: %w", rec.Key, ports.ErrNotFound)
	case st.rec.Version != rec.Version:
		return ports.Record{}, fmt.Errorf("store: update %s at version %d (stored %d): %w", rec.Key, rec.Version, st.rec.Version, ports.ErrConflict)
	}
	wr, err := doc.Update(ctx, updates, gfs.LastUpdateTime(st.updated))
	if err == nil {
		return done(wr)
	}
	s.count("Update", true, 0)
	if lostPrecondition(err) {
		// Written or deleted between the read and the write.
		return ports.Record{}, fmt.Errorf("store: update %s at version %d: changed since read: %w (%w)", rec.Key, rec.Version, ports.ErrConflict, err)
	}
	return ports.Record{}, s.wrap(ctx, "update", rec.Key, true, err)
}

// deleteAttempts bounds how often an unconditional Delete re-reads a
// document that keeps changing under it before it reports ErrConflict.
const deleteAttempts = 3

// Delete removes key. With version > 0 the delete is conditional
// (ports.ErrConflict on mismatch); version 0 deletes unconditionally. A
// missing (or expired) key is ports.ErrNotFound; a negative version is a
// permanent error. Like Update, it deletes on an update-time precondition:
// one delete when the store knows the document's update time, else a read
// first.
func (s *Store) Delete(ctx context.Context, key api.Key, version int64) error {
	if version < 0 {
		return errs.Permanentf("store: delete %s: version: must be >= 0 (0 = unconditional), got %d", key, version)
	}
	id, err := docID("key", key)
	if err != nil {
		return fmt.Errorf("store: delete %s: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: delete %s: %w", key, err)
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	now := s.clock.Now()
	doc := s.col.Doc(id)
	if known, ok := s.updates.at(id, version, now); ok {
		_, err := doc.Delete(ctx, gfs.LastUpdateTime(known))
		if err == nil {
			s.count("Delete", true, 1)
			s.updates.forget(id)
			return nil
		}
		s.count("Delete", true, 0)
		if !lostPrecondition(err) {
			return s.wrap(ctx, "delete", key, true, err)
		}
	}
	for attempt := 0; ; attempt++ {
		st, ok, err := s.read(ctx, "delete", key, id)
		switch {
		case err != nil:
			return err
		case !ok || st.expired(now):
			return fmt.Errorf("store: delete %s: %w", key, ports.ErrNotFound)
		case version > 0 && st.rec.Version != version:
			return fmt.Errorf("store: delete %s at version %d (stored %d): %w", key, version, st.rec.Version, ports.ErrConflict)
		}
		_, err = doc.Delete(ctx, gfs.LastUpdateTime(st.updated))
		if err == nil {
			s.count("Delete", true, 1)
			s.updates.forget(id)
			return nil
		}
		s.count("Delete", true, 0)
		if !lostPrecondition(err) {
			return s.wrap(ctx, "delete", key, true, err)
		}
		if version > 0 || attempt+1 == deleteAttempts {
			return fmt.Errorf("store: delete %s: changed since read: %w (%w)", key, ports.ErrConflict, err)
		}
		// Unconditional: another writer got in between; read again.
	}
}

// List returns the records of opts.Kind (required), optionally restricted
// to one namespace and to one owner, ordered by namespace and name: one
// query with equality filters on kind, namespace and owner (strongly
// consistent, like every Firestore query).
func (s *Store) List(ctx context.Context, opts ports.ListOptions) ([]ports.Record, error) {
	if opts.Kind == "" {
		return nil, errs.Permanentf("store: list: kind: must not be empty")
	}
	what := keyed(opts.Kind)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: list %s: %w", what, err)
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	q := s.col.Where(FieldKind, "==", opts.Kind)
	if opts.Namespace != "" {
		q = q.Where(FieldNamespace, "==", opts.Namespace)
	}
	if !opts.Owner.IsZero() {
		q = q.Where(FieldOwner, "==", opts.Owner.String())
	}
	it := q.Documents(ctx)
	defer it.Stop()
	now := s.clock.Now()
	var out []ports.Record
	n := 0
	for {
		snap, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			s.count("List", false, n)
			return nil, s.wrap(ctx, "list", what, false, err)
		}
		n++
		st, err := decodeDoc(snap)
		if err != nil {
			s.count("List", false, n)
			return nil, fmt.Errorf("store: list %s: %w", what, err)
		}
		s.updates.remember(snap.Ref.ID, st)
		if st.expired(now) {
			continue
		}
		out = append(out, st.rec)
	}
	s.count("List", false, n)
	slices.SortFunc(out, func(a, b ports.Record) int {
		return cmp.Or(cmp.Compare(a.Key.Namespace, b.Key.Namespace), cmp.Compare(a.Key.Name, b.Key.Name))
	})
	return out, nil
}

// ListPage returns a page of List's records in document ID order: List's
// query ordered by document ID, after the continue token's ID, limited to
// Limit+1 documents (the one more tells whether another page follows; it
// is not returned). Equality filters with the document ID order need no
// composite index. Expired documents (awaiting TTL deletion) are skipped,
// so a page may hold fewer than Limit records.
func (s *Store) ListPage(ctx context.Context, opts ports.ListOptions) (ports.Page, error) {
	if opts.Kind == "" {
		return ports.Page{}, errs.Permanentf("store: list: kind: must not be empty")
	}
	if opts.Limit < 0 {
		return ports.Page{}, errs.Permanentf("store: list: limit: must be >= 0, got %d", opts.Limit)
	}
	what := keyed(opts.Kind)
	after, err := ports.DecodeContinue(opts, 1)
	if err != nil {
		return ports.Page{}, errs.Permanent(fmt.Errorf("store: list %s: %w", what, err))
	}
	if err := ctx.Err(); err != nil {
		return ports.Page{}, fmt.Errorf("store: list %s: %w", what, err)
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	q := s.col.Where(FieldKind, "==", opts.Kind)
	if opts.Namespace != "" {
		q = q.Where(FieldNamespace, "==", opts.Namespace)
	}
	if !opts.Owner.IsZero() {
		q = q.Where(FieldOwner, "==", opts.Owner.String())
	}
	q = q.OrderBy(gfs.DocumentID, gfs.Asc)
	if after != nil {
		if after[0] == "" || strings.Contains(after[0], "/") { // a forged token
			return ports.Page{}, errs.Permanent(fmt.Errorf("store: list %s: continue: not a document ID: %w", what, ports.ErrInvalidContinue))
		}
		q = q.StartAfter(s.col.Doc(after[0]))
	}
	if opts.Limit > 0 {
		q = q.Limit(min(opts.Limit, math.MaxInt32-1) + 1)
	}
	it := q.Documents(ctx)
	defer it.Stop()
	now := s.clock.Now()
	var (
		p    ports.Page
		n    int
		last string
	)
	for {
		snap, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			s.count("List", false, n)
			return ports.Page{}, s.wrap(ctx, "list", what, false, err)
		}
		n++
		if opts.Limit > 0 && n > opts.Limit {
			p.Continue = ports.EncodeContinue(opts, last)
			break
		}
		last = snap.Ref.ID
		st, err := decodeDoc(snap)
		if err != nil {
			s.count("List", false, n)
			return ports.Page{}, fmt.Errorf("store: list %s: %w", what, err)
		}
		s.updates.remember(snap.Ref.ID, st)
		if st.expired(now) {
			continue
		}
		p.Records = append(p.Records, st.rec)
	}
	s.count("List", false, n)
	return p, nil
}

// Due returns up to limit (> 0) records whose NextRunAt is set and not
// after now, oldest first (ties in document ID order). One query on the
// sparse nextRunAt index, projected to that field: it reads the due
// documents it returns and nothing else (a query that finds none is billed
// one read).
func (s *Store) Due(ctx context.Context, now time.Time, limit int) ([]ports.DueItem, error) {
	if limit <= 0 {
		return nil, errs.Permanentf("store: due: limit: must be > 0, got %d", limit)
	}
	what := keyed("index")
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: due: %w", err)
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	it := s.col.Where(FieldNextRunAt, "<=", now).
		OrderBy(FieldNextRunAt, gfs.Asc).
		Limit(limit).
		Select(FieldNextRunAt).
		Documents(ctx)
	defer it.Stop()
	var out []ports.DueItem
	for {
		snap, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			s.count("Due", false, len(out))
			return nil, s.wrap(ctx, "due", what, false, err)
		}
		k, err := keyOfDocID(snap.Ref.ID)
		if err != nil {
			s.count("Due", false, len(out)+1)
			return nil, fmt.Errorf("store: due: %w", err)
		}
		at, err := timeField(snap.Data(), FieldNextRunAt)
		if err != nil || at.IsZero() {
			s.count("Due", false, len(out)+1)
			return nil, fmt.Errorf("store: due: document %s: %v", snap.Ref.ID, cmp.Or(err, errors.New("no "+FieldNextRunAt)))
		}
		out = append(out, ports.DueItem{Key: k, NextRunAt: at})
	}
	s.count("Due", false, len(out))
	return out, nil
}
