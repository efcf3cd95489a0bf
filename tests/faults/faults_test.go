// Package faults is certfn's deterministic fault harness: for
// each flow — selfSigned and CA issuance, ACM import, renewal with
// rotationPolicy Always and Never, policy approval and denial, ACME HTTP-01,
// revocation and replacement (local mode only) and DNS-01 against Pebble in
// this process — it runs the flow once counting every
// port call (state store, secret store, queue, ACME client, DNS provider,
// certificate importer)
// through wrapping adapters, then, for every N, runs it again with the
// N-th call failing once as a crash, once as a transient error and once as
// a lost answer, to completion on a fake clock, and asserts for every N:
//
//   - it converges (the flow's goal; every request, Order and Challenge
//     final, no Challenge left, no Certificate issuing, every issuer Ready)
//     within 5 s of fake time after the restart (crash) or the fault
//     (transient);
//   - exactly one CertificateRequest was created per revision, and at most
//     one certificate issued per revision (distinct certificates written
//     to the revision's requests; ACME: orders finalized);
//   - every key pair written has a tls.key matching its tls.crt;
//   - nothing is orphaned: no secret but the expected ones (a
//     next-private-key secret only while a Certificate names it), every
//     Order final with one valid Order per revision, no DNS-01 record;
//   - the faulted call is the clean run's N-th (the runs are
//     deterministic: one message at a time, Pebble waited for).
//
// A crash: the call takes effect, then the process dies before its caller
// learns the answer; nothing it would do next happens and its in-memory
// queue is lost; a new process is built over the same stores and starts
// as `certfn serve` does (engine.WakeUnfinished), then runs as
// `serve --until-idle` does: messages one at a time, a sweep when idle,
// the fake clock moved to the next due time when the sweep finds nothing.
// A transient error: the call fails without effect with an error
// errs.Classify calls transient, and the process goes on. A lost answer:
// the call takes effect and its caller sees a timeout (a secret store that
// times out after writing), and the process goes on.
//
// The process is local mode's role (app.Local) built by app.Build over
// core/memory's store, secrets and queue (what the local adapters
// implement, under the same contract suites), so that the whole harness
// runs in `make test` in under a minute. TestFaultHarnessCloud runs the
// same flows on the cloud shape (cloud_test.go): worker, signer, scheduler
// and api functions through app.Deliverer, over queues that return a dead
// invocation's message after its visibility timeout, with Google Cloud's
// and AWS's defaults; its bound is one visibility timeout plus one sweep.
// The counts (flows × N × fault kinds) and the measured convergence are
// logged per flow and summed up in one line per shape:
// `go test -run TestFaultHarness -v ./tests/faults/`.
//
// The wrappers change one thing the server says: ARI windows are narrowed
// to their first nanosecond (certfn picks a random moment in the window,
// which would make runs differ). Pebble validates and issues
// asynchronously: AcceptChallenge and Finalize wait for it (uncounted
// requests), so every run sees the same answers.
package faults

import (
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	acmeadapter "github.com/certfn/certfn/adapters/acme"
	"github.com/certfn/certfn/core/acme/http01"
	"github.com/certfn/certfn/core/api"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/tests/pebbletest"
)

// env is what the runs share: Pebble and its DNS, the HTTP-01 responder
// every run's Challenges are answered by, and the ACME dialer.
type env struct {
	peb     *pebbletest.Server
	dnsAddr string
	h01Addr string
	tokens  *tokenHub
	dialer  *acmeadapter.Dialer
}

func newEnv(t *testing.T) *env {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &env{tokens: &tokenHub{}, dialer: acmeadapter.NewDialer(acmeadapter.Options{})}
	srv := &http.Server{Handler: http01.Handler{Tokens: e.tokens}, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	e.h01Addr = l.Addr().String()
	e.peb = pebbletest.Start(t, l.Addr().(*net.TCPAddr).Port)
	e.dnsAddr = fmt.Sprintf("127.0.0.1:%d", e.peb.DNSPort)
	return e
}

// result is one run.
type result struct {
	n     int
	kind  kind
	label string
	out   outcome
	err   error
}

// runOnce runs flow f with the at-th counted call faulted as k (at 0: a
// clean run) and checks its invariants. It returns the run's outcome and
// the labels of its counted calls.
func runOnce(t *testing.T, e *env, sh *shape, f *flow, at int, k kind, name string) (outcome, []string, string, error) {
	startAt := ct.T0
	if f.acme {
		// Pebble issues on the wall clock: the fake clock starts a minute
		// ahead, so a new certificate is never "not yet valid" by a few
		// milliseconds (which would make runs differ).
		startAt = time.Now().UTC().Truncate(time.Second).Add(time.Minute)
	}
	w := newWorld(t, e, f, name, startAt)
	defer w.close()
	if sh != nil {
		w.cloud = &cloud{s: sh}
	}
	if err := w.boot(); err != nil {
		return outcome{}, nil, "", fmt.Errorf("boot: %w", err)
	}
	if err := f.setup(w); err != nil {
		return outcome{}, nil, "", fmt.Errorf("set-up: %w", err)
	}
	if err := f.start(w); err != nil {
		return outcome{}, nil, "", fmt.Errorf("start: %w", err)
	}
	w.in.mu.Lock()
	w.in.counting, w.in.at, w.in.kind = true, at, k
	w.in.mu.Unlock()
	start := w.clk.Now()
	out, err := w.drive(start)
	w.in.mu.Lock()
	labels, fired := append([]string(nil), w.in.labels...), w.in.fired
	w.in.mu.Unlock()
	if err == nil {
		err = w.check()
	}
	switch {
	case err != nil:
	case at > 0 && fired == "":
		err = fmt.Errorf("the run made %d calls: the fault at call %d never fired", len(labels), at)
	case k == crash && w.restarts != 1, k != crash && w.restarts != 0:
		err = fmt.Errorf("%d restarts after a %s", w.restarts, k)
	}
	return out, labels, fired, err
}

// check asserts the invariants of a converged run.
func (w *world) check() error {
	var errs []string
	fail := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	w.l.mu.Lock()
	last := 1
	if c := w.cert("web"); c != nil && c.Status.Revision != nil {
		last = *c.Status.Revision
	}
	for rev := 1; rev <= last; rev++ {
		if k := fmt.Sprintf("default/web#%d", rev); w.l.requests[k] == 0 {
			fail("no CertificateRequest created for %s", k)
		}
	}
	for rev, n := range w.l.requests {
		if n != 1 {
			fail("%d CertificateRequests created for %s, want 1", n, rev)
		}
	}
	for rev, serials := range w.l.signed {
		if len(serials) > 1 {
			fail("%d certificates issued for %s, want at most 1", len(serials), rev)
		}
	}
	perRev := map[string]int{}
	for url := range w.l.finalized {
		rev, ok := w.l.orderRevision[url]
		if !ok {
			rev = "unknown order " + url
		}
		perRev[rev]++
	}
	for rev, n := range perRev {
		if n > 1 {
			fail("%d ACME orders finalized for %s, want at most 1", n, rev)
		}
	}
	if len(w.l.mismatched) > 0 {
		fail("key pairs written with a tls.key that is not tls.crt's: %v", w.l.mismatched)
	}
	w.l.mu.Unlock()

	// Orphans: secrets.
	named := map[string]bool{}
	for _, o := range w.list(api.KindCertificate) {
		c := o.(*api.Certificate)
		if c.Status.NextPrivateKeySecretName != nil {
			named[c.Namespace+"/"+*c.Status.NextPrivateKeySecretName] = true
		}
	}
	refs, err := w.sec.ListSecrets(w.ctx, "")
	if err != nil {
		return err
	}
	for _, r := range refs {
		id := r.Namespace + "/" + r.Name
		switch {
		case id == "default/web-tls", id == "default/ca-key-pair", id == "cert-manager/pebble-account":
		case named[id]:
		default:
			fail("orphaned secret %s", id)
		}
		if sec, err := w.sec.Get(w.ctx, r.Namespace, r.Name); err == nil && len(sec.Data["tls.crt"]) > 0 && !keyMatches(sec.Data["tls.crt"], sec.Data["tls.key"]) {
			fail("secret %s: tls.key does not match tls.crt", id)
		}
	}
	// Orders: final, one valid per revision (ACME).
	valid := map[string]int{}
	for _, o := range w.list(api.KindOrder) {
		ord := o.(*api.Order)
		if !ord.IsFinal() {
			fail("Order %s not final (%s)", ord.Name, ord.Status.State)
		}
		if ord.Status.State == api.StateValid {
			valid[ord.Annotations[api.AnnotationRevision]]++
		}
	}
	if w.flow.acme {
		// Revisions whose request is kept (older ones are pruned with
		// their Orders: revisionHistoryLimit).
		kept := map[string]bool{}
		for _, o := range w.list(api.KindCertificateRequest) {
			kept[o.GetObjectMeta().Annotations[api.AnnotationRevision]] = true
		}
		if c := w.cert("web"); c != nil && c.Status.Revision != nil {
			for rev := 1; rev <= *c.Status.Revision; rev++ {
				if !kept[fmt.Sprint(rev)] {
					continue
				}
				// An older revision's Order may be gone while its request
				// is kept (the pruning of both was interrupted).
				if n := valid[fmt.Sprint(rev)]; n > 1 || (n == 0 && rev == *c.Status.Revision) {
					fail("%d valid Orders for revision %d, want 1", n, rev)
				}
			}
		}
	}
	if w.flow.check != nil {
		if err := w.flow.check(w); err != nil {
			fail("%v", err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// publicKey returns the PKIX public key of web-tls's leaf.
func publicKey(w *world) ([]byte, error) {
	sec, err := w.sec.Get(w.ctx, "default", "web-tls")
	if err != nil {
		return nil, err
	}
	chain, err := pki.ParseChainPEM(sec.Data["tls.crt"])
	if err != nil {
		return nil, err
	}
	return x509.MarshalPKIXPublicKey(chain[0].PublicKey)
}

var _ ports.Record

// TestFaultHarness runs every flow in local mode, then every flow with
// each of its port calls faulted once as a crash and once as a transient
// error.
func TestFaultHarness(t *testing.T) { harness(t, nil) }

// TestFaultHarnessCloud does the same on the cloud deployment shapes:
// worker, signer, scheduler and api functions (app.Worker, app.Signer,
// app.Scheduler, app.API) over queues that keep a message whose
// invocation died and deliver it again after its visibility timeout, with
// Google Cloud's and AWS's defaults (cloud_test.go); the bound is one
// visibility timeout plus one sweep.
func TestFaultHarnessCloud(t *testing.T) {
	for _, sh := range []*shape{gcp, aws} {
		t.Run(strings.ReplaceAll(sh.name, " ", ""), func(t *testing.T) { harness(t, sh) })
	}
}

func harness(t *testing.T, sh *shape) {
	e := newEnv(t)
	workers := max(2, runtime.GOMAXPROCS(0))
	limit, where := bound, "local mode"
	if sh != nil {
		limit, where = sh.bound(), sh.name
	}
	began := time.Now()
	var total, calls int
	var worstCrash, worstTransient, worstLost time.Duration
	var lines []string
	for fi, f := range flows() {
		if sh != nil && f.localOnly != "" {
			t.Logf("%s, %s: not run on this shape: %s", where, f.name, f.localOnly)
			continue
		}
		t.Run(strings.NewReplacer(" ", "_", ",", "").Replace(f.name), func(t *testing.T) {
			flowBegan := time.Now()
			clean, labels, _, err := runOnce(t, e, sh, f, 0, none, fmt.Sprintf("f%dclean", fi))
			if os.Getenv("CERTFN_FAULTS_LABELS") != "" {
				for i, l := range labels {
					t.Logf("call %d: %s", i+1, l)
				}
			}
			if err != nil {
				t.Fatalf("clean run: %v", err)
			}
			if len(labels) < 5 {
				t.Fatalf("clean run: implausibly few port calls (%d): %v", len(labels), labels)
			}
			byPort := map[string]int{}
			for _, l := range labels {
				byPort[strings.SplitN(l, ".", 2)[0]]++
			}
			var jobs []result
			for n := 1; n <= len(labels); n++ {
				jobs = append(jobs, result{n: n, kind: crash}, result{n: n, kind: transient}, result{n: n, kind: lost})
			}
			results := make([]result, len(jobs))
			var wg sync.WaitGroup
			next := make(chan int)
			for i := 0; i < workers; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for j := range next {
						r := jobs[j]
						var got []string
						r.out, got, r.label, r.err = runOnce(t, e, sh, f, r.n, r.kind, fmt.Sprintf("f%dn%d%s", fi, r.n, r.kind))
						if r.err == nil && r.label != labels[r.n-1] {
							first := 0 // the first call that differs
							for first < min(len(got), len(labels)) && got[first] == labels[first] {
								first++
							}
							r.err = fmt.Errorf("not deterministic: call %d is %s, it was %s in the clean run; from call %d, this run: %v; the clean run: %v",
								r.n, r.label, labels[r.n-1], first+1, got[first:min(len(got), first+8)], labels[first:min(len(labels), first+8)])
						}
						if r.err == nil && r.out.lag > limit {
							r.err = fmt.Errorf("converged %s after the %s, want at most %s", r.out.lag, map[kind]string{crash: "crash's restart", transient: "fault", lost: "fault"}[r.kind], limit)
						}
						results[j] = r
					}
				}()
			}
			for j := range jobs {
				next <- j
			}
			close(next)
			wg.Wait()
			var worst [4]time.Duration
			failed := 0
			for _, r := range results {
				if r.err != nil {
					failed++
					t.Errorf("%s at call %d (%s): %v", r.kind, r.n, labels[r.n-1], r.err)
					continue
				}
				worst[r.kind] = max(worst[r.kind], r.out.lag)
			}
			ports := make([]string, 0, len(byPort))
			for p, n := range byPort {
				ports = append(ports, fmt.Sprintf("%s %d", p, n))
			}
			sort.Strings(ports)
			line := fmt.Sprintf("%s, %s: %d port calls (%s) × 3 fault kinds = %d faulted runs, %d failed; clean run %s of fake time; "+
				"converged at most %s after a crash, %s after a transient fault, %s after a lost answer; %s real",
				where, f.name, len(labels), strings.Join(ports, ", "), len(jobs), failed, clean.took, worst[crash], worst[transient], worst[lost],
				time.Since(flowBegan).Round(time.Millisecond))
			t.Log(line)
			lines = append(lines, line)
			total += len(jobs)
			calls += len(labels)
			worstCrash, worstTransient = max(worstCrash, worst[crash]), max(worstTransient, worst[transient])
			worstLost = max(worstLost, worst[lost])
		})
	}
	t.Logf("fault harness summary, %s: %d flows, %d port calls, %d faulted runs (%d crashes + %d transient errors + %d lost answers); "+
		"converged at most %s (fake time) after a crash's restart, %s after a transient fault, %s after a lost answer (bound %s); %s real",
		where, len(lines), calls, total, calls, calls, calls, worstCrash, worstTransient, worstLost, limit, time.Since(began).Round(time.Millisecond))
}
