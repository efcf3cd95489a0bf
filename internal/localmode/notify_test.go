package localmode

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/certfn/certfn/adapters/webhook"
	"github.com/certfn/certfn/adapters/webhook/webhooktest"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/ports"
)

// notifyEnv is a data directory whose runtimes (one per "process") send
// their events to a webhooktest receiver, on one fake clock.
type notifyEnv struct {
	t     *testing.T
	dir   string
	clock *clock.Fake
	recv  *webhooktest.Receiver
}

func newNotifyEnv(t *testing.T) *notifyEnv {
	return &notifyEnv{t: t, dir: t.TempDir(), clock: clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)), recv: webhooktest.New(t)}
}

// open starts a "process" on the data directory: a new Runtime (its
// in-memory queue empty) that resumes the unfinished work, as serve does.
// wrap, when set, wraps its notifier and returns the store's wrapper.
func (e *notifyEnv) open(wrap func(ports.Notifier) (ports.Notifier, func(ports.Store) ports.Store)) *Runtime {
	e.t.Helper()
	n, err := webhook.New(webhook.Options{URL: e.recv.URL + "/hooks", Secrets: [][]byte{webhooktest.Key}, Deployment: "host-a", Clock: e.clock})
	if err != nil {
		e.t.Fatal(err)
	}
	o := Options{DataDir: e.dir, Clock: e.clock, AutoApprove: []string{"*"}, Notifier: n, Logger: slog.New(slog.DiscardHandler)}
	if wrap != nil {
		o.Notifier, o.WrapStore = wrap(n)
	}
	rt, err := Open(o)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := rt.Resume(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	return rt
}

// run processes what is visible, then moves the clock to the queue's next
// due time and again, up to rounds times or until nothing is queued.
func (e *notifyEnv) run(rt *Runtime, rounds int) {
	e.t.Helper()
	for i := 0; i < rounds; i++ {
		if _, err := rt.RunUntilIdle(context.Background(), 2); err != nil {
			e.t.Fatal(err)
		}
		next, ok := rt.Queue.NextDue()
		if !ok || next.Sub(e.clock.Now()) > 10*time.Minute {
			return
		}
		e.clock.Advance(next.Sub(e.clock.Now()))
	}
}

func (e *notifyEnv) cert(rt *Runtime) *api.Certificate {
	e.t.Helper()
	o, err := rt.Repo.Get(context.Background(), api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "web"})
	if err != nil {
		e.t.Fatal(err)
	}
	return o.(*api.Certificate)
}

const notifyManifests = `apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: selfsigned}
spec: {selfSigned: {}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web, namespace: default}
spec: {secretName: web-tls, dnsNames: [web.example.com], privateKey: {algorithm: ECDSA, size: 256}, issuerRef: {name: selfsigned, kind: ClusterIssuer}}
`

var admin = app.Caller{Username: "admin", Groups: []string{app.SuperuserGroup}}

// The webhook in local mode, at least once:
//   - the receiver fails the first two deliveries (503): the step returns
//     a transient error, the kernel backs the key off (1 s, then 2 s), and
//     the third attempt is accepted; every attempt carries the same
//     webhook-id, its own timestamp, and a signature the Standard Webhooks
//     library verifies; status.notifiedRevision records it once accepted;
//   - a renewal while the receiver is down, then the process stops: the
//     pending retry lived in the in-memory queue and dies with it, but the
//     event lives in the Certificate (revision 2, notifiedRevision 1), so
//     the next process delivers it, with the same webhook-id;
//   - a third process delivers nothing again.
func TestWebhookRetriesAndSurvivesARestart(t *testing.T) {
	e := newNotifyEnv(t)
	ctx := context.Background()
	e.recv.FailNext(2, http.StatusServiceUnavailable, "")
	rt := e.open(nil)
	objs, err := api.Decode([]byte(notifyManifests))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.App.Service.Apply(ctx, admin, objs); err != nil {
		t.Fatal(err)
	}
	e.run(rt, 20)
	ds := e.recv.Deliveries()
	if len(ds) != 3 || ds[0].Status != 503 || ds[1].Status != 503 || ds[2].Status != 204 {
		t.Fatalf("deliveries %+v, want 503, 503, 204", ds)
	}
	for i, d := range ds {
		if !d.Verified || d.ID != ds[0].ID || d.Notification.Type != ports.NotificationIssued || d.Notification.Revision != 1 {
			t.Errorf("delivery %d: verified %v id %s %s, want a verified Issued revision 1 with the first's id", i, d.Verified, d.ID, d.Notification)
		}
	}
	if gap1, gap2 := ds[1].Timestamp.Sub(ds[0].Timestamp), ds[2].Timestamp.Sub(ds[1].Timestamp); gap1 != time.Second || gap2 != 2*time.Second {
		t.Errorf("attempts %v apart, then %v, want the kernel's backoff of 1 s then 2 s", gap1, gap2)
	}
	if c := e.cert(rt); c.Status.NotifiedRevision == nil || *c.Status.NotifiedRevision != 1 {
		t.Fatalf("status.notifiedRevision = %v after the accepted delivery, want 1", c.Status.NotifiedRevision)
	}

	// Renewed while the receiver is down; the process stops with the
	// retry queued in memory.
	e.recv.FailNext(-1, http.StatusInternalServerError, "")
	if _, err := rt.App.Service.Renew(ctx, admin, api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "web"}); err != nil {
		t.Fatal(err)
	}
	e.run(rt, 3)
	failed := e.recv.Deliveries()[3:]
	if len(failed) == 0 || failed[0].Notification.Type != ports.NotificationRenewed || failed[len(failed)-1].Status != 500 {
		t.Fatalf("deliveries while down: %+v, want failed Renewed ones", failed)
	}
	if n, _ := rt.Queue.NextDue(); n.IsZero() {
		t.Fatal("no retry queued in memory before the restart: the test would not show that the restart recovers it")
	}
	if c := e.cert(rt); *c.Status.Revision != 2 || *c.Status.NotifiedRevision != 1 {
		t.Fatalf("before the restart: revision %d notified %d, want 2 and 1", *c.Status.Revision, *c.Status.NotifiedRevision)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}

	e.recv.FailNext(0, 0, "")
	rt = e.open(nil)
	e.run(rt, 5)
	accepted := e.recv.Accepted()
	if len(accepted) != 2 || accepted[1].Type != ports.NotificationRenewed || accepted[1].Revision != 2 {
		t.Fatalf("accepted %v, want Issued 1 then Renewed 2", accepted)
	}
	last := e.recv.Deliveries()[len(e.recv.Deliveries())-1]
	if last.ID != failed[0].ID || last.ID != webhook.MessageID("host-a", accepted[1]) {
		t.Errorf("the delivery after the restart has webhook-id %s, the failed ones %s: want the same", last.ID, failed[0].ID)
	}
	if c := e.cert(rt); *c.Status.NotifiedRevision != 2 {
		t.Fatalf("status.notifiedRevision = %d after the restart, want 2", *c.Status.NotifiedRevision)
	}
	_ = rt.Close()

	before := len(e.recv.Deliveries())
	rt = e.open(nil)
	defer rt.Close()
	e.run(rt, 5)
	if n := len(e.recv.Deliveries()); n != before {
		t.Errorf("a third process delivered %d more events, want none", n-before)
	}
}

// crashStore fails every Certificate write once armed: the process "dies"
// between the accepted delivery and the write that records it.
type crashStore struct {
	ports.Store
	armed *atomic.Bool
}

var errCrash = errors.New("crash injected after the delivery")

func (s crashStore) Update(ctx context.Context, rec ports.Record) (ports.Record, error) {
	if s.armed.Load() && rec.Key.Kind == api.KindCertificate {
		return ports.Record{}, errCrash
	}
	return s.Store.Update(ctx, rec)
}

// armingNotifier arms the crash once its notifier accepted an event.
type armingNotifier struct {
	ports.Notifier
	armed *atomic.Bool
}

func (n armingNotifier) Notify(ctx context.Context, note ports.Notification) error {
	err := n.Notifier.Notify(ctx, note)
	if err == nil {
		n.armed.Store(true)
	}
	return err
}

// A crash after the receiver accepted an event and before certfn recorded
// it delivers the event again after the restart, with the same webhook-id:
// at least once, and the duplicate is detectable.
func TestWebhookDuplicateAfterACrashIsDetectable(t *testing.T) {
	e := newNotifyEnv(t)
	ctx := context.Background()
	armed := &atomic.Bool{}
	rt := e.open(func(n ports.Notifier) (ports.Notifier, func(ports.Store) ports.Store) {
		return armingNotifier{Notifier: n, armed: armed}, func(s ports.Store) ports.Store { return crashStore{Store: s, armed: armed} }
	})
	objs, err := api.Decode([]byte(notifyManifests))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.App.Service.Apply(ctx, admin, objs); err != nil {
		t.Fatal(err)
	}
	e.run(rt, 1)
	if !armed.Load() {
		t.Fatalf("no delivery accepted: %+v", e.recv.Deliveries())
	}
	if c := e.cert(rt); c.Status.NotifiedRevision != nil {
		t.Fatalf("notifiedRevision %d recorded despite the crash", *c.Status.NotifiedRevision)
	}
	_ = rt.Close()

	rt = e.open(nil)
	defer rt.Close()
	e.run(rt, 5)
	acc := e.recv.Accepted()
	ds := e.recv.Deliveries()
	if len(acc) != 2 || acc[0].ID() != acc[1].ID() || ds[0].ID != ds[len(ds)-1].ID {
		t.Fatalf("accepted %v with webhook-ids %s and %s, want the same event twice with one id", acc, ds[0].ID, ds[len(ds)-1].ID)
	}
	if c := e.cert(rt); c.Status.NotifiedRevision == nil || *c.Status.NotifiedRevision != 1 {
		t.Fatalf("notifiedRevision = %v after the restart, want 1", c.Status.NotifiedRevision)
	}
}

// The flags' rules: each bad value is an error naming its flag; the
// secret file is checked for other users' access; nothing of the secret
// is in an error.
func TestNotifyConfig(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte(webhooktest.Secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(dir, "open")
	if err := os.WriteFile(open, []byte(webhooktest.Secret+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("whsec_c2hvcnQ=\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		c    NotifyConfig
		says string // "": valid
	}{
		{"off", NotifyConfig{ExpiryDays: 14}, ""},
		{"on", NotifyConfig{WebhookURL: "https://hooks.example.com/x", SecretFile: secret, ExpiryDays: 14}, ""},
		{"loopback http", NotifyConfig{WebhookURL: "http://127.0.0.1:9/x", SecretFile: secret}, ""},
		{"no secret file", NotifyConfig{WebhookURL: "https://hooks.example.com/x"}, "--notify-webhook-secret-file: required"},
		{"secret file without URL", NotifyConfig{SecretFile: secret}, "without --notify-webhook-url"},
		{"plain http", NotifyConfig{WebhookURL: "http://hooks.example.com/x", SecretFile: secret}, "--notify-webhook-url: http:// is allowed to a loopback host only"},
		{"world-readable secret", NotifyConfig{WebhookURL: "https://hooks.example.com/x", SecretFile: open}, "chmod o-rwx"},
		{"missing secret file", NotifyConfig{WebhookURL: "https://hooks.example.com/x", SecretFile: filepath.Join(dir, "none")}, "--notify-webhook-secret-file"},
		{"short secret", NotifyConfig{WebhookURL: "https://hooks.example.com/x", SecretFile: bad}, "line 1: a key of 5 bytes"},
		{"negative timeout", NotifyConfig{WebhookURL: "https://hooks.example.com/x", SecretFile: secret, Timeout: -time.Second}, "--notify-webhook-timeout"},
		{"expiry days", NotifyConfig{ExpiryDays: 400}, "--notify-expiry-days: 400"},
	} {
		n, window, line, err := tc.c.notifier()
		switch {
		case tc.says == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.says == "" && tc.c.WebhookURL != "" && (n == nil || !strings.Contains(line, "webhook to ") || strings.Contains(line, "/x")):
			t.Errorf("%s: notifier %v, start line %q (want one naming scheme and host only)", tc.name, n, line)
		case tc.says == "" && tc.c.WebhookURL != "" && window != time.Duration(tc.c.ExpiryDays)*24*time.Hour:
			t.Errorf("%s: expiry window %v", tc.name, window)
		case tc.says != "" && (err == nil || !strings.Contains(err.Error(), tc.says)):
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.says)
		case err != nil && strings.Contains(err.Error(), strings.TrimPrefix(webhooktest.Secret, webhook.SecretPrefix)):
			t.Errorf("%s: the error quotes the secret: %v", tc.name, err)
		}
	}
}
