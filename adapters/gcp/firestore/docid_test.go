package firestore

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
)

// Document IDs are the escaped key: readable, reversible, never a '/',
// never a reserved ID.
func TestDocID(t *testing.T) {
	tests := []struct {
		key  api.Key
		want string
	}{
		{api.Key{Kind: "Certificate", Namespace: "default", Name: "web"}, "Certificate%2Fdefault%2Fweb"},
		{api.Key{Kind: "ClusterIssuer", Name: "ca"}, "ClusterIssuer%2Fca"},
		{api.Key{Kind: "Event", Namespace: "a", Name: "Certificate.web"}, "Event%2Fa%2FCertificate.web"},
		{api.Key{Kind: "K", Namespace: "n", Name: "100%"}, "K%2Fn%2F100%25"},
		{api.Key{Kind: "__K", Name: "x__"}, "%5F_K%2Fx__"},
		{api.Key{Kind: "K", Name: "a\x00b\nc\x7f"}, "K%2Fa%00b%0Ac%7F"},
		{api.Key{Kind: "K", Name: "zürich ☃ %2F"}, "K%2Fzürich ☃ %252F"},
		{api.Key{Kind: "K", Name: ".."}, "K%2F.."},
	}
	for _, tc := range tests {
		id, err := docID("key", tc.key)
		if err != nil {
			t.Errorf("docID(%q): %v", tc.key, err)
			continue
		}
		if id != tc.want {
			t.Errorf("docID(%q) = %q, want %q", tc.key, id, tc.want)
		}
		back, err := keyOfDocID(id)
		if err != nil || back != tc.key {
			t.Errorf("keyOfDocID(%q) = %q, %v; want %q", id, back, err, tc.key)
		}
	}
	for _, bad := range []string{"K%2", "K%2Fx%G0", "K%", "nosep"} {
		if _, err := keyOfDocID(bad); err == nil {
			t.Errorf("keyOfDocID(%q): want an error", bad)
		}
	}
	long := api.Key{Kind: "K", Name: strings.Repeat("a", MaxDocIDBytes-len("K%2F"))}
	if _, err := docID("key", long); err != nil {
		t.Errorf("a key of exactly %d bytes: %v", MaxDocIDBytes, err)
	}
	long.Name += "a"
	if _, err := docID("key", long); !errs.IsPermanent(err) {
		t.Errorf("a key of %d bytes: %v, want a permanent error", MaxDocIDBytes+1, err)
	}
}

// Every key Validate accepts and that is valid UTF-8 encodes to a valid
// Firestore ID that decodes back to it.
func FuzzDocID(f *testing.F) {
	for _, s := range []string{"web", "100%", "__x__", "a\x00b", "zürich", "%2F", "..", "_"} {
		f.Add("Certificate", "default", s)
	}
	f.Add("__K", "", "x__")
	f.Fuzz(func(t *testing.T, kind, ns, name string) {
		k := api.Key{Kind: kind, Namespace: ns, Name: name}
		id, err := docID("key", k)
		if k.Validate() != nil || !utf8.ValidString(k.String()) {
			if err == nil {
				t.Fatalf("docID(%q) accepted an invalid key", k)
			}
			return
		}
		if err != nil {
			if len(escapeID(k.String())) > MaxDocIDBytes {
				return
			}
			t.Fatalf("docID(%q): %v", k, err)
		}
		if strings.Contains(id, "/") || id == "." || id == ".." || (strings.HasPrefix(id, "__") && strings.HasSuffix(id, "__")) || !utf8.ValidString(id) || len(id) > MaxDocIDBytes {
			t.Fatalf("docID(%q) = %q: not a valid document ID", k, id)
		}
		back, err := keyOfDocID(id)
		if err != nil || back != k {
			t.Fatalf("keyOfDocID(%q) = %q, %v; want %q", id, back, err, k)
		}
	})
}
