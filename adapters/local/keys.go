package local

import (
	"fmt"
	"strings"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
)

// checkKey reports, as a permanent error naming field, a key the store
// cannot hold: kind and name are required and no part may contain '/',
// because the key's string form ("Kind/namespace/name") is what the owner
// column, the inbox and queue messages carry.
func checkKey(field string, k api.Key) error {
	parts := []struct{ name, value string }{{"kind", k.Kind}, {"namespace", k.Namespace}, {"name", k.Name}}
	for _, p := range parts {
		if p.name != "namespace" && p.value == "" {
			return errs.Permanentf("%s.%s: must not be empty", field, p.name)
		}
		if strings.Contains(p.value, "/") {
			return errs.Permanentf("%s.%s: %q must not contain '/'", field, p.name, p.value)
		}
	}
	return nil
}

// encodeKey renders k as api.Key.String, or "" for the zero key.
func encodeKey(k api.Key) string {
	if k.IsZero() {
		return ""
	}
	return k.String()
}

// decodeKey parses the form written by encodeKey. Unlike api.ParseKey it
// accepts any kind: the store holds whatever it was given.
func decodeKey(s string) (api.Key, error) {
	if s == "" {
		return api.Key{}, nil
	}
	parts := strings.Split(s, "/")
	var k api.Key
	switch len(parts) {
	case 2:
		k = api.Key{Kind: parts[0], Name: parts[1]}
	case 3:
		k = api.Key{Kind: parts[0], Namespace: parts[1], Name: parts[2]}
	default:
		return api.Key{}, fmt.Errorf("key %q: want Kind/namespace/name or Kind/name", s)
	}
	if k.Kind == "" || k.Name == "" || (len(parts) == 3 && k.Namespace == "") {
		return api.Key{}, fmt.Errorf("key %q: empty part", s)
	}
	return k, nil
}
