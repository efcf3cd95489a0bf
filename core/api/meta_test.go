package api

import (
	"strings"
	"testing"
)

func TestKeyValidate(t *testing.T) {
	tests := []struct {
		k    Key
		want string // "" for valid, else the error
	}{
		{Key{Kind: KindCertificate, Namespace: "default", Name: "web"}, ""},
		{Key{Kind: "ClusterIssuer", Name: "ca"}, ""},
		{Key{Kind: "Widget", Name: "x"}, ""}, // any kind
		{Key{}, "kind: must not be empty"},
		{Key{Kind: KindCertificate, Namespace: "default"}, "name: must not be empty"},
		{Key{Kind: "A/B", Name: "x"}, `kind: "A/B" must not contain '/'`},
		{Key{Kind: KindCertificate, Namespace: "x/y", Name: "web"}, `namespace: "x/y" must not contain '/'`},
		{Key{Kind: KindCertificate, Namespace: "default", Name: "a/b"}, `name: "a/b" must not contain '/'`},
	}
	for _, tc := range tests {
		err := tc.k.Validate()
		if got := errString(err); got != tc.want {
			t.Errorf("%#v.Validate() = %q, want %q", tc.k, got, tc.want)
		}
		if err != nil {
			continue
		}
		// A valid key's string form splits back into the same key.
		if back, err := SplitKey(tc.k.String()); err != nil || back != tc.k {
			t.Errorf("SplitKey(%q) = %#v, %v; want %#v", tc.k.String(), back, err, tc.k)
		}
	}
}

func TestSplitKey(t *testing.T) {
	tests := []struct {
		in      string
		want    Key
		wantErr string
	}{
		{"Certificate/default/web", Key{Kind: "Certificate", Namespace: "default", Name: "web"}, ""},
		{"ClusterIssuer/ca", Key{Kind: "ClusterIssuer", Name: "ca"}, ""},
		{"Widget/x", Key{Kind: "Widget", Name: "x"}, ""},
		{"", Key{}, "want Kind/namespace/name or Kind/name"},
		{"Certificate", Key{}, "want Kind/namespace/name or Kind/name"},
		{"a/b/c/d", Key{}, "want Kind/namespace/name or Kind/name"},
		{"Certificate//web", Key{}, "empty part"},
		{"/web", Key{}, "empty part"},
		{"Certificate/", Key{}, "empty part"},
	}
	for _, tc := range tests {
		got, err := SplitKey(tc.in)
		if got != tc.want || !strings.Contains(errString(err), tc.wantErr) || (tc.wantErr == "") != (err == nil) {
			t.Errorf("SplitKey(%q) = %#v, %v; want %#v, error containing %q", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
