package acme

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/internal/localmode"
)

// byzantine is an ACME server that misbehaves once the account exists.
type byzantine struct {
	name string
	// hits says which requests misbehave; answer is what they get.
	hits   func(r *http.Request) bool
	answer func(r *http.Request) (*http.Response, error)
	// want are phrases the Warning Event on the failing object must hold.
	want []string
	// window is the fake time driven while the server misbehaves.
	window time.Duration
	// timeout is the ACME client's per-request timeout (0: the default).
	timeout time.Duration
}

func fake(r *http.Request, status int, contentType, body string) *http.Response {
	return &http.Response{StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {contentType}, "Replay-Nonce": {"byzantine-nonce"}}, Body: io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Request: r}
}

func everything(*http.Request) bool { return true }

func posts(paths ...string) func(r *http.Request) bool {
	return func(r *http.Request) bool {
		if r.Method != http.MethodPost {
			return false
		}
		for _, p := range paths {
			if strings.HasPrefix(r.URL.Path, p) {
				return true
			}
		}
		return false
	}
}

// Retry bounds of a transient ACME failure (kernel.RetryBackoff: 1 s
// doubling per attempt, capped at 5 minutes; the due index is deferred as
// far, so sweeps do not cut the backoff short): in any stretch of fake
// time T, at most T/5min + 9 attempts per object (the 9 of the ramp 1 s … 4
// min 16 s), each of at most maxTripsPerAttempt HTTP round trips (acmez's
// 3 tries, and go-retryablehttp's 3 per GET).
const (
	byzWindow = time.Hour
	byzStep   = 30 * time.Second
)

// An ACME server that answers 500 to everything, garbage (HTML, invalid
// JSON) to new-order and finalize, or never answers: each leaves a Warning
// Event naming the cause on the object that failed, and the ACME server is
// asked at most T/5min + 9 times per object in a stretch T of fake time
// (297 a day; backoff capped at 5 minutes, never a tight loop: the second
// half of the window sees at most one attempt per 5 minutes). Before the
// due index was deferred after a transient failure, the 500 case made 240
// attempts in 2 h (one per 30-s step: every sweep).
// Once the server behaves again, the Certificate is issued with one
// finalized order and no private key in any Event.
func TestByzantineACMEServer(t *testing.T) {
	cases := []byzantine{
		{name: "http-500", hits: everything, window: byzWindow,
			answer: func(r *http.Request) (*http.Response, error) {
				return fake(r, 500, "text/html", "<html><body>500 Internal Server Error</body></html>"), nil
			}, want: []string{"HTTP 500"}},
		{name: "html-on-new-order", hits: posts("/order-plz"), window: byzWindow,
			answer: func(r *http.Request) (*http.Response, error) {
				return fake(r, 201, "text/html", "<html>Welcome to nginx!</html>"), nil
			}, want: []string{"order"}},
		{name: "invalid-json-on-finalize", hits: posts("/finalize-order/"), window: byzWindow,
			answer: func(r *http.Request) (*http.Response, error) {
				return fake(r, 200, "application/json", `{"status": "valid", "certificate": [`), nil
			}, want: []string{"finalize"}},
		// A server that accepts and never answers: the client's timeout
		// ends each request. Real time per attempt is a few timeouts, so
		// this case drives one hour of fake time, as the others do (make test's budget).
		{name: "never-answers", hits: posts("/order-plz"), window: time.Hour, timeout: 100 * time.Millisecond,
			answer: func(r *http.Request) (*http.Response, error) {
				<-r.Context().Done()
				return nil, r.Context().Err()
			}, want: []string{"order"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, envOpts{local: func(o *localmode.Options) { o.ACME.Timeout = c.timeout }})
			e.apply(e.issuerYAML(http01Solvers))
			if !e.until(50, time.Second, func() bool {
				r := e.clusterIssuerReady("pebble")
				return r != nil && r.Status == api.ConditionTrue
			}) {
				t.Fatalf("issuer not Ready: %+v", e.clusterIssuerReady("pebble"))
			}
			// From here on the server misbehaves.
			var (
				badMu sync.Mutex
				bad   []time.Time
			)
			e.rec.mu.Lock()
			e.rec.answer = func(r *http.Request) (*http.Response, error, bool) {
				if !c.hits(r) {
					return nil, nil, false
				}
				badMu.Lock()
				bad = append(bad, e.clk.Now())
				badMu.Unlock()
				resp, err := c.answer(r)
				return resp, err, true
			}
			e.rec.mu.Unlock()
			start := e.clk.Now()
			first := e.rec.count()
			e.apply(certYAML("byz", []string{"byz.example.test"}, ""))
			wall := time.Now()
			for e.clk.Now().Sub(start) < c.window {
				e.run()
				if c.name == "invalid-json-on-finalize" {
					time.Sleep(time.Millisecond) // Pebble's VA validates on the wall clock
				}
				e.clk.Advance(byzStep)
			}
			e.rec.mu.Lock()
			e.rec.answer = nil
			e.rec.mu.Unlock()
			badMu.Lock()
			hits := append([]time.Time(nil), bad...)
			badMu.Unlock()
			trips := e.rec.since(first)

			// (2) Bounded, not a tight loop.
			var attempts []time.Time
			for _, at := range hits {
				if len(attempts) == 0 || !attempts[len(attempts)-1].Equal(at) {
					attempts = append(attempts, at)
				}
			}
			lastHalf := 0
			for _, at := range attempts {
				if at.After(start.Add(c.window / 2)) {
					lastHalf++
				}
			}
			bound := int(c.window/(5*time.Minute)) + 9
			t.Logf("%s: %d misbehaving answers in %d attempts over %s of fake time (bound %d attempts of at most %d round trips; %d in the second half), %d ACME requests in all, %s of wall time",
				c.name, len(hits), len(attempts), c.window, bound, maxTripsPerAttempt, lastHalf, len(trips), time.Since(wall).Round(time.Millisecond))
			if len(attempts) == 0 {
				t.Fatal("the misbehaving server was never asked")
			}
			if len(attempts) > bound || len(hits) > bound*maxTripsPerAttempt {
				t.Errorf("%d attempts (%d answers) in %s, want at most %d attempts of %d round trips", len(attempts), len(hits), c.window, bound, maxTripsPerAttempt)
			}
			if max := int(c.window/2/(5*time.Minute)) + 1; lastHalf > max {
				t.Errorf("%d attempts in the second half of %s, want at most %d: not backing off to 5 minutes", lastHalf, c.window, max)
			}

			// (1) Visible: a Warning Event naming the cause, Certificate not Ready.
			evs, err := e.rt.Repo.List(e.ctx, api.KindEvent, "")
			if err != nil {
				t.Fatal(err)
			}
			var found *api.Event
			for _, o := range evs {
				ev := o.(*api.Event)
				if strings.Contains(ev.Message, "PRIVATE KEY") {
					t.Errorf("key material in Event %s", ev.Name)
				}
				if ev.Type != api.EventTypeWarning || found != nil {
					continue
				}
				all := true
				for _, w := range c.want {
					all = all && strings.Contains(ev.Message, w)
				}
				if all {
					found = ev
				}
			}
			if found == nil {
				var b strings.Builder
				for _, o := range evs {
					ev := o.(*api.Event)
					fmt.Fprintf(&b, "\n  %s %s %s: %s", ev.Name, ev.Type, ev.Reason, ev.Message)
				}
				t.Fatalf("no Warning Event containing %q; Events:%s", c.want, b.String())
			}
			t.Logf("Event %s %s (count %d): %s", found.Name, found.Reason, found.Count, found.Message)
			cert := e.cert("byz")
			if api.IsTrue(cert.Status.Conditions, api.CertificateConditionReady) {
				t.Fatalf("Certificate Ready while the ACME server misbehaved: %+v", cert.Status.Conditions)
			}
			if cond := api.FindCondition(cert.Status.Conditions, api.CertificateConditionIssuing); cond != nil {
				t.Logf("Certificate Issuing=%s %s: %s", cond.Status, cond.Reason, cond.Message)
			}
			// `certfn status` (and `wait`, the API's status) names the cause.
			rep, err := e.rt.App.Service.Status(e.ctx, caller, api.KeyOf(cert))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(rep.Summary, "its last attempt failed at") || !strings.Contains(rep.Summary, c.want[0]) {
				t.Errorf("status summary does not name the cause %q: %s", c.want[0], rep.Summary)
			}
			t.Logf("certfn status: %s", rep.Summary)

			// (3) The server recovers: issued, one finalized order.
			e.issue("byz")
			e.verify("byz-tls", "byz.example.test")
			finalized := 0
			for _, r := range e.rec.since(first) {
				if strings.HasPrefix(r.line, "POST /finalize-order/") {
					finalized++
				}
			}
			if c.name != "invalid-json-on-finalize" && finalized != 1 {
				t.Errorf("%d finalize requests reached the server, want 1", finalized)
			}
		})
	}
}
