package challenges

import (
	"context"
	"fmt"
	"github.com/certfn/certfn/core/kernel"
	"time"

	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
)

// present makes the challenge answerable: HTTP-01 only needs
// status.presented (the http01 responder serves presented, non-final
// HTTP-01 Challenges); DNS-01 asks the DNS01 solver to add the TXT record
// and keeps what it added on status.dns01 for the clean-up.
//
// Nothing is presented without the lease of the Challenge's DNS name and
// type: a processing Challenge that does not hold it (marked processing by
// an earlier version of certfn, or whose lease a deletion released before
// the deletion failed) claims it now, or steps back to waiting when
// another Challenge holds it.
func (r *run) present(ctx context.Context) error {
	c := r.c
	held, err := claim(ctx, r.e, c, r.now)
	if err != nil {
		return fmt.Errorf("challenge %s: claim %s: %w", r.rec.Key, LeaseKey(c), err)
	}
	if !held {
		return r.stepBack(ctx)
	}
	switch c.Spec.Type {
	case api.ACMEChallengeTypeHTTP01:
	case api.ACMEChallengeTypeDNS01:
		if r.h.cfg.DNS01 == nil {
			return r.finish(ctx, api.StateErrored, "DNS-01 is not available in this deployment of certfn (no DNS-01 solver configured)")
		}
		if why, err := r.checkSolver(ctx); err != nil {
			return err
		} else if why != "" {
			return r.finish(ctx, api.StateErrored, why)
		}
		got, err := r.h.cfg.DNS01.Present(ctx, c)
		if errs.IsPermanent(err) {
			return r.finish(ctx, api.StateErrored, "Failed to present the DNS-01 record: "+err.Error())
		}
		if err != nil {
			return fmt.Errorf("challenge %s: present DNS-01 record: %w", r.rec.Key, err)
		}
		c.Status.DNS01 = &got
	default:
		return r.finish(ctx, api.StateErrored, fmt.Sprintf("spec.type: %q is not a challenge type certfn solves (HTTP-01, DNS-01)", c.Spec.Type))
	}
	c.Status.Presented, c.Status.PresentedAt = true, api.NewTime(r.now)
	c.Status.Reason = "Presented; waiting for the self-check"
	r.note(ctx, kernel.Normal("Presented", fmt.Sprintf("Presented challenge using %s challenge mechanism", c.Spec.Type)))
	if err := r.write(ctx, r.now, "record presented"); err != nil {
		return err
	}
	if r.h.cfg.AfterPresent != nil {
		r.h.cfg.AfterPresent(c)
	}
	return nil
}

// stepBack returns a processing, unpresented Challenge to waiting. A
// DNS-01 record a crash may have left (Present done, status write lost) is
// removed first; a solver that fails for good cannot have presented it.
func (r *run) stepBack(ctx context.Context) error {
	c := r.c
	if c.Spec.Type == api.ACMEChallengeTypeDNS01 {
		if err := r.h.CleanUp(ctx, r.e, c); err != nil && !errs.IsPermanent(err) {
			return err
		}
	}
	c.Status.Processing = false
	c.Status.Reason = "Waiting: another Challenge for the same DNS name and type is in progress"
	return r.write(ctx, r.now.Add(r.h.cfg.SchedulePoll), "step back to waiting")
}

// checkAndAccept runs one self-check; when it passes the challenge is
// accepted (the server starts validating). A failing self-check records
// why and looks again after CheckInterval, backing off (checkAfter). A solver with
// waitInsteadOfSelfCheck runs no self-check: the challenge is accepted
// once that long has passed since it was presented (the wait is a
// nextRunAt, nothing sleeps).
func (r *run) checkAndAccept(ctx context.Context) error {
	c := r.c
	var (
		ok  = true
		why string
		err error
	)
	switch w := c.Spec.Solver.WaitInsteadOfSelfCheck; {
	case w != nil:
		stamped := c.Status.PresentedAt == nil
		if stamped {
			// Presented by an earlier certfn: the wait starts now.
			c.Status.PresentedAt = api.NewTime(r.now)
		}
		if wait, left := r.waitInsteadOfSelfCheck(w.Duration); !wait.IsZero() {
			reason := fmt.Sprintf("Waiting %s before accepting %s challenge without self-check (waitInsteadOfSelfCheck: %s)", left, c.Spec.Type, w.Duration)
			if c.Status.Reason == reason && !stamped {
				return r.e.Settle(ctx, r.rec, wait)
			}
			c.Status.Reason = reason
			return r.write(ctx, wait, "record the wait instead of the self-check")
		}
	case c.Spec.Type == api.ACMEChallengeTypeDNS01 && r.h.cfg.DNS01 != nil:
		ok, why, err = r.h.cfg.DNS01.Check(ctx, c)
	case c.Spec.Type == api.ACMEChallengeTypeHTTP01 && r.h.cfg.HTTP01 != nil:
		ok, why, err = r.h.cfg.HTTP01.Check(ctx, c)
	}
	if errs.IsPermanent(err) {
		return r.finish(ctx, api.StateErrored, "Self-check failed: "+err.Error())
	}
	if err != nil {
		ok, why = false, err.Error()
	}
	if !ok {
		reason := fmt.Sprintf("Waiting for %s challenge propagation: %s", c.Spec.Type, why)
		next := r.now.Add(r.checkAfter())
		if c.Status.Reason == reason {
			// The same failure a second time: cert-manager only logs it;
			// certfn also records it as a Warning (aggregated like any
			// Event: a write a minute at most), one check interval after
			// the first failure. The first one is only status.reason: a
			// DNS-01 record usually propagates by the second check, and
			// an Event is a state write of its own.
			r.note(ctx, kernel.Warning(ReasonSelfCheckFailed, reason))
			return r.e.Settle(ctx, r.rec, next)
		}
		c.Status.Reason = reason
		return r.write(ctx, next, "record self-check result")
	}
	acct, client, ready, err := r.account(ctx)
	if !ready || err != nil {
		return err
	}
	got, err := client.AcceptChallenge(ctx, acct, c.Spec.URL)
	r.e.Metrics().Inc("certfn_acme_requests_total", "op", "accept_challenge")
	if errs.IsPermanent(err) {
		// Possibly accepted before a crash: the authorization says.
		az, aerr := client.GetAuthorization(ctx, acct, c.Spec.AuthorizationURL)
		r.e.Metrics().Inc("certfn_acme_requests_total", "op", "get_authorization")
		if aerr != nil || az.Status == acme.StatusPending && challengeStatus(az, c.Spec.URL) == acme.StatusPending {
			return r.finish(ctx, api.StateErrored, "Failed to accept the challenge: "+err.Error())
		}
		return r.observe(ctx, az)
	}
	if err != nil {
		return fmt.Errorf("challenge %s: %w", r.rec.Key, err)
	}
	c.Status.Accepted = true
	_ = r.e.RecordEvent(ctx, r.rec.Key, kernel.Normal("Accepted", "Self-check passed; accepted the challenge at the ACME server"), kernel.EventLogOnly)
	if got.Status == acme.StatusInvalid {
		return r.finish(ctx, api.StateInvalid, "The ACME server rejected the challenge: "+got.Problem)
	}
	// The authorization's state is what docs/design/acme-orders.md records, so it is polled
	// even when the answer says the challenge is valid already — then at
	// once, without the backoff's first wait.
	c.Status.State = api.StateProcessing
	c.Status.Reason = "Accepted; waiting for the ACME server to validate"
	c.Status.Polls = 0
	next := r.pollAt(0, got.RetryAfter)
	if got.Status == acme.StatusValid && got.RetryAfter <= 0 {
		next = r.now
	}
	c.Status.NextPollAt = api.NewTime(next)
	return r.write(ctx, next, "record accepted")
}

func challengeStatus(az acme.Authorization, url string) string {
	for _, ch := range az.Challenges {
		if ch.URL == url {
			return ch.Status
		}
	}
	return ""
}

// waitInsteadOfSelfCheck returns when a challenge whose solver waits d
// instead of self-checking may be accepted, and how long is left; zero
// when it may be accepted now. The wait counts from status.presentedAt.
func (r *run) waitInsteadOfSelfCheck(d time.Duration) (time.Time, time.Duration) {
	until := r.c.Status.PresentedAt.Add(d)
	if !r.now.Before(until) {
		return time.Time{}, 0
	}
	// The reason names the time left rounded to the second, so an
	// unchanged reason means nothing to write.
	return until, until.Sub(r.now).Round(time.Second)
}

// ReasonSelfCheckFailed is the reason of the Warning Event of a
// Challenge whose self-check fails (certfn's: cert-manager logs the
// "Waiting for <type> challenge propagation: ..." reason without an Event).
const ReasonSelfCheckFailed = "SelfCheckFailed"
