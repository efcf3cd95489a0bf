package main

import (
	"strings"
	"testing"
)

// TestClusterResourceNamespaceFlagRefused: the flag must be a DNS-1123
// label (a Kubernetes namespace name); the error names the flag.
func TestClusterResourceNamespaceFlagRefused(t *testing.T) {
	for _, tc := range []struct{ ns, rule string }{
		{"", "must not be empty"},
		{"..", "DNS-1123 label"},
		{"a/b", "DNS-1123 label"},
		{"Cert-Manager", "DNS-1123 label"},
		{"a.b", "DNS-1123 label"},
		{"-x", "DNS-1123 label"},
		{strings.Repeat("a", 64), "no more than 63"},
	} {
		t.Run(tc.ns, func(t *testing.T) {
			r := cli(t, t.TempDir(), "", "--cluster-resource-namespace", tc.ns, "get", "certificates")
			if r.code == 0 || !strings.Contains(r.stderr, "--cluster-resource-namespace") || !strings.Contains(r.stderr, tc.rule) {
				t.Fatalf("want a refusal naming the flag and %q, got exit %d, stderr %q", tc.rule, r.code, r.stderr)
			}
		})
	}
	if r := cli(t, t.TempDir(), "", "--cluster-resource-namespace", "cert-manager-2", "get", "certificates"); r.code != 0 {
		t.Fatalf("a valid namespace: exit %d, stderr %q", r.code, r.stderr)
	}
}
