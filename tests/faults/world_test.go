package faults

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/certfn/certfn/adapters/dns/challtestsrv"
	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/acme/http01"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/kernel"
	"github.com/certfn/certfn/core/memory"
	"github.com/certfn/certfn/core/ports"
)

// caller applies manifests, as the local CLI's user does.
var caller = app.Caller{Username: "local:test", Groups: []string{"system:authenticated", app.SuperuserGroup}}

// Bounds of a run.
const (
	// bound is the longest a run may take, in fake time, from the restart
	// (crash) or the fault (transient) until it has converged.
	bound = 5 * time.Second
	// quiet: a run is over once it has converged and nothing is due
	// within quiet.
	quiet = time.Minute
	// giveUp: a run that has not converged this long (fake time) after
	// its fault is stuck.
	giveUp = 2 * time.Hour
)

// world is what outlives a process in one run: the state store and the
// secret store (local mode's state.db and secrets/), the clock, the fault
// injector and what the wrappers saw.
type world struct {
	t     testing.TB
	ctx   context.Context
	env   *env
	flow  *flow
	name  string // unique per run: DNS names of ACME runs use it
	clk   *clock.Fake
	store *memory.Store
	sec   *memory.Secrets
	imp   *memory.Importer // the certificate manager (ACM) imports go to
	in    *injector
	l     *ledger
	p     *proc
	// restarts counts the processes started after a crash.
	restarts int
	// settingUp: the flow's goal does not count yet (its set-up runs).
	settingUp bool
	// firstKey is the public key (PKIX DER) of revision 1 (renewals).
	firstKey []byte
	// cloud, when set, runs the cloud deployment shape instead of local
	// mode (cloud_test.go).
	cloud *cloud
}

// proc is one certfn process: local mode's role (app.Local) built by
// app.Build over the world's stores, wrapped, and a new in-memory queue.
type proc struct {
	app *app.App
	q   *memory.Queue
}

func newWorld(t testing.TB, e *env, f *flow, name string, start time.Time) *world {
	w := &world{t: t, ctx: context.Background(), env: e, flow: f, name: name, clk: clock.NewFake(start),
		store: memory.NewStore(), sec: memory.NewSecrets(), imp: memory.NewImporter(), in: &injector{}, l: newLedger()}
	e.tokens.add(w.store)
	return w
}

func (w *world) close() { w.env.tokens.remove(w.store) }

// boot starts a process and does what `certfn serve` does before its
// loops: it enqueues the work a previous process left unfinished
// (localmode.Runtime.Resume → engine.WakeUnfinished).
func (w *world) boot() error {
	if w.cloud != nil {
		return w.bootCloud()
	}
	q := memory.NewQueue(w.clk, memory.DefaultVisibility)
	p := app.Ports{
		Store: store{s: w.store, in: w.in, l: w.l}, Secrets: secrets{s: w.sec, in: w.in, l: w.l}, Queue: queue{q: q, in: w.in},
		Clock: w.clk, CertificateImporter: importer{im: w.imp, in: w.in},
	}
	s := app.Settings{AutoApprove: w.flow.autoApprove, ResyncInterval: time.Hour}
	p.ACME = dialer{d: w.env.dialer, in: w.in, l: w.l}
	if w.flow.acme {
		ct := &challtestsrv.Provider{Server: w.env.peb.DNS, DNSAddr: w.env.dnsAddr}
		inner := ct.Factory()
		p.DNS01 = map[string]dns01.ProviderFactory{dns01.WebhookKey(challtestsrv.SolverName): func(ctx context.Context, req dns01.ProviderRequest) (dns01.Provider, error) {
			dp, err := inner(ctx, req)
			if err != nil {
				return nil, err
			}
			return dnsProvider{p: dp, in: w.in}, nil
		}}
		s.ACME = app.ACMESettings{Polling: acme.Polling{Max: time.Second}, HTTP01SelfCheck: true, HTTP01SelfCheckAddr: w.env.h01Addr,
			DNS01AllowInternalNames: true}
	}
	a, err := app.Build(p, s, app.Local)
	if err != nil {
		return err
	}
	w.p = &proc{app: a, q: q}
	_, err = a.Kernel.WakeUnfinished(w.ctx)
	return err
}

// apply applies a manifest through the application service.
func (w *world) apply(manifest string) error {
	objs, err := api.Decode([]byte(manifest))
	if err != nil {
		return err
	}
	var svc *app.Service
	if w.cloud != nil {
		svc = w.cloud.api.Service
	} else {
		svc = w.p.app.Service
	}
	_, err = svc.Apply(w.ctx, caller, objs)
	return err
}

// outcome is how a run ended.
type outcome struct {
	// lag is the fake time from the restart (crash) or the fault
	// (transient) until the run converged (0 when it had converged
	// before and stayed so).
	lag time.Duration
	// took is the fake time from the flow's start until it converged.
	took  time.Duration
	steps int
}

// drive runs the process like `certfn serve --until-idle`, one message at
// a time so that every run makes its calls in the same order: handle what
// is visible; when nothing is, sweep the due index; when that finds
// nothing, move the fake clock to the next due time. A process that died
// is restarted (boot). It returns once the flow has converged and nothing
// is due within quiet.
func (w *world) drive(start time.Time) (outcome, error) {
	if w.cloud != nil {
		return w.driveCloud(start)
	}
	var out outcome
	var ref, convergedAt time.Time // ref: the restart, or the transient fault or lost answer
	faulted := false
	for out.steps = 0; out.steps < 20000; out.steps++ {
		if w.in.isDead() {
			w.in.revive()
			w.restarts++
			if err := w.boot(); err != nil {
				return out, fmt.Errorf("restart: %w", err)
			}
			ref, convergedAt = w.clk.Now(), time.Time{}
		}
		if !faulted && w.firedLabel() != "" {
			faulted = true
			if w.in.kind == transient || w.in.kind == lost {
				ref = w.clk.Now()
			}
		}
		now := w.clk.Now()
		ok, why := w.converged()
		switch {
		case ok && convergedAt.IsZero():
			convergedAt = now
		case !ok:
			convergedAt = time.Time{}
		}
		if !ok && !ref.IsZero() && now.Sub(ref) > giveUp {
			return out, fmt.Errorf("stuck: not converged %s after the fault: %s%s", now.Sub(ref), why, w.dump())
		}
		ds, err := w.p.q.Receive(w.ctx, 1)
		if err != nil {
			return out, err
		}
		if len(ds) == 1 {
			d := ds[0]
			disp := w.p.app.Kernel.Handle(w.ctx, kernel.Message{Key: d.Key, Attempt: d.Attempt})
			if w.in.isDead() {
				continue // the queue died with the process
			}
			if disp.Ack {
				err = w.p.q.Ack(w.ctx, d)
			} else {
				err = w.p.q.Nack(w.ctx, d, disp.RetryAfter)
			}
			if err != nil {
				return out, err
			}
			continue
		}
		n, err := w.p.app.Kernel.Sweep(w.ctx, 1000)
		if w.in.isDead() || (err == nil && n > 0) {
			continue
		}
		// Idle: the next due time, of the queue or the due index.
		next, has := w.p.q.NextDue()
		if due, err := w.store.Due(w.ctx, now.Add(100*365*24*time.Hour), 1); err == nil && len(due) > 0 && (!has || due[0].NextRunAt.Before(next)) {
			next, has = due[0].NextRunAt, true
		}
		if ok && (!has || next.Sub(now) > quiet) {
			out.took = convergedAt.Sub(start)
			if !ref.IsZero() && convergedAt.After(ref) {
				out.lag = convergedAt.Sub(ref)
			}
			return out, nil
		}
		if !has {
			return out, fmt.Errorf("stuck: nothing queued or due, not converged: %s", why)
		}
		if !next.After(now) {
			next = now.Add(10 * time.Millisecond) // a failed sweep: try again
		}
		w.clk.Set(next)
	}
	return out, errors.New("stuck: no end after 20000 steps")
}

func (w *world) firedLabel() string {
	w.in.mu.Lock()
	defer w.in.mu.Unlock()
	return w.in.fired
}

// list returns the stored objects of kind (read directly, uncounted).
func (w *world) list(kind string) []api.Object {
	recs, err := w.store.List(w.ctx, ports.ListOptions{Kind: kind})
	if err != nil {
		w.t.Fatal(err)
	}
	out := make([]api.Object, 0, len(recs))
	for _, r := range recs {
		o, err := w.decode(r)
		if err != nil {
			w.t.Fatal(err)
		}
		out = append(out, o)
	}
	return out
}

func (w *world) decode(r ports.Record) (api.Object, error) {
	info, ok := api.KindInfoFor(r.Key.Kind)
	if !ok {
		return nil, fmt.Errorf("unknown kind %s", r.Key.Kind)
	}
	o := info.New()
	return o, jsonUnmarshal(r.Data, o)
}

// cert returns the Certificate default/name (nil when missing).
func (w *world) cert(name string) *api.Certificate {
	rec, err := w.store.Get(w.ctx, api.Key{Kind: api.KindCertificate, Namespace: "default", Name: name})
	if err != nil {
		return nil
	}
	o, err := w.decode(rec)
	if err != nil {
		return nil
	}
	return o.(*api.Certificate)
}

// converged: the flow's goal holds and nothing is in flight — every
// request, Order and Challenge final and every Challenge gone, no
// Certificate issuing, every issuer Ready.
func (w *world) converged() (bool, string) {
	if w.settingUp {
		// The set-up's own end: nothing in flight.
	} else if ok, why := w.flow.goal(w); !ok {
		return false, why
	}
	for _, o := range w.list(api.KindCertificateRequest) {
		if !o.(*api.CertificateRequest).IsFinal() {
			return false, "request " + o.GetObjectMeta().Name + " not final"
		}
	}
	for _, o := range w.list(api.KindOrder) {
		if !o.(*api.Order).IsFinal() {
			return false, "Order " + o.GetObjectMeta().Name + " not final"
		}
	}
	if chs := w.list(api.KindChallenge); len(chs) > 0 {
		return false, fmt.Sprintf("%d Challenges left", len(chs))
	}
	for _, o := range w.list(api.KindCertificate) {
		if api.IsTrue(o.(*api.Certificate).Status.Conditions, api.CertificateConditionIssuing) {
			return false, "Certificate " + o.GetObjectMeta().Name + " issuing"
		}
	}
	for _, kind := range []string{api.KindIssuer, api.KindClusterIssuer} {
		for _, o := range w.list(kind) {
			if !api.IsTrue(o.(api.GenericIssuer).GetStatus().Conditions, api.IssuerConditionReady) {
				return false, kind + " " + o.GetObjectMeta().Name + " not Ready"
			}
		}
	}
	return true, ""
}

// tokenHub answers HTTP-01 for every run at once: Pebble's VA and the
// self-check reach one responder, which asks each run's store directly
// (uncounted: in a deployment the responder is its own process).
type tokenHub struct {
	mu     sync.Mutex
	stores map[*memory.Store]acme.Account // value unused: a set
}

func (h *tokenHub) add(s *memory.Store) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stores == nil {
		h.stores = map[*memory.Store]acme.Account{}
	}
	h.stores[s] = acme.Account{}
}

func (h *tokenHub) remove(s *memory.Store) {
	h.mu.Lock()
	delete(h.stores, s)
	h.mu.Unlock()
}

// KeyAuthorization implements http01.Tokens: a presented HTTP-01
// Challenge of any run with that token for host.
func (h *tokenHub) KeyAuthorization(ctx context.Context, host, token string) (string, bool, error) {
	h.mu.Lock()
	stores := make([]*memory.Store, 0, len(h.stores))
	for s := range h.stores {
		stores = append(stores, s)
	}
	h.mu.Unlock()
	for _, s := range stores {
		recs, err := s.List(ctx, ports.ListOptions{Kind: api.KindChallenge})
		if err != nil {
			return "", false, err
		}
		for _, r := range recs {
			var ch api.Challenge
			if jsonUnmarshal(r.Data, &ch) != nil {
				continue
			}
			if http01.Serves(&ch, host, token) {
				return ch.Spec.Key, true, nil
			}
		}
	}
	return "", false, nil
}

// dump describes the requests, Orders and Challenges of a stuck run.
func (w *world) dump() string {
	var b strings.Builder
	for _, o := range w.list(api.KindCertificateRequest) {
		cr := o.(*api.CertificateRequest)
		fmt.Fprintf(&b, "\n  request %s rev %s: %s", cr.Name, cr.Annotations[api.AnnotationRevision], conditions(cr.Status.Conditions))
	}
	for _, o := range w.list(api.KindOrder) {
		ord := o.(*api.Order)
		fmt.Fprintf(&b, "\n  order %s rev %s: %s %s", ord.Name, ord.Annotations[api.AnnotationRevision], ord.Status.State, ord.Status.Reason)
	}
	for _, o := range w.list(api.KindChallenge) {
		ch := o.(*api.Challenge)
		fmt.Fprintf(&b, "\n  challenge %s: %s processing=%t presented=%t %s", ch.Name, ch.Status.State, ch.Status.Processing, ch.Status.Presented, ch.Status.Reason)
	}
	for _, o := range w.list(api.KindEvent) {
		ev := o.(*api.Event)
		fmt.Fprintf(&b, "\n  event on %s %s: %s x%d: %s", ev.InvolvedObject.Kind, ev.InvolvedObject.Name, ev.Reason, ev.Count, ev.Message)
	}
	if due, err := w.store.Due(w.ctx, w.clk.Now().Add(100*365*24*time.Hour), 100); err == nil {
		for _, d := range due {
			fmt.Fprintf(&b, "\n  due %s at %s", d.Key, d.NextRunAt.Sub(w.clk.Now()))
		}
	}
	if c := w.cert("web"); c != nil {
		rev := 0
		if c.Status.Revision != nil {
			rev = *c.Status.Revision
		}
		fmt.Fprintf(&b, "\n  certificate revision %d next key %v", rev, c.Status.NextPrivateKeySecretName != nil)
	}
	return b.String()
}
