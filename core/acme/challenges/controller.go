// Package challenges is docs/design/acme-orders.md's challenge controller as
// one-step-per-invocation steps for kind Challenge (a kernel.Controller):
//
//  1. schedule: oldest first, at most MaxInFlight processing at once, never
//     two for the same DNS name and type at the same time — made atomic by
//     a ChallengeLease per (type, DNS name), claimed through the store's
//     conditional writes before processing starts and released when the
//     Challenge is final or deleted (lease.go); a Challenge that may not
//     start yet looks again after SchedulePoll (schedule.go);
//  2. present: HTTP-01 is marked presented (the http01 responder then
//     serves its key authorization); DNS-01 goes to the DNS01 solver,
//     whose record is kept on status.dns01 (present.go);
//  3. self-check: one check per invocation; not passing means looking
//     again after CheckInterval (present.go);
//  4. accept: tell the server to validate (present.go);
//  5. poll the authorization soon after the accept and then backing off
//     (acme.Polling; a Retry-After always wins) and record the final state
//     (poll.go).
//
// Clean-up always happens: before a Challenge records a final state, and
// before a presented Challenge is deleted — by its Order after success or
// along with its CertificateRequest — through kernel.Deleter
// (Controller.BeforeDelete). HTTP-01 needs nothing: a token is served only
// while its Challenge is stored, presented and not final.
package challenges

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/kernel"
	"github.com/certfn/certfn/core/ports"
)

// DNS01Solver presents, checks and cleans up DNS-01 records (implemented
// over core/acme/dns01). No call blocks on propagation.
type DNS01Solver interface {
	Present(ctx context.Context, ch *api.Challenge) (api.ChallengeDNS01Status, error)
	// Check is one propagation query round.
	Check(ctx context.Context, ch *api.Challenge) (ok bool, why string, err error)
	CleanUp(ctx context.Context, ch *api.Challenge) error
}

// SelfChecker checks once that a presented HTTP-01 challenge is served.
type SelfChecker interface {
	Check(ctx context.Context, ch *api.Challenge) (ok bool, why string, err error)
}

// Config configures the Challenge controller.
type Config struct {
	Accounts *acme.Accounts
	// Issuers is the deployment's issuer rule (which issuer a ref names,
	// where its secrets live).
	Issuers api.IssuerScope
	// HTTP01 self-checks HTTP-01 challenges; nil skips the self-check.
	HTTP01 SelfChecker
	// DNS01 solves DNS-01 challenges; nil makes them fail with a reason.
	DNS01 DNS01Solver
	// MaxInFlight bounds the Challenges processing at once (default 60).
	MaxInFlight int
	// SchedulePoll is how long a Challenge that may not start waits (default 5 s).
	SchedulePoll time.Duration
	// CheckInterval is the wait after a failing self-check (default 5 s).
	CheckInterval time.Duration
	// Polling says when the authorization is polled after the challenge
	// was accepted when the server gives no Retry-After (defaults:
	// acme.DefaultPollFirst, doubling up to acme.DefaultPollMax).
	Polling acme.Polling
	// WaitPoll is the safety-net wait for a Challenge whose issuer or
	// account is not ready (default 10 minutes).
	WaitPoll time.Duration
	// AfterPresent, when set, is called once a Challenge's presented state
	// is stored (local mode drops the in-process HTTP-01 responder's cache).
	AfterPresent func(ch *api.Challenge)
}

// Controller reconciles Challenges. Safe for concurrent use.
type Controller struct{ cfg Config }

// New returns the Challenge controller.
func New(cfg Config) *Controller {
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = 60
	}
	if cfg.SchedulePoll <= 0 {
		cfg.SchedulePoll = 5 * time.Second
	}
	if cfg.CheckInterval <= 0 {
		cfg.CheckInterval = 5 * time.Second
	}
	cfg.Polling = cfg.Polling.WithDefaults()
	if cfg.WaitPoll <= 0 {
		cfg.WaitPoll = 10 * time.Minute
	}
	return &Controller{cfg: cfg}
}

var _ kernel.Controller = (*Controller)(nil)

type run struct {
	h   *Controller
	e   kernel.Objects
	rec ports.Record
	c   *api.Challenge
	now time.Time
	// order is the Challenge's Order, checked by acme.CheckChallenge.
	order *api.Order
}

// Reconcile implements kernel.Controller: one step per call.
func (h *Controller) Reconcile(ctx context.Context, e kernel.Objects, rec ports.Record) error {
	c, err := kernel.DecodeAs[*api.Challenge](e, rec)
	if err != nil {
		return err
	}
	r := &run{h: h, e: e, rec: rec, c: c, now: e.Now()}
	return r.step(ctx)
}

func (r *run) step(ctx context.Context) error {
	c := r.c
	switch {
	case c.IsFinal():
		if c.Status.Presented || c.Status.Processing {
			// Interrupted clean-up of a final Challenge.
			if err := r.h.CleanUp(ctx, r.e, c); err != nil {
				return err
			}
			c.Status.Presented, c.Status.Processing = false, false
			return r.write(ctx, time.Time{}, "record clean-up")
		}
		return r.e.Settle(ctx, r.rec, time.Time{})
	case acme.SpecChanged(&c.ObjectMeta, c.Spec):
		return r.finish(ctx, api.StateErrored, "spec was changed after the Challenge was created; Challenge specs are immutable")
	}
	// Provenance before any step that presents, asks the ACME server or
	// reads a secret (see acme.CheckChallenge).
	order, why, err := acme.CheckChallenge(ctx, r.e.Get, c)
	if err != nil {
		return err
	}
	if why != "" {
		return r.finish(ctx, api.StateErrored, why)
	}
	r.order = order
	switch {
	case !c.Status.Processing:
		return r.schedule(ctx)
	case !c.Status.Presented:
		return r.present(ctx)
	case !c.Status.Accepted:
		return r.checkAndAccept(ctx)
	}
	return r.poll(ctx)
}

// note records n about the Challenge (written once the step's write
// succeeded; see kernel.Objects.RecordEvent).
func (r *run) note(ctx context.Context, n kernel.Note) {
	_ = r.e.RecordEvent(ctx, r.rec.Key, n, kernel.EventRepeat)
}

func (r *run) write(ctx context.Context, next time.Time, what string) error {
	if _, err := r.e.UpdateObject(ctx, r.c, r.rec.Version, next); err != nil {
		return fmt.Errorf("challenge %s: %s: %w", r.rec.Key, what, err)
	}
	return nil
}

// finish cleans up and records a final state; the write wakes the Order,
// and Challenges waiting for a slot are woken.
func (r *run) finish(ctx context.Context, state api.State, reason string) error {
	c := r.c
	if c.Status.Presented {
		if err := r.h.CleanUp(ctx, r.e, c); err != nil {
			return err
		}
	}
	c.Status.State, c.Status.Reason = state, reason
	c.Status.Presented, c.Status.Processing, c.Status.NextPollAt = false, false, nil
	if state == api.StateValid {
		r.note(ctx, kernel.Normal("DomainVerified", fmt.Sprintf("Domain %q verified with %q validation", c.Spec.DNSName, c.Spec.Type)))
	} else {
		r.note(ctx, kernel.Warning("Failed", fmt.Sprintf("Accepting challenge authorization failed: %s", reason)))
	}
	if err := r.write(ctx, time.Time{}, "record final state"); err != nil {
		return err
	}
	r.e.Metrics().Inc("certfn_acme_challenges_total", "state", string(state), "type", string(c.Spec.Type))
	// After the final write: a crash before the release leaves a lease
	// whose holder is final, which the next claimer takes over.
	if err := release(ctx, r.e, c, r.now); err != nil {
		return err
	}
	return r.wakeWaiting(ctx)
}

// BeforeDelete implements kernel.Deleter: a Challenge deleted while its
// record is presented (its Order succeeded, or its CertificateRequest was
// deleted) is cleaned up first. So is a DNS-01 Challenge that is
// processing but not recorded as presented: its TXT record may have been
// added by a Present whose status write a crash lost. Its clean-up is
// best effort: a solver that fails permanently (say, its secret is gone)
// cannot have presented anything since, and must not block the deletion.
// A Challenge that is not final then releases its lease (lease.go): it
// may hold it while processing, or after a crash between its claim and
// its processing write.
func (h *Controller) BeforeDelete(ctx context.Context, e kernel.Objects, rec ports.Record) error {
	obj, err := e.Decode(rec)
	if err != nil {
		return err
	}
	ch, ok := obj.(*api.Challenge)
	switch {
	case !ok:
		return nil
	case ch.Status.Presented:
		if err := h.CleanUp(ctx, e, ch); err != nil {
			return err
		}
	case ch.Status.Processing && ch.Spec.Type == api.ACMEChallengeTypeDNS01:
		if err := h.CleanUp(ctx, e, ch); err != nil && !errs.IsPermanent(err) {
			return err
		}
	}
	if ch.IsFinal() {
		// Released when it became final (or, after a crash, stale for
		// the next claimer to take over).
		return nil
	}
	return release(ctx, e, ch, e.Now())
}

var _ kernel.Deleter = (*Controller)(nil)

// CleanUp removes what ch presented: the DNS-01 record (HTTP-01 needs
// nothing: its token is served only while the Challenge is presented and
// not final). Idempotent.
func (h *Controller) CleanUp(ctx context.Context, _ kernel.Objects, ch *api.Challenge) error {
	if ch.Spec.Type != api.ACMEChallengeTypeDNS01 || h.cfg.DNS01 == nil {
		return nil
	}
	if err := h.cfg.DNS01.CleanUp(ctx, ch); err != nil {
		return fmt.Errorf("clean up DNS-01 record of challenge %s/%s: %w", ch.Namespace, ch.Name, err)
	}
	return nil
}

// account returns the Challenge issuer's account and client; ok is false
// when the step should wait.
func (r *run) account(ctx context.Context) (acme.Account, acme.Client, bool, error) {
	key, ns, known := r.h.cfg.Issuers.Resolve(r.c.Namespace, r.c.Spec.IssuerRef)
	if !known {
		key = api.IssuerKey(r.c.Namespace, r.c.Spec.IssuerRef) // reported as not found below
	}
	obj, err := r.e.Get(ctx, key)
	if errors.Is(err, ports.ErrNotFound) {
		return acme.Account{}, nil, false, r.e.Settle(ctx, r.rec, r.now.Add(r.h.cfg.WaitPoll))
	}
	if err != nil {
		return acme.Account{}, nil, false, err
	}
	iss, ok := obj.(api.GenericIssuer)
	if !ok || iss.GetSpec().ACME == nil {
		return acme.Account{}, nil, false, r.finish(ctx, api.StateErrored, fmt.Sprintf("issuer %q is not an ACME issuer", r.c.Spec.IssuerRef.Name))
	}
	acct, client, err := r.h.cfg.Accounts.Get(ctx, iss, ns)
	if err != nil {
		return acme.Account{}, nil, false, err
	}
	// The key authorization is the issuer account's, never the stored one.
	if r.c.Spec.Key != acme.KeyAuthorization(r.c.Spec.Token, acct.Thumbprint) {
		return acme.Account{}, nil, false, r.finish(ctx, api.StateErrored, "spec.key is not the key authorization of the issuer's ACME account for this token")
	}
	return acct, client, true, nil
}

// checkSolver reports why a DNS-01 Challenge's solver must not be used
// ("" when it may): it must be the solver the issuer's spec selects for
// this authorization now (cert-manager's selector rules over the Order's
// labels and the challenge types the server offered), so the provider,
// zone and credentials always come from the issuer's own spec, never from
// the stored Challenge.
func (r *run) checkSolver(ctx context.Context) (string, error) {
	c := r.c
	key, _, known := r.h.cfg.Issuers.Resolve(c.Namespace, c.Spec.IssuerRef)
	if !known {
		return "spec.issuerRef does not name a cert-manager issuer", nil
	}
	obj, err := r.e.Get(ctx, key)
	if errors.Is(err, ports.ErrNotFound) {
		return fmt.Sprintf("issuer %s does not exist", key), nil
	}
	if err != nil {
		return "", fmt.Errorf("challenge %s: read issuer %s: %w", r.rec.Key, key, err)
	}
	iss, ok := obj.(api.GenericIssuer)
	if !ok || iss.GetSpec().ACME == nil {
		return fmt.Sprintf("issuer %s is not an ACME issuer", key), nil
	}
	var offered []string
	for _, az := range r.order.Status.Authorizations {
		if az.URL == c.Spec.AuthorizationURL {
			for _, ch := range az.Challenges {
				offered = append(offered, ch.Type)
			}
		}
	}
	choice, ok := acme.SelectSolver(iss.GetSpec().ACME.Solvers, c.Spec.DNSName, c.Spec.Wildcard, r.order.Labels, offered)
	typ, _ := acme.ChallengeTypeFor(choice.Type)
	if !ok || typ != c.Spec.Type || !reflect.DeepEqual(choice.Solver, c.Spec.Solver) {
		return "spec.solver is not the solver the issuer's spec selects for this challenge (the issuer's solvers changed, or the Challenge was not created by certfn)", nil
	}
	return "", nil
}

// Unfinished is the Challenges' kernel.UnfinishedFunc: the Challenges
// that are not final, and final ones still presented or processing
// (their clean-up was interrupted).
func Unfinished(ctx context.Context, l *kernel.Listing) (first, rest []api.Key, err error) {
	chs, err := l.Objects(ctx, api.KindChallenge)
	if err != nil {
		return nil, nil, err
	}
	for _, it := range chs {
		ch := it.Obj.(*api.Challenge)
		if !ch.IsFinal() || ch.Status.Presented || ch.Status.Processing {
			rest = append(rest, it.Rec.Key)
		}
	}
	return nil, rest, nil
}
