package main

import (
	"os"
	"path/filepath"
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
	// A valid namespace is taken (apply creates the data directory).
	issuer := "apiVersion: cert-manager.io/v1\nkind: ClusterIssuer\nmetadata: {name: ss}\nspec: {selfSigned: {}}\n"
	if r := cli(t, t.TempDir(), issuer, "--cluster-resource-namespace", "cert-manager-2", "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("a valid namespace: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestApplyRefusesTooLargeManifests: a manifest over 8 MiB, as a file or on
// stdin, is refused with a message naming it and the limit (not read whole,
// not decoded truncated).
func TestApplyRefusesTooLargeManifests(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	huge := "apiVersion: cert-manager.io/v1\nkind: ClusterIssuer\nmetadata:\n  name: x\n  annotations:\n    a: \"" + strings.Repeat("x", 10<<20) + "\"\nspec: {selfSigned: {}}\n"
	if err := os.WriteFile(big, []byte(huge), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, stdin string
		args        []string
		want        []string
	}{
		{"file", "", []string{"apply", "-f", big}, []string{big, "larger than 8388608 bytes (8 MiB)"}},
		{"directory", "", []string{"apply", "-f", dir}, []string{big, "larger than 8388608 bytes (8 MiB)"}},
		{"stdin", huge, []string{"apply", "-f", "-"}, []string{"stdin: larger than 8388608 bytes (8 MiB)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := cli(t, t.TempDir(), tc.stdin, tc.args...)
			for _, w := range tc.want {
				if r.code == 0 || !strings.Contains(r.stderr, w) {
					t.Fatalf("want exit != 0 and %q, got exit %d, stderr %q", w, r.code, truncateForTest(r.stderr))
				}
			}
		})
	}
	// Under the file limit but over the object limit: refused by apply's
	// validation, naming the object and the limit.
	small := filepath.Join(t.TempDir(), "ann.yaml")
	if err := os.WriteFile(small, []byte(strings.Replace(huge, strings.Repeat("x", 10<<20), strings.Repeat("x", 300<<10), 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	r := cli(t, t.TempDir(), "", "apply", "-f", small)
	if r.code == 0 || !strings.Contains(r.stderr, "ClusterIssuer/x") || !strings.Contains(r.stderr, "metadata.annotations") || !strings.Contains(r.stderr, "262144") {
		t.Fatalf("annotations over 256 KiB: exit %d, stderr %q", r.code, truncateForTest(r.stderr))
	}
}

// TestApplyRefusesBadSecretNameAndTrailingJSON: (a) and (c) through the CLI.
func TestApplyRefusesBadSecretNameAndTrailingJSON(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"ca secretName with ..", "apiVersion: cert-manager.io/v1\nkind: Issuer\nmetadata: {name: ca}\nspec: {ca: {secretName: ../../etc}}\n", "spec.ca.secretName"},
		{"trailing garbage", `{"apiVersion":"cert-manager.io/v1","kind":"ClusterIssuer","metadata":{"name":"x"},"spec":{"selfSigned":{}}} junk`, `unexpected "junk" after the JSON document, at line 1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			r := cli(t, dir, tc.in, "apply", "-f", "-")
			if r.code == 0 || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("want a refusal containing %q, got exit %d, stderr %q", tc.want, r.code, r.stderr)
			}
		})
	}
}

func truncateForTest(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
