package app

import (
	"errors"
	"fmt"

	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// The Service's domain errors. Every error a Service method returns wraps
// at most one of them (test with errors.Is or errors.As); a transport maps
// them at its edge (adapters/httpapi: 400, 403, 404, 409, 422) and treats
// anything else as an internal failure.
var (
	// ErrBadRequest: the call itself is malformed (an empty batch, a verb
	// on a kind it does not apply to, an unknown revocation reason).
	ErrBadRequest = errors.New("bad request")
	// ErrForbidden: the caller's bindings do not allow the call.
	ErrForbidden = errors.New("forbidden")
	// ErrNotFound: the object (or kind) does not exist. It is the store's
	// sentinel, so a store's not-found answer needs no translation.
	ErrNotFound = ports.ErrNotFound
	// ErrConflict: the stored state refuses the call (already approved,
	// already being issued, a concurrent write won).
	ErrConflict = errors.New("conflict")
)

// ValidationError reports the objects of a batch that are invalid; nothing
// of the batch was stored. It is permanent (errs.Classify).
type ValidationError struct {
	// Message is every problem, one object's after the other's.
	Message string
	// Details lists one entry per invalid object.
	Details []ErrorDetail
}

// ErrorDetail is one invalid object: its key, the path of the first field
// whose rule it breaks (when known) and its whole error.
type ErrorDetail struct {
	Object string `json:"object,omitempty"`
	Field  string `json:"field,omitempty"`
	Error  string `json:"error"`
}

func (e *ValidationError) Error() string { return e.Message }

// Unwrap marks the error permanent.
func (e *ValidationError) Unwrap() error { return errs.Permanent(errors.New(e.Message)) }

// domainError is a message that is one of the domain errors (errors.Is)
// without repeating its name in the text.
type domainError struct {
	kind error
	msg  string
}

func (e *domainError) Error() string        { return e.msg }
func (e *domainError) Is(target error) bool { return target == e.kind }

func badRequestf(format string, a ...any) error {
	return &domainError{kind: ErrBadRequest, msg: fmt.Sprintf(format, a...)}
}

func notFoundf(format string, a ...any) error {
	return &domainError{kind: ErrNotFound, msg: fmt.Sprintf(format, a...)}
}

func forbidden(err error) error { return fmt.Errorf("%w: %w", ErrForbidden, err) }

// conflictf is a refusal by the stored state: permanent (retrying the same
// call cannot help) and ErrConflict.
func conflictf(format string, a ...any) error {
	return errs.Permanent(&domainError{kind: ErrConflict, msg: fmt.Sprintf(format, a...)})
}
