package acme

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/mholt/acmez/v3/acme"
)

// Bad nonces are retried at once, by certfn, not by acmez.
//
// A server that rejects a request's nonce has not processed the request
// and hands out a fresh nonce with the rejection (RFC 8555 §6.5); the
// client SHOULD retry with it. acmez does, but waits 250 ms before each
// retry: a sleep inside a step, which with a server rejecting half of all
// nonces made 50 certificates 12 times slower (four workers spent most of
// their time asleep). So the transport renames a badNonce problem on the
// way to acmez (badNonceMark: acmez then returns it at once, having kept
// the response's Replay-Nonce in its pool) and signedCall re-sends the
// call right away, at most maxNonceAttempts times in all — the bound
// acmez itself uses. What is left after that is mapped as badNonce: a
// transient error.
const (
	badNonceMark     = "urn:certfn:params:acme:error:badNonce"
	maxNonceAttempts = 10
)

// nonceMark renames the badNonce problem of a POST's answer to badNonceMark.
type nonceMark struct{ next http.RoundTripper }

func (n nonceMark) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := n.next.RoundTrip(r)
	if err != nil || r.Method != http.MethodPost || resp.StatusCode != http.StatusBadRequest {
		return resp, err
	}
	body, rerr := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close()
	if rerr != nil {
		return nil, rerr
	}
	body = bytes.Replace(body, []byte(`"`+acme.ProblemTypeBadNonce+`"`), []byte(`"`+badNonceMark+`"`), 1)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return resp, nil
}

// isBadNonce reports whether err is a (marked) badNonce problem.
func isBadNonce(err error) bool {
	var p acme.Problem
	return errors.As(err, &p) && (p.Type == badNonceMark || p.Type == acme.ProblemTypeBadNonce)
}

// signedCall runs f, one signed ACME request through acmez, again at once
// while the server rejects its nonce (at most maxNonceAttempts in all).
func signedCall[T any](f func() (T, error)) (T, error) {
	var v T
	var err error
	for i := 0; i < maxNonceAttempts; i++ {
		if v, err = f(); !isBadNonce(err) {
			break
		}
	}
	return v, err
}
