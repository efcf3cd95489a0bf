package local

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"modernc.org/sqlite"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/ports"
)

// Sweep fixture: sweepRecords certificates, sweepDue of them due at
// sweepNow, the rest due for renewal weeks later.
const (
	sweepRecords = 100_000
	sweepDue     = sweepRecords / 100
)

var (
	sweepNow     = time.Date(2030, 6, 1, 0, 0, 0, 0, time.UTC)
	sweepOnce    sync.Once
	sweepPath    string
	sweepErr     error
	sweepCleanup []string // temporary directories TestMain removes
)

// sweepFixture builds the fixture file once per test binary run.
func sweepFixture(b *testing.B) string {
	b.Helper()
	sweepOnce.Do(func() {
		dir, err := os.MkdirTemp("", "certfn-sweep-")
		if err != nil {
			sweepErr = err
			return
		}
		sweepCleanup = append(sweepCleanup, dir)
		sweepPath = filepath.Join(dir, "certfn.db")
		sweepErr = fillSweepFixture(sweepPath)
	})
	if sweepErr != nil {
		b.Fatal(sweepErr)
	}
	return sweepPath
}

// fillSweepFixture inserts the records in one transaction (Create per
// record would measure commits, not the sweep).
func fillSweepFixture(path string) error {
	s, err := OpenStore(path)
	if err != nil {
		return err
	}
	defer s.Close()
	ctx := context.Background()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO resources (kind, namespace, name, version, owner, next_run_at, data) VALUES (?, ?, ?, 1, '', ?, ?)`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for i := 0; i < sweepRecords; i++ {
		ns, name := fmt.Sprintf("team-%03d", i%500), fmt.Sprintf("cert-%06d", i)
		next := sweepNow.Add(time.Duration(i%1000+1) * 24 * time.Hour / 10) // 2.4 h .. 100 days ahead
		if i%100 == 0 {
			next = sweepNow.Add(-time.Duration(i%7919) * time.Second) // due: up to 2.2 h overdue
		}
		data := fmt.Sprintf(`{"apiVersion":"cert-manager.io/v1","kind":"Certificate","metadata":{"namespace":%q,"name":%q},`+
			`"spec":{"secretName":"%s-tls","dnsNames":["%s.example.com"],"issuerRef":{"name":"ca","kind":"ClusterIssuer"}},`+
			`"status":{"conditions":[{"type":"Ready","status":"True","reason":"Ready"}],"renewalTime":%q}}`,
			ns, name, name, name, next.Format(time.RFC3339))
		if _, err := stmt.ExecContext(ctx, api.KindCertificate, ns, name, toNanos(next), []byte(data)); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// pagesRead returns the page reads (cache hits plus misses) of conn so far.
func pagesRead(b *testing.B, conn *sql.Conn) int {
	b.Helper()
	var total int
	err := conn.Raw(func(dc any) error {
		st, ok := dc.(sqlite.DBStatus)
		if !ok {
			return fmt.Errorf("driver connection %T has no DBStatus", dc)
		}
		hit, _, err := st.Status(sqlite.DBStatusCacheHit, false)
		if err != nil {
			return err
		}
		miss, _, err := st.Status(sqlite.DBStatusCacheMiss, false)
		total = hit + miss
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return total
}

// seenRows counts calls of the SQL function certfn_bench_seen(x), which
// returns x: wrapped around a column in a WHERE term it counts the rows the
// query visits.
var (
	seenRows     atomic.Int64
	registerSeen sync.Once
)

func registerSeenFunc(b *testing.B) {
	b.Helper()
	var err error
	registerSeen.Do(func() {
		err = sqlite.RegisterScalarFunction("certfn_bench_seen", 1, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
			seenRows.Add(1)
			return args[0], nil
		})
	})
	if err != nil {
		b.Fatal(err)
	}
}

// rowsVisited runs an instrumented query to the end and returns how many
// rows it visited.
func rowsVisited(b *testing.B, conn *sql.Conn, query string, args ...any) int {
	b.Helper()
	seenRows.Store(0)
	rows, err := conn.QueryContext(context.Background(), query, args...)
	if err != nil {
		b.Fatal(err)
	}
	for rows.Next() {
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	rows.Close()
	return int(seenRows.Load())
}

// BenchmarkSweep measures the scheduler's due query on 100,000 records of
// which 1% are due, and, for reference, the same filter as a full table
// scan. Reported per sweep: items read (rows the query visits, counted once
// with an instrumented copy of the query), due items found, SQLite page
// reads, and the time.
func BenchmarkSweep(b *testing.B) {
	ctx := context.Background()
	registerSeenFunc(b) // before any connection of this benchmark opens
	s, err := OpenStore(sweepFixture(b))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	conn, err := s.db.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	cutoff := toNanos(sweepNow)
	cases := []struct {
		name    string
		sweep   func() (int, error)
		counted string // the sweep's query with certfn_bench_seen around the filtered column
		args    []any
	}{
		{"due-index", func() (int, error) {
			items, err := s.due(ctx, conn, sweepNow, 2*sweepDue)
			return len(items), err
		}, strings.Replace(dueQuery, "ORDER BY", "AND certfn_bench_seen(next_run_at) > 0 ORDER BY", 1),
			[]any{cutoff, 2 * sweepDue}},
		{"full-scan-reference", func() (int, error) {
			var n int
			err := conn.QueryRowContext(ctx, `SELECT count(*) FROM resources NOT INDEXED
				WHERE next_run_at > 0 AND next_run_at <= ?`, cutoff).Scan(&n)
			return n, err
		}, `SELECT count(*) FROM resources NOT INDEXED WHERE certfn_bench_seen(next_run_at) BETWEEN 1 AND ?`,
			[]any{cutoff}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			read := rowsVisited(b, conn, tc.counted, tc.args...) // also warms the page cache
			pages0 := pagesRead(b, conn)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				n, err := tc.sweep()
				if err != nil {
					b.Fatal(err)
				}
				if n != sweepDue {
					b.Fatalf("sweep found %d due items, want %d", n, sweepDue)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(read), "items-read/sweep")
			b.ReportMetric(float64(sweepDue), "due/sweep")
			b.ReportMetric(float64(pagesRead(b, conn)-pages0)/float64(b.N), "pages/sweep")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/sweep")
		})
	}
}

// BenchmarkStoreUpdate measures conditional updates (one statement each,
// WAL with synchronous=NORMAL) from one goroutine and from several.
func BenchmarkStoreUpdate(b *testing.B) {
	ctx := context.Background()
	const records = 1000
	setup := func(b *testing.B) (*Store, []ports.Record) {
		b.Helper()
		s := openTestStore(b)
		recs := make([]ports.Record, records)
		for i := range recs {
			r, err := s.Create(ctx, ports.Record{
				Key:       api.Key{Kind: api.KindCertificate, Namespace: "default", Name: fmt.Sprintf("cert-%04d", i)},
				NextRunAt: sweepNow, Data: []byte(`{"status":{}}`)})
			if err != nil {
				b.Fatal(err)
			}
			recs[i] = r
		}
		return s, recs
	}
	b.Run("serial", func(b *testing.B) {
		s, recs := setup(b)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			r := &recs[i%records]
			r.NextRunAt = r.NextRunAt.Add(time.Hour)
			u, err := s.Update(ctx, *r)
			if err != nil {
				b.Fatal(err)
			}
			*r = u
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "updates/s")
	})
	b.Run("parallel", func(b *testing.B) {
		s, recs := setup(b)
		var next atomic.Int64
		// 8 goroutines per core, each owning 50 records (up to 20
		// goroutines): writers whose commits share each WAL fsync (group
		// commit, durable.go).
		b.SetParallelism(8)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			// Each goroutine owns a disjoint slice of the records.
			const per = 50
			base := int(next.Add(1)-1) * per % records
			i := 0
			for pb.Next() {
				r := &recs[base+i%per]
				i++
				u, err := s.Update(ctx, *r)
				if err != nil {
					b.Error(err)
					return
				}
				*r = u
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "updates/s")
	})
}

// BenchmarkMemQueue measures one enqueue-receive-ack cycle with 10,000
// delayed keys waiting behind it.
func BenchmarkMemQueue(b *testing.B) {
	ctx := context.Background()
	clk := clock.NewFake(sweepNow)
	q := NewMemQueue(clk, time.Minute)
	for i := 0; i < 10_000; i++ {
		if err := q.Enqueue(ctx, key(fmt.Sprintf("later-%05d", i)), time.Duration(i+1)*time.Hour); err != nil {
			b.Fatal(err)
		}
	}
	keys := make([]api.Key, 1000)
	for i := range keys {
		keys[i] = key(fmt.Sprintf("now-%04d", i))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := q.Enqueue(ctx, keys[i%len(keys)], 0); err != nil {
			b.Fatal(err)
		}
		ds, err := q.Receive(ctx, 1)
		if err != nil || len(ds) != 1 {
			b.Fatalf("Receive = %v, %v", ds, err)
		}
		if err := q.Ack(ctx, ds[0]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}
