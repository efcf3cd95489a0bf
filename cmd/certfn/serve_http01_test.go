package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"
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

// syncBuffer is a bytes.Buffer safe for one writer and readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// An ACME issuer with an http01 solver applied while a serve without
// --http01-listen runs is warned about once, naming it.
func TestServeWarnsHTTP01IssuerAppliedWhileServing(t *testing.T) {
	dir := setupEnv(t)
	t.Setenv("CERTFN_HTTP01_LISTEN", "")
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--data", dir, "serve", "--sweep-interval", "100ms"}, strings.NewReader(""), &stdout, &stderr)
	}()
	defer func() {
		cancel()
		<-done
	}()
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(stderr.String(), "certfn serving data directory"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start: %s", stderr.String())
		}
	}
	ok(t, dir, "apply", "-f", writeFile(t, dir, "issuers.yaml", http01ClusterIssuer))
	const warn = `msg="ACME issuer with an http01 solver, but this serve has no --http01-listen`
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(stderr.String(), warn); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no warning after applying an http01 issuer: %s", stderr.String())
		}
	}
	// Only the warning lines: serve also logs the issuers' Events, which
	// name dns-only.
	var warnings []string
	for _, l := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(l, warn) {
			warnings = append(warnings, l)
		}
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], `issuer="ClusterIssuer le-http"`) || strings.Contains(warnings[0], "dns-only") {
		t.Fatalf("warnings:\n%s", stderr.String())
	}
}
