package main

import (
	"strings"
	"testing"
)

const http01ClusterIssuer = `apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: le-http}
spec:
  acme:
    server: https://127.0.0.1:1/directory
    privateKeySecretRef: {name: le-http-account}
    solvers:
    - http01: {ingress: {}}
---
apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: dns-only, namespace: default}
spec:
  acme:
    server: https://127.0.0.1:1/directory
    privateKeySecretRef: {name: dns-account}
    solvers:
    - dns01: {webhook: {solverName: nothing, groupName: example.com}}
`

// serve without --http01-listen warns at start about the ACME issuers
// with an http01 solver, naming them and the flag; with the flag, or
// without such issuers, it does not.
func TestServeWarnsHTTP01WithoutListener(t *testing.T) {
	dir := setupEnv(t)
	t.Setenv("CERTFN_HTTP01_LISTEN", "")
	const warn = "no --http01-listen"
	r := cli(t, dir, "", "serve", "--until-idle")
	if r.code != 0 || strings.Contains(r.stderr, warn) {
		t.Fatalf("no issuers: exit %d, stderr %q", r.code, r.stderr)
	}
	ok(t, dir, "apply", "-f", writeFile(t, dir, "issuers.yaml", http01ClusterIssuer))
	r = cli(t, dir, "", "serve", "--until-idle")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	var line string
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.Contains(l, warn) {
			line = l
		}
	}
	if !strings.Contains(line, "level=WARN") || !strings.Contains(line, "ClusterIssuer le-http") ||
		!strings.Contains(line, "--http01-listen :80") || strings.Contains(line, "dns-only") {
		t.Fatalf("warning line %q\nstderr: %s", line, r.stderr)
	}
	r = cli(t, dir, "", "serve", "--until-idle", "--http01-listen", "127.0.0.1:0")
	if r.code != 0 || strings.Contains(r.stderr, warn) {
		t.Fatalf("with --http01-listen: exit %d, stderr %q", r.code, r.stderr)
	}
}
