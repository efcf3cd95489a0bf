package firestore

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
)

// MaxDocIDBytes is Firestore's limit on a document ID.
const MaxDocIDBytes = 1500

// Document IDs.
//
// A document's ID is its key's String form ("Kind/namespace/name" or
// "Kind/name") percent-encoded, so that it is reversible and valid for any
// key api.Key.Validate accepts:
//
//   - '/' (forbidden in an ID) becomes %2F and '%' itself %25, so
//     "Certificate/default/web" is stored as "Certificate%2Fdefault%2Fweb"
//     (still readable in the console);
//   - control characters (C0, DEL) are encoded too, so an ID never carries
//     a raw control character into logs or the console;
//   - a leading '_' becomes %5F: IDs matching __.*__ are reserved;
//   - "." and ".." (also reserved) cannot occur: every key has a separator.
//
// Any other character, non-ASCII UTF-8 included, is kept as is; a key that
// is not valid UTF-8 is refused (Firestore strings and IDs are UTF-8).
// The encoded ID must fit MaxDocIDBytes.

// docID returns the document ID of k, or a permanent error naming field
// when k cannot be stored.
func docID(field string, k api.Key) (string, error) {
	if err := k.Validate(); err != nil {
		return "", errs.Permanentf("%s.%w", field, err)
	}
	s := k.String()
	if !utf8.ValidString(s) {
		return "", errs.Permanentf("%s: %q is not valid UTF-8", field, s)
	}
	id := escapeID(s)
	if len(id) > MaxDocIDBytes {
		return "", errs.Permanentf("%s: %d bytes as a document ID, at most %d", field, len(id), MaxDocIDBytes)
	}
	return id, nil
}

// escapeID percent-encodes s as described above.
func escapeID(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '/' || c == '%' || c < 0x20 || c == 0x7f || (i == 0 && c == '_') {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// keyOfDocID reverses docID.
func keyOfDocID(id string) (api.Key, error) {
	s, err := unescapeID(id)
	if err != nil {
		return api.Key{}, fmt.Errorf("document ID %q: %w", id, err)
	}
	k, err := api.SplitKey(s)
	if err != nil {
		return api.Key{}, fmt.Errorf("document ID %q: %w", id, err)
	}
	return k, nil
}

// unescapeID decodes %XX sequences; anything else is copied.
func unescapeID(id string) (string, error) {
	if !strings.Contains(id, "%") {
		return id, nil
	}
	var b strings.Builder
	b.Grow(len(id))
	for i := 0; i < len(id); i++ {
		if id[i] != '%' {
			b.WriteByte(id[i])
			continue
		}
		if i+2 >= len(id) {
			return "", fmt.Errorf("truncated escape at byte %d", i)
		}
		hi, ok1 := unhex(id[i+1])
		lo, ok2 := unhex(id[i+2])
		if !ok1 || !ok2 {
			return "", fmt.Errorf("bad escape %q at byte %d", id[i:i+3], i)
		}
		b.WriteByte(hi<<4 | lo)
		i += 2
	}
	return b.String(), nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}
