package digitalocean

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/digitalocean/godo"

	"github.com/certfn/certfn/core/errs"
)

// op is the kind of call that failed, for classify.
type op int

const (
	opList   op = iota // GET /v2/domains
	opRead             // GET /v2/domains/{domain}/records
	opChange           // POST or DELETE /v2/domains/{domain}/records
)

// maxRetryAfter caps the delay a 429 suggests (ratelimit-reset can be up
// to an hour away; the queue's own backoff applies beyond it).
const maxRetryAfter = 15 * time.Minute

// classify turns a DigitalOcean error into certfn's classes (core/errs),
// naming the field to fix for permanent ones:
//
//   - 429 is transient, with the time until ratelimit-reset (or
//     Retry-After) as the suggested delay (errs.RetryAfter), at most
//     maxRetryAfter; the client itself never retries or waits;
//   - 401 (an unknown, expired or revoked token) and 403 (a scoped token
//     without domain:read, domain:create or domain:delete) are permanent on
//     tokenSecretRef;
//   - 422 on a create (data DigitalOcean refuses) is permanent on the
//     solver;
//   - 5xx, 404 (a domain or record that went away between two calls: the
//     retry finds the domain again), network failures and anything else
//     stay transient.
func (p *Provider) classify(err error, o op) error {
	var er *godo.ErrorResponse
	if !errors.As(err, &er) || er.Response == nil {
		return err
	}
	field := p.Config.Path + ".tokenSecretRef"
	switch code := er.Response.StatusCode; {
	case code == http.StatusTooManyRequests:
		if d, ok := retryAfter(er.Response, time.Now()); ok {
			return errs.RetryAfter(fmt.Errorf("%s: DigitalOcean rate limit, retry after %s: %w", p.Config.Path, d, err), d)
		}
		return fmt.Errorf("%s: DigitalOcean rate limit: %w", p.Config.Path, err)
	case code >= 500:
		return err
	case code == http.StatusUnauthorized:
		return errs.Permanent(fmt.Errorf("%s: DigitalOcean refused the API token: %w", field, err))
	case code == http.StatusForbidden:
		return errs.Permanent(fmt.Errorf("%s: the API token may not do this (it needs domain:read, domain:create and domain:delete, or full access): %w", field, err))
	case code == http.StatusUnprocessableEntity && o == opChange, code == http.StatusBadRequest:
		return errs.Permanent(fmt.Errorf("%s: DigitalOcean refused the request: %w", p.Config.Path, err))
	}
	return err
}

// retryAfter reads when a rate-limited response says to come back:
// Retry-After (seconds), else ratelimit-reset (Unix seconds) relative to
// now; capped at maxRetryAfter.
func retryAfter(res *http.Response, now time.Time) (time.Duration, bool) {
	if n, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && n >= 0 {
		return min(time.Duration(n)*time.Second, maxRetryAfter), true
	}
	reset, err := strconv.ParseInt(res.Header.Get("ratelimit-reset"), 10, 64)
	if err != nil || reset <= 0 {
		return 0, false
	}
	d := time.Unix(reset, 0).Sub(now)
	return min(max(d, 0), maxRetryAfter), true
}

// status is the HTTP status of a DigitalOcean error (0 for others).
func status(err error) int {
	var er *godo.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return er.Response.StatusCode
	}
	return 0
}
