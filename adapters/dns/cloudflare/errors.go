package cloudflare

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	cfgo "github.com/cloudflare/cloudflare-go/v6"

	"github.com/certfn/certfn/core/errs"
)

// Cloudflare error codes the provider acts on.
const (
	// codeIdenticalRecord: "An identical record already exists." (create).
	codeIdenticalRecord = 81058
	// codeRecordNotFound: "Record does not exist." (delete).
	codeRecordNotFound = 81044
)

// credentialCodes are the codes Cloudflare answers when it cannot
// authenticate the request: invalid request headers (6003) and their
// chained causes (61xx: the Authorization, X-Auth-Key or X-Auth-Email
// header is malformed), missing credentials (9106), an invalid or expired
// token (9109), an authentication error (10000, 10001).
var credentialCodes = []int{6003, 6100, 6101, 6102, 6103, 6111, 9106, 9109, 10000, 10001}

// op is the kind of call that failed, for classify.
type op int

const (
	opListZones op = iota // GET /zones
	opRead                // GET /zones/{id}/dns_records
	opChange              // POST or DELETE /zones/{id}/dns_records
)

// classify turns a Cloudflare error into certfn's classes (core/errs),
// naming the field to fix for permanent ones:
//
//   - 429 is transient, with the server's Retry-After (seconds or an HTTP
//     date) as the suggested delay (errs.RetryAfter); the client itself
//     never retries or waits;
//   - 401, 403, and a 400 whose code says the credentials are missing,
//     malformed or invalid, are permanent on apiTokenSecretRef (or
//     apiKeySecretRef): the token is wrong, or lacks Zone:Read / DNS:Edit
//     on the zone;
//   - any other 400 on a create (an invalid name or content, a CNAME at the
//     name) is permanent on the solver;
//   - 5xx, 404 (a zone or record that went away between two calls: the
//     retry finds the zone again), 409, network failures and anything else
//     stay transient.
func (p *Provider) classify(err error, o op) error {
	var ae *cfgo.Error
	if !errors.As(err, &ae) {
		return err
	}
	status := ae.StatusCode
	if ae.Response != nil {
		status = ae.Response.StatusCode
	}
	cred := p.Config.credentialField()
	switch {
	case status == http.StatusTooManyRequests:
		if d, ok := retryAfter(ae.Response); ok {
			return errs.RetryAfter(fmt.Errorf("%s: Cloudflare rate limit, retry after %s: %w", p.Config.Path, d, err), d)
		}
		return fmt.Errorf("%s: Cloudflare rate limit: %w", p.Config.Path, err)
	case status >= 500:
		return err
	case status == http.StatusUnauthorized || (status == http.StatusBadRequest && hasAnyCode(ae, credentialCodes)):
		return errs.Permanent(fmt.Errorf("%s: Cloudflare refused the credentials (%s): %w", cred, p.Config, err))
	case status == http.StatusForbidden:
		return errs.Permanent(fmt.Errorf("%s: the %s may not do this (it needs Zone:Read and DNS:Edit on the zone): %w", cred, p.Config, err))
	case status == http.StatusBadRequest && o == opChange:
		return errs.Permanent(fmt.Errorf("%s: Cloudflare refused the record: %w", p.Config.Path, err))
	case status == http.StatusBadRequest:
		return errs.Permanent(fmt.Errorf("%s: Cloudflare refused the request: %w", p.Config.Path, err))
	}
	return err
}

// retryAfter reads a response's Retry-After header: seconds, or an HTTP
// date (relative to the response's Date header when there is one).
func retryAfter(res *http.Response) (time.Duration, bool) {
	if res == nil {
		return 0, false
	}
	v := strings.TrimSpace(res.Header.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second, true
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	now := time.Now()
	if d, err := http.ParseTime(res.Header.Get("Date")); err == nil {
		now = d
	}
	return max(0, at.Sub(now)), true
}

// hasCode reports whether err is a Cloudflare error with code (at the top
// level or in an error chain).
func hasCode(err error, code int) bool {
	var ae *cfgo.Error
	return errors.As(err, &ae) && hasAnyCode(ae, []int{code})
}

// hasAnyCode reports whether one of ae's codes, or of their error
// chains, is in codes. The chains are read from the raw body (the
// client's error type does not decode them).
func hasAnyCode(ae *cfgo.Error, codes []int) bool {
	for _, e := range ae.Errors {
		if slices.Contains(codes, int(e.Code)) {
			return true
		}
	}
	var body struct {
		Errors []struct {
			Code       int `json:"code"`
			ErrorChain []struct {
				Code int `json:"code"`
			} `json:"error_chain"`
		} `json:"errors"`
	}
	if json.Unmarshal([]byte(ae.JSON.RawJSON()), &body) != nil {
		return false
	}
	for _, e := range body.Errors {
		if slices.Contains(codes, e.Code) {
			return true
		}
		for _, c := range e.ErrorChain {
			if slices.Contains(codes, c.Code) {
				return true
			}
		}
	}
	return false
}
