// Package orders is docs/design/acme-orders.md's order controller as one-step-per-invocation
// steps for kind Order (a kernel.Controller):
//
//  1. create the ACME order once, only while status.url is empty, and copy
//     its URL, finalize URL and authorization URLs (create.go);
//  2. fetch each authorization once and copy identifier, wildcard, initial
//     state and offered challenges (create.go);
//  3. for each pending authorization choose a solver and make sure exactly
//     one Challenge exists (challenges.go); a failed Challenge fails the
//     Order without any ACME request;
//  4. when every Challenge is valid, finalize with spec.request — the
//     server answers orderNotReady when it does not agree, and only then
//     is the order re-read (finalize.go);
//  5. poll a processing order soon after finalize and then backing off
//     (acme.Polling; a Retry-After always wins), download the chain
//     (preferredChain honoured) and mark the Order valid;
//  6. once valid: clean up and delete the Challenges, then — once the
//     Certificate stores the certificate — fetch the certificate's ACME
//     renewal information, keep it fresh and copy it to the Certificate
//     (ari.go).
//
// No ACME request is made once the Order is invalid, expired or errored;
// failed Orders keep their Challenges for debugging.
package orders

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/kernel"
	"github.com/certfn/certfn/core/ports"
)

// Config configures the Order controller.
type Config struct {
	Accounts *acme.Accounts
	// Issuers is the deployment's issuer rule (which issuer a ref names,
	// where its secrets live).
	Issuers api.IssuerScope
	// Polling says when a processing order is polled when the server
	// gives no Retry-After (defaults: acme.DefaultPollFirst, doubling up
	// to acme.DefaultPollMax).
	Polling acme.Polling
	// WaitPoll is how long an Order waiting on its Challenges or issuer
	// waits before looking again by itself (default 10 minutes).
	WaitPoll time.Duration
	// ARIInterval is how often renewal information is fetched when the
	// server gives no Retry-After (default 12 h: at least twice a day).
	ARIInterval time.Duration
}

// Controller reconciles Orders. Safe for concurrent use.
type Controller struct{ cfg Config }

// New returns the Order controller.
func New(cfg Config) *Controller {
	cfg.Polling = cfg.Polling.WithDefaults()
	if cfg.WaitPoll <= 0 {
		cfg.WaitPoll = 10 * time.Minute
	}
	if cfg.ARIInterval <= 0 {
		cfg.ARIInterval = 12 * time.Hour
	}
	return &Controller{cfg: cfg}
}

var _ kernel.Controller = (*Controller)(nil)

// run is one reconcile of one Order.
type run struct {
	h   *Controller
	e   kernel.Objects
	rec ports.Record
	o   *api.Order
	now time.Time
}

// Reconcile implements kernel.Controller: one step per call.
func (h *Controller) Reconcile(ctx context.Context, e kernel.Objects, rec ports.Record) error {
	o, err := kernel.DecodeAs[*api.Order](e, rec)
	if err != nil {
		return err
	}
	r := &run{h: h, e: e, rec: rec, o: o, now: e.Now()}
	return r.step(ctx)
}

func (r *run) step(ctx context.Context) error {
	o := r.o
	switch {
	case o.Status.State == api.StateValid:
		return r.afterValid(ctx)
	case o.Status.State.IsFinal():
		// docs/design/acme-orders.md: a failed Order makes no further ACME request and keeps
		// its Challenges for debugging.
		return r.e.Settle(ctx, r.rec, time.Time{})
	case acme.SpecChanged(&o.ObjectMeta, o.Spec):
		return r.fail(ctx, api.StateErrored, "spec was changed after the Order was created; Order specs are immutable")
	}
	// Provenance before any ACME request (see acme.CheckOrder).
	if why, err := acme.CheckOrder(ctx, r.e.Get, o); err != nil {
		return err
	} else if why != "" {
		return r.fail(ctx, api.StateErrored, why)
	}
	iss, secretNS, err := r.issuer(ctx)
	if err != nil {
		return err
	}
	if iss == nil {
		return r.wait(ctx, r.now.Add(r.h.cfg.WaitPoll))
	}
	if iss.GetSpec().ACME == nil {
		return r.fail(ctx, api.StateErrored, fmt.Sprintf("issuer %q is not an ACME issuer", o.Spec.IssuerRef.Name))
	}
	acct, client, err := r.h.cfg.Accounts.Get(ctx, iss, secretNS)
	if errors.Is(err, acme.ErrServerNotAllowed) && api.IsTrue(iss.GetStatus().Conditions, api.IssuerConditionReady) {
		// The issuer was Ready before its server was refused (the
		// allow-list changed): its own step records why it is not.
		if err := r.e.Enqueue(ctx, api.KeyOf(iss), 0); err != nil {
			return err
		}
	}
	if errors.Is(err, acme.ErrAccountNotReady) {
		return r.wait(ctx, r.now.Add(r.h.cfg.WaitPoll))
	}
	if err != nil {
		return fmt.Errorf("order %s: %w", r.rec.Key, err)
	}
	a := &acmeCtx{iss: iss, acct: acct, client: client}
	switch {
	case o.Status.URL == "":
		return r.create(ctx, a)
	case needsAuthorizations(o):
		return r.fetchAuthorizations(ctx, a)
	case o.Status.State == api.StateProcessing:
		return r.poll(ctx, a)
	}
	return r.challenges(ctx, a)
}

type acmeCtx struct {
	iss    api.GenericIssuer
	acct   acme.Account
	client acme.Client
}

// issuer loads the Order's issuer; nil when it does not exist.
func (r *run) issuer(ctx context.Context) (api.GenericIssuer, string, error) {
	key, ns, ok := r.h.cfg.Issuers.Resolve(r.o.Namespace, r.o.Spec.IssuerRef)
	if !ok {
		return nil, "", nil
	}
	rec, err := r.e.Store().Get(ctx, key)
	if errors.Is(err, ports.ErrNotFound) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("read issuer %s: %w", key, err)
	}
	obj, err := r.e.Decode(rec)
	if err != nil {
		return nil, "", err
	}
	return obj.(api.GenericIssuer), ns, nil
}

// write stores the Order, due at next.
func (r *run) write(ctx context.Context, next time.Time, what string) error {
	if _, err := r.e.UpdateObject(ctx, r.o, r.rec.Version, next); err != nil {
		return fmt.Errorf("order %s: %s: %w", r.rec.Key, what, err)
	}
	return nil
}

// note records n about the Order (written once the step's write
// succeeded; see kernel.Objects.RecordEvent).
func (r *run) note(ctx context.Context, n kernel.Note) {
	_ = r.e.RecordEvent(ctx, r.rec.Key, n, kernel.EventRepeat)
}

// logStep logs an ACME step at INFO once the step's write succeeded,
// without an Event (kernel.EventLogOnly).
func (r *run) logStep(ctx context.Context, reason, message string) {
	_ = r.e.RecordEvent(ctx, r.rec.Key, kernel.Normal(reason, message), kernel.EventLogOnly)
}

// wait records that the Order wants to run again at t.
func (r *run) wait(ctx context.Context, t time.Time) error { return r.e.Settle(ctx, r.rec, t) }

// fail records a final failure (state invalid, expired or errored) with
// its reason; the CertificateRequest is woken by the write.
func (r *run) fail(ctx context.Context, state api.State, reason string) error {
	s := &r.o.Status
	s.State, s.Reason, s.FailureTime, s.NextPollAt = state, reason, api.NewTime(r.now), nil
	r.e.Metrics().Inc("certfn_acme_orders_failed_total", "namespace", r.o.Namespace)
	r.note(ctx, kernel.Warning("Failed", fmt.Sprintf("Order %s: %s", state, reason)))
	return r.write(ctx, time.Time{}, "record failure")
}

func needsAuthorizations(o *api.Order) bool {
	for _, a := range o.Status.Authorizations {
		if a.InitialState == api.StateUnknown {
			return true
		}
	}
	return false
}

// pollAt is when to poll the order next after polls polls: now + the
// server's Retry-After, or the backoff.
func (r *run) pollAt(polls int, ra time.Duration) time.Time {
	return r.now.Add(r.h.cfg.Polling.Delay(polls, ra))
}

// Unfinished is the Orders' kernel.UnfinishedFunc: the Orders that are
// not final, and valid Orders that still own Challenges (their clean-up
// was interrupted).
func Unfinished(ctx context.Context, l *kernel.Listing) (first, rest []api.Key, err error) {
	orders, err := l.Objects(ctx, api.KindOrder)
	if err != nil {
		return nil, nil, err
	}
	chs, err := l.Objects(ctx, api.KindChallenge)
	if err != nil {
		return nil, nil, err
	}
	owning := map[api.Key]bool{} // Orders that own a Challenge
	for _, ch := range chs {
		owning[ch.Rec.Owner] = true
	}
	for _, it := range orders {
		ord := it.Obj.(*api.Order)
		if !ord.IsFinal() || (ord.Status.State == api.StateValid && owning[it.Rec.Key]) {
			rest = append(rest, it.Rec.Key)
		}
	}
	return nil, rest, nil
}
