package challenges

import (
	"context"
	"fmt"
	"time"

	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
)

// poll reads the authorization, no earlier than status.nextPollAt, and
// records its state and the poll (status.polls) (docs/design/acme-orders.md: a Challenge is valid only when its
// authorization is valid).
func (r *run) poll(ctx context.Context) error {
	c := r.c
	if t := c.Status.NextPollAt; t != nil && r.now.Before(t.Time) {
		return r.e.Settle(ctx, r.rec, t.Time)
	}
	acct, client, ready, err := r.account(ctx)
	if !ready || err != nil {
		return err
	}
	az, err := client.GetAuthorization(ctx, acct, c.Spec.AuthorizationURL)
	r.e.Metrics().Inc("certfn_acme_requests_total", "op", "get_authorization")
	if errs.IsPermanent(err) {
		return r.finish(ctx, api.StateErrored, "Failed to read the authorization: "+err.Error())
	}
	if err != nil {
		return fmt.Errorf("challenge %s: %w", r.rec.Key, err)
	}
	c.Status.Polls++
	return r.observe(ctx, az)
}

// observe records the authorization's state: final states finish the
// Challenge; otherwise the next poll is due after the server's
// Retry-After, or the backoff step for the polls made so far.
func (r *run) observe(ctx context.Context, az acme.Authorization) error {
	c := r.c
	c.Status.Accepted = true
	switch az.Status {
	case acme.StatusValid:
		return r.finish(ctx, api.StateValid, "Successfully authorized domain")
	case acme.StatusInvalid, acme.StatusExpired, acme.StatusDeactivated, acme.StatusRevoked:
		why := ""
		for _, ch := range az.Challenges {
			if ch.URL == c.Spec.URL && ch.Problem != "" {
				why = ch.Problem
			}
		}
		if why == "" {
			why = "the authorization is " + az.Status
		}
		return r.finish(ctx, acme.StateOf(az.Status), fmt.Sprintf("Authorization for %s failed: %s", c.Spec.DNSName, why))
	}
	c.Status.State = api.StateProcessing
	if az.Status == acme.StatusPending && challengeStatus(az, c.Spec.URL) == acme.StatusPending {
		c.Status.State = api.StatePending
	}
	c.Status.NextPollAt = api.NewTime(r.pollAt(c.Status.Polls, az.RetryAfter))
	return r.write(ctx, c.Status.NextPollAt.Time, "record authorization state")
}

// pollAt is when to poll the authorization next after polls polls: now +
// the server's Retry-After, or the backoff.
func (r *run) pollAt(polls int, ra time.Duration) time.Time {
	return r.now.Add(r.h.cfg.Polling.Delay(polls, ra))
}
