package acme

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mholt/acmez/v3/acme"

	core "github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/errs"
)

// Default delays when the server throttles without a Retry-After header.
const (
	defaultRateLimitDelay   = time.Hour
	defaultUnavailableDelay = time.Minute
)

// permanentProblems are ACME problem types (RFC 8555 §6.7, RFC 9773) that
// retrying the same request cannot fix.
var permanentProblems = map[string]bool{
	acme.ProblemTypeAccountDoesNotExist:          true,
	acme.ProblemTypeAlreadyRevoked:               true,
	acme.ProblemTypeBadCSR:                       true,
	acme.ProblemTypeBadPublicKey:                 true,
	acme.ProblemTypeBadRevocationReason:          true,
	acme.ProblemTypeBadSignatureAlgorithm:        true,
	acme.ProblemTypeCAA:                          true,
	acme.ProblemTypeCompound:                     true,
	acme.ProblemTypeConnection:                   true,
	acme.ProblemTypeDNS:                          true,
	acme.ProblemTypeExternalAccountRequired:      true,
	acme.ProblemTypeIncorrectResponse:            true,
	acme.ProblemTypeInvalidContact:               true,
	acme.ProblemTypeMalformed:                    true,
	acme.ProblemTypeRejectedIdentifier:           true,
	acme.ProblemTypeTLS:                          true,
	acme.ProblemTypeUnauthorized:                 true,
	acme.ProblemTypeUnsupportedContact:           true,
	acme.ProblemTypeUnsupportedIdentifier:        true,
	acme.ProblemTypeUserActionRequired:           true,
	"urn:ietf:params:acme:error:alreadyReplaced": true,
	"urn:ietf:params:acme:error:invalidProfile":  true,
}

// ProblemAlreadyReplaced is RFC 9773's problem type for a "replaces" that
// names a certificate already replaced.
const ProblemAlreadyReplaced = "urn:ietf:params:acme:error:alreadyReplaced"

// maxProblemText bounds problemText: the text ends up in status
// conditions and Events, and a server chooses its detail and subproblems.
const maxProblemText = 1000

// problemText renders a problem for status fields: its short type and
// detail (at most maxProblemText bytes).
func problemText(p acme.Problem) string {
	t := strings.TrimPrefix(p.Type, "urn:ietf:params:acme:error:")
	s := t
	if p.Detail != "" {
		s += ": " + p.Detail
	}
	for _, sp := range p.Subproblems {
		if len(s) > maxProblemText {
			break
		}
		s += fmt.Sprintf("; %s: %s", strings.TrimPrefix(sp.Type, "urn:ietf:params:acme:error:"), sp.Detail)
		if sp.Identifier.Value != "" {
			s += " (" + sp.Identifier.Value + ")"
		}
	}
	return clip(s, maxProblemText)
}

// ProblemError is the error for an ACME problem document; errors.As finds
// it under the classification wrapper.
type ProblemError struct {
	Op      string
	Server  string
	Problem acme.Problem
}

func (e *ProblemError) Error() string {
	return fmt.Sprintf("%s: the ACME server answered HTTP %d %s", e.Op, e.Problem.Status, problemText(e.Problem))
}

// Is makes every problem error match core/acme.ErrProblem.
func (e *ProblemError) Is(target error) bool { return target == core.ErrProblem }

// ProblemType returns the problem's type URN.
func (e *ProblemError) ProblemType() string { return e.Problem.Type }

func permanentf(format string, a ...any) error { return errs.Permanentf(format, a...) }

func transientf(format string, a ...any) error { return fmt.Errorf(format, a...) }

// mapError is the one place ACME errors are classified: rate limits (429,
// rateLimited) and unavailability (503) are transient with the server's
// Retry-After (errs.RetryAfter); problems that retrying cannot fix are
// errs.Permanent with the problem's detail; badNonce (after signedCall's
// retries), serverInternal and other 5xx are transient; network failures,
// a server certificate that does not verify (pointing at caBundle) and a
// directory that is not an ACME directory are transient with a message
// that says so.
func (c *Client) mapError(op string, err error, m *meta) error {
	var ra time.Duration
	if m != nil {
		ra = min(m.RetryAfter(), MaxRetryAfter)
	}
	var p acme.Problem
	if errors.As(err, &p) {
		if p.Type == badNonceMark {
			p.Type = acme.ProblemTypeBadNonce // the name certfn's transport gave it (nonce.go)
		}
		pe := &ProblemError{Op: op, Server: c.dir, Problem: p}
		switch {
		case p.Status == http.StatusTooManyRequests || p.Type == acme.ProblemTypeRateLimited:
			if ra <= 0 {
				ra = defaultRateLimitDelay
			}
			return errs.RetryAfter(pe, ra)
		case p.Status == http.StatusServiceUnavailable:
			if ra <= 0 {
				ra = defaultUnavailableDelay
			}
			return errs.RetryAfter(pe, ra)
		case p.Type == ProblemAlreadyReplaced:
			return errs.Permanent(fmt.Errorf("%w: %w", core.ErrAlreadyReplaced, pe))
		case permanentProblems[p.Type]:
			return errs.Permanent(pe)
		case p.Status >= 500 || p.Type == acme.ProblemTypeBadNonce || p.Type == acme.ProblemTypeServerInternal:
			return pe
		case p.Status >= 400 && p.Status < 500 && p.Status != http.StatusRequestTimeout && p.Status != http.StatusConflict:
			return errs.Permanent(pe)
		}
		return pe
	}
	var (
		ne  net.Error
		cve *tls.CertificateVerificationError
		uae x509.UnknownAuthorityError
		he  x509.HostnameError
		cie x509.CertificateInvalidError
	)
	msg := err.Error()
	switch {
	case errors.As(err, &cve), errors.As(err, &uae), errors.As(err, &he), errors.As(err, &cie):
		// The server was reached; its certificate is the problem.
		return fmt.Errorf("%s: the TLS certificate of the ACME server %s is not trusted; set spec.acme.caBundle to the CA that issued it (or spec.acme.skipTLSVerify for a test server): %w", op, c.dir, err)
	case errors.As(err, &ne), strings.Contains(msg, "performing request"):
		return fmt.Errorf("%s: cannot reach the ACME server %s (network or TLS error): %w", op, c.dir, err)
	case httpError(msg) != "" && httpError(msg)[0] == '4' && strings.Contains(msg, "provisioning client"):
		return opaque{err: err, msg: fmt.Sprintf("%s: %s does not serve an ACME directory (HTTP %s)", op, c.dir, httpError(msg))}
	case httpError(msg) != "":
		// acmez's "HTTP 403: <body>": an answer that is not a problem
		// document (its body was dropped by errorBodies); only the status
		// and the issuer's own directory URL are told.
		code := httpError(msg)
		what := "not an ACME problem document"
		if code[0] == '5' {
			what = "a server or proxy error"
		}
		return opaque{err: err, msg: fmt.Sprintf("%s: the ACME server %s answered HTTP %s (%s)", op, c.dir, code, what)}
	case strings.Contains(msg, "required directory fields are missing"), strings.Contains(msg, "provisioning client"):
		return opaque{err: err, msg: fmt.Sprintf("%s: %s does not serve an ACME directory", op, c.dir)}
	}
	return clipped{err: err, msg: clip(fmt.Sprintf("%s: %s: %v", op, c.dir, err), maxProblemText)}
}

// httpStatusRE finds acmez's "HTTP <code>: <body>" error for a response
// that is not a problem document.
var httpStatusRE = regexp.MustCompile(`HTTP ([45]\d\d): `)

// httpError returns the 4xx or 5xx status code in msg, or "".
func httpError(msg string) string {
	if m := httpStatusRE.FindStringSubmatch(msg); m != nil {
		return m[1]
	}
	return ""
}

// opaque is an error whose message says only what certfn wrote: the
// wrapped error (which may quote a remote answer) is kept for errors.Is
// and errors.As, never printed.
type opaque struct {
	err error
	msg string
}

func (o opaque) Error() string { return o.msg }
func (o opaque) Unwrap() error { return o.err }

// clip shortens s to at most n bytes (on a rune boundary), marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + " …"
}

// clipped is an error with a shortened message that still unwraps to the
// original error.
type clipped struct {
	err error
	msg string
}

func (c clipped) Error() string { return c.msg }
func (c clipped) Unwrap() error { return c.err }
