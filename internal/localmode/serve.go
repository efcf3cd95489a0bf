package localmode

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
)

// ServeOptions configure the real-time loops of `certfn serve`.
type ServeOptions struct {
	Workers       int
	SweepInterval time.Duration // scheduler (default 10 s)
	InboxInterval time.Duration // cross-process wake-ups (default 200 ms)
	// UntilIdle: process everything due, then return once nothing is
	// visible and nothing is due within IdleHorizon (default 5 s).
	UntilIdle   bool
	IdleHorizon time.Duration
	// HTTP01Listen, when set, serves ACME HTTP-01 challenges on this
	// address (e.g. ":80") while serving.
	HTTP01Listen string
	// MetricsListen, when set, serves GET /metrics (Prometheus text
	// format) on this address: ":9402" (cert-manager's port) binds
	// 127.0.0.1; any non-loopback address needs the API's TLS files and
	// serves authorized client certificates only (see ListenMetrics).
	MetricsListen string
	// API, when its Listen is set, serves the HTTP API over TLS with
	// client-certificate authentication (see APIOptions).
	API APIOptions
	// HTTP01Drain bounds how long a stopping serve with HTTP01Listen goes
	// on while HTTP-01 challenges are being validated (0:
	// DefaultHTTP01Drain).
	HTTP01Drain time.Duration
}

// ListenHTTP01 starts the HTTP-01 responder on addr and returns the bound
// address and a function that stops it.
func (r *Runtime) ListenHTTP01(addr string) (string, func(), error) {
	l, err := listen("http01-listen", addr)
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: r.App.HTTP01, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 10 * time.Second, MaxHeaderBytes: 8 << 10}
	r.Log.Info("http01: answering ACME HTTP-01 challenges", "addr", l.Addr().String(), "listen", addr)
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			r.Log.Warn("http01", "err", err)
		}
	}()
	return l.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// Serve runs the worker, scheduler and inbox loops until ctx ends (or,
// with UntilIdle, until idle). It returns nil on a clean stop. One serve
// per data directory: a second one fails at once with ErrServeRunning,
// naming the running one's PID.
func (r *Runtime) Serve(ctx context.Context, o ServeOptions) error {
	unlock, err := r.lockServe()
	if err != nil {
		return err
	}
	defer unlock()
	if o.Workers < 1 {
		o.Workers = 4
	}
	if o.SweepInterval <= 0 {
		o.SweepInterval = 10 * time.Second
	}
	if o.InboxInterval <= 0 {
		o.InboxInterval = 200 * time.Millisecond
	}
	if o.IdleHorizon <= 0 {
		o.IdleHorizon = 5 * time.Second
	}
	if err := r.Resume(ctx); err != nil {
		return err
	}
	certs, err := r.listCertificates(ctx)
	if err != nil {
		return err
	}
	for _, c := range certs {
		r.progress.baseline(c)
	}
	if o.HTTP01Listen != "" {
		_, stop, err := r.ListenHTTP01(o.HTTP01Listen)
		if err != nil {
			return err
		}
		defer stop()
	} else if names, err := r.HTTP01Issuers(ctx); err != nil {
		r.Log.Warn("http01: list issuers", "err", err)
	} else if len(names) > 0 {
		r.rememberHTTP01Issuers(ctx) // warned here, not again at their first reconcile
		r.Log.Warn("ACME issuers with an http01 solver, but no --http01-listen: their HTTP-01 challenges are not answered by this serve "+
			"(start it with --http01-listen :80, or answer them elsewhere)", "issuers", strings.Join(names, ", "))
	}
	if o.API.Listen != "" {
		_, stop, err := r.ListenAPI(o.API)
		if err != nil {
			return err
		}
		defer stop()
	}
	if o.MetricsListen != "" {
		_, stop, err := r.ListenMetrics(o.MetricsListen, o.API)
		if err != nil {
			return err
		}
		defer stop()
	}
	if r.Hooks != nil {
		// Certificates whose hook has not run for their current revision
		// (a crash while it ran, a hook newly configured) run it now; then
		// each reconcile of a Certificate is observed (localmode.handle).
		if err := r.observeAll(ctx); err != nil {
			return err
		}
		defer r.Hooks.Wait()
	}
	if o.UntilIdle {
		return r.serveUntilIdle(ctx, o)
	}
	// The loops run on their own context: a stop (SIGINT, SIGTERM) while
	// the CA validates an HTTP-01 challenge would fail its Order, so they
	// go on, answering and polling, until the accepted challenges are
	// final, at most HTTP01Drain.
	stopping := ctx
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	go func() {
		select {
		case <-stopping.Done():
		case <-ctx.Done():
			return
		}
		if o.HTTP01Listen != "" {
			r.drainHTTP01(ctx, o.HTTP01Drain)
		}
		cancel()
	}()
	var wg sync.WaitGroup
	loop := func(every time.Duration, fn func() error) {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			if err := fn(); err != nil && ctx.Err() == nil {
				r.Log.Warn("loop", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}
	wg.Add(2)
	go loop(o.InboxInterval, func() error { _, err := r.Inbox.Forward(ctx, r.Queue); return err })
	r.health.serving(o.SweepInterval)
	go loop(o.SweepInterval, func() error {
		if _, err := r.Kernel.Sweep(ctx, 10000); err != nil {
			return err
		}
		r.health.swept(time.Now())
		return nil
	})
	for i := 0; i < o.Workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if err := r.Queue.Wait(ctx); err != nil {
					return
				}
				ds, err := r.Queue.Receive(ctx, 1)
				if err != nil {
					return
				}
				for _, d := range ds {
					r.handle(ctx, d)
				}
			}
		}()
	}
	wg.Wait()
	if errors.Is(stopping.Err(), context.Canceled) {
		return nil
	}
	return stopping.Err()
}

// DefaultHTTP01Drain bounds how long a stopping serve goes on for the
// HTTP-01 challenges the CA is validating.
const DefaultHTTP01Drain = 30 * time.Second

// drainHTTP01 returns once no HTTP-01 Challenge is accepted and not
// final, or after limit (0: DefaultHTTP01Drain), saying what it waits
// for; ctx ends it early.
func (r *Runtime) drainHTTP01(ctx context.Context, limit time.Duration) {
	if limit <= 0 {
		limit = DefaultHTTP01Drain
	}
	deadline := time.Now().Add(limit)
	said := false
	for {
		n, err := r.http01InFlight(ctx)
		if err != nil {
			r.Log.Warn("stopping: cannot count the HTTP-01 challenges in flight; stopping now", "err", err)
			return
		}
		if n == 0 {
			if said {
				r.Log.Info("stopping: the HTTP-01 challenges in flight are final")
			}
			return
		}
		if !time.Now().Before(deadline) {
			r.Log.Warn("stopping with HTTP-01 challenges in flight: the next serve polls their result", "challenges", n, "waited", limit)
			return
		}
		if !said {
			r.Log.Info(fmt.Sprintf("stopping: %d challenges in flight; answering HTTP-01 until they are final (at most %s)", n, limit), "challenges", n)
			said = true
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// http01InFlight counts the HTTP-01 Challenges the CA was asked to
// validate that are not final: stopping the responder now would fail them.
func (r *Runtime) http01InFlight(ctx context.Context) (int, error) {
	objs, err := r.Repo.List(ctx, api.KindChallenge, "")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, o := range objs {
		if ch := o.(*api.Challenge); ch.Spec.Type == api.ACMEChallengeTypeHTTP01 && ch.Status.Accepted && !ch.IsFinal() {
			n++
		}
	}
	return n, nil
}

// HTTP01Issuers names the stored Issuers ("Issuer namespace/name") and
// ClusterIssuers ("ClusterIssuer name") with an ACME http01 solver.
func (r *Runtime) HTTP01Issuers(ctx context.Context) ([]string, error) {
	var names []string
	for _, kind := range []string{api.KindClusterIssuer, api.KindIssuer} {
		objs, err := r.Repo.List(ctx, kind, "")
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if iss, ok := o.(api.GenericIssuer); ok && hasHTTP01Solver(iss) {
				names = append(names, issuerName(iss))
			}
		}
	}
	return names, nil
}

func hasHTTP01Solver(iss api.GenericIssuer) bool {
	if iss.GetSpec().ACME == nil {
		return false
	}
	for _, s := range iss.GetSpec().ACME.Solvers {
		if s.HTTP01 != nil {
			return true
		}
	}
	return false
}

func issuerName(iss api.GenericIssuer) string {
	m := iss.GetObjectMeta()
	if m.Namespace != "" {
		return api.KindIssuer + " " + m.Namespace + "/" + m.Name
	}
	return api.KindClusterIssuer + " " + m.Name
}

// http01Warnings warns, once per issuer generation, when an issuer with an
// http01 solver appears (applied while serving) and this serve answers no
// HTTP-01 challenges (no --http01-listen).
type http01Warnings struct {
	mu   sync.Mutex
	seen map[api.Key]int64 // generation warned about
}

// rememberHTTP01Issuers records every stored issuer's generation as
// warned about.
func (r *Runtime) rememberHTTP01Issuers(ctx context.Context) {
	for _, kind := range []string{api.KindClusterIssuer, api.KindIssuer} {
		objs, err := r.Repo.List(ctx, kind, "")
		if err != nil {
			return
		}
		w := &r.http01Warned
		w.mu.Lock()
		if w.seen == nil {
			w.seen = map[api.Key]int64{}
		}
		for _, o := range objs {
			w.seen[api.KeyOf(o)] = o.GetObjectMeta().Generation
		}
		w.mu.Unlock()
	}
}

// observeIssuer is called after each reconcile of an issuer key.
func (r *Runtime) observeIssuer(ctx context.Context, key api.Key) {
	if !r.Opts.ACME.NoHTTP01Listener {
		return
	}
	o, err := r.Repo.Get(ctx, key)
	if err != nil {
		return
	}
	iss, ok := o.(api.GenericIssuer)
	if !ok || !hasHTTP01Solver(iss) {
		return
	}
	w := &r.http01Warned
	w.mu.Lock()
	if w.seen == nil {
		w.seen = map[api.Key]int64{}
	}
	gen := iss.GetObjectMeta().Generation
	warned := w.seen[key] == gen
	w.seen[key] = gen
	w.mu.Unlock()
	if !warned {
		r.Log.Warn("ACME issuer with an http01 solver, but this serve has no --http01-listen: its HTTP-01 challenges are not answered "+
			"(restart serve with --http01-listen :80, or answer them elsewhere)", "issuer", issuerName(iss))
	}
}

// Resume is what serve does first, with and without --until-idle, with
// the work a previous process left in flight: a wake-up it had queued in
// memory died with it, so every object that is not final is enqueued now
// (engine.WakeUnfinished: one List per kind; a Certificate whose secret
// may be ahead of its status goes first). That also decides at once the
// requests a previous serve left undecided, when this one runs with
// another approver, auto-approve list or policies.
func (r *Runtime) Resume(ctx context.Context) error {
	n, err := r.Kernel.WakeUnfinished(ctx)
	if err != nil {
		return err
	}
	if n > 0 {
		r.Log.Info("serve: resuming unfinished work", "keys", n)
	}
	return nil
}

// observeAll shows every Certificate to the deploy hook.
func (r *Runtime) observeAll(ctx context.Context) error {
	objs, err := r.Repo.List(ctx, api.KindCertificate, "")
	if err != nil {
		return fmt.Errorf("deploy hook: list certificates: %w", err)
	}
	for _, o := range objs {
		r.Hooks.Observe(o.(*api.Certificate))
	}
	return nil
}

// serveUntilIdle processes what is due until idle, then logs a summary
// line and returns a *NotReadyError naming the Certificates that are not
// Ready (the run could not resolve them), so that cron sees a failure.
func (r *Runtime) serveUntilIdle(ctx context.Context, o ServeOptions) error {
	if err := r.runUntilIdle(ctx, o); err != nil {
		return err
	}
	certs, err := r.listCertificates(ctx)
	if err != nil {
		return err
	}
	line, notReady := r.progress.summary(certs, func(c *api.Certificate) string {
		// The chain's blocker, as `certfn status` names it; "" (the
		// Certificate's own condition) when it cannot be read.
		rep, err := app.Explain(ctx, r.Repo.Get, r.Repo.EventsOf, nil, api.KeyOf(c))
		if err != nil {
			return ""
		}
		return strings.TrimPrefix(rep.Summary, "Not ready: ")
	})
	if len(notReady) > 0 {
		r.Log.Warn("serve --until-idle: " + line)
		return &NotReadyError{Certificates: notReady}
	}
	r.Log.Info("serve --until-idle: " + line)
	return nil
}

func (r *Runtime) runUntilIdle(ctx context.Context, o ServeOptions) error {
	for {
		if _, err := r.RunUntilIdle(ctx, o.Workers); err != nil {
			return err
		}
		next, ok := r.Queue.NextDue()
		if due, err := r.Store.Due(ctx, r.Opts.Clock.Now().Add(o.IdleHorizon), 1); err == nil && len(due) > 0 {
			if !ok || due[0].NextRunAt.Before(next) {
				next, ok = due[0].NextRunAt, true
			}
		}
		if !ok || next.Sub(r.Opts.Clock.Now()) > o.IdleHorizon {
			return nil
		}
		wait := time.Until(next)
		if wait < 10*time.Millisecond {
			wait = 10 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}
