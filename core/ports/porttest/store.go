package porttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
)

// t0 is the base time of every suite: whole milliseconds, in UTC.
var t0 = time.Date(2030, 1, 2, 3, 4, 5, 6_000_000, time.UTC)

// Concurrency used by the racing subtests. Small enough for emulators,
// large enough that lost updates show up.
const (
	racers = 8
	rounds = 5
)

// recOpt modifies a record built by newRec.
type recOpt func(*ports.Record)

func ownedBy(k api.Key) recOpt   { return func(r *ports.Record) { r.Owner = k } }
func dueAt(t time.Time) recOpt   { return func(r *ports.Record) { r.NextRunAt = t } }
func withData(d []byte) recOpt   { return func(r *ports.Record) { r.Data = d } }
func withVersion(v int64) recOpt { return func(r *ports.Record) { r.Version = v } }
func certKey(ns, name string) api.Key {
	return api.Key{Kind: api.KindCertificate, Namespace: ns, Name: name}
}
func reqKey(ns, name string) api.Key {
	return api.Key{Kind: api.KindCertificateRequest, Namespace: ns, Name: name}
}
func clusterIssuerKey(name string) api.Key { return api.Key{Kind: api.KindClusterIssuer, Name: name} }

// newRec builds a record for k whose Data is a small JSON document naming k.
func newRec(k api.Key, opts ...recOpt) ports.Record {
	r := ports.Record{Key: k, Data: []byte(fmt.Sprintf(`{"kind":%q,"metadata":{"namespace":%q,"name":%q}}`, k.Kind, k.Namespace, k.Name))}
	for _, o := range opts {
		o(&r)
	}
	return r
}

// StoreSuite runs the ports.Store contract against stores made by newStore,
// which must return an empty store for every call.
func StoreSuite(t *testing.T, newStore func(t *testing.T) ports.Store) {
	t.Run("CreateGet", func(t *testing.T) { storeCreateGet(t, newStore(t)) })
	t.Run("CreateExisting", func(t *testing.T) { storeCreateExisting(t, newStore(t)) })
	t.Run("GetMissing", func(t *testing.T) { storeGetMissing(t, newStore(t)) })
	t.Run("Update", func(t *testing.T) { storeUpdate(t, newStore(t)) })
	t.Run("ConflictingUpdates", func(t *testing.T) { storeConflictingUpdates(t, newStore(t)) })
	t.Run("ConcurrentUpdates", func(t *testing.T) { storeConcurrentUpdates(t, newStore(t)) })
	t.Run("ConcurrentIncrements", func(t *testing.T) { storeConcurrentIncrements(t, newStore(t)) })
	t.Run("ConcurrentCreate", func(t *testing.T) { storeConcurrentCreate(t, newStore(t)) })
	t.Run("Delete", func(t *testing.T) { storeDelete(t, newStore) })
	t.Run("List", func(t *testing.T) { storeList(t, newStore(t)) })
	t.Run("ListPage", func(t *testing.T) { storeListPage(t, newStore(t)) })
	t.Run("Due", func(t *testing.T) { storeDue(t, newStore(t)) })
	t.Run("DueIndexMaintenance", func(t *testing.T) { storeDueMaintenance(t, newStore(t)) })
	t.Run("CanceledContext", func(t *testing.T) { storeCanceled(t, newStore(t)) })
}

// mustCreate creates r and fails the test on error.
func mustCreate(t *testing.T, s ports.Store, r ports.Record) ports.Record {
	t.Helper()
	got, err := s.Create(context.Background(), r)
	if err != nil {
		t.Fatalf("Create(%s): %v", r.Key, err)
	}
	return got
}

// mustGet reads k and fails the test on error.
func mustGet(t *testing.T, s ports.Store, k api.Key) ports.Record {
	t.Helper()
	got, err := s.Get(context.Background(), k)
	if err != nil {
		t.Fatalf("Get(%s): %v", k, err)
	}
	return got
}

// checkRecord compares every field of got with want (times with Equal).
func checkRecord(t *testing.T, what string, got, want ports.Record) {
	t.Helper()
	if got.Key != want.Key {
		t.Errorf("%s: Key = %v, want %v", what, got.Key, want.Key)
	}
	if got.Version != want.Version {
		t.Errorf("%s: Version = %d, want %d", what, got.Version, want.Version)
	}
	if got.Owner != want.Owner {
		t.Errorf("%s: Owner = %v, want %v", what, got.Owner, want.Owner)
	}
	if !got.NextRunAt.Equal(want.NextRunAt) || got.NextRunAt.IsZero() != want.NextRunAt.IsZero() {
		t.Errorf("%s: NextRunAt = %v, want %v", what, got.NextRunAt, want.NextRunAt)
	}
	if !bytes.Equal(got.Data, want.Data) {
		t.Errorf("%s: Data = %q, want %q", what, got.Data, want.Data)
	}
}

// wantErr fails unless errors.Is(err, target).
func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: error = %v, want %v", what, err, target)
	}
}

func storeCreateGet(t *testing.T, s ports.Store) {
	binary := make([]byte, 256)
	for i := range binary {
		binary[i] = byte(i)
	}
	tests := []struct {
		name string
		rec  ports.Record
	}{
		{"namespaced", newRec(certKey("default", "web"))},
		{"cluster-scoped", newRec(clusterIssuerKey("ca"))},
		{"owned", newRec(reqKey("default", "web-1"), ownedBy(certKey("default", "web")))},
		{"cluster owner", newRec(certKey("team-a", "api"), ownedBy(clusterIssuerKey("ca")))},
		{"due", newRec(certKey("default", "due"), dueAt(t0.Add(time.Hour)))},
		{"binary data", newRec(certKey("default", "bin"), withData(binary))},
		// The store assigns versions: the caller's value is ignored on create.
		{"caller version ignored", newRec(certKey("default", "v"), withVersion(42))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.rec
			want.Version = 1
			created := mustCreate(t, s, tc.rec)
			checkRecord(t, "Create result", created, want)
			checkRecord(t, "Get", mustGet(t, s, tc.rec.Key), want)
		})
	}
}

func storeCreateExisting(t *testing.T, s ports.Store) {
	ctx := context.Background()
	k := certKey("default", "web")
	orig := mustCreate(t, s, newRec(k, withData([]byte(`{"v":"first"}`))))
	_, err := s.Create(ctx, newRec(k, withData([]byte(`{"v":"second"}`))))
	wantErr(t, "second Create", err, ports.ErrAlreadyExists)
	checkRecord(t, "Get after failed Create", mustGet(t, s, k), orig)

	// The same name under another kind or namespace is a different key.
	for _, other := range []api.Key{reqKey("default", "web"), certKey("other", "web")} {
		if _, err := s.Create(ctx, newRec(other)); err != nil {
			t.Errorf("Create(%s) next to %s: %v", other, k, err)
		}
	}
}

func storeGetMissing(t *testing.T, s ports.Store) {
	ctx := context.Background()
	mustCreate(t, s, newRec(certKey("default", "web")))
	for _, k := range []api.Key{
		certKey("default", "nope"),
		certKey("other", "web"),
		reqKey("default", "web"),
		clusterIssuerKey("web"),
	} {
		_, err := s.Get(ctx, k)
		wantErr(t, "Get("+k.String()+")", err, ports.ErrNotFound)
	}
}

func storeUpdate(t *testing.T, s ports.Store) {
	ctx := context.Background()
	k := reqKey("default", "web-1")
	owner := certKey("default", "web")
	v1 := mustCreate(t, s, newRec(k))

	next := v1
	next.Data = []byte(`{"status":"issued"}`)
	next.Owner = owner
	next.NextRunAt = t0.Add(24 * time.Hour)
	v2, err := s.Update(ctx, next)
	if err != nil {
		t.Fatalf("Update from version 1: %v", err)
	}
	want := next
	want.Version = 2
	checkRecord(t, "Update result", v2, want)
	checkRecord(t, "Get after Update", mustGet(t, s, k), want)

	// Clearing owner and NextRunAt is an update like any other.
	cleared := v2
	cleared.Owner, cleared.NextRunAt = api.Key{}, time.Time{}
	v3, err := s.Update(ctx, cleared)
	if err != nil {
		t.Fatalf("Update from version 2: %v", err)
	}
	want = cleared
	want.Version = 3
	checkRecord(t, "Get after clearing", mustGet(t, s, k), want)

	tests := []struct {
		name    string
		rec     ports.Record
		wantErr error
	}{
		{"stale version", newRec(k, withVersion(1)), ports.ErrConflict},
		{"previous version", newRec(k, withVersion(2)), ports.ErrConflict},
		{"future version", newRec(k, withVersion(v3.Version+1)), ports.ErrConflict},
		{"missing key", newRec(certKey("default", "nope"), withVersion(1)), ports.ErrNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Update(ctx, tc.rec)
			wantErr(t, "Update", err, tc.wantErr)
			// A failed update never changes the stored record.
			checkRecord(t, "Get after failed Update", mustGet(t, s, k), want)
		})
	}
}

func storeConflictingUpdates(t *testing.T, s ports.Store) {
	ctx := context.Background()
	k := certKey("default", "web")
	base := mustCreate(t, s, newRec(k))
	a, b := base, base
	a.Data = []byte(`{"writer":"a"}`)
	b.Data = []byte(`{"writer":"b"}`)
	won, err := s.Update(ctx, a)
	if err != nil {
		t.Fatalf("first Update: %v", err)
	}
	_, err = s.Update(ctx, b)
	wantErr(t, "second Update from the same version", err, ports.ErrConflict)
	checkRecord(t, "Get", mustGet(t, s, k), won)
}

// race runs fn(i) in n goroutines released at the same moment and returns
// their errors.
func race(n int, fn func(i int) error) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = fn(i)
		}()
	}
	close(start)
	wg.Wait()
	return errs
}

// oneWinner checks that exactly one error is nil and all others wrap loser.
func oneWinner(t *testing.T, what string, errs []error, loser error) int {
	t.Helper()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("%s: racers %d and %d both won", what, winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, loser):
			t.Errorf("%s: racer %d: error = %v, want %v", what, i, err, loser)
		}
	}
	if winner < 0 {
		t.Errorf("%s: no racer won", what)
	}
	return winner
}

func storeConcurrentUpdates(t *testing.T, s ports.Store) {
	ctx := context.Background()
	k := certKey("default", "web")
	cur := mustCreate(t, s, newRec(k))
	for round := 0; round < rounds; round++ {
		results := make([]ports.Record, racers)
		errs := race(racers, func(i int) error {
			r := cur
			r.Data = []byte(fmt.Sprintf(`{"round":%d,"writer":%d}`, round, i))
			var err error
			results[i], err = s.Update(ctx, r)
			return err
		})
		w := oneWinner(t, fmt.Sprintf("round %d", round), errs, ports.ErrConflict)
		if w < 0 {
			t.FailNow()
		}
		got := mustGet(t, s, k)
		checkRecord(t, fmt.Sprintf("round %d: Get", round), got, results[w])
		if got.Version != cur.Version+1 {
			t.Fatalf("round %d: version %d after one winning update from %d", round, got.Version, cur.Version)
		}
		cur = got
	}
}

// storeConcurrentIncrements: racers read-modify-write a counter with
// reload-and-retry on conflict; no increment may be lost.
func storeConcurrentIncrements(t *testing.T, s ports.Store) {
	ctx := context.Background()
	k := certKey("default", "counter")
	mustCreate(t, s, newRec(k, withData([]byte("0"))))
	const perRacer = 5
	errs := race(racers, func(int) error {
		for n := 0; n < perRacer; {
			r, err := s.Get(ctx, k)
			if err != nil {
				return err
			}
			v, err := strconv.Atoi(string(r.Data))
			if err != nil {
				return fmt.Errorf("counter %q: %w", r.Data, err)
			}
			r.Data = []byte(strconv.Itoa(v + 1))
			switch _, err := s.Update(ctx, r); {
			case err == nil:
				n++
			case errors.Is(err, ports.ErrConflict):
				// Lost the race: reload and retry.
			default:
				return err
			}
		}
		return nil
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("racer %d: %v", i, err)
		}
	}
	got := mustGet(t, s, k)
	if want := strconv.Itoa(racers * perRacer); string(got.Data) != want {
		t.Errorf("counter = %s, want %s (lost updates)", got.Data, want)
	}
	if want := int64(1 + racers*perRacer); got.Version != want {
		t.Errorf("version = %d, want %d", got.Version, want)
	}
}

func storeConcurrentCreate(t *testing.T, s ports.Store) {
	ctx := context.Background()
	k := certKey("default", "web")
	errs := race(racers, func(i int) error {
		_, err := s.Create(ctx, newRec(k, withData([]byte(strconv.Itoa(i)))))
		return err
	})
	w := oneWinner(t, "concurrent Create", errs, ports.ErrAlreadyExists)
	if w >= 0 {
		got := mustGet(t, s, k)
		if string(got.Data) != strconv.Itoa(w) || got.Version != 1 {
			t.Errorf("stored %q version %d, want the winner's %d at version 1", got.Data, got.Version, w)
		}
	}
}

func storeDelete(t *testing.T, newStore func(t *testing.T) ports.Store) {
	k := certKey("default", "web")
	tests := []struct {
		name    string
		exists  bool
		updates int   // updates after create: the stored version is 1+updates
		version int64 // passed to Delete
		wantErr error
	}{
		{"unconditional", true, 0, 0, nil},
		{"unconditional after updates", true, 2, 0, nil},
		{"conditional on current version", true, 2, 3, nil},
		{"conditional on stale version", true, 2, 2, ports.ErrConflict},
		{"conditional on future version", true, 0, 5, ports.ErrConflict},
		{"missing, unconditional", false, 0, 0, ports.ErrNotFound},
		{"missing, conditional", false, 0, 1, ports.ErrNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := newStore(t)
			// A neighbour that must survive every delete.
			neighbour := mustCreate(t, s, newRec(certKey("default", "web2"), dueAt(t0)))
			var cur ports.Record
			if tc.exists {
				cur = mustCreate(t, s, newRec(k, dueAt(t0)))
				for i := 0; i < tc.updates; i++ {
					var err error
					if cur, err = s.Update(ctx, cur); err != nil {
						t.Fatalf("Update: %v", err)
					}
				}
			}
			err := s.Delete(ctx, k, tc.version)
			if tc.wantErr == nil && err != nil {
				t.Fatalf("Delete(version %d): %v", tc.version, err)
			}
			if tc.wantErr != nil {
				wantErr(t, "Delete", err, tc.wantErr)
			}
			_, getErr := s.Get(ctx, k)
			switch {
			case tc.wantErr == nil || !tc.exists:
				wantErr(t, "Get after Delete", getErr, ports.ErrNotFound)
				due, err := s.Due(ctx, t0.Add(time.Hour), 10)
				if err != nil {
					t.Fatalf("Due: %v", err)
				}
				if len(due) != 1 || due[0].Key != neighbour.Key {
					t.Errorf("Due after Delete = %v, want only %s", due, neighbour.Key)
				}
			default:
				checkRecord(t, "Get after failed Delete", mustGet(t, s, k), cur)
			}
			checkRecord(t, "neighbour", mustGet(t, s, neighbour.Key), neighbour)
			if tc.exists && tc.wantErr == nil {
				again := mustCreate(t, s, newRec(k))
				if again.Version != 1 {
					t.Errorf("Create after Delete: version %d, want 1", again.Version)
				}
			}
		})
	}
}

// keysOf returns the records' keys sorted by their string form.
func keysOf(recs []ports.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Key.String()
	}
	sort.Strings(out)
	return out
}

func sortedStrings(keys ...api.Key) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.String()
	}
	sort.Strings(out)
	return out
}

func storeList(t *testing.T, s ports.Store) {
	ctx := context.Background()
	webA, apiA, webB := certKey("a", "web"), certKey("a", "api"), certKey("b", "web")
	ca, other := clusterIssuerKey("ca"), clusterIssuerKey("other")
	r1, r2 := reqKey("a", "web-1"), reqKey("a", "web-2")
	r3, r4 := reqKey("a", "api-1"), reqKey("b", "web-1")
	fixture := []ports.Record{
		newRec(webA), newRec(apiA), newRec(webB, ownedBy(ca)),
		newRec(ca), newRec(other),
		newRec(r1, ownedBy(webA)), newRec(r2, ownedBy(webA)), newRec(r3, ownedBy(apiA)),
		newRec(r4, ownedBy(webB)),
	}
	byKey := map[api.Key]ports.Record{}
	for _, r := range fixture {
		byKey[r.Key] = mustCreate(t, s, r)
	}
	tests := []struct {
		name string
		opts ports.ListOptions
		want []api.Key
	}{
		{"kind, all namespaces", ports.ListOptions{Kind: api.KindCertificate}, []api.Key{webA, apiA, webB}},
		{"kind and namespace", ports.ListOptions{Kind: api.KindCertificate, Namespace: "a"}, []api.Key{webA, apiA}},
		{"cluster-scoped kind", ports.ListOptions{Kind: api.KindClusterIssuer}, []api.Key{ca, other}},
		{"by owner", ports.ListOptions{Kind: api.KindCertificateRequest, Owner: webA}, []api.Key{r1, r2}},
		{"by owner and namespace", ports.ListOptions{Kind: api.KindCertificateRequest, Namespace: "a", Owner: apiA}, []api.Key{r3}},
		{"owner in another namespace", ports.ListOptions{Kind: api.KindCertificateRequest, Namespace: "b", Owner: webA}, nil},
		{"cluster-scoped owner", ports.ListOptions{Kind: api.KindCertificate, Owner: ca}, []api.Key{webB}},
		{"owner of another kind", ports.ListOptions{Kind: api.KindCertificate, Owner: webA}, nil},
		{"empty namespace", ports.ListOptions{Kind: api.KindCertificate, Namespace: "c"}, nil},
		{"unknown kind", ports.ListOptions{Kind: "Order"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.List(ctx, tc.opts)
			if err != nil {
				t.Fatalf("List(%+v): %v", tc.opts, err)
			}
			if g, w := keysOf(got), sortedStrings(tc.want...); !slices.Equal(g, w) {
				t.Fatalf("List(%+v) = %v, want %v", tc.opts, g, w)
			}
			for _, r := range got {
				checkRecord(t, "listed "+r.Key.String(), r, byKey[r.Key])
			}
		})
	}
	t.Run("kind required", func(t *testing.T) {
		if _, err := s.List(ctx, ports.ListOptions{Namespace: "a"}); err == nil {
			t.Error("List without Kind: want an error")
		}
	})
}

// dueKeys renders due items as "key@offset" relative to t0.
func dueKeys(items []ports.DueItem) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = fmt.Sprintf("%s@%s", it.Key, it.NextRunAt.Sub(t0))
	}
	return out
}

func storeDue(t *testing.T, s ports.Store) {
	ctx := context.Background()
	// Created out of order so that insertion order cannot pass for time order.
	fixture := []struct {
		key api.Key
		at  time.Duration // offset from t0; -1 means no NextRunAt
	}{
		{certKey("a", "c3"), 3 * time.Minute},
		{certKey("a", "c1"), 1 * time.Minute},
		{certKey("a", "never"), -1},
		{reqKey("b", "r2"), 2 * time.Minute},
		{clusterIssuerKey("ca"), 90 * time.Second},
		{certKey("b", "c10"), 10 * time.Minute},
		{certKey("b", "past"), -time.Hour},
	}
	for _, f := range fixture {
		var opts []recOpt
		if f.at != -1 {
			opts = append(opts, dueAt(t0.Add(f.at)))
		}
		mustCreate(t, s, newRec(f.key, opts...))
	}
	tests := []struct {
		name  string
		now   time.Duration
		limit int
		want  []string
	}{
		{"before everything", -2 * time.Hour, 10, nil},
		{"only the past one", 0, 10, []string{"Certificate/b/past@-1h0m0s"}},
		{"inclusive of now", time.Minute, 10, []string{"Certificate/b/past@-1h0m0s", "Certificate/a/c1@1m0s"}},
		{"oldest first", 3 * time.Minute, 10, []string{
			"Certificate/b/past@-1h0m0s", "Certificate/a/c1@1m0s", "ClusterIssuer/ca@1m30s",
			"CertificateRequest/b/r2@2m0s", "Certificate/a/c3@3m0s"}},
		{"limit keeps the oldest", 24 * time.Hour, 2, []string{"Certificate/b/past@-1h0m0s", "Certificate/a/c1@1m0s"}},
		{"limit one", 24 * time.Hour, 1, []string{"Certificate/b/past@-1h0m0s"}},
		{"all due, zero excluded", 24 * time.Hour, 100, []string{
			"Certificate/b/past@-1h0m0s", "Certificate/a/c1@1m0s", "ClusterIssuer/ca@1m30s",
			"CertificateRequest/b/r2@2m0s", "Certificate/a/c3@3m0s", "Certificate/b/c10@10m0s"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Due(ctx, t0.Add(tc.now), tc.limit)
			if err != nil {
				t.Fatalf("Due: %v", err)
			}
			if g := dueKeys(got); !slices.Equal(g, tc.want) {
				t.Errorf("Due(t0%+v, %d) = %v, want %v", tc.now, tc.limit, g, tc.want)
			}
		})
	}
}

// storeDueMaintenance: moving NextRunAt to the future or to zero takes a
// record out of the due results; moving it back in puts it back.
func storeDueMaintenance(t *testing.T, s ports.Store) {
	ctx := context.Background()
	now := t0.Add(time.Hour)
	k1, k2, k3 := certKey("a", "one"), certKey("a", "two"), certKey("a", "three")
	recs := map[api.Key]ports.Record{}
	for i, k := range []api.Key{k1, k2, k3} {
		recs[k] = mustCreate(t, s, newRec(k, dueAt(t0.Add(time.Duration(i)*time.Minute))))
	}
	update := func(k api.Key, at time.Time) {
		t.Helper()
		r := recs[k]
		r.NextRunAt = at
		u, err := s.Update(ctx, r)
		if err != nil {
			t.Fatalf("Update(%s): %v", k, err)
		}
		recs[k] = u
	}
	steps := []struct {
		name   string
		change func()
		want   []string
	}{
		{"initially all due", func() {}, []string{"Certificate/a/one@0s", "Certificate/a/two@1m0s", "Certificate/a/three@2m0s"}},
		{"one moved to the future", func() { update(k1, now.Add(time.Hour)) }, []string{"Certificate/a/two@1m0s", "Certificate/a/three@2m0s"}},
		{"two cleared", func() { update(k2, time.Time{}) }, []string{"Certificate/a/three@2m0s"}},
		{"three moved earlier", func() { update(k3, t0.Add(-time.Minute)) }, []string{"Certificate/a/three@-1m0s"}},
		{"two due again", func() { update(k2, t0.Add(5*time.Minute)) }, []string{"Certificate/a/three@-1m0s", "Certificate/a/two@5m0s"}},
		{"three deleted", func() {
			if err := s.Delete(ctx, k3, recs[k3].Version); err != nil {
				t.Fatalf("Delete: %v", err)
			}
		}, []string{"Certificate/a/two@5m0s"}},
	}
	for _, st := range steps {
		st.change()
		got, err := s.Due(ctx, now, 10)
		if err != nil {
			t.Fatalf("%s: Due: %v", st.name, err)
		}
		if g := dueKeys(got); !slices.Equal(g, st.want) {
			t.Errorf("%s: Due = %v, want %v", st.name, g, st.want)
		}
	}
}

func storeCanceled(t *testing.T, s ports.Store) {
	k := certKey("default", "web")
	cur := mustCreate(t, s, newRec(k))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := map[string]func() error{
		"Get":    func() error { _, err := s.Get(ctx, k); return err },
		"Create": func() error { _, err := s.Create(ctx, newRec(certKey("default", "new"))); return err },
		"Update": func() error { _, err := s.Update(ctx, cur); return err },
		"Delete": func() error { return s.Delete(ctx, k, 0) },
		"List":   func() error { _, err := s.List(ctx, ports.ListOptions{Kind: api.KindCertificate}); return err },
		"Due":    func() error { _, err := s.Due(ctx, t0, 10); return err },
	}
	for name, call := range calls {
		wantErr(t, name+" with a canceled context", call(), context.Canceled)
	}
	// Nothing was written.
	checkRecord(t, "Get after canceled calls", mustGet(t, s, k), cur)
	if _, err := s.Get(context.Background(), certKey("default", "new")); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("Create with a canceled context stored a record (Get error %v)", err)
	}
}
