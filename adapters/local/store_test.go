package local

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/ports/porttest"
)

// openTestStore opens a store on a new file, closed at the end of the test.
func openTestStore(t testing.TB) *Store {
	t.Helper()
	s, err := OpenStore(filepath.Join(t.TempDir(), "certfn.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestStoreContract(t *testing.T) {
	porttest.StoreSuite(t, func(t *testing.T) ports.Store { return openTestStore(t) })
}

func TestFeedContract(t *testing.T) {
	porttest.FeedSuite(t, func(t *testing.T) porttest.FeedStore { return openTestStore(t) })
}

// Two handles on one file behave like two processes' connections: the
// contract holds across them.
func TestStoreTwoHandlesRace(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "certfn.db")
	a, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	handles := []*Store{a, b}

	k := api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "web"}
	cur, err := a.Create(ctx, ports.Record{Key: k, Data: []byte("0")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Create(ctx, ports.Record{Key: k}); !errors.Is(err, ports.ErrAlreadyExists) {
		t.Fatalf("Create through the second handle: %v, want ErrAlreadyExists", err)
	}
	const racers, rounds = 6, 10
	for round := 0; round < rounds; round++ {
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			wins int
		)
		start := make(chan struct{})
		for i := 0; i < racers; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				r := cur
				r.Data = []byte(fmt.Sprintf("round %d racer %d", round, i))
				_, err := handles[i%2].Update(ctx, r)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					wins++
				case !errors.Is(err, ports.ErrConflict):
					t.Errorf("round %d racer %d: %v", round, i, err)
				}
			}()
		}
		close(start)
		wg.Wait()
		if wins != 1 {
			t.Fatalf("round %d: %d winners, want 1", round, wins)
		}
		if cur, err = b.Get(ctx, k); err != nil {
			t.Fatal(err)
		}
		if cur.Version != int64(round+2) {
			t.Fatalf("round %d: version %d, want %d", round, cur.Version, round+2)
		}
	}
}

// Separate processes increment one counter through the same file: WAL and
// busy_timeout make them wait for each other, and no update is lost.
func TestStoreProcessesShareFile(t *testing.T) {
	const procs, each = 3, 25
	path := filepath.Join(t.TempDir(), "certfn.db")
	s, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Create(context.Background(), ports.Record{Key: counterKey, Data: []byte("0")}); err != nil {
		t.Fatal(err)
	}
	var cmds []*helperProc
	for i := 0; i < procs; i++ {
		cmds = append(cmds, startHelper(t, "increment", path, strconv.Itoa(each)))
	}
	// This process increments too, at the same time.
	if err := increment(context.Background(), s, each); err != nil {
		t.Fatal(err)
	}
	for i, c := range cmds {
		if code := c.wait(t); code != exitOK {
			t.Fatalf("helper %d exited with %d", i, code)
		}
	}
	got, err := s.Get(context.Background(), counterKey)
	if err != nil {
		t.Fatal(err)
	}
	if want := strconv.Itoa((procs + 1) * each); string(got.Data) != want {
		t.Errorf("counter = %s, want %s", got.Data, want)
	}
}

// EXPLAIN QUERY PLAN shows which index each query reads.
func TestStoreQueryPlans(t *testing.T) {
	s := openTestStore(t)
	tests := []struct {
		name    string
		query   string
		args    []any
		want    string
		mustNot []string
	}{
		{"due sweep reads only the partial covering index", dueQuery, []any{int64(1), 100},
			"SEARCH resources USING COVERING INDEX resources_due (next_run_at>? AND next_run_at<?)",
			[]string{"SCAN", "TEMP B-TREE"}},
		{"list by owner", listColumns + ` WHERE kind = ? AND owner = ? ORDER BY namespace, name`,
			[]any{"CertificateRequest", "Certificate/default/web"},
			"SEARCH resources USING INDEX resources_owner (kind=? AND owner=?)", []string{"SCAN", "TEMP B-TREE"}},
		{"list by namespace", listColumns + ` WHERE kind = ? AND namespace = ? ORDER BY namespace, name`,
			[]any{"Certificate", "default"}, "SEARCH resources USING INDEX sqlite_autoindex_resources_1 (kind=? AND namespace=?)",
			[]string{"SCAN", "TEMP B-TREE"}},
		{"get", listColumns + ` WHERE kind = ? AND namespace = ? AND name = ?`, []any{"Certificate", "default", "web"},
			"SEARCH resources USING INDEX sqlite_autoindex_resources_1 (kind=? AND namespace=? AND name=?)", []string{"SCAN"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plan := queryPlan(t, s, tc.query, tc.args...)
			if !strings.Contains(plan, tc.want) {
				t.Errorf("plan:\n%s\nwant it to contain %q", plan, tc.want)
			}
			for _, bad := range tc.mustNot {
				if strings.Contains(plan, bad) {
					t.Errorf("plan:\n%s\nmust not contain %q", plan, bad)
				}
			}
		})
	}
}

// queryPlan returns the EXPLAIN QUERY PLAN details, one per line.
func queryPlan(t *testing.T, s *Store, query string, args ...any) string {
	t.Helper()
	rows, err := s.db.Query(`EXPLAIN QUERY PLAN `+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

func TestTimeEncoding(t *testing.T) {
	tests := []struct {
		name string
		in   time.Time
		want int64
		back time.Time // fromNanos(want)
	}{
		{"zero", time.Time{}, 0, time.Time{}},
		{"ordinary", time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC), time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC).UnixNano(),
			time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)},
		{"other zone", time.Date(2030, 1, 2, 4, 4, 5, 0, time.FixedZone("CET", 3600)),
			time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano(), time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)},
		{"epoch is still due", time.Unix(0, 0), 1, time.Unix(0, 1).UTC()},
		{"before 1970 is still due", time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC), 1, time.Unix(0, 1).UTC()},
		{"after 2262 is capped", time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), math.MaxInt64, time.Unix(0, math.MaxInt64).UTC()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := toNanos(tc.in); got != tc.want {
				t.Errorf("toNanos(%v) = %d, want %d", tc.in, got, tc.want)
			}
			if got := fromNanos(tc.want); !got.Equal(tc.back) || got.IsZero() != tc.back.IsZero() {
				t.Errorf("fromNanos(%d) = %v, want %v", tc.want, got, tc.back)
			}
		})
	}
}

// Bad input is a permanent error that names the field and the rule.
func TestStoreRejectsBadInput(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	good := api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "web"}
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"empty kind", func() error { _, err := s.Create(ctx, ports.Record{Key: api.Key{Name: "web"}}); return err },
			"key.kind: must not be empty"},
		{"empty name", func() error {
			_, err := s.Create(ctx, ports.Record{Key: api.Key{Kind: api.KindCertificate, Namespace: "default"}})
			return err
		}, "key.name: must not be empty"},
		{"slash in name", func() error {
			_, err := s.Create(ctx, ports.Record{Key: api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "a/b"}})
			return err
		}, `key.name: "a/b" must not contain '/'`},
		{"slash in owner namespace", func() error {
			_, err := s.Update(ctx, ports.Record{Key: good, Version: 1,
				Owner: api.Key{Kind: api.KindCertificate, Namespace: "x/y", Name: "web"}})
			return err
		}, `owner.namespace: "x/y" must not contain '/'`},
		{"negative delete version", func() error { return s.Delete(ctx, good, -1) }, "version: must be >= 0"},
		{"list without kind", func() error { _, err := s.List(ctx, ports.ListOptions{Namespace: "default"}); return err },
			"kind: must not be empty"},
		{"due without limit", func() error { _, err := s.Due(ctx, time.Now(), 0); return err }, "limit: must be > 0, got 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
			if !errs.IsPermanent(err) {
				t.Errorf("error %v is not permanent", err)
			}
		})
	}
}

// The file is what a user inspecting it with sqlite3 expects: WAL mode,
// times as integer Unix nanoseconds, keys as text.
func TestStoreFileLayout(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	at := time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)
	owner := api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "web"}
	if _, err := s.Create(ctx, ports.Record{Key: api.Key{Kind: api.KindCertificateRequest, Namespace: "default", Name: "web-1"},
		Owner: owner, NextRunAt: at, Data: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	var mode string
	var sync, timeout int
	if err := s.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if err := s.db.QueryRow(`PRAGMA synchronous`).Scan(&sync); err != nil {
		t.Fatal(err)
	}
	if err := s.db.QueryRow(`PRAGMA busy_timeout`).Scan(&timeout); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" || sync != 1 || timeout != int(busyTimeout.Milliseconds()) {
		t.Errorf("journal_mode=%s synchronous=%d busy_timeout=%d, want wal, 1 (NORMAL), %d", mode, sync, timeout, busyTimeout.Milliseconds())
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		fi, err := os.Stat(s.Path() + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", s.Path()+suffix, fi.Mode().Perm())
		}
	}
	var (
		typ      string
		next     int64
		ownerCol string
	)
	if err := s.db.QueryRow(`SELECT typeof(next_run_at), next_run_at, owner FROM resources`).Scan(&typ, &next, &ownerCol); err != nil {
		t.Fatal(err)
	}
	if typ != "integer" || next != at.UnixNano() || ownerCol != "Certificate/default/web" {
		t.Errorf("row: next_run_at %s %d, owner %q; want integer %d, %q", typ, next, ownerCol, at.UnixNano(), "Certificate/default/web")
	}
}

func TestStoreRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "certfn.db")
	s, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Exec(fmt.Sprintf(`PRAGMA user_version = %d`, schemaVersion+1)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s2, err := OpenStore(path); err == nil {
		s2.Close()
		t.Fatal("OpenStore of a newer schema succeeded")
	} else if !strings.Contains(err.Error(), "newer") {
		t.Errorf("error %v does not say the schema is newer", err)
	}
}

func TestKeyEncoding(t *testing.T) {
	tests := []struct {
		in      string
		want    api.Key
		wantErr bool
	}{
		{"", api.Key{}, false},
		{"Certificate/default/web", api.Key{Kind: "Certificate", Namespace: "default", Name: "web"}, false},
		{"ClusterIssuer/ca", api.Key{Kind: "ClusterIssuer", Name: "ca"}, false},
		{"Widget/x", api.Key{Kind: "Widget", Name: "x"}, false},
		{"Certificate", api.Key{}, true},
		{"a/b/c/d", api.Key{}, true},
		{"Certificate//web", api.Key{}, true},
		{"/web", api.Key{}, true},
	}
	for _, tc := range tests {
		got, err := decodeKey(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("decodeKey(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
		if err == nil && encodeKey(got) != tc.in {
			t.Errorf("encodeKey(decodeKey(%q)) = %q", tc.in, encodeKey(got))
		}
	}
}
