package local

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// busyTimeout is how long a statement waits for another process's write
// lock before failing with SQLITE_BUSY (a transient error).
const busyTimeout = 10 * time.Second

// maxConns bounds this process's SQLite connections (readers run in
// parallel in WAL mode; writers are serialised by wmu anyway).
const maxConns = 16

// schemaVersion is stored in PRAGMA user_version. Version 1 had no change
// feed (no revision column, feed and changes tables); OpenStore migrates it.
const schemaVersion = 2

// schema creates the tables and indexes; every statement is idempotent so
// that several processes may open a new file at once.
//
//   - resources: one row per resource; owner is the owner's key string ("" if
//     none); next_run_at is Unix nanoseconds, 0 meaning "not scheduled".
//   - resources_due: partial and covering, so a sweep reads only due rows
//     and never touches the table itself.
//   - resources_owner: List by owner, already in List order.
//   - inbox: wake-ups pushed by other processes (see Inbox).
//   - feed (one row) and changes: the change feed (feed.go). resources.revision
//     is the revision of the row's last write; every write statement sets it
//     to feed.head + 1, and the triggers append the change and advance
//     feed.head in the same statement, so a write and its change commit
//     together (or not at all) and revisions follow SQLite's one-writer
//     commit order: no gaps, no reordering, also across processes.
var schema = []string{
	`CREATE TABLE IF NOT EXISTS resources (
		kind        TEXT    NOT NULL,
		namespace   TEXT    NOT NULL DEFAULT '',
		name        TEXT    NOT NULL,
		version     INTEGER NOT NULL,
		owner       TEXT    NOT NULL DEFAULT '',
		next_run_at INTEGER NOT NULL DEFAULT 0,
		data        BLOB    NOT NULL,
		revision    INTEGER NOT NULL DEFAULT 0,
		PRIMARY KEY (kind, namespace, name)
	)`,
	`CREATE TABLE IF NOT EXISTS feed (
		id        INTEGER PRIMARY KEY CHECK (id = 1),
		head      INTEGER NOT NULL,
		compacted INTEGER NOT NULL
	)`,
	`INSERT INTO feed (id, head, compacted) VALUES (1, 0, 0) ON CONFLICT DO NOTHING`,
	`CREATE TABLE IF NOT EXISTS changes (
		revision    INTEGER PRIMARY KEY,
		type        TEXT    NOT NULL,
		kind        TEXT    NOT NULL,
		namespace   TEXT    NOT NULL,
		name        TEXT    NOT NULL,
		version     INTEGER NOT NULL,
		owner       TEXT    NOT NULL,
		next_run_at INTEGER NOT NULL,
		data        BLOB    NOT NULL
	)`,
	`CREATE TRIGGER IF NOT EXISTS resources_added AFTER INSERT ON resources BEGIN
		UPDATE feed SET head = NEW.revision WHERE id = 1;
		INSERT INTO changes VALUES (NEW.revision, 'ADDED', NEW.kind, NEW.namespace, NEW.name, NEW.version, NEW.owner, NEW.next_run_at, NEW.data);
	END`,
	`CREATE TRIGGER IF NOT EXISTS resources_modified AFTER UPDATE ON resources BEGIN
		UPDATE feed SET head = NEW.revision WHERE id = 1;
		INSERT INTO changes VALUES (NEW.revision, 'MODIFIED', NEW.kind, NEW.namespace, NEW.name, NEW.version, NEW.owner, NEW.next_run_at, NEW.data);
	END`,
	`CREATE TRIGGER IF NOT EXISTS resources_deleted AFTER DELETE ON resources BEGIN
		UPDATE feed SET head = head + 1 WHERE id = 1;
		INSERT INTO changes SELECT head, 'DELETED', OLD.kind, OLD.namespace, OLD.name, OLD.version, OLD.owner, OLD.next_run_at, OLD.data FROM feed WHERE id = 1;
	END`,
	`CREATE INDEX IF NOT EXISTS resources_due ON resources (next_run_at, kind, namespace, name) WHERE next_run_at > 0`,
	`CREATE INDEX IF NOT EXISTS resources_owner ON resources (kind, owner, namespace, name)`,
	`CREATE TABLE IF NOT EXISTS inbox (
		id          INTEGER PRIMARY KEY,
		key         TEXT    NOT NULL,
		enqueued_at INTEGER NOT NULL
	)`,
}

// migrateV1 turns a version-1 file into version 2 (before schema runs): the
// revision column, then (migrateV1Feed, after schema) a revision for every
// row and a feed compacted up to them, so a watch from before the migration
// lists again.
const (
	migrateV1     = `ALTER TABLE resources ADD COLUMN revision INTEGER NOT NULL DEFAULT 0`
	migrateV1Rows = `UPDATE resources SET revision = rowid`
	migrateV1Feed = `UPDATE feed SET head = (SELECT COALESCE(MAX(revision), 0) FROM resources), compacted = (SELECT COALESCE(MAX(revision), 0) FROM resources)`
)

// nextRevision is the revision the write statement it is part of takes.
const nextRevision = `(SELECT head + 1 FROM feed WHERE id = 1)`

// Statements used by more than one method.
const (
	dueQuery = `SELECT kind, namespace, name, next_run_at FROM resources
		WHERE next_run_at > 0 AND next_run_at <= ?
		ORDER BY next_run_at, kind, namespace, name LIMIT ?`
	listColumns = `SELECT kind, namespace, name, version, owner, next_run_at, data, revision FROM resources`
)

// Store is the ports.Store on one SQLite file. It is safe for concurrent
// use, and several processes (the CLI and `certfn serve`) may open the same
// file at once: the file runs in WAL mode, writes of other processes are
// waited for (busy_timeout), and every conditional write is one statement.
type Store struct {
	db   *sql.DB
	path string
	// wmu serialises this process's writes, so that goroutines queue here
	// instead of polling SQLite's busy handler; other processes are still
	// arbitrated by SQLite's file locks.
	wmu sync.Mutex
	// stmts are the prepared statements (prepared.go).
	stmts *stmtCache
	// durable makes each write durable before it returns (durable.go).
	durable *walSync
	// writes counts this process's writes; feedKeep is how many changes
	// compaction keeps (feed.go).
	writes   atomic.Int64
	feedKeep int64
}

var _ ports.Store = (*Store)(nil)

// OpenStore opens the SQLite database at path, creating it (mode 0600, and
// its directory 0700) if needed, and applies the schema. The caller must
// Close it.
func OpenStore(path string) (*Store, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	// The file holds no key material, but it is the whole state: create it
	// owner-only (SQLite gives the -wal and -shm files the same mode).
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	if f, err := os.OpenFile(abs, os.O_RDONLY|os.O_CREATE, 0o600); err != nil {
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	} else {
		f.Close()
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	dsn := (&url.URL{Scheme: "file", Path: abs, RawQuery: q.Encode()}).String()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	// Keep connections open: database/sql keeps only 2 idle by default, and
	// reopening a SQLite connection (pragmas, WAL index mapping) under
	// concurrent workers costs more than the queries.
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	s := &Store{db: db, path: abs, stmts: &stmtCache{db: db}, durable: newWALSync(abs), feedKeep: defaultFeedKeep}
	if err := applySchema(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	return s, nil
}

// applySchema creates or migrates the schema in one immediate transaction
// (several processes may open a new or old file at once: one applies it,
// the others find it done). A file already at schemaVersion is only read.
func applySchema(db *sql.DB) error {
	var version int
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil {
		return err
	}
	switch {
	case version > schemaVersion:
		return fmt.Errorf("schema version %d is newer than this certfn's %d", version, schemaVersion)
	case version == schemaVersion:
		return nil
	}
	tx, err := db.Begin() // BEGIN IMMEDIATE (_txlock)
	if err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	defer tx.Rollback()
	if err := tx.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	if version == schemaVersion {
		return nil // another process applied it meanwhile
	}
	stmts := schema
	if version == 1 {
		stmts = append(append([]string{migrateV1}, schema...), migrateV1Rows, migrateV1Feed)
	}
	for _, stmt := range append(stmts, fmt.Sprintf(`PRAGMA user_version = %d`, schemaVersion)) {
		if _, err := tx.Exec(stmt); err != nil {
			return fmt.Errorf("schema (from version %d): %w", version, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	return nil
}

// Path returns the absolute path of the database file.
func (s *Store) Path() string { return s.path }

// Close closes the database. Using the Store afterwards returns errors.
func (s *Store) Close() error {
	s.stmts.close()
	defer s.durable.close()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close store %s: %w", s.path, err)
	}
	return nil
}

// toNanos converts t for the next_run_at column: 0 for the zero time, at
// least 1 for any other time (a pre-1970 time is still "due"), and capped
// at the largest int64 for times past 2262.
func toNanos(t time.Time) int64 {
	switch {
	case t.IsZero():
		return 0
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64
	case t.UnixNano() <= 0:
		return 1
	default:
		return t.UnixNano()
	}
}

// fromNanos is the inverse of toNanos (in UTC).
func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// checkRecord validates a record's key and owner before a write.
func checkRecord(op string, rec ports.Record) error {
	if err := rec.Key.Validate(); err != nil {
		return errs.Permanentf("store: %s %s: key.%w", op, rec.Key, err)
	}
	if !rec.Owner.IsZero() {
		if err := rec.Owner.Validate(); err != nil {
			return errs.Permanentf("store: %s %s: owner.%w", op, rec.Key, err)
		}
	}
	return nil
}

// nonNil returns b, or an empty slice for nil (the data column is NOT NULL).
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// Get returns the record stored under key, or ports.ErrNotFound.
func (s *Store) Get(ctx context.Context, key api.Key) (ports.Record, error) {
	row := s.stmts.queryRow(ctx, listColumns+` WHERE kind = ? AND namespace = ? AND name = ?`,
		key.Kind, key.Namespace, key.Name)
	rec, err := scanRecord(row)
	if errors.Is(err, sql.ErrNoRows) {
		return ports.Record{}, fmt.Errorf("store: get %s: %w", key, ports.ErrNotFound)
	}
	if err != nil {
		return ports.Record{}, fmt.Errorf("store: get %s: %w", key, err)
	}
	return rec, nil
}

// scanner is *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// scanRecord reads the listColumns of one row.
func scanRecord(r scanner) (ports.Record, error) {
	var (
		rec   ports.Record
		owner string
		next  int64
	)
	if err := r.Scan(&rec.Key.Kind, &rec.Key.Namespace, &rec.Key.Name, &rec.Version, &owner, &next, &rec.Data, &rec.Revision); err != nil {
		return ports.Record{}, err
	}
	o, err := decodeKey(owner)
	if err != nil {
		return ports.Record{}, fmt.Errorf("owner column: %w", err)
	}
	rec.Owner, rec.NextRunAt = o, fromNanos(next)
	return rec, nil
}

// Create stores rec at version 1 (rec.Version is ignored) and returns the
// stored record; ports.ErrAlreadyExists if the key exists.
func (s *Store) Create(ctx context.Context, rec ports.Record) (ports.Record, error) {
	if err := checkRecord("create", rec); err != nil {
		return ports.Record{}, err
	}
	s.wmu.Lock()
	var revision int64
	err := s.stmts.queryRow(ctx, `INSERT INTO resources (kind, namespace, name, version, owner, next_run_at, data, revision)
		VALUES (?, ?, ?, 1, ?, ?, ?, `+nextRevision+`) ON CONFLICT DO NOTHING RETURNING revision`,
		rec.Key.Kind, rec.Key.Namespace, rec.Key.Name, encodeKey(rec.Owner), toNanos(rec.NextRunAt), nonNil(rec.Data)).Scan(&revision)
	s.wmu.Unlock()
	if errors.Is(err, sql.ErrNoRows) {
		return ports.Record{}, fmt.Errorf("store: create %s: %w", rec.Key, ports.ErrAlreadyExists)
	}
	if err != nil {
		return ports.Record{}, fmt.Errorf("store: create %s: %w", rec.Key, err)
	}
	s.afterWrite(ctx)
	if err := s.durable.wait(s.durable.ticket()); err != nil {
		return ports.Record{}, err
	}
	rec.Version, rec.Revision = 1, revision
	return rec, nil
}

// Update replaces the record if the stored version equals rec.Version, in
// one statement, and returns it with the new version. ports.ErrConflict if
// the stored version differs, ports.ErrNotFound if the key is missing.
func (s *Store) Update(ctx context.Context, rec ports.Record) (ports.Record, error) {
	if err := checkRecord("update", rec); err != nil {
		return ports.Record{}, err
	}
	s.wmu.Lock()
	var version, revision int64
	err := s.stmts.queryRow(ctx, `UPDATE resources SET version = version + 1, owner = ?, next_run_at = ?, data = ?, revision = `+nextRevision+`
		WHERE kind = ? AND namespace = ? AND name = ? AND version = ? RETURNING version, revision`,
		encodeKey(rec.Owner), toNanos(rec.NextRunAt), nonNil(rec.Data),
		rec.Key.Kind, rec.Key.Namespace, rec.Key.Name, rec.Version).Scan(&version, &revision)
	s.wmu.Unlock()
	if errors.Is(err, sql.ErrNoRows) {
		return ports.Record{}, s.missOrConflict(ctx, "update", rec.Key, rec.Version)
	}
	if err != nil {
		return ports.Record{}, fmt.Errorf("store: update %s: %w", rec.Key, err)
	}
	s.afterWrite(ctx)
	if err := s.durable.wait(s.durable.ticket()); err != nil {
		return ports.Record{}, err
	}
	rec.Version, rec.Revision = version, revision
	return rec, nil
}

// missOrConflict explains a conditional write that matched no row.
func (s *Store) missOrConflict(ctx context.Context, op string, key api.Key, want int64) error {
	var stored int64
	err := s.stmts.queryRow(ctx, `SELECT version FROM resources WHERE kind = ? AND namespace = ? AND name = ?`,
		key.Kind, key.Namespace, key.Name).Scan(&stored)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("store: %s %s: %w", op, key, ports.ErrNotFound)
	case err != nil:
		return fmt.Errorf("store: %s %s: %w", op, key, err)
	default:
		return fmt.Errorf("store: %s %s at version %d (stored %d): %w", op, key, want, stored, ports.ErrConflict)
	}
}

// Delete removes key. With version > 0 the delete is conditional
// (ports.ErrConflict on mismatch); version 0 deletes unconditionally. A
// missing key is ports.ErrNotFound; a negative version is a permanent error.
func (s *Store) Delete(ctx context.Context, key api.Key, version int64) error {
	if version < 0 {
		return errs.Permanentf("store: delete %s: version: must be >= 0 (0 = unconditional), got %d", key, version)
	}
	q := `DELETE FROM resources WHERE kind = ? AND namespace = ? AND name = ?`
	args := []any{key.Kind, key.Namespace, key.Name}
	if version > 0 {
		q += ` AND version = ?`
		args = append(args, version)
	}
	s.wmu.Lock()
	res, err := s.stmts.exec(ctx, q, args...)
	s.wmu.Unlock()
	if err != nil {
		return fmt.Errorf("store: delete %s: %w", key, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("store: delete %s: %w", key, err)
	}
	if n == 0 {
		if version == 0 {
			return fmt.Errorf("store: delete %s: %w", key, ports.ErrNotFound)
		}
		return s.missOrConflict(ctx, "delete", key, version)
	}
	s.afterWrite(ctx)
	return s.durable.wait(s.durable.ticket())
}

// List returns the records of opts.Kind (required), optionally restricted
// to one namespace and to one owner, ordered by namespace and name.
func (s *Store) List(ctx context.Context, opts ports.ListOptions) ([]ports.Record, error) {
	return s.list(ctx, opts, nil, 0)
}

// ListPage returns a page of List's records, in the same order (namespace,
// then name), after the continue token's key. Each page is one query on
// the primary key (or resources_owner) that reads its rows and stops:
// its cost does not grow with the records before or after it.
func (s *Store) ListPage(ctx context.Context, opts ports.ListOptions) (ports.Page, error) {
	if opts.Limit < 0 {
		return ports.Page{}, errs.Permanentf("store: list: limit: must be >= 0, got %d", opts.Limit)
	}
	after, err := ports.DecodeContinue(opts, 2)
	if err != nil {
		return ports.Page{}, errs.Permanent(fmt.Errorf("store: list %s: %w", opts.Kind, err))
	}
	limit := opts.Limit
	if limit > 0 {
		limit++ // one more than asked tells whether another page follows
	}
	recs, err := s.list(ctx, opts, after, limit)
	if err != nil {
		return ports.Page{}, err
	}
	if opts.Limit == 0 || len(recs) <= opts.Limit {
		return ports.Page{Records: recs}, nil
	}
	recs = recs[:opts.Limit]
	last := recs[len(recs)-1].Key
	return ports.Page{Records: recs, Continue: ports.EncodeContinue(opts, last.Namespace, last.Name)}, nil
}

// list runs List's query, after the key (namespace, name) in after when
// it is not nil, reading at most limit rows when limit > 0.
func (s *Store) list(ctx context.Context, opts ports.ListOptions, after []string, limit int) ([]ports.Record, error) {
	if opts.Kind == "" {
		return nil, errs.Permanentf("store: list: kind: must not be empty")
	}
	q := listColumns + ` WHERE kind = ?`
	args := []any{opts.Kind}
	if opts.Namespace != "" {
		q += ` AND namespace = ?`
		args = append(args, opts.Namespace)
	}
	if !opts.Owner.IsZero() {
		q += ` AND owner = ?`
		args = append(args, encodeKey(opts.Owner))
	}
	if after != nil {
		q += ` AND (namespace, name) > (?, ?)`
		args = append(args, after[0], after[1])
	}
	q += ` ORDER BY namespace, name`
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	rows, err := s.stmts.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: list %s: %w", opts.Kind, err)
	}
	defer rows.Close()
	var out []ports.Record
	for rows.Next() {
		rec, err := scanRecord(rows)
		if err != nil {
			return nil, fmt.Errorf("store: list %s: %w", opts.Kind, err)
		}
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list %s: %w", opts.Kind, err)
	}
	return out, nil
}

// Due returns up to limit (> 0) records whose NextRunAt is set and not
// after now, oldest first (ties in key order). It reads only the partial
// index resources_due, so its cost grows with the number of due records.
func (s *Store) Due(ctx context.Context, now time.Time, limit int) ([]ports.DueItem, error) {
	return s.due(ctx, s.stmts, now, limit)
}

// querier is *sql.DB or *sql.Conn (the benchmark reads page counters of one
// connection).
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func (s *Store) due(ctx context.Context, q querier, now time.Time, limit int) ([]ports.DueItem, error) {
	if limit <= 0 {
		return nil, errs.Permanentf("store: due: limit: must be > 0, got %d", limit)
	}
	cutoff := toNanos(now)
	if cutoff == 0 {
		return nil, nil
	}
	rows, err := q.QueryContext(ctx, dueQuery, cutoff, limit)
	if err != nil {
		return nil, fmt.Errorf("store: due: %w", err)
	}
	defer rows.Close()
	var out []ports.DueItem
	for rows.Next() {
		var (
			it   ports.DueItem
			next int64
		)
		if err := rows.Scan(&it.Key.Kind, &it.Key.Namespace, &it.Key.Name, &next); err != nil {
			return nil, fmt.Errorf("store: due: %w", err)
		}
		it.NextRunAt = fromNanos(next)
		out = append(out, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: due: %w", err)
	}
	return out, nil
}
