// Package dynamo implements ports.Store on one Amazon DynamoDB table
// (docs/design/one-step.md). See docs/deploy/aws.md for the table layout.
//
//   - One item per resource, partition key pk = api.Key.String().
//   - Every write is conditional: Create on attribute_not_exists(pk),
//     Update and Delete on version = :expected. A lost race is reported as
//     ports.ErrConflict and never overwrites. No transactions are used.
//   - The due index (IndexDue) is sparse and sharded: an item carries
//     due_shard = hash(pk) % Shards and next_run_at only while it has a
//     NextRunAt, so Due reads only due items, spread over Shards partitions.
//   - List uses the KEYS_ONLY indexes kind_ns and owner, then BatchGetItem:
//     no Scan, and status updates (which change no index key) write no index.
//   - A TTL attribute (expires_at) is set only by an optional policy
//     (Options.ExpiresAt); expired items are treated as absent by every read
//     and condition, since DynamoDB deletes them only eventually.
//   - Resource JSON over 8 KiB is gzip-compressed; an item that would still
//     exceed MaxItemBytes is refused with a permanent error.
package dynamo

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

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// API is the subset of *dynamodb.Client the store calls.
type API interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// DefaultShards is the default number of due-index shards.
const DefaultShards = 16

// MaxShards bounds Options.Shards (Due queries every shard).
const MaxShards = 256

// batchGetMax is BatchGetItem's limit of keys per call.
const batchGetMax = 100

// batchGetPasses bounds the immediate re-requests of unprocessed keys
// (BatchGetItem returns them when throttled); what remains after that is a
// transient error, retried by the queue's backoff rather than by sleeping.
const batchGetPasses = 3

// Options configure a Store.
type Options struct {
	// Table is the table name (required).
	Table string
	// Shards is the number of due-index shards (default DefaultShards). It
	// is fixed for the life of a table: items keep the shard they were
	// written with, and Due queries shards 0..Shards-1.
	Shards int
	// Clock tells the time for TTL checks (default: the wall clock).
	Clock ports.Clock
	// ExpiresAt, when set, is the TTL policy: it returns when a record being
	// written may be garbage-collected (zero: never). Reads and conditions
	// treat expired items as absent. Nil means no record ever expires.
	ExpiresAt func(rec ports.Record, now time.Time) time.Time
	// Metrics, when set, receives certfn_dynamodb_requests_total{op} and
	// certfn_dynamodb_capacity_units{op,kind=read|write} observations.
	Metrics ports.Metrics
}

// Counts are the requests a Store made and the capacity they consumed
// (as DynamoDB reports it with ReturnConsumedCapacity TOTAL; emulators may
// report none).
type Counts struct {
	Reads, Writes           int64   // requests: GetItem, Query, BatchGetItem / PutItem, DeleteItem
	ReadUnits, WriteUnits   float64 // consumed capacity units
	ItemsRead, ItemsWritten int64   // items returned by reads / items written or deleted
}

// Store is the ports.Store on DynamoDB. It is safe for concurrent use.
type Store struct {
	db     API
	table  string
	shards int
	clock  ports.Clock
	expire func(ports.Record, time.Time) time.Time
	m      ports.Metrics

	mu     sync.Mutex
	counts Counts
}

var _ ports.Store = (*Store)(nil)

// New returns a Store on opts.Table through db. It makes no call: the table
// must exist with the layout of TableInput.
func New(db API, opts Options) (*Store, error) {
	if opts.Table == "" {
		return nil, errs.Permanentf("dynamodb store: table: must not be empty")
	}
	if opts.Shards == 0 {
		opts.Shards = DefaultShards
	}
	if opts.Shards < 1 || opts.Shards > MaxShards {
		return nil, errs.Permanentf("dynamodb store: shards: must be 1 to %d, got %d", MaxShards, opts.Shards)
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	return &Store{db: db, table: opts.Table, shards: opts.Shards, clock: opts.Clock, expire: opts.ExpiresAt, m: opts.Metrics}, nil
}

// Table returns the table name.
func (s *Store) Table() string { return s.table }

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

// count records one request of op.
func (s *Store) count(op string, write bool, items int, cc ...*types.ConsumedCapacity) {
	units := 0.0
	for _, c := range cc {
		if c != nil && c.CapacityUnits != nil {
			units += *c.CapacityUnits
		}
	}
	s.mu.Lock()
	if write {
		s.counts.Writes++
		s.counts.WriteUnits += units
		s.counts.ItemsWritten += int64(items)
	} else {
		s.counts.Reads++
		s.counts.ReadUnits += units
		s.counts.ItemsRead += int64(items)
	}
	s.mu.Unlock()
	if s.m != nil {
		kind := "read"
		if write {
			kind = "write"
		}
		s.m.Inc("certfn_dynamodb_requests_total", "op", op)
		s.m.Observe("certfn_dynamodb_capacity_units", units, "op", op, "kind", kind)
	}
}

// Conditions. An item whose TTL has passed counts as absent.
const (
	condLive   = `(attribute_not_exists(#exp) OR #exp > :now)`
	condCreate = `attribute_not_exists(#pk) OR #exp <= :now`
	condExists = `attribute_exists(#pk) AND ` + condLive
	condAtVer  = `#v = :v AND ` + condLive
)

// checkRecord validates a record's key and owner before a write.
func checkRecord(op string, rec ports.Record) error {
	if err := checkKey("key", rec.Key); err != nil {
		return fmt.Errorf("store: %s %s: %w", op, rec.Key, err)
	}
	if !rec.Owner.IsZero() {
		if err := checkKey("owner", rec.Owner); err != nil {
			return fmt.Errorf("store: %s %s: %w", op, rec.Key, err)
		}
	}
	return nil
}

// isConditionFailed reports a failed ConditionExpression.
func isConditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// Get returns the record stored under key (a strongly consistent read), or
// ports.ErrNotFound.
func (s *Store) Get(ctx context.Context, key api.Key) (ports.Record, error) {
	st, ok, err := s.get(ctx, "get", key)
	if err != nil {
		return ports.Record{}, err
	}
	if !ok {
		return ports.Record{}, fmt.Errorf("store: get %s: %w", key, ports.ErrNotFound)
	}
	return st.rec, nil
}

// get reads key consistently; ok is false when it is missing or expired.
func (s *Store) get(ctx context.Context, op string, key api.Key) (stored, bool, error) {
	if err := ctx.Err(); err != nil {
		return stored{}, false, fmt.Errorf("store: %s %s: %w", op, key, err)
	}
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:              aws.String(s.table),
		Key:                    keyItem(key),
		ConsistentRead:         aws.Bool(true),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	})
	if err != nil {
		return stored{}, false, fmt.Errorf("store: %s %s: %w", op, key, err)
	}
	s.count("GetItem", false, min(len(out.Item), 1), out.ConsumedCapacity)
	if len(out.Item) == 0 {
		return stored{}, false, nil
	}
	st, err := decodeItem(out.Item)
	if err != nil {
		return stored{}, false, fmt.Errorf("store: %s %s: %w", op, key, err)
	}
	if st.expired(s.clock.Now()) {
		return stored{}, false, nil
	}
	return st, true, nil
}

// expiry applies the TTL policy.
func (s *Store) expiry(rec ports.Record, now time.Time) time.Time {
	if s.expire == nil {
		return time.Time{}
	}
	return s.expire(rec, now)
}

// Create stores rec at version 1 (rec.Version is ignored) and returns the
// stored record; ports.ErrAlreadyExists if the key exists.
func (s *Store) Create(ctx context.Context, rec ports.Record) (ports.Record, error) {
	if err := checkRecord("create", rec); err != nil {
		return ports.Record{}, err
	}
	if err := ctx.Err(); err != nil {
		return ports.Record{}, fmt.Errorf("store: create %s: %w", rec.Key, err)
	}
	now := s.clock.Now()
	rec.Version = 1
	item, err := encodeItem(rec, 1, s.shards, s.expiry(rec, now))
	if err != nil {
		return ports.Record{}, fmt.Errorf("store: create %s: %w", rec.Key, err)
	}
	out, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 aws.String(s.table),
		Item:                      item,
		ConditionExpression:       aws.String(condCreate),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#exp": attrExpires},
		ExpressionAttributeValues: map[string]types.AttributeValue{":now": attrN(now.Unix())},
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	})
	if isConditionFailed(err) {
		s.count("PutItem", true, 0)
		return ports.Record{}, fmt.Errorf("store: create %s: %w", rec.Key, ports.ErrAlreadyExists)
	}
	if err != nil {
		return ports.Record{}, fmt.Errorf("store: create %s: %w", rec.Key, err)
	}
	s.count("PutItem", true, 1, out.ConsumedCapacity)
	return withData(rec), nil
}

// withData returns rec with non-nil Data (what a read returns).
func withData(rec ports.Record) ports.Record {
	if rec.Data == nil {
		rec.Data = []byte{}
	}
	return rec
}

// Update replaces the record if the stored version equals rec.Version (one
// conditional PutItem) and returns it with the new version.
// ports.ErrConflict if the stored version differs, ports.ErrNotFound if the
// key is missing.
func (s *Store) Update(ctx context.Context, rec ports.Record) (ports.Record, error) {
	if err := checkRecord("update", rec); err != nil {
		return ports.Record{}, err
	}
	if err := ctx.Err(); err != nil {
		return ports.Record{}, fmt.Errorf("store: update %s: %w", rec.Key, err)
	}
	now := s.clock.Now()
	next := rec
	next.Version = rec.Version + 1
	item, err := encodeItem(next, next.Version, s.shards, s.expiry(next, now))
	if err != nil {
		return ports.Record{}, fmt.Errorf("store: update %s: %w", rec.Key, err)
	}
	out, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 aws.String(s.table),
		Item:                      item,
		ConditionExpression:       aws.String(condAtVer),
		ExpressionAttributeNames:  map[string]string{"#v": attrVersion, "#exp": attrExpires},
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": attrN(rec.Version), ":now": attrN(now.Unix())},
		// Real DynamoDB returns the stored item with the failure, which
		// tells a conflict from a missing key without another read;
		// emulators that ignore it get a follow-up read (explain).
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		ReturnConsumedCapacity:              types.ReturnConsumedCapacityTotal,
	})
	if isConditionFailed(err) {
		s.count("PutItem", true, 0)
		return ports.Record{}, s.explain(ctx, "update", rec.Key, rec.Version, err)
	}
	if err != nil {
		return ports.Record{}, fmt.Errorf("store: update %s: %w", rec.Key, err)
	}
	s.count("PutItem", true, 1, out.ConsumedCapacity)
	return withData(next), nil
}

// explain turns a failed version condition into ports.ErrNotFound (the key
// is missing or expired) or ports.ErrConflict (another version is stored),
// from the item returned with the failure or else a consistent read.
func (s *Store) explain(ctx context.Context, op string, key api.Key, want int64, condErr error) error {
	var ccf *types.ConditionalCheckFailedException
	var (
		st  stored
		ok  bool
		err error
	)
	if errors.As(condErr, &ccf) && len(ccf.Item) > 0 {
		st, err = decodeItem(ccf.Item)
		ok = err == nil && !st.expired(s.clock.Now())
	} else {
		st, ok, err = s.get(ctx, op, key)
	}
	switch {
	case err != nil:
		return fmt.Errorf("store: %s %s: condition failed, then: %w", op, key, err)
	case !ok:
		return fmt.Errorf("store: %s %s: %w", op, key, ports.ErrNotFound)
	default:
		return fmt.Errorf("store: %s %s at version %d (stored %d): %w", op, key, want, st.rec.Version, ports.ErrConflict)
	}
}

// Delete removes key. With version > 0 the delete is conditional
// (ports.ErrConflict on mismatch); version 0 deletes unconditionally. A
// missing key is ports.ErrNotFound; a negative version is a permanent error.
func (s *Store) Delete(ctx context.Context, key api.Key, version int64) error {
	if version < 0 {
		return errs.Permanentf("store: delete %s: version: must be >= 0 (0 = unconditional), got %d", key, version)
	}
	if err := checkKey("key", key); err != nil {
		return fmt.Errorf("store: delete %s: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: delete %s: %w", key, err)
	}
	now := s.clock.Now()
	in := &dynamodb.DeleteItemInput{
		TableName:                 aws.String(s.table),
		Key:                       keyItem(key),
		ConditionExpression:       aws.String(condExists),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#exp": attrExpires},
		ExpressionAttributeValues: map[string]types.AttributeValue{":now": attrN(now.Unix())},
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	}
	if version > 0 {
		in.ConditionExpression = aws.String(condAtVer)
		in.ExpressionAttributeNames = map[string]string{"#v": attrVersion, "#exp": attrExpires}
		in.ExpressionAttributeValues[":v"] = attrN(version)
		in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	}
	out, err := s.db.DeleteItem(ctx, in)
	if isConditionFailed(err) {
		s.count("DeleteItem", true, 0)
		if version == 0 {
			return fmt.Errorf("store: delete %s: %w", key, ports.ErrNotFound)
		}
		return s.explain(ctx, "delete", key, version, err)
	}
	if err != nil {
		return fmt.Errorf("store: delete %s: %w", key, err)
	}
	s.count("DeleteItem", true, 1, out.ConsumedCapacity)
	return nil
}

// List returns the records of opts.Kind (required), optionally restricted
// to one namespace and to one owner, ordered by namespace and name. It
// queries the kind_ns index (or the owner index when opts.Owner is set) for
// keys and reads the items with consistent BatchGetItem calls, keeping only
// those that still match (the indexes are eventually consistent).
func (s *Store) List(ctx context.Context, opts ports.ListOptions) ([]ports.Record, error) {
	if opts.Kind == "" {
		return nil, errs.Permanentf("store: list: kind: must not be empty")
	}
	fail := func(err error) ([]ports.Record, error) { return nil, fmt.Errorf("store: list %s: %w", opts.Kind, err) }
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	in, _ := s.listQuery(opts)
	var keys []map[string]types.AttributeValue
	p := dynamodb.NewQueryPaginator(s.db, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fail(err)
		}
		s.count("Query", false, len(page.Items), page.ConsumedCapacity)
		for _, it := range page.Items {
			if pk, ok := it[attrPK]; ok {
				keys = append(keys, map[string]types.AttributeValue{attrPK: pk})
			}
		}
	}
	items, err := s.batchGet(ctx, keys)
	if err != nil {
		return fail(err)
	}
	now := s.clock.Now()
	out := make([]ports.Record, 0, len(items))
	for _, it := range items {
		st, err := decodeItem(it)
		if err != nil {
			return fail(err)
		}
		r := st.rec
		if st.expired(now) || r.Key.Kind != opts.Kind ||
			(opts.Namespace != "" && r.Key.Namespace != opts.Namespace) ||
			(!opts.Owner.IsZero() && r.Owner != opts.Owner) {
			continue
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b ports.Record) int {
		return cmp.Or(cmp.Compare(a.Key.Namespace, b.Key.Namespace), cmp.Compare(a.Key.Name, b.Key.Name))
	})
	return out, nil
}

// listQuery returns the Query of opts' listing, on the kind index (or
// the owner index with an owner), for pk values starting with prefix.
func (s *Store) listQuery(opts ports.ListOptions) (in *dynamodb.QueryInput, prefix string) {
	prefix = opts.Kind + "/"
	if opts.Namespace != "" {
		prefix += opts.Namespace + "/"
	}
	in = &dynamodb.QueryInput{
		TableName:                aws.String(s.table),
		KeyConditionExpression:   aws.String(`#h = :h AND begins_with(#pk, :prefix)`),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":prefix": attrS(prefix),
		},
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	}
	if opts.Owner.IsZero() {
		in.IndexName = aws.String(IndexKind)
		in.ExpressionAttributeNames["#h"] = attrKind
		in.ExpressionAttributeValues[":h"] = attrS(opts.Kind)
	} else {
		in.IndexName = aws.String(IndexOwner)
		in.ExpressionAttributeNames["#h"] = attrOwner
		in.ExpressionAttributeValues[":h"] = attrS(opts.Owner.String())
	}
	return in, prefix
}

// ListPage returns a page of List's records in key (pk) order: a Query of
// the index with Limit, from the continue token's pk, then one
// consistent BatchGetItem of the page's keys (at most 100 per call). A
// page reads about Limit index entries and items, whatever the size of
// the listing. The last page may be empty: DynamoDB tells that nothing
// follows only by not returning LastEvaluatedKey.
func (s *Store) ListPage(ctx context.Context, opts ports.ListOptions) (ports.Page, error) {
	if opts.Kind == "" {
		return ports.Page{}, errs.Permanentf("store: list: kind: must not be empty")
	}
	if opts.Limit < 0 {
		return ports.Page{}, errs.Permanentf("store: list: limit: must be >= 0, got %d", opts.Limit)
	}
	fail := func(err error) (ports.Page, error) {
		return ports.Page{}, fmt.Errorf("store: list %s: %w", opts.Kind, err)
	}
	after, err := ports.DecodeContinue(opts, 1)
	if err != nil {
		return ports.Page{}, errs.Permanent(fmt.Errorf("store: list %s: %w", opts.Kind, err))
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	in, prefix := s.listQuery(opts)
	if after != nil {
		if !strings.HasPrefix(after[0], prefix) {
			return ports.Page{}, errs.Permanent(fmt.Errorf("store: list %s: continue: position outside the listing: %w", opts.Kind, ports.ErrInvalidContinue))
		}
		start := map[string]types.AttributeValue{attrPK: attrS(after[0])}
		if opts.Owner.IsZero() {
			start[attrKind] = attrS(opts.Kind)
		} else {
			start[attrOwner] = attrS(opts.Owner.String())
		}
		in.ExclusiveStartKey = start
	}
	var (
		keys []map[string]types.AttributeValue
		last string
		more bool
	)
	for {
		if opts.Limit > 0 {
			in.Limit = aws.Int32(int32(min(opts.Limit-len(keys), math.MaxInt32)))
		}
		page, err := s.db.Query(ctx, in)
		if err != nil {
			return fail(err)
		}
		s.count("Query", false, len(page.Items), page.ConsumedCapacity)
		for _, it := range page.Items {
			if pk, ok := it[attrPK]; ok {
				keys = append(keys, map[string]types.AttributeValue{attrPK: pk})
			}
		}
		more = len(page.LastEvaluatedKey) > 0
		if more {
			var ok bool
			if last, ok = stringAttr(page.LastEvaluatedKey[attrPK]); !ok {
				return fail(fmt.Errorf("LastEvaluatedKey without %s", attrPK))
			}
		}
		if !more || (opts.Limit > 0 && len(keys) >= opts.Limit) {
			break
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
	items, err := s.batchGet(ctx, keys)
	if err != nil {
		return fail(err)
	}
	now := s.clock.Now()
	out := make([]ports.Record, 0, len(items))
	for _, it := range items {
		st, err := decodeItem(it)
		if err != nil {
			return fail(err)
		}
		r := st.rec
		if st.expired(now) || r.Key.Kind != opts.Kind ||
			(opts.Namespace != "" && r.Key.Namespace != opts.Namespace) ||
			(!opts.Owner.IsZero() && r.Owner != opts.Owner) {
			continue
		}
		out = append(out, r)
	}
	// BatchGetItem answers in no order: put the page back in pk order.
	slices.SortFunc(out, func(a, b ports.Record) int { return cmp.Compare(a.Key.String(), b.Key.String()) })
	p := ports.Page{Records: out}
	if more {
		p.Continue = ports.EncodeContinue(opts, last)
	}
	return p, nil
}

// stringAttr returns the value of an S attribute.
func stringAttr(v types.AttributeValue) (string, bool) {
	s, ok := v.(*types.AttributeValueMemberS)
	if !ok {
		return "", false
	}
	return s.Value, true
}

// batchGet reads keys consistently, batchGetMax at a time. Keys that
// DynamoDB leaves unprocessed are asked again at most batchGetPasses times
// in a row; then the call fails (transient). Missing items are skipped.
func (s *Store) batchGet(ctx context.Context, keys []map[string]types.AttributeValue) ([]map[string]types.AttributeValue, error) {
	var out []map[string]types.AttributeValue
	for len(keys) > 0 {
		n := min(len(keys), batchGetMax)
		pending := keys[:n]
		keys = keys[n:]
		for pass := 0; len(pending) > 0; pass++ {
			if pass == batchGetPasses {
				return nil, fmt.Errorf("batch get: %d keys still unprocessed after %d passes (throttled)", len(pending), pass)
			}
			res, err := s.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{
				RequestItems: map[string]types.KeysAndAttributes{
					s.table: {Keys: pending, ConsistentRead: aws.Bool(true)},
				},
				ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
			})
			if err != nil {
				return nil, fmt.Errorf("batch get: %w", err)
			}
			got := res.Responses[s.table]
			cc := make([]*types.ConsumedCapacity, len(res.ConsumedCapacity))
			for i := range res.ConsumedCapacity {
				cc[i] = &res.ConsumedCapacity[i]
			}
			s.count("BatchGetItem", false, len(got), cc...)
			out = append(out, got...)
			pending = res.UnprocessedKeys[s.table].Keys
		}
	}
	return out, nil
}

// dueCursor walks one shard of the due index.
type dueCursor struct {
	shard int
	items []ports.DueItem
	next  map[string]types.AttributeValue // LastEvaluatedKey; nil when done
	done  bool
}

// Due returns up to limit (> 0) records whose NextRunAt is set and not
// after now, oldest first (ties in key order). It queries every shard of
// the due index for items with next_run_at <= now, in pages of about
// 2×limit/Shards items, and merges them; so it reads the due items it
// returns plus at most about one page per shard, never the whole table.
func (s *Store) Due(ctx context.Context, now time.Time, limit int) ([]ports.DueItem, error) {
	if limit <= 0 {
		return nil, errs.Permanentf("store: due: limit: must be > 0, got %d", limit)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: due: %w", err)
	}
	page := int32(max(4, (2*limit+s.shards-1)/s.shards))
	cutoff := now.UnixMilli()
	cursors := make([]*dueCursor, s.shards)
	failures := make([]error, s.shards)
	var wg sync.WaitGroup
	for i := range cursors {
		cursors[i] = &dueCursor{shard: i}
		wg.Add(1)
		go func() {
			defer wg.Done()
			failures[i] = s.fetchDue(ctx, cursors[i], cutoff, page)
		}()
	}
	wg.Wait()
	if err := errors.Join(failures...); err != nil {
		return nil, fmt.Errorf("store: due: %w", err)
	}
	var out []ports.DueItem
	for len(out) < limit {
		var best *dueCursor
		for _, c := range cursors {
			if len(c.items) == 0 {
				continue
			}
			if best == nil || dueLess(c.items[0], best.items[0]) {
				best = c
			}
		}
		if best == nil {
			break
		}
		out = append(out, best.items[0])
		best.items = best.items[1:]
		if len(best.items) == 0 && !best.done {
			if err := s.fetchDue(ctx, best, cutoff, page); err != nil {
				return nil, fmt.Errorf("store: due: %w", err)
			}
		}
	}
	return out, nil
}

// dueLess orders due items by time, then key.
func dueLess(a, b ports.DueItem) bool {
	if !a.NextRunAt.Equal(b.NextRunAt) {
		return a.NextRunAt.Before(b.NextRunAt)
	}
	return a.Key.String() < b.Key.String()
}

// fetchDue reads the next page of c's shard (items due at cutoff), sorted.
func (s *Store) fetchDue(ctx context.Context, c *dueCursor, cutoff int64, page int32) error {
	res, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName:                aws.String(s.table),
		IndexName:                aws.String(IndexDue),
		KeyConditionExpression:   aws.String(`#s = :s AND #t <= :t`),
		ExpressionAttributeNames: map[string]string{"#s": attrShard, "#t": attrNextRun},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":s": attrN(int64(c.shard)), ":t": attrN(cutoff),
		},
		ScanIndexForward:       aws.Bool(true),
		Limit:                  aws.Int32(page),
		ExclusiveStartKey:      c.next,
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	})
	if err != nil {
		return fmt.Errorf("shard %d: %w", c.shard, err)
	}
	s.count("Query", false, len(res.Items), res.ConsumedCapacity)
	for _, it := range res.Items {
		pk, err := getS(it, attrPK, true)
		if err != nil {
			return fmt.Errorf("shard %d: %w", c.shard, err)
		}
		k, err := api.SplitKey(pk)
		if err != nil {
			return fmt.Errorf("shard %d: %w", c.shard, err)
		}
		ms, err := getN(it, attrNextRun, true)
		if err != nil {
			return fmt.Errorf("shard %d: item %s: %w", c.shard, pk, err)
		}
		c.items = append(c.items, ports.DueItem{Key: k, NextRunAt: time.UnixMilli(ms).UTC()})
	}
	// Within a page the index orders by time only; order ties by key.
	slices.SortStableFunc(c.items, func(a, b ports.DueItem) int {
		switch {
		case dueLess(a, b):
			return -1
		case dueLess(b, a):
			return 1
		}
		return 0
	})
	c.next = res.LastEvaluatedKey
	c.done = len(res.LastEvaluatedKey) == 0
	return nil
}
