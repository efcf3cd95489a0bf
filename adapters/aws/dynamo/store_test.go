package dynamo

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/certfn/certfn/adapters/aws/awscfg"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/ports/porttest"
	"github.com/certfn/certfn/tests/emulators"
)

// fastRetry keeps retried calls quick in tests.
var fastRetry = awscfg.Retry{MaxAttempts: 5, MaxBackoff: 20 * time.Millisecond}

// newClient returns a DynamoDB client for endpoint.
func newClient(endpoint string) *dynamodb.Client {
	return dynamodb.NewFromConfig(awscfg.ForEndpoint(endpoint, fastRetry))
}

var tableSeq atomic.Int64

// newTable creates a fresh table (removed when t ends) and returns its name.
func newTable(t *testing.T, db *dynamodb.Client) string {
	t.Helper()
	name := fmt.Sprintf("certfn-test-%d-%d", time.Now().UnixNano()%1e9, tableSeq.Add(1))
	ctx := context.Background()
	if err := CreateTable(ctx, db, name, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)}); err != nil {
			t.Errorf("delete table %s: %v", name, err)
		}
	})
	return name
}

// env is one emulator (or external endpoint) for a test.
type env struct {
	endpoint string
	db       *dynamodb.Client
}

// newEnv starts dynalite for t (or uses AWS_ENDPOINT_URL[_DYNAMODB]).
func newEnv(t *testing.T) *env {
	t.Helper()
	ep := emulators.Endpoint(t, emulators.DynamoDB)
	return &env{endpoint: ep, db: newClient(ep)}
}

// store returns a Store on a fresh table with opts (Table filled in).
func (e *env) store(t *testing.T, opts Options) *Store {
	t.Helper()
	opts.Table = newTable(t, e.db)
	s, err := New(e.db, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStoreContract(t *testing.T) {
	e := newEnv(t)
	porttest.StoreSuite(t, func(t *testing.T) ports.Store { return e.store(t, Options{}) })
}

// The contract also holds with one shard (every due item in one partition)
// and with more shards than items.
func TestStoreContractShards(t *testing.T) {
	e := newEnv(t)
	for _, shards := range []int{1, 64} {
		t.Run(fmt.Sprint(shards), func(t *testing.T) {
			porttest.StoreSuite(t, func(t *testing.T) ports.Store { return e.store(t, Options{Shards: shards}) })
		})
	}
}

var tt0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func cert(ns, name string) api.Key {
	return api.Key{Kind: api.KindCertificate, Namespace: ns, Name: name}
}
func req(ns, name string) api.Key {
	return api.Key{Kind: api.KindCertificateRequest, Namespace: ns, Name: name}
}

// rawItem reads key's item as stored.
func rawItem(t *testing.T, e *env, s *Store, k api.Key) map[string]types.AttributeValue {
	t.Helper()
	out, err := e.db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(s.Table()), Key: keyItem(k), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

// attrNames lists an item's attribute names, sorted.
func attrNames(item map[string]types.AttributeValue) []string {
	var out []string
	for k := range item {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// The item layout: index attributes exist only while they have a value,
// so the sparse indexes drop the item when they are cleared.
func TestItemLayout(t *testing.T) {
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
		{"owned and due", owner, tt0, []string{"data", "due_shard", "kind", "namespace", "next_run_at", "owner", "pk", "version"}},
		{"owner cleared", api.Key{}, tt0, []string{"data", "due_shard", "kind", "namespace", "next_run_at", "pk", "version"}},
		{"due cleared", api.Key{}, time.Time{}, []string{"data", "kind", "namespace", "pk", "version"}},
		{"due again", owner, tt0.Add(time.Hour), []string{"data", "due_shard", "kind", "namespace", "next_run_at", "owner", "pk", "version"}},
	}
	cur, err := s.Create(ctx, ports.Record{Key: k, Data: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range steps {
		cur.Owner, cur.NextRunAt = st.owner, st.due
		if cur, err = s.Update(ctx, cur); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		item := rawItem(t, e, s, k)
		if got := attrNames(item); !slices.Equal(got, st.want) {
			t.Errorf("%s: attributes %v, want %v", st.name, got, st.want)
		}
		if v, _ := getN(item, attrVersion, true); v != cur.Version {
			t.Errorf("%s: version attribute %d, want %d", st.name, v, cur.Version)
		}
		if !st.due.IsZero() {
			if ms, _ := getN(item, attrNextRun, true); ms != st.due.UnixMilli() {
				t.Errorf("%s: next_run_at %d, want %d", st.name, ms, st.due.UnixMilli())
			}
			if sh, _ := getN(item, attrShard, true); sh != int64(shardOf(k.String(), DefaultShards)) {
				t.Errorf("%s: due_shard %d, want %d", st.name, sh, shardOf(k.String(), DefaultShards))
			}
		}
	}
	// A cluster-scoped key has no namespace attribute.
	ci := api.Key{Kind: api.KindClusterIssuer, Name: "ca"}
	if _, err := s.Create(ctx, ports.Record{Key: ci, Data: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if got, want := attrNames(rawItem(t, e, s, ci)), []string{"data", "kind", "pk", "version"}; !slices.Equal(got, want) {
		t.Errorf("cluster-scoped: attributes %v, want %v", got, want)
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

// Large data is compressed under the item limit; data that cannot fit is
// refused with a permanent error naming the sizes, and nothing is stored.
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
		{"1 MB compressible JSON", bigJSON(1 << 20), true, false},
		{"incompressible under the limit", randomBytes(t, 300_000), false, false},
		{"incompressible over the limit", randomBytes(t, 500_000), false, true},
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
			_, isGzip := rawItem(t, e, s, k)[attrEnc]
			if isGzip != tc.compressed {
				t.Errorf("compressed = %v, want %v", isGzip, tc.compressed)
			}
		})
	}
}

// Many due items are spread over the shards, and Due merges them oldest
// first whatever the limit, reading about the items it returns plus one
// page per shard.
func TestDueShardsAndMerge(t *testing.T) {
	e := newEnv(t)
	s := e.store(t, Options{Shards: 8})
	ctx := context.Background()
	const n = 60
	shards := map[int]bool{}
	var want []string
	// Times in a scrambled order: i*37 mod n minutes.
	for i := 0; i < n; i++ {
		k := cert(fmt.Sprintf("ns%d", i%5), fmt.Sprintf("c%02d", i))
		at := tt0.Add(time.Duration(i*37%n) * time.Minute)
		if _, err := s.Create(ctx, ports.Record{Key: k, NextRunAt: at, Data: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
		shards[shardOf(k.String(), 8)] = true
	}
	if len(shards) < 6 {
		t.Errorf("%d items landed in %d of 8 shards", n, len(shards))
	}
	// Items not yet due are never returned: at tt0+29m, 30 are due.
	for i := 0; i < n; i++ {
		if i*37%n < 30 {
			want = append(want, fmt.Sprintf("@%dm", i*37%n))
		}
	}
	slices.Sort(want) // lexical is fine: only used as a set
	for _, limit := range []int{1, 7, 30, 100} {
		t.Run(fmt.Sprintf("limit %d", limit), func(t *testing.T) {
			s.ResetCounts()
			got, err := s.Due(ctx, tt0.Add(29*time.Minute), limit)
			if err != nil {
				t.Fatal(err)
			}
			if wantN := min(limit, 30); len(got) != wantN {
				t.Fatalf("got %d items, want %d", len(got), wantN)
			}
			for i, it := range got {
				if want := tt0.Add(time.Duration(i) * time.Minute); !it.NextRunAt.Equal(want) {
					t.Errorf("item %d at %v, want %v (oldest first)", i, it.NextRunAt, want)
				}
			}
			c := s.Counts()
			page := max(4, (2*limit+7)/8)
			if bound := int64(len(got) + 8*page); c.ItemsRead > bound {
				t.Errorf("read %d index items for %d due, want at most %d", c.ItemsRead, len(got), bound)
			}
			if c.Writes != 0 {
				t.Errorf("Due wrote %d times", c.Writes)
			}
		})
	}
}

// The TTL policy: expires_at is written, and expired items are absent to
// every read and condition although DynamoDB has not deleted them yet.
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
	if sec, err := getN(rawItem(t, e, s, r1), attrExpires, true); err != nil || sec != tt0.Add(time.Hour).Unix() {
		t.Errorf("expires_at = %d (%v), want %d", sec, err, tt0.Add(time.Hour).Unix())
	}
	if _, ok := rawItem(t, e, s, r2)[attrExpires]; ok {
		t.Errorf("a due request got a TTL")
	}
	if _, ok := rawItem(t, e, s, owner)[attrExpires]; ok {
		t.Errorf("a Certificate got a TTL")
	}

	clk.Advance(time.Hour) // r1 expired, not yet deleted by DynamoDB
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
		t.Fatalf("Create over an expired item: %v", err)
	}
	if again.Version != 1 {
		t.Errorf("re-created at version %d, want 1", again.Version)
	}
	if _, ok := rawItem(t, e, s, r1)[attrExpires]; ok {
		t.Errorf("re-created due request kept a TTL")
	}
	if got, err := s.Get(ctx, owner); err != nil || got.Version != live.Version {
		t.Errorf("Get live Certificate: %v %v", got, err)
	}
}

// Reads and writes are counted per request, for the issuance cost figures.
func TestCounts(t *testing.T) {
	e := newEnv(t)
	s := e.store(t, Options{})
	ctx := context.Background()
	k := cert("default", "web")
	rec, err := s.Create(ctx, ports.Record{Key: k, Data: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, k); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, rec); err != nil {
		t.Fatal(err)
	}
	_, _ = s.Update(ctx, rec) // conflict: a write attempt and an explaining read
	if _, err := s.List(ctx, ports.ListOptions{Kind: api.KindCertificate}); err != nil {
		t.Fatal(err)
	}
	c := s.Counts()
	// Writes: Create, Update, failed Update. Reads: Get, Query,
	// BatchGetItem, and explain's Get when the failed Update's error did
	// not carry the item (DynamoDB, LocalStack and moto return it for
	// ReturnValuesOnConditionCheckFailure; dynalite does not).
	explainReads := int64(1)
	if returnsItemOnConditionFailure(t, e, s, k) {
		explainReads = 0
	}
	if c.Writes != 3 || c.Reads != 3+explainReads {
		t.Errorf("counts %+v, want 3 writes and %d reads", c, 3+explainReads)
	}
	if c.ReadUnits <= 0 || c.WriteUnits <= 0 {
		t.Errorf("counts %+v: consumed capacity not recorded", c)
	}
	if c.ItemsWritten != 2 || c.ItemsRead != 3+explainReads {
		t.Errorf("counts %+v, want 2 items written and %d read", c, 3+explainReads)
	}
	if s.ResetCounts() != c || s.Counts() != (Counts{}) {
		t.Errorf("ResetCounts did not return and clear the counts")
	}
}

// returnsItemOnConditionFailure reports whether the backend answers a
// failed conditional write with the item (ReturnValuesOnConditionCheckFailure
// ALL_OLD), asked with a write to k's existing item that must fail.
func returnsItemOnConditionFailure(t *testing.T, e *env, s *Store, k api.Key) bool {
	t.Helper()
	_, err := e.db.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{
		TableName: aws.String(s.Table()), Key: keyItem(k),
		ConditionExpression:                 aws.String("attribute_not_exists(#k)"),
		ExpressionAttributeNames:            map[string]string{"#k": attrPK},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		t.Fatalf("probe DeleteItem on an existing item: %v, want ConditionalCheckFailedException", err)
	}
	return len(ccf.Item) > 0
}

// fakeAPI is a hand-written API double for paths an emulator cannot show.
type fakeAPI struct {
	API
	put  func(*dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error)
	gets int
}

func (f *fakeAPI) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return f.put(in)
}

func (f *fakeAPI) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	f.gets++
	return &dynamodb.GetItemOutput{}, nil
}

// With real DynamoDB a failed condition carries the stored item
// (ReturnValuesOnConditionCheckFailure ALL_OLD): the conflict is explained
// from it without another read.
func TestConflictFromReturnedItem(t *testing.T) {
	k := cert("default", "web")
	storedItem, err := encodeItem(ports.Record{Key: k, Data: []byte(`{}`)}, 7, DefaultShards, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		item      map[string]types.AttributeValue
		want      error
		wantReads int
	}{
		{"stored item returned", storedItem, ports.ErrConflict, 0},
		{"no item returned: read to decide", nil, ports.ErrNotFound, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeAPI{put: func(in *dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error) {
				if in.ReturnValuesOnConditionCheckFailure != types.ReturnValuesOnConditionCheckFailureAllOld {
					t.Errorf("Update without ReturnValuesOnConditionCheckFailure ALL_OLD")
				}
				return nil, &types.ConditionalCheckFailedException{Message: aws.String("failed"), Item: tc.item}
			}}
			s, err := New(f, Options{Table: "t"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.Update(context.Background(), ports.Record{Key: k, Version: 3, Data: []byte(`{}`)})
			if !errors.Is(err, tc.want) {
				t.Errorf("Update: %v, want %v", err, tc.want)
			}
			if tc.want == ports.ErrConflict && !strings.Contains(err.Error(), "stored 7") {
				t.Errorf("conflict error %q does not name the stored version", err)
			}
			if f.gets != tc.wantReads {
				t.Errorf("%d follow-up reads, want %d", f.gets, tc.wantReads)
			}
		})
	}
}

// Throttling is retried by the SDK's bounded retryer: a proxy in front of
// the emulator answers ProvisionedThroughputExceededException (or
// ThrottlingException) the first few times.
func TestThrottlingRetried(t *testing.T) {
	e := newEnv(t)
	s := e.store(t, Options{})
	target, err := url.Parse(e.endpoint)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	var throttle, calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if throttle.Add(-1) >= 0 {
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"slow down"}`)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer srv.Close()
	throttled, err := New(dynamodb.NewFromConfig(awscfg.ForEndpoint(srv.URL, fastRetry)), Options{Table: s.Table()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tests := []struct {
		name     string
		throttle int64
		wantErr  bool
	}{
		{"three throttles then success", 3, false},
		{"throttled past the attempt bound", 10, true},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			throttle.Store(tc.throttle)
			calls.Store(0)
			_, err := throttled.Create(ctx, ports.Record{Key: cert("default", fmt.Sprint("t", i)), Data: []byte(`{}`)})
			if tc.wantErr {
				if err == nil || errs.Classify(err) != errs.Transient || !strings.Contains(err.Error(), "ProvisionedThroughputExceeded") {
					t.Fatalf("Create: %v, want a transient throttling error", err)
				}
				if calls.Load() != int64(fastRetry.MaxAttempts) {
					t.Errorf("%d attempts, want %d", calls.Load(), fastRetry.MaxAttempts)
				}
				return
			}
			if err != nil {
				t.Fatalf("Create: %v", err)
			}
			if calls.Load() != tc.throttle+1 {
				t.Errorf("%d attempts, want %d", calls.Load(), tc.throttle+1)
			}
		})
	}
}

// Options and arguments are checked with errors naming the field.
func TestBadInput(t *testing.T) {
	ctx := context.Background()
	if _, err := New(&fakeAPI{}, Options{}); !errs.IsPermanent(err) || !strings.Contains(err.Error(), "table") {
		t.Errorf("New without table: %v", err)
	}
	if _, err := New(&fakeAPI{}, Options{Table: "t", Shards: MaxShards + 1}); !errs.IsPermanent(err) || !strings.Contains(err.Error(), "shards") {
		t.Errorf("New with too many shards: %v", err)
	}
	s, err := New(&fakeAPI{}, Options{Table: "t"})
	if err != nil {
		t.Fatal(err)
	}
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
