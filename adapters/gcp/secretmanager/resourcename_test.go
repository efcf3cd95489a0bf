package secretmanager

import (
	"strings"
	"testing"
)

func TestResourceName(t *testing.T) {
	for _, tc := range []struct{ prefix, ns, name, want string }{
		{"certfn", "default", "web-tls", "projects/p-1/secrets/certfn_tls_default_web-tls"},
		{"", "team-a", "www.example.com", "projects/p-1/secrets/certfn_tls_team-a_www_example_com"},
	} {
		if got := ResourceName("p-1", tc.prefix, tc.ns, tc.name); got != tc.want {
			t.Errorf("ResourceName(%q, %q, %q) = %q, want %q", tc.prefix, tc.ns, tc.name, got, tc.want)
		}
	}
	long := ResourceName("p-1", "certfn", "ns", strings.Repeat("a", 300))
	if id := strings.TrimPrefix(long, "projects/p-1/secrets/"); len(id) > maxIDLen || !strings.Contains(id, hashMark) {
		t.Errorf("long name: %q", long)
	}
}
