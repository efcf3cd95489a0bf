package acme

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

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

// problemText renders a problem for status fields: its short type and detail.
func problemText(p acme.Problem) string {
	t := strings.TrimPrefix(p.Type, "urn:ietf:params:acme:error:")
	s := t
	if p.Detail != "" {
		s += ": " + p.Detail
	}
	for _, sp := range p.Subproblems {
		s += fmt.Sprintf("; %s: %s", strings.TrimPrefix(sp.Type, "urn:ietf:params:acme:error:"), sp.Detail)
		if sp.Identifier.Value != "" {
			s += " (" + sp.Identifier.Value + ")"
		}
	}
	return s
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

// ProblemType returns the problem's type URN.
func (e *ProblemError) ProblemType() string { return e.Problem.Type }

func permanentf(format string, a ...any) error { return errs.Permanentf(format, a...) }

func transientf(format string, a ...any) error { return fmt.Errorf(format, a...) }

// mapError is the one place ACME errors are classified: rate limits (429,
// rateLimited) and unavailability (503) are transient with the server's
// Retry-After (errs.RetryAfter); problems that retrying cannot fix are
// errs.Permanent with the problem's detail; badNonce (after acmez's own
// retries), serverInternal and other 5xx are transient; network and TLS
// failures and a directory that is not an ACME directory are transient
// with a message that says so.
func (c *Client) mapError(op string, err error, m *meta) error {
	var ra time.Duration
	if m != nil {
		ra = m.RetryAfter()
	}
	var p acme.Problem
	if errors.As(err, &p) {
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
	var ne net.Error
	msg := err.Error()
	switch {
	case errors.As(err, &ne), strings.Contains(msg, "performing request"):
		return fmt.Errorf("%s: cannot reach the ACME server %s (network or TLS error): %w", op, c.dir, err)
	case strings.Contains(msg, "required directory fields are missing"), strings.Contains(msg, "provisioning client"):
		return fmt.Errorf("%s: %s does not serve an ACME directory: %w", op, c.dir, err)
	}
	return fmt.Errorf("%s: %s: %w", op, c.dir, err)
}
