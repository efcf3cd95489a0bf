package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/tests/pebbletest"
)

// A failing HTTP-01 self-check (the answer served at the self-check
// address is a 404, not the key authorization) is a Warning Event on the
// Challenge naming cert-manager's "Waiting for HTTP-01 challenge
// propagation: ..." reason, shown by `describe challenge`, and serve logs
// it at WARN when the same failure repeats, one check interval after the
// first failing check (it logs the Challenge's Started and Presented
// steps at INFO before).
func TestHTTP01SelfCheckFailureIsAnEventAndLogged(t *testing.T) {
	dir := setupEnv(t)
	t.Setenv("CERTFN_HTTP01_LISTEN", "")
	wrong := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(wrong.Close)
	peb := pebbletest.Start(t, pebbletest.FreePort(t))
	issuer := fmt.Sprintf(`apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: pebble}
spec:
  acme:
    server: %s
    email: test@example.com
    caBundle: %s
    privateKeySecretRef: {name: pebble-account}
    solvers:
    - http01: {ingress: {}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web, namespace: default}
spec:
  secretName: web-tls
  dnsNames: [web.example.com]
  issuerRef: {name: pebble, kind: ClusterIssuer}
`, peb.DirURL, base64.StdEncoding.EncodeToString(peb.TLSPEM))
	if r := cli(t, dir, issuer, "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("apply: %d %s", r.code, r.stderr)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		var out bytes.Buffer
		done <- run(ctx, []string{"--data", dir, "serve", "--sweep-interval", "100ms", "--auto-approve", "*",
			"--http01-listen", fmt.Sprintf("127.0.0.1:%d", pebbletest.FreePort(t)),
			"--http01-self-check-addr", strings.TrimPrefix(wrong.URL, "http://")}, strings.NewReader(""), &out, &stderr)
	}()
	defer func() {
		cancel()
		<-done
	}()
	const reason = "Waiting for HTTP-01 challenge propagation: "
	var presentedAt time.Time
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		s := stderr.String()
		if presentedAt.IsZero() && strings.Contains(s, "kind=Challenge") && strings.Contains(s, "reason=Presented") {
			presentedAt = time.Now()
		}
		if strings.Contains(s, "level=WARN msg=event") && strings.Contains(s, "reason=SelfCheckFailed") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve logged no failing self-check within 60 s:\n%s", s)
		}
	}
	// The check interval is 5 s (challenges.CheckInterval's default): the
	// first failing check follows the presentation at once and is recorded
	// in status.reason; the second, one interval later, is the Event.
	if presentedAt.IsZero() || time.Since(presentedAt) > 2*5*time.Second+time.Second {
		t.Fatalf("the failing self-check was logged %v after the Challenge was presented:\n%s", time.Since(presentedAt), stderr.String())
	}
	s := stderr.String()
	var line string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, "reason=SelfCheckFailed") {
			line = l
			break
		}
	}
	if !strings.Contains(line, "namespace=default kind=Challenge") || !strings.Contains(line, reason) || !strings.Contains(line, "type=Warning") {
		t.Fatalf("log line %q", line)
	}
	for _, want := range []string{"reason=Started", "reason=Presented", "kind=CertificateRequest", "reason=OrderCreated",
		`level=INFO msg=step namespace=default kind=Order`, "reason=OrderSubmitted"} {
		if !strings.Contains(s, want) {
			t.Errorf("serve's log lacks %q:\n%s", want, s)
		}
	}
	// describe shows it on the Challenge, and on the Certificate's story.
	out := ok(t, dir, "get", "challenges", "-o", "name")
	name := strings.TrimSpace(strings.Split(strings.TrimSpace(out), "\n")[0])
	name = name[strings.LastIndex(name, "/")+1:]
	d := ok(t, dir, "describe", "challenge", name)
	reasons, rows := eventRows(t, d)
	found := false
	for i, r := range reasons {
		if r == "SelfCheckFailed" && strings.Contains(rows[i], "Warning") && strings.Contains(rows[i], reason) {
			found = true
		}
	}
	if !found {
		t.Fatalf("describe challenge: no SelfCheckFailed Warning:\n%s", d)
	}
	if d := ok(t, dir, "describe", "certificate", "web"); !strings.Contains(d, "SelfCheckFailed") || !strings.Contains(d, "Challenge/"+name+": "+reason) {
		t.Fatalf("describe certificate: the Challenge's Warning is missing:\n%s", d)
	}
}
