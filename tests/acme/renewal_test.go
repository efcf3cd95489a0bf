package acme

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/internal/localmode"
)

func revisionOf(c *api.Certificate) int {
	if c.Status.Revision == nil {
		return 0
	}
	return *c.Status.Revision
}

// ARI (RFC 9773): the renewal information is copied to the Certificate,
// the renewal happens at the selected time inside the window (earlier
// than renewBefore would), and the new Order carries "replaces".
func TestARIRenewalCarriesReplaces(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.apply(e.issuerYAML(http01Solvers))
	e.apply(certYAML("ari", []string{"ari.example.test"}, "  renewBefore: 24h\n"))
	e.issue("ari")
	first := e.verify("ari-tls", "ari.example.test")
	if !e.until(10, time.Minute, func() bool { return e.cert("ari").Status.RenewalInfo != nil }) {
		t.Fatalf("no renewal information on the Certificate: %s", e.describe(api.KindOrder))
	}
	ri := e.cert("ari").Status.RenewalInfo
	if ri.SelectedTime == nil || ri.WindowStart == nil || ri.WindowEnd == nil || ri.CertificateID == "" || ri.NextCheck == nil {
		t.Fatalf("incomplete renewal information: %+v", ri)
	}
	if ri.SelectedTime.Before(ri.WindowStart.Time) || !ri.SelectedTime.Before(ri.WindowEnd.Time) {
		t.Fatalf("selectedTime %s outside the window %s..%s", ri.SelectedTime, ri.WindowStart, ri.WindowEnd)
	}
	if id := certificates.ARICertificateID(first); id != ri.CertificateID {
		t.Fatalf("ARICertificateID = %q, the server's identifier is %q", id, ri.CertificateID)
	}
	if !ri.SelectedTime.Before(first.NotAfter.Add(-24 * time.Hour)) {
		t.Fatalf("the window (%s) is not earlier than renewBefore's time", ri.SelectedTime)
	}
	// Just before the selected time: no renewal.
	e.clk.Set(ri.SelectedTime.Add(-time.Hour))
	e.run()
	if rev := revisionOf(e.cert("ari")); rev != 1 {
		t.Fatalf("renewed before the selected time (revision %d)", rev)
	}
	e.clk.Set(ri.SelectedTime.Add(time.Minute))
	if !e.until(400, 2*time.Second, func() bool { return revisionOf(e.cert("ari")) == 2 && e.ready("ari") }) {
		t.Fatalf("not renewed: %+v %s", e.cert("ari").Status.Conditions, e.describe(api.KindOrder))
	}
	second := e.verify("ari-tls", "ari.example.test")
	if second.SerialNumber.Cmp(first.SerialNumber) == 0 {
		t.Fatal("the certificate was not replaced")
	}
	var replaces []string
	for _, o := range e.orders() {
		if o.Annotations[api.AnnotationRevision] == "2" {
			replaces = append(replaces, o.Spec.Replaces)
		}
	}
	if len(replaces) != 1 || replaces[0] != ri.CertificateID {
		t.Fatalf("the renewal's Order replaces %q, want [%s]", replaces, ri.CertificateID)
	}
}

// crashStore makes the n-th write (Create, Update or Delete) report a
// failure after it was stored: the process "dies" right after the write.
type crashStore struct {
	ports.Store
	mu      sync.Mutex
	writes  int
	crashAt int
	crashed bool
}

var errCrash = errors.New("injected crash after a store write")

func (c *crashStore) after(err error) error {
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes++
	if c.writes == c.crashAt {
		c.crashed = true
		return errCrash
	}
	return nil
}

func (c *crashStore) Create(ctx context.Context, r ports.Record) (ports.Record, error) {
	out, err := c.Store.Create(ctx, r)
	return out, c.after(err)
}

func (c *crashStore) Update(ctx context.Context, r ports.Record) (ports.Record, error) {
	out, err := c.Store.Update(ctx, r)
	return out, c.after(err)
}

func (c *crashStore) Delete(ctx context.Context, k api.Key, v int64) error {
	return c.after(c.Store.Delete(ctx, k, v))
}

func (c *crashStore) didCrash() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.crashed
}

// converge drives issuance, restarting the runtime once after a crash,
// and checks exactly one valid Order for revision 1.
func converge(t *testing.T, e *env, crashed func() bool, label string) {
	t.Helper()
	restarted := false
	ok := e.until(400, 2*time.Second, func() bool {
		if crashed() && !restarted {
			restarted = true
			e.restart()
		}
		return e.ready("crash")
	})
	if !ok {
		t.Fatalf("%s: did not converge: %+v\norders:%s\nchallenges:%s", label, e.cert("crash").Status.Conditions, e.describe(api.KindOrder), e.describe(api.KindChallenge))
	}
	e.verify("crash-tls", "crash.example.test")
	valid := 0
	for _, o := range e.orders() {
		if o.Status.State == api.StateValid {
			valid++
		}
	}
	if valid != 1 || revisionOf(e.cert("crash")) != 1 {
		t.Fatalf("%s: want exactly one valid Order for revision 1, got %d (revision %d):%s", label, valid, revisionOf(e.cert("crash")), e.describe(api.KindOrder))
	}
}

// Crash safety: a crash right after each store write of a clean issuance,
// then a restart (the in-memory queue is lost; the due index brings the
// work back), converges to one valid Order for the revision.
func TestCrashAfterEachStoreWrite(t *testing.T) {
	// Count the writes of a clean run.
	var clean *crashStore
	e := newEnv(t, envOpts{local: func(o *localmode.Options) {
		o.WrapStore = func(s ports.Store) ports.Store { clean = &crashStore{Store: s}; return clean }
	}})
	e.apply(e.issuerYAML(http01Solvers))
	e.run()
	base := clean.writes
	e.apply(certYAML("crash", []string{"crash.example.test"}, ""))
	e.issue("crash")
	total := clean.writes - base
	t.Logf("a clean issuance makes %d store writes", total)
	if total < 10 {
		t.Fatalf("implausibly few writes: %d", total)
	}
	for k := 1; k <= total; k++ {
		t.Run(fmt.Sprintf("write%02d", k), func(t *testing.T) {
			var cs *crashStore
			e := newEnv(t, envOpts{local: func(o *localmode.Options) {
				o.WrapStore = func(s ports.Store) ports.Store {
					if cs == nil {
						cs = &crashStore{Store: s}
						return cs
					}
					return s // after the restart: no more crashes
				}
			}})
			e.apply(e.issuerYAML(http01Solvers))
			e.run()
			cs.mu.Lock()
			cs.crashAt = cs.writes + k
			cs.mu.Unlock()
			objs, err := api.Decode([]byte(certYAML("crash", []string{"crash.example.test"}, "")))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.rt.App.Service.Apply(e.ctx, caller, []api.Object{objs[0]}); err != nil && !errors.Is(err, errCrash) {
				t.Fatal(err)
			}
			converge(t, e, cs.didCrash, fmt.Sprintf("crash after write %d", k))
		})
	}
}

// Crash safety: the answer to each ACME request of a clean issuance is
// lost once (the server acted; certfn never learns it), then the runtime
// restarts; issuance converges to one valid Order.
func TestCrashAfterEachACMECall(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.apply(e.issuerYAML(http01Solvers))
	e.run()
	base := e.rec.count()
	e.apply(certYAML("crash", []string{"crash.example.test"}, ""))
	e.issue("crash")
	total := e.rec.count() - base
	for k := 1; k <= total; k++ {
		t.Run(fmt.Sprintf("call%02d", k), func(t *testing.T) {
			e := newEnv(t, envOpts{})
			e.apply(e.issuerYAML(http01Solvers))
			e.run()
			var mu sync.Mutex
			n, crashed := 0, false
			var what string
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
			e.apply(certYAML("crash", []string{"crash.example.test"}, ""))
			converge(t, e, func() bool { mu.Lock(); defer mu.Unlock(); return crashed }, fmt.Sprintf("answer to ACME request %d lost", k))
			t.Logf("lost the answer to %s", what)
		})
	}
}
