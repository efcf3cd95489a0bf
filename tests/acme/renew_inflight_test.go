package acme

import (
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/kernel"
)

// stepOne handles one visible message (forwarding the inbox and sweeping
// when none is visible), as a worker does; false when nothing was visible.
func (e *env) stepOne() bool {
	e.t.Helper()
	if _, err := e.rt.Inbox.Forward(e.ctx, e.rt.Queue); err != nil {
		e.t.Fatal(err)
	}
	ds, err := e.rt.Queue.Receive(e.ctx, 1)
	if err == nil && len(ds) == 0 {
		if _, err = e.rt.Kernel.Sweep(e.ctx, 1000); err == nil {
			ds, err = e.rt.Queue.Receive(e.ctx, 1)
		}
	}
	if err != nil {
		e.t.Fatal(err)
	}
	if len(ds) == 0 {
		return false
	}
	d := ds[0]
	if disp := e.rt.Kernel.Handle(e.ctx, kernel.Message{Key: d.Key, Attempt: d.Attempt}); disp.Ack {
		_ = e.rt.Queue.Ack(e.ctx, d)
	} else {
		_ = e.rt.Queue.Nack(e.ctx, d, disp.RetryAfter)
	}
	return true
}

// The lost wake-up: the process dies right after a Challenge was
// written valid, before its Order handled the wake-up. Without a restart
// through `serve` (which wakes everything unfinished), the Order waits for
// its 10-minute safety net; `certfn renew` used to refuse ("already being
// issued"). Now renew wakes the issuance in flight and the Certificate is
// Ready within seconds of fake time.
func TestRenewWakesAnIssuanceThatLostItsWakeUp(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.apply(e.issuerYAML(http01Solvers))
	e.apply(certYAML("lost", []string{"lost.example.test"}, ""))
	validChallenge := func() bool {
		for _, ch := range e.challenges() {
			if ch.Status.State == api.StateValid {
				return true
			}
		}
		return false
	}
	for i := 0; !validChallenge(); i++ {
		if i > 2000 {
			t.Fatalf("no Challenge became valid:%s", e.describe(api.KindChallenge))
		}
		if !e.stepOne() {
			time.Sleep(5 * time.Millisecond) // Pebble's VA works on the wall clock
			e.clk.Advance(time.Second)
		}
	}
	e.restart() // the in-memory queue, with the Order's wake-up, is lost

	// A minute of fake time on the new process (no `serve` start): the
	// Order waits on its safety net.
	for i := 0; i < 60; i++ {
		e.run()
		e.clk.Advance(time.Second)
	}
	if e.ready("lost") {
		t.Fatal("the Certificate became Ready without help: the wake-up was not lost, the test proves nothing")
	}
	if o := e.orders(); len(o) != 1 || o[0].Status.State != api.StatePending {
		t.Fatalf("want the one Order pending:%s", e.describe(api.KindOrder))
	}

	res, err := e.rt.App.Service.Renew(e.ctx, caller, api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "lost"})
	if err != nil || !res.InFlight {
		t.Fatalf("renew: %+v %v", res, err)
	}
	t.Logf("renew woke %q", res.Woken)
	start := e.clk.Now()
	if !e.until(50, 100*time.Millisecond, func() bool { return e.ready("lost") }) {
		t.Fatalf("not Ready after renew:%s%s", e.describe(api.KindOrder), e.describe(api.KindChallenge))
	}
	if d := e.clk.Now().Sub(start); d > 5*time.Second {
		t.Fatalf("Ready %s of fake time after renew, want within 5 s", d)
	}
	if o := e.orders(); len(o) != 1 {
		t.Fatalf("%d Orders, want 1", len(o))
	}
	e.verify("lost-tls", "lost.example.test")
}
