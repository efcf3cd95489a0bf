package acme

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libdns/libdns"

	"github.com/certfn/certfn/adapters/dns/rfc2136"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/internal/localmode"
	"github.com/certfn/certfn/tests/dns/dnstest"
)

// dnsCrasher wraps the rfc2136 provider: it counts the dynamic updates
// (AppendRecords, DeleteRecords) and, for the crashAt-th, reports a failure
// after BIND applied it — the process died right after the DNS change and
// before anything was recorded (for a Present: between the update and the
// Challenge's status write).
type dnsCrasher struct {
	mu      sync.Mutex
	calls   int
	crashAt int
	crashed bool
	what    string
}

var errDNSCrash = errors.New("injected crash after a DNS update")

func (c *dnsCrasher) after(op string, err error) error {
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if c.calls == c.crashAt && !c.crashed {
		c.crashed, c.what = true, op
		return errDNSCrash
	}
	return nil
}

func (c *dnsCrasher) didCrash() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.crashed
}

// factory is the rfc2136 ProviderFactory with every provider wrapped.
func (c *dnsCrasher) factory(ctx context.Context, req dns01.ProviderRequest) (dns01.Provider, error) {
	p, err := rfc2136.Factory(ctx, req)
	if err != nil {
		return nil, err
	}
	return crashingProvider{p: p, c: c}, nil
}

type crashingProvider struct {
	p dns01.Provider
	c *dnsCrasher
}

func (p crashingProvider) AppendRecords(ctx context.Context, zone string, recs []libdns.Record) ([]libdns.Record, error) {
	out, err := p.p.AppendRecords(ctx, zone, recs)
	return out, p.c.after("add TXT", err)
}

func (p crashingProvider) DeleteRecords(ctx context.Context, zone string, recs []libdns.Record) ([]libdns.Record, error) {
	out, err := p.p.DeleteRecords(ctx, zone, recs)
	return out, p.c.after("delete TXT", err)
}

// dnsCrashCase is one run of a wildcard and its base name, sub.example.test,
// over DNS-01 against the shared BIND.
type dnsCrashCase struct {
	b     *dnstest.BIND
	sub   string
	local func(*localmode.Options)
}

func (c dnsCrashCase) base() string {
	return c.sub + "." + strings.TrimSuffix(dnstest.ZoneExample, ".")
}

func (c dnsCrashCase) solver() bindSolver {
	return bindSolver{bind: c.b, alg: "hmac-sha256", tsigAlg: "HMACSHA256"}
}

// start opens the env, stores the TSIG secret and applies the issuer
// (its account registered); the Certificate is not applied yet.
func (c dnsCrashCase) start(t *testing.T) *env {
	t.Helper()
	s := c.solver()
	e := newEnv(t, s.envOpts(c.local))
	s.storeSecret(e, "cert-manager")
	e.apply(e.issuerYAML(s.solvers()))
	e.run()
	return e
}

func (c dnsCrashCase) certYAML() string {
	return certYAML("crash", []string{`"*.` + c.base() + `"`, c.base()}, "")
}

// apply applies the Certificate; a crash injected into the apply's own
// writes is not a failure of the test.
func (c dnsCrashCase) apply(t *testing.T, e *env) {
	t.Helper()
	objs, err := api.Decode([]byte(c.certYAML()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.rt.App.Service.Apply(e.ctx, caller, []api.Object{objs[0]}); err != nil && !errors.Is(err, errCrash) {
		t.Fatal(err)
	}
}

// converge drives issuance, restarting the runtime once after the crash,
// then checks: Ready with a verified chain, exactly one valid Order for
// the only revision (1), no Challenge left, and no TXT record left on
// BIND.
func (c dnsCrashCase) converge(t *testing.T, e *env, crashed func() bool, label string) {
	t.Helper()
	restarted := false
	restartAfterCrash := func() {
		if crashed() && !restarted {
			restarted = true
			e.restart()
		}
	}
	ok := e.until(300, 5*time.Second, func() bool {
		restartAfterCrash()
		return e.ready("crash")
	})
	if !ok {
		t.Fatalf("%s: did not converge: %+v\norders:%s\nchallenges:%s", label, e.cert("crash").Status.Conditions, e.describe(api.KindOrder), e.describe(api.KindChallenge))
	}
	// The Certificate may be Ready before the restarted runtime ran what
	// the crash interrupted (deleting the Order's Challenges): let it.
	e.until(5, 5*time.Second, func() bool { restartAfterCrash(); return false })
	e.verify("crash-tls", "x."+c.base(), c.base())
	valid := map[string]int{}
	for _, o := range e.orders() {
		if o.Status.State == api.StateValid {
			valid[o.Annotations[api.AnnotationRevision]]++
		}
	}
	if rev := revisionOf(e.cert("crash")); rev != 1 || len(valid) != 1 || valid[strconv.Itoa(rev)] != 1 {
		t.Fatalf("%s: want exactly one valid Order, for revision 1; revision %d, valid Orders per revision %v:%s", label, rev, valid, e.describe(api.KindOrder))
	}
	if chs := e.challenges(); len(chs) != 0 {
		t.Errorf("%s: Challenges left:%s", label, e.describe(api.KindChallenge))
	}
	if got := c.b.TXT(t, dns01.RecordName(c.base())); len(got) != 0 {
		t.Fatalf("%s: orphaned TXT records on BIND: %s %q", label, dns01.RecordName(c.base()), got)
	}
}

// cleanDNS01Run issues once without crashing and returns the store
// writes, ACME requests and DNS updates it took.
func cleanDNS01Run(t *testing.T, b *dnstest.BIND) (writes, calls, updates int) {
	t.Helper()
	var cs *crashStore
	dc := &dnsCrasher{}
	c := dnsCrashCase{b: b, sub: "clean", local: func(o *localmode.Options) {
		o.WrapStore = func(s ports.Store) ports.Store { cs = &crashStore{Store: s}; return cs }
		o.ACME.DNS01Providers = map[string]dns01.ProviderFactory{dns01.KeyRFC2136: dc.factory}
	}}
	e := c.start(t)
	w0, r0 := cs.count(), e.rec.count()
	c.apply(t, e)
	c.converge(t, e, func() bool { return false }, "clean run")
	dc.mu.Lock()
	defer dc.mu.Unlock()
	return cs.count() - w0, e.rec.count() - r0, dc.calls
}

func (c *crashStore) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writes
}

// Crash safety over DNS-01 against BIND: a crash after each store write,
// after each ACME request (its answer lost) and after each DNS update
// (BIND changed, nothing recorded — after a Present that is between the
// TXT record's creation and the Challenge's status write) of a clean
// issuance of a wildcard and its base name, then a restart (the in-memory
// queue is lost): issuance converges to exactly one valid Order for the
// revision and leaves no TXT record on BIND.
func TestCrashDNS01(t *testing.T) {
	b := dnstest.StartBIND(t)
	writes, calls, updates := cleanDNS01Run(t, b)
	t.Logf("a clean DNS-01 issuance (wildcard and base name) makes %d store writes, %d ACME requests and %d DNS updates", writes, calls, updates)
	if writes < 10 || calls < 8 || updates != 4 {
		t.Fatalf("implausible clean run: %d writes, %d ACME requests, %d DNS updates (want 2 adds and 2 deletes)", writes, calls, updates)
	}
	var used []string
	track := func(c dnsCrashCase) dnsCrashCase {
		used = append(used, c.base())
		return c
	}
	// Runs whose crash point was never reached: the number of writes and
	// requests varies a little from run to run (how often a poll finds
	// the server still validating), so the last few may not be reached;
	// the others must be.
	var missed []int
	reached := func(k int, crashed bool) {
		if !crashed {
			missed = append(missed, k)
		}
	}
	checkReached := func(what string, total int) {
		t.Helper()
		if len(missed) > 3 || len(missed) > 0 && missed[0] <= total-3 {
			t.Errorf("%s: runs without a crash: %v of %d", what, missed, total)
		} else if len(missed) > 0 {
			t.Logf("%s: runs that did not get as far as the clean run: %v", what, missed)
		}
		missed = nil
	}

	t.Run("StoreWrite", func(t *testing.T) {
		for k := 1; k <= writes; k++ {
			t.Run(fmt.Sprintf("write%02d", k), func(t *testing.T) {
				var cs *crashStore
				c := track(dnsCrashCase{b: b, sub: fmt.Sprintf("w%02d", k), local: func(o *localmode.Options) {
					o.WrapStore = func(s ports.Store) ports.Store {
						if cs == nil {
							cs = &crashStore{Store: s}
							return cs
						}
						return s // after the restart: no more crashes
					}
				}})
				e := c.start(t)
				cs.mu.Lock()
				cs.crashAt = cs.writes + k
				cs.mu.Unlock()
				c.apply(t, e)
				c.converge(t, e, cs.didCrash, fmt.Sprintf("crash after write %d", k))
				reached(k, cs.didCrash())
			})
		}
	})

	checkReached("store writes", writes)

	t.Run("ACMECall", func(t *testing.T) {
		for k := 1; k <= calls; k++ {
			t.Run(fmt.Sprintf("call%02d", k), func(t *testing.T) {
				c := track(dnsCrashCase{b: b, sub: fmt.Sprintf("a%02d", k)})
				e := c.start(t)
				var mu sync.Mutex
				n, crashed, what := 0, false, ""
				e.rec.mu.Lock()
				e.rec.failAfter = func(r *http.Request) bool {
					mu.Lock()
					defer mu.Unlock()
					n++
					if n == k && !crashed {
						crashed, what = true, r.Method+" "+strings.SplitN(r.URL.Path[1:], "/", 2)[0]
						return true
					}
					return false
				}
				e.rec.mu.Unlock()
				c.apply(t, e)
				c.converge(t, e, func() bool { mu.Lock(); defer mu.Unlock(); return crashed }, fmt.Sprintf("answer to ACME request %d lost", k))
				reached(k, crashed)
				t.Logf("lost the answer to %s", what)
			})
		}
	})
	checkReached("ACME requests", calls)

	t.Run("DNSUpdate", func(t *testing.T) {
		for k := 1; k <= updates; k++ {
			t.Run(fmt.Sprintf("update%d", k), func(t *testing.T) {
				dc := &dnsCrasher{crashAt: k}
				c := track(dnsCrashCase{b: b, sub: fmt.Sprintf("d%d", k), local: func(o *localmode.Options) {
					o.ACME.DNS01Providers = map[string]dns01.ProviderFactory{dns01.KeyRFC2136: dc.factory}
				}})
				e := c.start(t)
				c.apply(t, e)
				c.converge(t, e, dc.didCrash, fmt.Sprintf("crash after DNS update %d", k))
				if !dc.didCrash() {
					t.Fatalf("DNS update %d never happened", k)
				}
				t.Logf("crashed after %s", dc.what)
			})
		}
	})

	// Nothing of any run is left on BIND.
	for _, name := range used {
		if got := b.TXT(t, dns01.RecordName(name)); len(got) != 0 {
			t.Errorf("orphaned TXT records on BIND: %s %q", dns01.RecordName(name), got)
		}
	}
}

// A crash between Present and the Challenge's status write leaves a TXT
// record that the stored Challenge does not know it presented. When the
// Certificate is then deleted (its request, Order and Challenges with it)
// before the Challenge ran again, the record is still removed from BIND.
func TestCrashDNS01PresentedThenDeleted(t *testing.T) {
	b := dnstest.StartBIND(t)
	dc := &dnsCrasher{crashAt: 1} // the first add
	c := dnsCrashCase{b: b, sub: "deleted", local: func(o *localmode.Options) {
		o.ACME.DNS01Providers = map[string]dns01.ProviderFactory{dns01.KeyRFC2136: dc.factory}
	}}
	e := c.start(t)
	c.apply(t, e)
	e.until(50, time.Second, dc.didCrash)
	if !dc.didCrash() {
		t.Fatalf("no DNS update happened:%s", e.describe(api.KindChallenge))
	}
	e.restart()
	// The crashed Challenge: processing, not recorded as presented, and
	// its value on BIND.
	fqdn := dns01.RecordName(c.base())
	served := map[string]bool{}
	for _, v := range b.TXT(t, fqdn) {
		served[v] = true
	}
	// The wildcard's and the base name's Challenges have the same DNS name
	// and type: exactly one of them may be processing (the one whose
	// presentation the crash lost), and BIND serves only its value.
	var processing []*api.Challenge
	for _, ch := range e.challenges() {
		if ch.Status.Processing {
			processing = append(processing, ch)
		}
	}
	if len(processing) != 1 || len(served) != 1 {
		t.Fatalf("want exactly one processing Challenge and one TXT value for %s; %d processing, BIND serves %v:%s", c.base(), len(processing), served, e.describe(api.KindChallenge))
	}
	if lost := processing[0]; lost.Status.Presented || lost.Status.DNS01 != nil || !served[dns01.TXTValue(lost.Spec.Key)] {
		t.Fatalf("the processing Challenge is not the one whose presentation the crash lost (presented=%t dns01=%v, BIND serves %v):%s", lost.Status.Presented, lost.Status.DNS01, served, e.describe(api.KindChallenge))
	}
	if err := e.rt.App.Service.Delete(e.ctx, caller, api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "crash"}, app.DeleteOptions{}); err != nil {
		t.Fatalf("delete the Certificate: %v", err)
	}
	e.run()
	if n := len(e.challenges()) + len(e.orders()); n != 0 {
		t.Fatalf("%d Orders and Challenges left after the Certificate was deleted", n)
	}
	if got := b.TXT(t, fqdn); len(got) != 0 {
		t.Fatalf("orphaned TXT records on BIND: %s %q", fqdn, got)
	}
}
