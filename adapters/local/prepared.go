package local

import (
	"context"
	"database/sql"
	"sync"
)

// stmtCache holds the Store's prepared statements, by SQL text: each
// statement is parsed once per connection (database/sql re-prepares a
// *sql.Stmt on a connection the first time it runs there), not on every
// call. The set of texts is small and fixed (List's variants included),
// so the cache needs no eviction.
type stmtCache struct {
	db *sql.DB
	m  sync.Map // string -> *sql.Stmt
	mu sync.Mutex
}

// stmt returns the prepared statement of query, preparing it on first
// use. A failed prepare is not cached (the next call tries again).
func (c *stmtCache) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := c.m.Load(query); ok {
		return st.(*sql.Stmt), nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.m.Load(query); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.m.Store(query, st)
	return st, nil
}

// query runs a prepared query.
func (c *stmtCache) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// QueryContext makes the cache a querier (Store.due).
func (c *stmtCache) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return c.query(ctx, query, args...)
}

// queryRow runs a prepared single-row query; a failed prepare surfaces
// from Scan, as database/sql's QueryRowContext reports errors.
func (c *stmtCache) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := c.stmt(ctx, query)
	if err != nil {
		return c.db.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// exec runs a prepared statement.
func (c *stmtCache) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// close closes every prepared statement.
func (c *stmtCache) close() {
	c.m.Range(func(_, v any) bool {
		_ = v.(*sql.Stmt).Close()
		return true
	})
}
