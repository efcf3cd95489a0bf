package api

import (
	"strings"
	"testing"
)

// FuzzParseKey: a queue message body is parsed by ParseKey (SQS, Pub/Sub,
// the local inbox, kernel.HandleBody). Whatever the body, it never
// panics, and a key it accepts names a known kind in the right scope,
// passes Validate, and prints back as the body it was parsed from (so a
// key travels through a queue unchanged).
func FuzzParseKey(f *testing.F) {
	for _, s := range []string{
		"Certificate/default/web", "ClusterIssuer/selfsigned", "CertificateRequest/team-a/web-1", "Order/default/web-1-2649",
		"Challenge/default/web-1-2649-1234", "Certificate/web", "ClusterIssuer/default/x", "Widget/default/x", "",
		"/", "//", "Certificate//web", "Certificate/default/", "a/b/c/d", strings.Repeat("x", 600),
		"Certificate/default/web\n", " Certificate/default/web", "Certificate/dé/ü", "Certificate/default/a\x00b",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseKey(s)
		if err != nil {
			if k != (Key{}) {
				t.Fatalf("ParseKey(%q) failed (%v) but returned %+v", s, err, k)
			}
			return
		}
		info, ok := KindInfoFor(k.Kind)
		if !ok || info.Namespaced != (k.Namespace != "") || k.Name == "" {
			t.Fatalf("ParseKey(%q) = %+v: unknown kind or wrong scope", s, k)
		}
		if err := k.Validate(); err != nil {
			t.Fatalf("ParseKey(%q) = %+v, which Validate refuses: %v", s, k, err)
		}
		if k.String() != s {
			t.Fatalf("ParseKey(%q).String() = %q", s, k.String())
		}
		if len(s) > 512 {
			t.Fatalf("ParseKey accepted %d bytes", len(s))
		}
	})
}
