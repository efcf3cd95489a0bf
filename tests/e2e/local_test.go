package e2e

import (
	"bytes"
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/kernel"
	"github.com/certfn/certfn/core/signers"
	"github.com/certfn/certfn/internal/localmode"
)

var callerLocal = app.Caller{Username: "local:test", Groups: []string{"system:authenticated", app.SuperuserGroup}}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// leafYAML is the examples' leaf certificate with the given changes.
func leafYAML(extra string) string {
	return `apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: app, namespace: default}
spec:
  secretName: app-tls
  dnsNames: [app.example.internal]
  duration: 2160h
  privateKey: {algorithm: ECDSA, size: 256` + extra + `}
  issuerRef: {name: demo-ca, kind: ClusterIssuer}
`
}

func TestExamplesIssueAPrivateCAChain(t *testing.T) {
	h := newHarness(t)
	h.applyExamples()
	h.run()
	h.requireReady("cert-manager", "demo-ca")
	web := h.requireReady("default", "web")
	if revision(web) != 1 {
		t.Fatalf("revision = %d, want 1", revision(web))
	}
	sec := h.secret("default", "web-tls")
	for _, k := range []string{"tls.crt", "tls.key", "ca.crt", "tls-combined.pem", "keystore.p12"} {
		if len(sec.Data[k]) == 0 {
			t.Errorf("secret web-tls has no %s", k)
		}
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(sec.Data["ca.crt"]) {
		t.Fatal("ca.crt holds no certificate")
	}
	l := leaf(t, sec)
	if _, err := l.Verify(x509.VerifyOptions{Roots: roots, DNSName: "api.example.internal", CurrentTime: t0.Add(time.Hour)}); err != nil {
		t.Fatalf("leaf does not verify against the CA: %v", err)
	}
	if got := h.requestNames("default", "web-"); len(got) != 1 || got[0] != "web-1" {
		t.Fatalf("requests = %v, want [web-1]", got)
	}
	// Nothing is left over: the next-private-key secret is gone.
	if _, err := h.rt.Secrets.Get(h.ctx, "default", "web-next-private-key"); err == nil {
		t.Fatal("next-private-key secret still exists after issuance")
	}
}

func TestRenewalRotatesOrKeepsTheKey(t *testing.T) {
	for _, tc := range []struct {
		policy  string
		sameKey bool
	}{
		{"Always", false},
		{"Never", true},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			h := newHarness(t)
			h.applyExamples()
			h.apply(leafYAML(", rotationPolicy: " + tc.policy))
			h.run()
			c := h.requireReady("default", "app")
			before := h.secret("default", "app-tls")
			renewAt := c.Status.RenewalTime.Time
			if want := t0.Add(60 * 24 * time.Hour); renewAt.Sub(want).Abs() > time.Minute {
				t.Fatalf("renewalTime = %s, want 2/3 of 90 days = %s", renewAt, want)
			}
			// Just before the renewal time nothing happens.
			h.clk.Set(renewAt.Add(-time.Minute))
			h.run()
			if revision(h.cert("default", "app")) != 1 {
				t.Fatal("renewed before the renewal time")
			}
			h.advance(2 * time.Minute)
			c = h.requireReady("default", "app")
			if revision(c) != 2 {
				t.Fatalf("revision = %d after renewal time, want 2", revision(c))
			}
			after := h.secret("default", "app-tls")
			same := bytes.Equal(leaf(t, before).RawSubjectPublicKeyInfo, leaf(t, after).RawSubjectPublicKeyInfo)
			if same != tc.sameKey {
				t.Fatalf("same key after renewal = %v, want %v", same, tc.sameKey)
			}
			if leaf(t, after).NotBefore.Before(renewAt.Add(-time.Minute)) {
				t.Fatal("secret still holds the old certificate")
			}
			// revisionHistoryLimit 1: only the current revision's request is kept.
			if got := h.requestNames("default", "app-"); len(got) != 1 || got[0] != "app-2" {
				t.Fatalf("requests = %v, want [app-2]", got)
			}
		})
	}
}

func TestReissueTriggers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		act    func(h *harness)
		verify func(t *testing.T, h *harness)
	}{
		{"deleted secret", func(h *harness) {
			if err := h.rt.Secrets.Delete(h.ctx, "default", "app-tls"); err != nil {
				h.t.Fatal(err)
			}
			h.advance(time.Hour + time.Minute) // the resync notices
		}, nil},
		{"changed dnsNames", func(h *harness) {
			h.apply(strings.Replace(leafYAML(""), "[app.example.internal]", "[app.example.internal, app2.example.internal]", 1))
			h.run()
		}, func(t *testing.T, h *harness) {
			if got := leaf(t, h.secret("default", "app-tls")).DNSNames; len(got) != 2 {
				t.Fatalf("dnsNames in new certificate = %v", got)
			}
		}},
		{"manual renew", func(h *harness) {
			if _, err := h.rt.App.Service.Renew(h.ctx, callerLocal, api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "app"}); err != nil {
				h.t.Fatal(err)
			}
			h.run()
		}, nil},
		{"changed issuer", func(h *harness) {
			h.apply(strings.Replace(leafYAML(""), "{name: demo-ca, kind: ClusterIssuer}", "{name: selfsigned, kind: ClusterIssuer}", 1))
			h.run()
		}, func(t *testing.T, h *harness) {
			l := leaf(t, h.secret("default", "app-tls"))
			if l.Subject.String() != l.Issuer.String() {
				t.Fatalf("not self-signed after the issuer change: issuer %s", l.Issuer)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.applyExamples()
			h.apply(leafYAML(""))
			h.run()
			h.requireReady("default", "app")
			tc.act(h)
			c := h.requireReady("default", "app")
			if revision(c) != 2 {
				t.Fatalf("revision = %d, want 2 (re-issued once)", revision(c))
			}
			if tc.verify != nil {
				tc.verify(t, h)
			}
		})
	}
}

// failingSigner is a test double: it fails permanently the first n times,
// then delegates to the real signer.
type failingSigner struct {
	mu    sync.Mutex
	n     int
	calls int
	next  signers.Signer
}

func (f *failingSigner) Sign(ctx context.Context, r signers.Request) (signers.Result, error) {
	f.mu.Lock()
	f.calls++
	fail := f.calls <= f.n
	f.mu.Unlock()
	if fail {
		return signers.Result{}, errs.Permanentf("injected signer failure %d", f.calls)
	}
	return f.next.Sign(ctx, r)
}

func TestFailureBacksOffAndSuccessResets(t *testing.T) {
	fs := &failingSigner{}
	h := newHarness(t, func(o *localmode.Options) {
		o.WrapSigners = func(m map[string]signers.Signer) map[string]signers.Signer {
			fs.next = m["ca"]
			m["ca"] = fs
			return m
		}
	})
	h.applyExamples()
	h.run()
	h.requireReady("default", "web")
	fs.mu.Lock()
	fs.n, fs.calls = 2, 0
	fs.mu.Unlock()
	h.apply(leafYAML(""))
	h.run()

	attempts := func() int {
		c := h.cert("default", "app")
		if c.Status.FailedIssuanceAttempts == nil {
			return 0
		}
		return *c.Status.FailedIssuanceAttempts
	}
	if got := attempts(); got != 1 {
		t.Fatalf("failedIssuanceAttempts = %d after the first failure, want 1", got)
	}
	c := h.cert("default", "app")
	if ic := api.FindCondition(c.Status.Conditions, "Issuing"); ic == nil || ic.Status != "False" || !strings.Contains(ic.Message, "injected signer failure") {
		t.Fatalf("Issuing condition does not explain the failure: %+v", ic)
	}
	// 1 h backoff: nothing at 59 minutes, a retry after 1 h.
	h.advance(59 * time.Minute)
	if fs.calls != 1 {
		t.Fatalf("signer called %d times within the 1 h backoff, want 1", fs.calls)
	}
	h.advance(2 * time.Minute)
	if got := attempts(); got != 2 || fs.calls != 2 {
		t.Fatalf("after 1 h: attempts = %d, signer calls = %d; want 2 and 2", got, fs.calls)
	}
	// 2 h backoff now.
	h.advance(119 * time.Minute)
	if fs.calls != 2 {
		t.Fatalf("signer called within the 2 h backoff (%d calls)", fs.calls)
	}
	h.advance(2 * time.Minute)
	c = h.requireReady("default", "app")
	if c.Status.FailedIssuanceAttempts != nil || c.Status.LastFailureTime != nil {
		t.Fatalf("success did not reset the backoff: attempts=%v lastFailure=%v", c.Status.FailedIssuanceAttempts, c.Status.LastFailureTime)
	}
}

func TestSpecChangeSkipsBackoff(t *testing.T) {
	fs := &failingSigner{}
	h := newHarness(t, func(o *localmode.Options) {
		o.WrapSigners = func(m map[string]signers.Signer) map[string]signers.Signer {
			fs.next, m["ca"] = m["ca"], fs
			return m
		}
	})
	h.applyExamples()
	h.run()
	fs.mu.Lock()
	fs.n, fs.calls = 1, 0
	fs.mu.Unlock()
	h.apply(leafYAML(""))
	h.run()
	if c := h.cert("default", "app"); c.Status.FailedIssuanceAttempts == nil {
		t.Fatal("first issuance did not fail")
	}
	h.apply(strings.Replace(leafYAML(""), "[app.example.internal]", "[app.example.internal, fixed.example.internal]", 1))
	h.advance(time.Second)
	h.requireReady("default", "app")
}

// chaosQueue is a test double of the queue: it records every message and
// the test delivers each one twice, in shuffled order, ignoring delays
// (early delivery is allowed by the queue contract).
type chaosQueue struct {
	mu  sync.Mutex
	buf []api.Key
}

func (q *chaosQueue) Enqueue(_ context.Context, k api.Key, _ time.Duration) error {
	q.mu.Lock()
	q.buf = append(q.buf, k)
	q.mu.Unlock()
	return nil
}

func (q *chaosQueue) take() []api.Key {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.buf
	q.buf = nil
	return out
}

func TestDuplicateAndShuffledDeliveryIssuesOncePerRevision(t *testing.T) {
	q := &chaosQueue{}
	h := newHarness(t, func(o *localmode.Options) { o.Queue = q })
	rng := rand.New(rand.NewSource(42))
	drain := func() {
		for round := 0; round < 500; round++ {
			keys := q.take()
			if len(keys) == 0 {
				return
			}
			msgs := append(append([]api.Key{}, keys...), keys...)
			rng.Shuffle(len(msgs), func(i, j int) { msgs[i], msgs[j] = msgs[j], msgs[i] })
			for _, k := range msgs {
				d := h.rt.Kernel.Handle(h.ctx, kernel.Message{Key: k, Attempt: 1})
				if !d.Ack && errs.Classify(d.Err) != errs.Conflict {
					t.Fatalf("handle %s: %v", k, d.Err)
				}
				if !d.Ack {
					_ = q.Enqueue(h.ctx, k, 0) // conflict: retried
				}
			}
		}
		t.Fatal("queue never drained")
	}
	h.applyExamples()
	for i := 0; i < 5; i++ {
		h.apply(strings.ReplaceAll(leafYAML(""), "app", fmt.Sprintf("app%d", i)))
	}
	drain()
	for i := 0; i < 5; i++ {
		h.requireReady("default", fmt.Sprintf("app%d", i))
	}
	// demo-ca, web and app0..4: 7 certificates, one request and one issuance each.
	if got := h.counter("certfn_requests_created_total"); got != 7 {
		t.Fatalf("requests created = %v, want 7", got)
	}
	if got := h.counter("certfn_certificates_issued_total"); got != 7 {
		t.Fatalf("certificates issued = %v, want 7", got)
	}
	// Renewal of all: exactly one more of each per certificate.
	h.clk.Advance(61 * 24 * time.Hour)
	if _, err := h.rt.Kernel.Sweep(h.ctx, 1000); err != nil {
		t.Fatal(err)
	}
	drain()
	for i := 0; i < 5; i++ {
		if c := h.requireReady("default", fmt.Sprintf("app%d", i)); revision(c) != 2 {
			t.Fatalf("app%d revision = %d, want 2", i, revision(c))
		}
	}
	if got := h.counter("certfn_certificates_issued_total"); got != 13 {
		t.Fatalf("certificates issued after renewal = %v, want 13 (7 + 6 leaf renewals)", got)
	}
}
