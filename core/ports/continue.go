package ports

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// A ListPage continue token is the base64url JSON of the listing it
// continues (kind, namespace, owner) and the adapter's position after the
// last record returned (its key, in the adapter's own terms). It carries
// no record data. The listing is checked when a token comes back, so a
// token cannot continue another listing.
type continueToken struct {
	Kind      string   `json:"k"`
	Namespace string   `json:"ns,omitempty"`
	Owner     string   `json:"o,omitempty"`
	After     []string `json:"a"`
}

// EncodeContinue returns the token continuing opts' listing after the
// position after (one or more strings, e.g. a namespace and a name).
func EncodeContinue(opts ListOptions, after ...string) string {
	t := continueToken{Kind: opts.Kind, Namespace: opts.Namespace, After: after}
	if !opts.Owner.IsZero() {
		t.Owner = opts.Owner.String()
	}
	b, err := json.Marshal(t)
	if err != nil { // strings only: cannot fail
		panic(fmt.Sprintf("ports: encode continue token: %v", err))
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeContinue returns the position in opts.Continue ("" continues
// nothing: nil), which must hold n strings and belong to opts' listing;
// otherwise the error wraps ErrInvalidContinue.
func DecodeContinue(opts ListOptions, n int) ([]string, error) {
	if opts.Continue == "" {
		return nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(opts.Continue)
	if err != nil {
		return nil, fmt.Errorf("continue: not base64url: %w", ErrInvalidContinue)
	}
	var t continueToken
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("continue: malformed: %w", ErrInvalidContinue)
	}
	owner := ""
	if !opts.Owner.IsZero() {
		owner = opts.Owner.String()
	}
	if t.Kind != opts.Kind || t.Namespace != opts.Namespace || t.Owner != owner {
		return nil, fmt.Errorf("continue: the token continues another listing (kind, namespace or owner differ): %w", ErrInvalidContinue)
	}
	if len(t.After) != n {
		return nil, fmt.Errorf("continue: the token is not of this store (%d position fields, want %d): %w", len(t.After), n, ErrInvalidContinue)
	}
	return t.After, nil
}
