package firestore

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"time"

	gfs "cloud.google.com/go/firestore"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// Field names of a document (one per resource; its ID is the encoded key,
// see docID).
const (
	FieldKind      = "kind"      // string: the key's kind (List)
	FieldNamespace = "namespace" // string: the key's namespace, "" for cluster-scoped kinds (List)
	FieldOwner     = "owner"     // string: the owner's key (api.Key.String()); absent when none (List by owner)
	FieldVersion   = "version"   // integer: 1 on create, +1 per update
	FieldNextRunAt = "nextRunAt" // timestamp (milliseconds): present only while the record is due sometime (Due)
	FieldExpireAt  = "expireAt"  // timestamp: the TTL; present only when Options.ExpiresAt sets one
	FieldData      = "data"      // bytes: the resource JSON, gzip-compressed when enc says so
	FieldEnc       = "enc"       // string: "gzip" when data is compressed; absent otherwise
)

// Index configuration of the collection. Firestore indexes every field of
// every document by default (ascending, descending and array-contains
// single-field indexes); infra/terraform/gcp declares these exemptions for
// the collection (google_firestore_field) and the TTL policy, and its
// tests compare them with these lists.
//
// No composite index is needed: List filters only on equalities (kind,
// namespace, owner), which Firestore serves by merging single-field
// indexes, and Due filters and orders on nextRunAt alone.
var (
	// AscendingOnlyFields are the fields queries use: only their
	// ascending single-field index is kept (index_config with one
	// ASCENDING index). An absent owner or nextRunAt leaves the document
	// out of that index: the due index is sparse, so Due reads only due
	// documents.
	AscendingOnlyFields = []string{FieldKind, FieldNamespace, FieldOwner, FieldNextRunAt}
	// IndexExemptFields are never queried and get no index at all (an
	// empty index_config): data is large (index entries would cost
	// storage and write latency for nothing, and values over 1500 bytes
	// are truncated in them anyway), expireAt is a TTL timestamp (Google's
	// advice: exempt it, to avoid hotspots on near-sequential values),
	// version and enc are read only with their document.
	IndexExemptFields = []string{FieldData, FieldEnc, FieldVersion, FieldExpireAt}
)

// TTLField is the field the collection's TTL policy names
// (google_firestore_field with ttl_config).
const TTLField = FieldExpireAt

// Size limits. Firestore refuses documents over 1 MiB (field names and
// values and the document name counted); certfn fails earlier, with a
// clear error, and compresses large resource JSON first.
const (
	// MaxDocBytes is the largest document the store writes (a margin under
	// Firestore's 1,048,576 bytes).
	MaxDocBytes = 1_000_000
	// compressAbove is the data size from which data is gzip-compressed
	// (kept compressed only when smaller).
	compressAbove = 8 * 1024
	// maxDataBytes bounds the uncompressed data read back (a corrupt or
	// hostile gzip stream cannot blow up memory).
	maxDataBytes = 16 << 20
)

// encGzip is FieldEnc's value for compressed data.
const encGzip = "gzip"

// document renders rec (its Version already set) as the fields of its
// document. expires is the TTL (zero: none). Absent optional fields are
// set to gfs.Delete, so that the same fields serve Create (which
// leaves them out) and a conditional Update that replaces every field.
func document(id string, rec ports.Record, expires time.Time) (map[string]any, error) {
	data, compressed, err := compress(rec.Data)
	if err != nil {
		return nil, err
	}
	fields := map[string]any{
		FieldKind:      rec.Key.Kind,
		FieldNamespace: rec.Key.Namespace,
		FieldVersion:   rec.Version,
		FieldData:      data,
		FieldOwner:     gfs.Delete,
		FieldNextRunAt: gfs.Delete,
		FieldExpireAt:  gfs.Delete,
		FieldEnc:       gfs.Delete,
	}
	if !rec.Owner.IsZero() {
		fields[FieldOwner] = rec.Owner.String()
	}
	if !rec.NextRunAt.IsZero() {
		fields[FieldNextRunAt] = rec.NextRunAt
	}
	if !expires.IsZero() {
		fields[FieldExpireAt] = expires.UTC()
	}
	if compressed {
		fields[FieldEnc] = encGzip
	}
	if n := docSize(id, fields); n > MaxDocBytes {
		return nil, errs.Permanentf("data: %d bytes (%d stored after compression) make a %d-byte document, over the %d-byte limit of the Firestore state store",
			len(rec.Data), len(data), n, MaxDocBytes)
	}
	return fields, nil
}

// forCreate returns fields without the deletions (Create writes a new
// document: an absent field is simply not written).
func forCreate(fields map[string]any) map[string]any {
	out := make(map[string]any, len(fields))
	for k, v := range fields {
		if v != gfs.Delete {
			out[k] = v
		}
	}
	return out
}

// forUpdate returns fields as the updates of a conditional Update that
// replaces the whole document.
func forUpdate(fields map[string]any) []gfs.Update {
	out := make([]gfs.Update, 0, len(fields))
	for k, v := range fields {
		out = append(out, gfs.Update{Path: k, Value: v})
	}
	return out
}

// docSize is Firestore's storage size of a document: the document name
// (its ID plus a margin for the collection path) plus 32 bytes, and per
// field its name + 1 and its value (strings + 1, bytes as is, numbers and
// timestamps 8).
func docSize(id string, fields map[string]any) int {
	n := len(id) + 1 + 256 + 32
	for name, v := range fields {
		n += len(name) + 1
		switch v := v.(type) {
		case string:
			n += len(v) + 1
		case []byte:
			n += len(v)
		default:
			n += 8
		}
	}
	return n
}

// compress gzips data over compressAbove and keeps the result if smaller.
// Data is never nil (an empty bytes field is stored).
func compress(data []byte) ([]byte, bool, error) {
	if data == nil {
		data = []byte{}
	}
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

// stored is a decoded document.
type stored struct {
	rec     ports.Record
	expires time.Time // zero: no TTL
	// updated is the document's update time: the precondition of the
	// next conditional write.
	updated time.Time
}

// expired reports whether the document's TTL has passed at now. Firestore
// deletes expired documents only eventually (typically within a day), so
// every read treats them as absent.
func (s stored) expired(now time.Time) bool { return !s.expires.IsZero() && !now.Before(s.expires) }

// decodeDoc parses a document written by document.
func decodeDoc(snap *gfs.DocumentSnapshot) (stored, error) {
	var out stored
	k, err := keyOfDocID(snap.Ref.ID)
	if err != nil {
		return out, err
	}
	out.rec.Key = k
	out.updated = snap.UpdateTime
	fail := func(err error) (stored, error) { return stored{}, fmt.Errorf("document %s: %w", snap.Ref.ID, err) }
	m := snap.Data()
	v, ok := m[FieldVersion].(int64)
	if !ok {
		return fail(fmt.Errorf("field %s: want an integer, got %T", FieldVersion, m[FieldVersion]))
	}
	out.rec.Version = v
	if o, ok := m[FieldOwner]; ok {
		s, ok := o.(string)
		if !ok {
			return fail(fmt.Errorf("field %s: want a string, got %T", FieldOwner, o))
		}
		if out.rec.Owner, err = api.SplitKey(s); err != nil {
			return fail(fmt.Errorf("field %s: %w", FieldOwner, err))
		}
	}
	if out.rec.NextRunAt, err = timeField(m, FieldNextRunAt); err != nil {
		return fail(err)
	}
	if out.expires, err = timeField(m, FieldExpireAt); err != nil {
		return fail(err)
	}
	out.rec.Data = []byte{}
	if d, ok := m[FieldData]; ok && d != nil {
		b, ok := d.([]byte)
		if !ok {
			return fail(fmt.Errorf("field %s: want bytes, got %T", FieldData, d))
		}
		out.rec.Data = b
	}
	switch enc := m[FieldEnc]; enc {
	case nil:
	case encGzip:
		if out.rec.Data, err = gunzip(out.rec.Data); err != nil {
			return fail(fmt.Errorf("field %s: %w", FieldData, err))
		}
	default:
		return fail(fmt.Errorf("field %s: unknown encoding %v", FieldEnc, enc))
	}
	return out, nil
}

// timeField reads an optional timestamp field (zero when absent), in UTC.
func timeField(m map[string]any, name string) (time.Time, error) {
	v, ok := m[name]
	if !ok || v == nil {
		return time.Time{}, nil
	}
	t, ok := v.(time.Time)
	if !ok {
		return time.Time{}, fmt.Errorf("field %s: want a timestamp, got %T", name, v)
	}
	return t.UTC(), nil
}
