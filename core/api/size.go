package api

import "encoding/json"

// Size limits every mode enforces on an applied object, so that what one
// store accepts every store accepts: the smallest store is DynamoDB, whose
// items hold at most 400 KB (certfn's store writes at most 380 KB);
// Firestore documents hold 1 MiB; SQLite has no practical limit.
const (
	// MaxObjectBytes bounds an object's JSON encoding.
	MaxObjectBytes = 350_000
	// MaxAnnotationsBytes bounds the annotations of an object, keys and
	// values together, as Kubernetes does (256 KiB).
	MaxAnnotationsBytes = 256 << 10
)

// EncodedSize is the length of obj's JSON encoding.
func EncodedSize(obj Object) (int, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return 0, err
	}
	return len(b), nil
}
