package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/certfn/certfn/adapters/webhook/webhooktest"
	"github.com/certfn/certfn/core/ports"
)

// serve --notify-webhook-url, through the CLI and real time: the receiver
// fails the first delivery (503) and serve retries it a second later
// within the same --until-idle run; a renewal whose delivery the receiver
// puts off (503, Retry-After: 3600) ends the run undelivered, and the
// next serve (a new process on the same data directory) delivers it with
// the same webhook-id. The start line names the receiver by scheme and
// host only; the secret is never printed.
func TestServeNotifyWebhook(t *testing.T) {
	dir := setupEnv(t)
	recv := webhooktest.New(t)
	secret := filepath.Join(t.TempDir(), "webhook-secret")
	if err := os.WriteFile(secret, []byte(webhooktest.Secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	serve := func() result {
		t.Helper()
		r := cli(t, dir, "", "serve", "--until-idle", "--auto-approve", "*", "--notify-webhook-url", recv.URL+"/hooks/T0K3N",
			"--notify-webhook-secret-file", secret, "--notify-deployment", "edge-1")
		if r.code != 0 {
			t.Fatalf("serve: exit %d\nstderr: %s", r.code, r.stderr)
		}
		if strings.Contains(r.stderr, "T0K3N") || strings.Contains(r.stderr, strings.TrimPrefix(webhooktest.Secret, "whsec_")) {
			t.Fatalf("serve printed the URL's path or the secret:\n%s", r.stderr)
		}
		return r
	}
	ok(t, dir, "apply", "-f", writeFile(t, t.TempDir(), "m.yaml", selfSignedIssuer+"---\n"+appCert))
	recv.FailNext(1, http.StatusServiceUnavailable, "")
	if r := serve(); !strings.Contains(r.stderr, "notifications: webhook to "+recv.URL+" (deployment edge-1") {
		t.Fatalf("no start line naming the receiver:\n%s", r.stderr)
	}
	ds := recv.Deliveries()
	if len(ds) != 2 || ds[0].Status != 503 || ds[1].Status != 204 || ds[0].ID != ds[1].ID || ds[1].Notification.Type != ports.NotificationIssued {
		t.Fatalf("deliveries %+v, want a failed then an accepted Issued, one webhook-id", ds)
	}

	ok(t, dir, "renew", "app")
	recv.FailNext(-1, http.StatusServiceUnavailable, "3600")
	serve()
	put := recv.Deliveries()[2:]
	if len(put) != 1 || put[0].Status != 503 || put[0].Notification.Type != ports.NotificationRenewed {
		t.Fatalf("deliveries while put off: %+v, want one failed Renewed", put)
	}
	recv.FailNext(0, 0, "")
	serve()
	acc := recv.Accepted()
	last := recv.Deliveries()[len(recv.Deliveries())-1]
	if len(acc) != 2 || acc[1].Type != ports.NotificationRenewed || acc[1].Revision != 2 || last.ID != put[0].ID {
		t.Fatalf("accepted %v (last webhook-id %s, put off %s), want Issued then Renewed revision 2 with the put-off delivery's id", acc, last.ID, put[0].ID)
	}
}

// Bad notification flags stop serve before it opens anything, naming
// the flag.
func TestServeNotifyFlags(t *testing.T) {
	dir := setupEnv(t)
	failsWith(t, cli(t, dir, "", "serve", "--until-idle", "--notify-webhook-url", "http://hooks.example.com/x"), "--notify-webhook-url")
	failsWith(t, cli(t, dir, "", "serve", "--until-idle", "--notify-webhook-url", "https://hooks.example.com/x"), "--notify-webhook-secret-file: required")
	failsWith(t, cli(t, dir, "", "serve", "--until-idle", "--notify-webhook-url", "https://hooks.example.com/x", "--notify-expiry-days", "-1"), "--notify-expiry-days: -1")
	// Without a URL the delivery settings would configure nothing.
	failsWith(t, cli(t, dir, "", "serve", "--until-idle", "--notify-expiry-days", "7"), "--notify-expiry-days: set without --notify-webhook-url")
	failsWith(t, cli(t, dir, "", "serve", "--until-idle", "--notify-webhook-timeout", "5s"), "--notify-webhook-timeout: set without --notify-webhook-url")
}
