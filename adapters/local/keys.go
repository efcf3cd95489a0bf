package local

import "github.com/certfn/certfn/core/api"

// encodeKey renders k as api.Key.String, or "" for the zero key (the
// owner column of a record without owner).
func encodeKey(k api.Key) string {
	if k.IsZero() {
		return ""
	}
	return k.String()
}

// decodeKey parses the form written by encodeKey: "" is the zero key,
// anything else goes through api.SplitKey, which accepts any kind (the
// store holds whatever it was given).
func decodeKey(s string) (api.Key, error) {
	if s == "" {
		return api.Key{}, nil
	}
	return api.SplitKey(s)
}
