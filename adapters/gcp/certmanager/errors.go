package certmanager

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/certfn/certfn/core/errs"
)

// ErrPending is wrapped by the (transient) error Import returns when
// Certificate Manager accepted a create or update whose long-running
// operation is not done yet. The error carries errs.RetryAfter with
// Options.PendingRetry, and names the operation.
var ErrPending = errors.New("import in progress")

// pending returns the transient error for an operation not done yet.
func (im *Importer) pending(what, name, op string) error {
	return errs.RetryAfter(fmt.Errorf("certificate manager: %s of %s: %w (operation %s not done yet; the next attempt reads the certificate again)",
		what, name, ErrPending, op), im.opts.PendingRetry)
}

// permanentCodes are the gRPC codes of errors that retrying cannot fix:
//   - InvalidArgument: the certificate, chain or key refused (not PEM, the
//     key does not match, an unsupported key type), a bad name or label;
//   - PermissionDenied, Unauthenticated: the function's identity may not
//     use Certificate Manager in this project (or the API is disabled);
//   - NotFound (once a missing certificate has been handled): the project
//     or location does not exist;
//   - OutOfRange, Unimplemented: a request this location cannot serve.
//
// Everything else (Unavailable, Internal, Unknown, DeadlineExceeded,
// Aborted, ResourceExhausted: rate limits and quotas alike,
// FailedPrecondition: a concurrent change) is transient.
var permanentCodes = map[codes.Code]bool{
	codes.InvalidArgument:  true,
	codes.PermissionDenied: true,
	codes.Unauthenticated:  true,
	codes.NotFound:         true,
	codes.OutOfRange:       true,
	codes.Unimplemented:    true,
}

// classify marks err permanent or transient (core/errs) by its gRPC code.
func classify(err error) error {
	if err == nil {
		return nil
	}
	if permanentCodes[status.Code(err)] {
		return errs.Permanent(err)
	}
	return err
}

// redact replaces err by an error without its text when that text quotes
// any line of the private key's PEM body (Certificate Manager does not, but
// a proxy or a double could); the gRPC code, the class and a suggested
// delay are kept.
func redact(err error, key []byte) error {
	if err == nil || len(key) == 0 {
		return err
	}
	msg := err.Error()
	leaks := strings.Contains(msg, "PRIVATE KEY")
	for _, line := range strings.Split(string(key), "\n") {
		line = strings.TrimSpace(line)
		if len(line) >= 16 && !strings.HasPrefix(line, "-----") && strings.Contains(msg, line) {
			leaks = true
			break
		}
	}
	if !leaks {
		return err
	}
	var out error = &redactedError{code: status.Code(err)}
	if d, ok := errs.SuggestedDelay(err); ok {
		out = errs.RetryAfter(out, d)
	}
	if errs.IsPermanent(err) {
		out = errs.Permanent(out)
	}
	return out
}

// redactedError stands for an error whose message quoted key material.
type redactedError struct{ code codes.Code }

func (e *redactedError) Error() string {
	return "certificate manager: " + e.code.String() + " (message withheld: it quoted the private key)"
}

// GRPCStatus keeps the code visible to status.Code.
func (e *redactedError) GRPCStatus() *status.Status { return status.New(e.code, e.Error()) }

// defaultPendingRetry is Options.PendingRetry's default.
const defaultPendingRetry = 10 * time.Second
