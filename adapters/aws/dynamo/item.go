package dynamo

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"hash/fnv"
	"io"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// Size limits. DynamoDB rejects items over 400 KB (attribute names and
// values counted); certfn fails earlier, with a clear error, and compresses
// large resource JSON first.
const (
	// MaxItemBytes is the largest item the store writes (a margin under
	// DynamoDB's 400 KB).
	MaxItemBytes = 380 * 1000
	// compressAbove is the data size from which data is gzip-compressed
	// (kept compressed only when smaller).
	compressAbove = 8 * 1024
	// maxDataBytes bounds the uncompressed data read back (a corrupt or
	// hostile gzip stream cannot blow up memory).
	maxDataBytes = 16 << 20
)

// encGzip is attrEnc's value for compressed data.
const encGzip = "gzip"

// checkKey reports, as a permanent error naming field, a key the store
// cannot hold: one api.Key.Validate refuses (the key's string form is the
// item's partition key and the owner attribute, and List relies on its '/'
// separators), or one whose string form is over 1024 bytes, DynamoDB's
// limit for a sort key (it is the sort key of the kind and owner indexes).
func checkKey(field string, k api.Key) error {
	if err := k.Validate(); err != nil {
		return errs.Permanentf("%s.%w", field, err)
	}
	if n := len(k.String()); n > 1024 {
		return errs.Permanentf("%s: %d bytes long, at most 1024", field, n)
	}
	return nil
}

// shardOf returns the due-index shard of a partition key: FNV-1a of the key
// modulo shards, so that many items due at the same time spread over
// shards partitions instead of one hot partition.
func shardOf(pk string, shards int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(pk))
	return int(h.Sum32() % uint32(shards))
}

// Attribute value constructors.
func attrS(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func attrN(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// keyItem is the primary key of k.
func keyItem(k api.Key) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: attrS(k.String())}
}

// encodeItem renders rec at version as an item. expires is the TTL (zero:
// none). Data over compressAbove is compressed; an item still over
// MaxItemBytes is a permanent error naming the sizes (never the content).
func encodeItem(rec ports.Record, version int64, shards int, expires time.Time) (map[string]types.AttributeValue, error) {
	pk := rec.Key.String()
	item := map[string]types.AttributeValue{
		attrPK:      attrS(pk),
		attrVersion: attrN(version),
		attrKind:    attrS(rec.Key.Kind),
	}
	if rec.Key.Namespace != "" {
		item[attrNamespace] = attrS(rec.Key.Namespace)
	}
	if !rec.Owner.IsZero() {
		item[attrOwner] = attrS(rec.Owner.String())
	}
	if !rec.NextRunAt.IsZero() {
		item[attrShard] = attrN(int64(shardOf(pk, shards)))
		item[attrNextRun] = attrN(rec.NextRunAt.UnixMilli())
	}
	if !expires.IsZero() {
		item[attrExpires] = attrN(expires.Unix())
	}
	data, compressed, err := compress(rec.Data)
	if err != nil {
		return nil, err
	}
	if len(data) > 0 {
		item[attrData] = &types.AttributeValueMemberB{Value: data}
	}
	if compressed {
		item[attrEnc] = attrS(encGzip)
	}
	if n := itemSize(item); n > MaxItemBytes {
		return nil, errs.Permanentf("data: %d bytes (%d stored after compression) make a %d-byte item, over the %d-byte limit of the DynamoDB state store",
			len(rec.Data), len(data), n, MaxItemBytes)
	}
	return item, nil
}

// compress gzips data over compressAbove and keeps the result if smaller.
func compress(data []byte) ([]byte, bool, error) {
	if len(data) <= compressAbove {
		return data, false, nil
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		return nil, false, fmt.Errorf("data: compress: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, false, fmt.Errorf("data: compress: %w", err)
	}
	if buf.Len() >= len(data) {
		return data, false, nil
	}
	return buf.Bytes(), true, nil
}

// itemSize approximates DynamoDB's item size: attribute names plus values
// (numbers counted by their decimal length, an overestimate).
func itemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name)
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			n += len(v.Value)
		case *types.AttributeValueMemberN:
			n += len(v.Value)
		case *types.AttributeValueMemberB:
			n += len(v.Value)
		default:
			n += 64
		}
	}
	return n
}

// stored is a decoded item.
type stored struct {
	rec     ports.Record
	expires time.Time // zero: no TTL
}

// expired reports whether the item's TTL has passed at now. DynamoDB
// deletes expired items only eventually (within days), so every read
// treats them as absent.
func (s stored) expired(now time.Time) bool { return !s.expires.IsZero() && !now.Before(s.expires) }

// decodeItem parses an item written by encodeItem.
func decodeItem(item map[string]types.AttributeValue) (stored, error) {
	var out stored
	pk, err := getS(item, attrPK, true)
	if err != nil {
		return out, err
	}
	if out.rec.Key, err = api.SplitKey(pk); err != nil {
		return out, fmt.Errorf("%s: %w", attrPK, err)
	}
	fail := func(err error) (stored, error) { return stored{}, fmt.Errorf("item %s: %w", pk, err) }
	if out.rec.Version, err = getN(item, attrVersion, true); err != nil {
		return fail(err)
	}
	owner, err := getS(item, attrOwner, false)
	if err != nil {
		return fail(err)
	}
	if owner != "" {
		if out.rec.Owner, err = api.SplitKey(owner); err != nil {
			return fail(fmt.Errorf("%s: %w", attrOwner, err))
		}
	}
	if _, ok := item[attrNextRun]; ok {
		ms, err := getN(item, attrNextRun, true)
		if err != nil {
			return fail(err)
		}
		out.rec.NextRunAt = time.UnixMilli(ms).UTC()
	}
	if _, ok := item[attrExpires]; ok {
		sec, err := getN(item, attrExpires, true)
		if err != nil {
			return fail(err)
		}
		out.expires = time.Unix(sec, 0).UTC()
	}
	enc, err := getS(item, attrEnc, false)
	if err != nil {
		return fail(err)
	}
	out.rec.Data = []byte{}
	if v, ok := item[attrData]; ok {
		b, ok := v.(*types.AttributeValueMemberB)
		if !ok {
			return fail(fmt.Errorf("%s: want a binary attribute, got %T", attrData, v))
		}
		out.rec.Data = b.Value
	}
	switch enc {
	case "":
	case encGzip:
		if out.rec.Data, err = gunzip(out.rec.Data); err != nil {
			return fail(fmt.Errorf("%s: %w", attrData, err))
		}
	default:
		return fail(fmt.Errorf("%s: unknown encoding %q", attrEnc, enc))
	}
	return out, nil
}

// gunzip decompresses data written by compress.
func gunzip(data []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("decompress: %w", err)
	}
	out, err := io.ReadAll(io.LimitReader(zr, maxDataBytes+1))
	if err != nil {
		return nil, fmt.Errorf("decompress: %w", err)
	}
	if len(out) > maxDataBytes {
		return nil, fmt.Errorf("decompress: more than %d bytes", maxDataBytes)
	}
	return out, nil
}

// getS reads a string attribute ("" when absent and not required).
func getS(item map[string]types.AttributeValue, name string, required bool) (string, error) {
	v, ok := item[name]
	if !ok {
		if required {
			return "", fmt.Errorf("attribute %s missing", name)
		}
		return "", nil
	}
	s, ok := v.(*types.AttributeValueMemberS)
	if !ok {
		return "", fmt.Errorf("attribute %s: want a string, got %T", name, v)
	}
	return s.Value, nil
}

// getN reads an integer number attribute (0 when absent and not required).
func getN(item map[string]types.AttributeValue, name string, required bool) (int64, error) {
	v, ok := item[name]
	if !ok {
		if required {
			return 0, fmt.Errorf("attribute %s missing", name)
		}
		return 0, nil
	}
	n, ok := v.(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("attribute %s: want a number, got %T", name, v)
	}
	i, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("attribute %s: %w", name, err)
	}
	return i, nil
}
