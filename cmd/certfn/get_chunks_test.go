package main

import (
	"fmt"
	"strings"
	"testing"
)

// `get` reads lists in chunks (--chunk-size, as kubectl): the table has
// one header and every row once, in order, whatever the chunk size; -o
// name and -o json see the same objects; a label selector filters each
// chunk; a negative size is refused.
func TestGetChunks(t *testing.T) {
	dir := setupEnv(t)
	var docs strings.Builder
	docs.WriteString("apiVersion: cert-manager.io/v1\nkind: Issuer\nmetadata: {name: ss, namespace: default}\nspec: {selfSigned: {}}\n")
	var want []string
	for _, ns := range []string{"default", "team-a"} {
		for i := range 5 {
			name := fmt.Sprintf("c%d", i)
			tier := "odd"
			if i%2 == 0 {
				tier = "even"
			}
			fmt.Fprintf(&docs, "---\napiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: %s, namespace: %s, labels: {tier: %s}}\n"+
				"spec: {secretName: %s-tls, dnsNames: [%s.example.com], issuerRef: {name: ss}}\n", name, ns, tier, name, name)
			want = append(want, ns+" "+name)
		}
	}
	if r := cli(t, dir, docs.String(), "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("apply: %d %s", r.code, r.stderr)
	}
	rows := func(out string) []string {
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) == 0 || !strings.HasPrefix(lines[0], "NAMESPACE") {
			t.Fatalf("no header:\n%s", out)
		}
		var got []string
		for _, l := range lines[1:] {
			if strings.HasPrefix(l, "NAMESPACE") {
				t.Fatalf("header repeated:\n%s", out)
			}
			f := strings.Fields(l)
			got = append(got, f[0]+" "+f[1])
		}
		return got
	}
	for _, size := range []string{"0", "1", "3", "500"} {
		if got := rows(ok(t, dir, "get", "certificates", "-A", "--chunk-size", size)); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("--chunk-size %s: rows %v, want %v", size, got, want)
		}
	}
	if got := rows(ok(t, dir, "get", "certificates", "-A", "--chunk-size", "2", "-l", "tier=even")); len(got) != 6 {
		t.Errorf("-l tier=even in chunks of 2: rows %v, want the 6 even ones", got)
	}
	if out := ok(t, dir, "get", "certificates", "-A", "--chunk-size", "2", "-o", "name"); strings.Count(out, "certificate.cert-manager.io/") != 10 {
		t.Errorf("-o name in chunks of 2:\n%s", out)
	}
	if out := ok(t, dir, "get", "certificates", "-A", "--chunk-size", "3", "-o", "json"); strings.Count(out, `"kind": "Certificate"`) != 10 {
		t.Errorf("-o json in chunks of 3: %d certificates", strings.Count(out, `"kind": "Certificate"`))
	}
	if out := ok(t, dir, "get", "certificates", "-A", "--chunk-size", "2", "-l", "tier=none"); out != "No certificates found.\n" {
		t.Errorf("nothing selected: %q", out)
	}
	failsWith(t, cli(t, dir, "", "get", "certificates", "--chunk-size", "-1"), "--chunk-size -1")
}
