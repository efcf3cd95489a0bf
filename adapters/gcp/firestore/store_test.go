package firestore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gfs "cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/ports/porttest"
	"github.com/certfn/certfn/tests/emulators"
)

// The tests run against Google's official Firestore emulator (one per test
// binary, tests/emulators), or the one FIRESTORE_EMULATOR_HOST names. Each
// top-level test uses a project of its own and each store a collection of
// its own, so nothing is shared.

// env is a client on a fresh emulator project.
type env struct {
	project string
	client  *gfs.Client
}

func newEnv(t *testing.T) *env {
	t.Helper()
	t.Setenv("FIRESTORE_EMULATOR_HOST", emulators.Firestore(t))
	project := emulators.NewProjectID()
	c, err := gfs.NewClient(context.Background(), project)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &env{project: project, client: c}
}

var collectionSeq atomic.Int64

// store returns a Store on a fresh collection with opts (Collection filled
// in unless set).
func (e *env) store(t *testing.T, opts Options) *Store {
	t.Helper()
	if opts.Collection == "" {
		opts.Collection = fmt.Sprintf("certfn-%d", collectionSeq.Add(1))
	}
	s, err := New(e.client, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStoreContract(t *testing.T) {
	e := newEnv(t)
	porttest.StoreSuite(t, func(t *testing.T) ports.Store { return e.store(t, Options{}) })
}

var tt0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func cert(ns, name string) api.Key {
	return api.Key{Kind: api.KindCertificate, Namespace: ns, Name: name}
}
func req(ns, name string) api.Key {
	return api.Key{Kind: api.KindCertificateRequest, Namespace: ns, Name: name}
}

// raw reads key's document as stored (nil when missing).
func raw(t *testing.T, s *Store, k api.Key) map[string]any {
	t.Helper()
	id, err := docID("key", k)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := s.col.Doc(id).Get(context.Background())
	if status.Code(err) == codes.NotFound {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return snap.Data()
}

func fieldNames(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// The document layout: optional fields exist only while they have a value,
// so the single-field indexes on owner and nextRunAt are sparse.
func TestDocumentLayout(t *testing.T) {
	e := newEnv(t)
	s := e.store(t, Options{})
	ctx := context.Background()
	k := req("default", "web-1")
	owner := cert("default", "web")
	steps := []struct {
		name  string
		owner api.Key
		due   time.Time
		want  []string
	}{
		{"owned and due", owner, tt0, []string{"data", "kind", "namespace", "nextRunAt", "owner", "version"}},
		{"owner cleared", api.Key{}, tt0, []string{"data", "kind", "namespace", "nextRunAt", "version"}},
		{"due cleared", api.Key{}, time.Time{}, []string{"data", "kind", "namespace", "version"}},
		{"due again", owner, tt0.Add(time.Hour), []string{"data", "kind", "namespace", "nextRunAt", "owner", "version"}},
	}
	cur, err := s.Create(ctx, ports.Record{Key: k, Data: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fieldNames(raw(t, s, k)), []string{"data", "kind", "namespace", "version"}; !slices.Equal(got, want) {
		t.Errorf("created: fields %v, want %v", got, want)
	}
	for _, st := range steps {
		cur.Owner, cur.NextRunAt = st.owner, st.due
		if cur, err = s.Update(ctx, cur); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		doc := raw(t, s, k)
		if got := fieldNames(doc); !slices.Equal(got, st.want) {
			t.Errorf("%s: fields %v, want %v", st.name, got, st.want)
		}
		if doc[FieldVersion] != cur.Version || doc[FieldKind] != k.Kind || doc[FieldNamespace] != k.Namespace {
			t.Errorf("%s: version/kind/namespace = %v/%v/%v", st.name, doc[FieldVersion], doc[FieldKind], doc[FieldNamespace])
		}
		if !st.owner.IsZero() && doc[FieldOwner] != st.owner.String() {
			t.Errorf("%s: owner %v, want %s", st.name, doc[FieldOwner], st.owner)
		}
		if at, _ := doc[FieldNextRunAt].(time.Time); !st.due.IsZero() && !at.Equal(st.due) {
			t.Errorf("%s: nextRunAt %v, want %v", st.name, doc[FieldNextRunAt], st.due)
		}
	}
	// A cluster-scoped key has an empty namespace; the ID is the escaped key.
	ci := api.Key{Kind: api.KindClusterIssuer, Name: "ca"}
	if _, err := s.Create(ctx, ports.Record{Key: ci, Data: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if doc := raw(t, s, ci); doc[FieldNamespace] != "" {
		t.Errorf("cluster-scoped: namespace %q", doc[FieldNamespace])
	}
	if _, err := s.col.Doc("ClusterIssuer%2Fca").Get(ctx); err != nil {
		t.Errorf("document ClusterIssuer%%2Fca: %v", err)
	}
}

// Every field the store writes is either indexed for a query or exempt
// from indexing: the lists Terraform declares cover the layout.
func TestIndexConfigCoversFields(t *testing.T) {
	all := append(slices.Clone(AscendingOnlyFields), IndexExemptFields...)
	slices.Sort(all)
	want := []string{FieldData, FieldEnc, FieldExpireAt, FieldKind, FieldNamespace, FieldNextRunAt, FieldOwner, FieldVersion}
	slices.Sort(want)
	if !slices.Equal(all, want) {
		t.Errorf("indexed + exempt fields = %v, want every field %v exactly once", all, want)
	}
	if !slices.Contains(IndexExemptFields, FieldData) || !slices.Contains(IndexExemptFields, TTLField) {
		t.Errorf("data and the TTL field must be exempt from indexing: %v", IndexExemptFields)
	}
}

// bigJSON returns a compressible JSON document of about n bytes.
func bigJSON(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"items":[`)
	for i := 0; b.Len() < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"item-%d","dnsNames":["a%d.example.com"]}`, i, i)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// Large data is compressed under the document limit; data that cannot fit
// is refused with a permanent error naming the sizes, and nothing is stored.
func TestLargeData(t *testing.T) {
	e := newEnv(t)
	s := e.store(t, Options{})
	ctx := context.Background()
	tests := []struct {
		name       string
		data       []byte
		compressed bool
		tooLarge   bool
	}{
		{"small stays plain", []byte(`{"a":1}`), false, false},
		{"8 KiB boundary stays plain", bigJSON(compressAbove - 100), false, false},
		{"4 MB compressible JSON", bigJSON(4 << 20), true, false},
		{"incompressible under the limit", randomBytes(t, 900_000), false, false},
		{"incompressible over the limit", randomBytes(t, 1_100_000), false, true},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k := cert("default", fmt.Sprintf("big-%d", i))
			_, err := s.Create(ctx, ports.Record{Key: k, Data: tc.data})
			if tc.tooLarge {
				if !errs.IsPermanent(err) || !strings.Contains(err.Error(), "over the") || !strings.Contains(err.Error(), fmt.Sprint(len(tc.data))) {
					t.Fatalf("Create: %v, want a permanent error naming the size %d", err, len(tc.data))
				}
				if _, err := s.Get(ctx, k); !errors.Is(err, ports.ErrNotFound) {
					t.Errorf("Get after refused Create: %v, want ErrNotFound", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Create: %v", err)
			}
			got, err := s.Get(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			if string(got.Data) != string(tc.data) {
				t.Errorf("data round trip: %d bytes, want %d", len(got.Data), len(tc.data))
			}
			_, isGzip := raw(t, s, k)[FieldEnc]
			if isGzip != tc.compressed {
				t.Errorf("compressed = %v, want %v", isGzip, tc.compressed)
			}
		})
	}
}

// The TTL policy: expireAt is written, and expired documents are absent to
// every read and condition although Firestore has not deleted them yet.
func TestTTL(t *testing.T) {
	e := newEnv(t)
	clk := clock.NewFake(tt0)
	policy := func(rec ports.Record, now time.Time) time.Time {
		if rec.Key.Kind == api.KindCertificateRequest && rec.NextRunAt.IsZero() {
			return now.Add(time.Hour)
		}
		return time.Time{}
	}
	s := e.store(t, Options{Clock: clk, ExpiresAt: policy})
	ctx := context.Background()
	owner := cert("default", "web")
	r1, r2 := req("default", "web-1"), req("default", "web-2")
	live, err := s.Create(ctx, ports.Record{Key: owner, Data: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	v1, err := s.Create(ctx, ports.Record{Key: r1, Owner: owner, Data: []byte(`{"gen":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, ports.Record{Key: r2, Owner: owner, NextRunAt: tt0, Data: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if at, _ := raw(t, s, r1)[FieldExpireAt].(time.Time); !at.Equal(tt0.Add(time.Hour)) {
		t.Errorf("expireAt = %v, want %v", raw(t, s, r1)[FieldExpireAt], tt0.Add(time.Hour))
	}
	if _, ok := raw(t, s, r2)[FieldExpireAt]; ok {
		t.Errorf("a due request got a TTL")
	}
	if _, ok := raw(t, s, owner)[FieldExpireAt]; ok {
		t.Errorf("a Certificate got a TTL")
	}

	clk.Advance(time.Hour) // r1 expired, not yet deleted by Firestore
	if _, err := s.Get(ctx, r1); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("Get expired: %v, want ErrNotFound", err)
	}
	list, err := s.List(ctx, ports.ListOptions{Kind: api.KindCertificateRequest, Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Key != r2 {
		t.Errorf("List = %v, want only %s", list, r2)
	}
	if _, err := s.Update(ctx, v1); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("Update expired: %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, r1, 0); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("Delete expired: %v, want ErrNotFound", err)
	}
	again, err := s.Create(ctx, ports.Record{Key: r1, Data: []byte(`{"gen":2}`), NextRunAt: tt0})
	if err != nil {
		t.Fatalf("Create over an expired document: %v", err)
	}
	if again.Version != 1 {
		t.Errorf("re-created at version %d, want 1", again.Version)
	}
	doc := raw(t, s, r1)
	if _, ok := doc[FieldExpireAt]; ok {
		t.Errorf("re-created due request kept a TTL")
	}
	if _, ok := doc[FieldOwner]; ok {
		t.Errorf("re-created request kept the expired one's owner")
	}
	if got, err := s.Get(ctx, r1); err != nil || string(got.Data) != `{"gen":2}` || got.Version != 1 {
		t.Errorf("Get re-created: %+v %v", got, err)
	}
	if got, err := s.Get(ctx, owner); err != nil || got.Version != live.Version {
		t.Errorf("Get live Certificate: %v %v", got, err)
	}
	// The live Certificate cannot be created over.
	if _, err := s.Create(ctx, ports.Record{Key: owner}); !errors.Is(err, ports.ErrAlreadyExists) {
		t.Errorf("Create over a live document: %v, want ErrAlreadyExists", err)
	}
}

// Reads and writes are counted per request. An Update of the record the
// store just read or wrote is one write and no read (the update time it
// remembered is the precondition).
func TestCounts(t *testing.T) {
	e := newEnv(t)
	s := e.store(t, Options{})
	ctx := context.Background()
	k := cert("default", "web")
	step := func(name string, wantReads, wantWrites int64, call func() error) {
		t.Helper()
		s.ResetCounts()
		if err := call(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if c := s.Counts(); c.Reads != wantReads || c.Writes != wantWrites {
			t.Errorf("%s: %+v, want %d reads and %d writes", name, c, wantReads, wantWrites)
		}
	}
	var rec ports.Record
	step("Create", 0, 1, func() (err error) { rec, err = s.Create(ctx, ports.Record{Key: k, Data: []byte(`{}`)}); return })
	step("Update after Create", 0, 1, func() (err error) { rec, err = s.Update(ctx, rec); return })
	step("Get", 1, 0, func() (err error) { rec, err = s.Get(ctx, k); return })
	step("Update after Get", 0, 1, func() (err error) { _, err = s.Update(ctx, rec); return })
	step("stale Update", 1, 0, func() error {
		if _, err := s.Update(ctx, rec); !errors.Is(err, ports.ErrConflict) {
			return fmt.Errorf("stale Update: %v, want ErrConflict", err)
		}
		return nil
	})
	step("List", 1, 0, func() error {
		l, err := s.List(ctx, ports.ListOptions{Kind: api.KindCertificate})
		if err == nil && len(l) == 1 {
			rec = l[0]
		}
		return err
	})
	step("Delete after List", 0, 1, func() error { return s.Delete(ctx, k, rec.Version) })
	step("Get missing", 1, 0, func() error {
		if _, err := s.Get(ctx, k); !errors.Is(err, ports.ErrNotFound) {
			return fmt.Errorf("Get: %v", err)
		}
		return nil
	})
	if c := s.Counts(); c.DocsRead != 0 || c.BilledReads != 1 {
		t.Errorf("Get missing: %+v, want 0 documents read and 1 billed read", c)
	}
}

// Due reads only the due documents it returns: not the ones due later,
// not the ones without nextRunAt, not more than the limit.
func TestDueReadsOnlyDue(t *testing.T) {
	e := newEnv(t)
	s := e.store(t, Options{})
	ctx := context.Background()
	const due, later, never = 12, 30, 30
	for i := 0; i < due+later+never; i++ {
		rec := ports.Record{Key: cert(fmt.Sprintf("ns%d", i%3), fmt.Sprintf("c%03d", i)), Data: bigJSON(2000)}
		switch {
		case i < due:
			rec.NextRunAt = tt0.Add(-time.Duration(i) * time.Minute)
		case i < due+later:
			rec.NextRunAt = tt0.Add(time.Duration(i) * time.Hour)
		}
		if _, err := s.Create(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	for _, limit := range []int{1, 5, due, 100} {
		t.Run(fmt.Sprintf("limit %d", limit), func(t *testing.T) {
			s.ResetCounts()
			got, err := s.Due(ctx, tt0, limit)
			if err != nil {
				t.Fatal(err)
			}
			want := min(limit, due)
			if len(got) != want {
				t.Fatalf("%d due items, want %d", len(got), want)
			}
			for i, it := range got {
				if at := tt0.Add(-time.Duration(due-1-i) * time.Minute); !it.NextRunAt.Equal(at) {
					t.Errorf("item %d at %v, want %v (oldest first)", i, it.NextRunAt, at)
				}
			}
			c := s.Counts()
			if c.Reads != 1 || c.DocsRead != int64(want) || c.Writes != 0 {
				t.Errorf("counts %+v, want 1 query reading %d documents", c, want)
			}
		})
	}
	s.ResetCounts()
	if got, err := s.Due(ctx, tt0.Add(-time.Hour), 10); err != nil || len(got) != 0 {
		t.Fatalf("Due before everything: %v %v", got, err)
	}
	if c := s.Counts(); c.DocsRead != 0 || c.BilledReads != 1 {
		t.Errorf("empty Due: %+v, want no document read (1 billed read)", c)
	}
}

// BenchmarkDue reports the documents one Due call reads with 20 due among
// 200 records.
func BenchmarkDue(b *testing.B) {
	b.StopTimer()
	b.Setenv("FIRESTORE_EMULATOR_HOST", emulators.Firestore(b))
	c, err := gfs.NewClient(context.Background(), emulators.NewProjectID())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	s, err := New(c, Options{Collection: "bench-due"})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for i := 0; i < 200; i++ {
		rec := ports.Record{Key: cert("default", fmt.Sprintf("c%03d", i)), Data: []byte(`{}`)}
		if i%10 == 0 {
			rec.NextRunAt = tt0.Add(-time.Duration(i) * time.Second)
		} else if i%2 == 0 {
			rec.NextRunAt = tt0.Add(time.Duration(i) * time.Hour)
		}
		if _, err := s.Create(ctx, rec); err != nil {
			b.Fatal(err)
		}
	}
	s.ResetCounts()
	b.StartTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Due(ctx, tt0, 100); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cnt := s.Counts()
	b.ReportMetric(float64(cnt.DocsRead)/float64(b.N), "docs_read/op")
	b.ReportMetric(float64(cnt.BilledReads)/float64(b.N), "billed_reads/op")
}

// Two stores (two function instances) on one collection: what one
// remembers goes stale when the other writes, and the conditional writes
// still decide exactly, falling back to a read.
func TestStaleUpdateTimes(t *testing.T) {
	e := newEnv(t)
	a := e.store(t, Options{})
	b, err := New(e.client, Options{Collection: a.Collection()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	k := cert("default", "web")
	v1, err := a.Create(ctx, ports.Record{Key: k, Data: []byte(`{"gen":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, k); err != nil { // b remembers version 1
		t.Fatal(err)
	}
	// a deletes and re-creates: version 1 again, another update time.
	if err := a.Delete(ctx, k, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Create(ctx, ports.Record{Key: k, Data: []byte(`{"gen":2}`)}); err != nil {
		t.Fatal(err)
	}
	b.ResetCounts()
	v1.Data = []byte(`{"gen":2,"by":"b"}`)
	got, err := b.Update(ctx, v1)
	if err != nil {
		t.Fatalf("Update at version 1 of the re-created record: %v", err)
	}
	if got.Version != 2 {
		t.Errorf("version %d, want 2", got.Version)
	}
	if c := b.Counts(); c.Writes != 2 || c.Reads != 1 {
		t.Errorf("counts %+v: want the failed remembered write, a read and a write", c)
	}
	// a's memory is stale now: its update at version 1 is a conflict, its
	// unconditional delete still deletes.
	if _, err := a.Update(ctx, ports.Record{Key: k, Version: 1, Data: []byte(`{}`)}); !errors.Is(err, ports.ErrConflict) {
		t.Errorf("a: stale Update: %v, want ErrConflict", err)
	}
	if _, err := b.Get(ctx, k); err != nil { // b remembers version 2
		t.Fatal(err)
	}
	if err := a.Delete(ctx, k, 0); err != nil {
		t.Fatalf("a: unconditional Delete: %v", err)
	}
	if _, err := b.Update(ctx, got); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("b: Update of a deleted record: %v, want ErrNotFound", err)
	}
	if err := b.Delete(ctx, k, 2); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("b: Delete of a deleted record: %v, want ErrNotFound", err)
	}
}

// A named database is separate from the default one.
func TestNamedDatabase(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	named, err := Open(ctx, e.project, Options{Database: "certfn-named", Collection: "records"})
	if err != nil {
		t.Fatal(err)
	}
	defer named.Close()
	if named.Database() != "certfn-named" || named.Collection() != "records" {
		t.Errorf("Database, Collection = %q, %q", named.Database(), named.Collection())
	}
	def := e.store(t, Options{Collection: "records"})
	if def.Database() != DefaultDatabase {
		t.Errorf("default store's database %q", def.Database())
	}
	k := cert("default", "web")
	if _, err := named.Create(ctx, ports.Record{Key: k, Data: []byte(`{"db":"named"}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := def.Get(ctx, k); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("default database sees the named one's record: %v", err)
	}
	if got, err := named.Get(ctx, k); err != nil || string(got.Data) != `{"db":"named"}` {
		t.Errorf("Get from the named database: %v %v", got, err)
	}
	if _, err := New(e.client, Options{Database: "certfn-named"}); !errs.IsPermanent(err) || !strings.Contains(err.Error(), "database") {
		t.Errorf("New with a client of another database: %v, want a permanent error", err)
	}
}

// Firestore errors map to the port's sentinels and keep their class.
func TestErrorMapping(t *testing.T) {
	s := &Store{}
	k := keyed("Certificate/default/web")
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	ctx := context.Background()
	tests := []struct {
		name  string
		ctx   context.Context
		write bool
		err   error
		is    error
		class errs.Class
	}{
		{"not found", ctx, false, status.Error(codes.NotFound, "x"), ports.ErrNotFound, errs.Transient},
		{"already exists", ctx, true, status.Error(codes.AlreadyExists, "x"), ports.ErrAlreadyExists, errs.Conflict},
		{"stale precondition", ctx, true, status.Error(codes.FailedPrecondition, "x"), ports.ErrConflict, errs.Conflict},
		{"aborted write", ctx, true, status.Error(codes.Aborted, "contention"), ports.ErrConflict, errs.Conflict},
		{"query needs an index", ctx, false, status.Error(codes.FailedPrecondition, "index"), nil, errs.Transient},
		{"unavailable", ctx, true, status.Error(codes.Unavailable, "x"), nil, errs.Transient},
		{"resource exhausted", ctx, true, status.Error(codes.ResourceExhausted, "x"), nil, errs.Transient},
		{"deadline", ctx, false, status.Error(codes.DeadlineExceeded, "x"), nil, errs.Transient},
		{"invalid argument", ctx, true, status.Error(codes.InvalidArgument, "x"), nil, errs.PermanentClass},
		{"canceled context", canceled, false, status.Error(codes.Canceled, "x"), context.Canceled, errs.Transient},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := s.wrap(tc.ctx, "op", k, tc.write, tc.err)
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("%v: want %v", err, tc.is)
			}
			for _, sentinel := range []error{ports.ErrNotFound, ports.ErrAlreadyExists, ports.ErrConflict} {
				if sentinel != tc.is && errors.Is(err, sentinel) {
					t.Errorf("%v is also %v", err, sentinel)
				}
			}
			if c := errs.Classify(err); c != tc.class {
				t.Errorf("Classify(%v) = %v, want %v", err, c, tc.class)
			}
			if status.Code(err) != status.Code(tc.err) {
				t.Errorf("gRPC code lost: %v", err)
			}
		})
	}
}

// Options and arguments are checked with errors naming the field.
func TestBadInput(t *testing.T) {
	ctx := context.Background()
	if _, err := New(nil, Options{}); !errs.IsPermanent(err) {
		t.Errorf("New without client: %v", err)
	}
	if _, err := Open(ctx, "", Options{}); !errs.IsPermanent(err) || !strings.Contains(err.Error(), "project") {
		t.Errorf("Open without project: %v", err)
	}
	e := newEnv(t)
	for _, col := range []string{"a/b", "__x__", "..", string([]byte{0xff})} {
		if _, err := New(e.client, Options{Collection: col}); !errs.IsPermanent(err) || !strings.Contains(err.Error(), "collection") {
			t.Errorf("New with collection %q: %v", col, err)
		}
	}
	s := e.store(t, Options{})
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"slash in name", func() error {
			_, err := s.Create(ctx, ports.Record{Key: cert("default", "a/b")})
			return err
		}, `key.name: "a/b" must not contain '/'`},
		{"empty kind", func() error {
			_, err := s.Update(ctx, ports.Record{Key: api.Key{Name: "x"}})
			return err
		}, "key.kind: must not be empty"},
		{"bad owner", func() error {
			_, err := s.Create(ctx, ports.Record{Key: cert("default", "x"), Owner: api.Key{Kind: "Certificate"}})
			return err
		}, "owner.name: must not be empty"},
		{"invalid UTF-8", func() error {
			_, err := s.Get(ctx, cert("default", string([]byte{'a', 0xff})))
			return err
		}, "not valid UTF-8"},
		{"key too long", func() error {
			_, err := s.Create(ctx, ports.Record{Key: cert("default", strings.Repeat("%", 500))})
			return err
		}, "at most 1500"},
		{"negative delete version", func() error { return s.Delete(ctx, cert("default", "x"), -1) }, "version: must be >= 0"},
		{"list without kind", func() error {
			_, err := s.List(ctx, ports.ListOptions{Namespace: "a"})
			return err
		}, "kind: must not be empty"},
		{"due without limit", func() error {
			_, err := s.Due(ctx, tt0, 0)
			return err
		}, "limit: must be > 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if !errs.IsPermanent(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want a permanent error containing %q", err, tc.want)
			}
		})
	}
}

// Keys with characters a document ID cannot hold as they are, or that
// would make a reserved ID, are stored, read, listed and found due.
func TestOddKeys(t *testing.T) {
	e := newEnv(t)
	s := e.store(t, Options{})
	ctx := context.Background()
	keys := []api.Key{
		{Kind: "Certificate", Namespace: "zürich ☃", Name: "100% sure"},
		{Kind: "Certificate", Namespace: "__ns__", Name: "__name__"},
		{Kind: "Certificate", Namespace: "a\nb", Name: "%2F%25"},
		{Kind: "__Kind__", Name: ".."},
		{Kind: "Certificate", Namespace: "x", Name: strings.Repeat("n", MaxDocIDBytes-len("Certificate%2Fx%2F"))},
	}
	for i, k := range keys {
		rec, err := s.Create(ctx, ports.Record{Key: k, Owner: keys[0], NextRunAt: tt0.Add(time.Duration(i) * time.Second), Data: []byte(`{}`)})
		if err != nil {
			t.Fatalf("Create(%q): %v", k, err)
		}
		if _, err = s.Update(ctx, rec); err != nil {
			t.Fatalf("Update(%q): %v", k, err)
		}
		got, err := s.Get(ctx, k)
		if err != nil || got.Key != k || got.Version != 2 || got.Owner != keys[0] {
			t.Errorf("Get(%q) = %+v, %v", k, got, err)
		}
	}
	due, err := s.Due(ctx, tt0.Add(time.Hour), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(due) != len(keys) {
		t.Fatalf("Due: %d items, want %d", len(due), len(keys))
	}
	for i, it := range due {
		if it.Key != keys[i] {
			t.Errorf("Due[%d] = %q, want %q", i, it.Key, keys[i])
		}
	}
	l, err := s.List(ctx, ports.ListOptions{Kind: "Certificate", Owner: keys[0]})
	if err != nil || len(l) != 4 {
		t.Errorf("List by owner %q: %d records, %v; want 4", keys[0], len(l), err)
	}
	for _, k := range keys {
		if err := s.Delete(ctx, k, 2); err != nil {
			t.Errorf("Delete(%q): %v", k, err)
		}
	}
}

// Options.Timeout bounds a call when Firestore cannot be reached (the
// client library would retry Unavailable until the context ends): the
// error is transient, not a conflict or a missing record.
func TestTimeoutBoundsRetries(t *testing.T) {
	port, err := emulators.FreePort() // nothing listens there
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("FIRESTORE_EMULATOR_HOST", fmt.Sprintf("127.0.0.1:%d", port))
	s, err := Open(context.Background(), "demo-certfn-unreachable", Options{Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	_, err = s.Get(context.Background(), cert("default", "web"))
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Get took %v with a 500ms timeout", took)
	}
	if err == nil || errs.Classify(err) != errs.Transient || errors.Is(err, ports.ErrNotFound) || errors.Is(err, ports.ErrConflict) {
		t.Errorf("Get: %v, want a transient error", err)
	}
}
