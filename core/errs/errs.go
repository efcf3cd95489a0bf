// Package errs decides, in one place, whether an error is retried
// (transient) or recorded in status and acknowledged (permanent).
// See docs/design/one-step.md.
package errs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/certfn/certfn/core/ports"
)

type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// Permanent marks err as permanent: retrying cannot help (invalid spec, a
// denial, an ACME 4xx problem, a CSR with a bad signature).
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanent{err}
}

// Permanentf is Permanent(fmt.Errorf(...)).
func Permanentf(format string, a ...any) error { return Permanent(fmt.Errorf(format, a...)) }

type retryAfter struct {
	err   error
	after time.Duration
}

func (r retryAfter) Error() string { return r.err.Error() }
func (r retryAfter) Unwrap() error { return r.err }

// RetryAfter marks err transient with a server-suggested delay (ACME
// Retry-After, throttling).
func RetryAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return retryAfter{err, d}
}

// Class is the outcome of Classify.
type Class int

// Classes.
const (
	// Transient: return the error so the message is retried with backoff.
	Transient Class = iota
	// Permanent: record the reason in status and acknowledge the message.
	PermanentClass
	// Conflict: a lost conditional write; reload and retry at once.
	Conflict
)

// Classify is the single decision point. Marked-permanent errors are
// permanent; lost races are Conflict; everything else (network, throttling,
// 5xx, context deadline, unknown) is transient, because retrying a
// permanent error only costs a retry while dropping a transient one loses work.
func Classify(err error) Class {
	var p permanent
	switch {
	case err == nil:
		return Transient
	case errors.As(err, &p), errors.Is(err, ports.ErrInvalidContinue):
		return PermanentClass
	case errors.Is(err, ports.ErrConflict), errors.Is(err, ports.ErrAlreadyExists):
		return Conflict
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return Transient
	default:
		return Transient
	}
}

// IsPermanent is Classify(err) == PermanentClass.
func IsPermanent(err error) bool { return err != nil && Classify(err) == PermanentClass }

// SuggestedDelay returns the delay attached by RetryAfter, if any.
func SuggestedDelay(err error) (time.Duration, bool) {
	var r retryAfter
	if errors.As(err, &r) {
		return r.after, true
	}
	return 0, false
}
