package kubeapi

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/validation"
)

// statusError is an answer decided by this package: its code, reason and
// message, and the Status details.
type statusError struct {
	code    int
	reason  string
	msg     string
	details *StatusDetails
}

func (e *statusError) Error() string { return e.msg }

func badRequest(msg string) error {
	return &statusError{code: http.StatusBadRequest, reason: "BadRequest", msg: msg}
}

func notFound(msg string) error {
	return &statusError{code: http.StatusNotFound, reason: "NotFound", msg: msg}
}

func newStatus(code int, reason, msg string, details *StatusDetails) Status {
	return Status{Kind: "Status", APIVersion: "v1", Status: "Failure", Message: msg, Reason: reason, Details: details, Code: code}
}

// objectError is an error of the application service about one object
// (name "" for a collection): toStatus words it as the Kubernetes API
// server does ("certificates.cert-manager.io \"web\" not found").
type objectError struct {
	res  *resource
	name string
	err  error
}

func (e *objectError) Error() string { return e.err.Error() }
func (e *objectError) Unwrap() error { return e.err }

func qualified(res *resource) string {
	if res.group == "" {
		return res.info.Plural
	}
	return res.info.Plural + "." + res.group
}

// toStatus maps err to its Status: this package's own answers, then the
// application service's domain errors (as adapters/httpapi maps them,
// with Kubernetes' reasons).
func toStatus(err error) Status {
	var se *statusError
	if errors.As(err, &se) {
		return newStatus(se.code, se.reason, se.msg, se.details)
	}
	var maxErr *http.MaxBytesError
	if errors.As(err, &maxErr) {
		return newStatus(http.StatusRequestEntityTooLarge, "RequestEntityTooLarge",
			fmt.Sprintf("the request body is larger than the limit of %d bytes", maxErr.Limit), nil)
	}
	var oe *objectError
	target, details := "", (*StatusDetails)(nil)
	if errors.As(err, &oe) {
		target = qualified(oe.res)
		if oe.name != "" {
			target += fmt.Sprintf(" %q", oe.name)
		}
		details = &StatusDetails{Name: oe.name, Group: oe.res.group, Kind: oe.res.info.Plural}
	}
	var (
		fldErr *app.FieldError
		valErr *app.ValidationError
		vl     validation.ErrorList
		fe     api.FieldErrors
	)
	switch {
	case errors.As(err, &fldErr):
		return newStatus(http.StatusBadRequest, "BadRequest", err.Error(), nil)
	case errors.Is(err, ports.ErrInvalidContinue):
		return newStatus(http.StatusBadRequest, "BadRequest", "continue: "+err.Error(), nil)
	case errors.Is(err, app.ErrBadRequest):
		return newStatus(http.StatusBadRequest, "BadRequest", err.Error(), nil)
	case errors.Is(err, app.ErrForbidden):
		msg := strings.TrimPrefix(err.Error(), app.ErrForbidden.Error()+": ")
		if target != "" {
			msg = target + " is forbidden: " + msg
		}
		return newStatus(http.StatusForbidden, "Forbidden", msg, details)
	case errors.As(err, &valErr):
		d := invalidDetails(details)
		for _, e := range valErr.Details {
			d.Causes = append(d.Causes, StatusCause{Type: "FieldValueInvalid", Field: e.Field, Message: e.Error})
		}
		return newStatus(http.StatusUnprocessableEntity, "Invalid", invalidMessage(oe, valErr.Message), d)
	case errors.As(err, &vl) && len(vl) > 0:
		d := invalidDetails(details)
		for _, e := range vl {
			d.Causes = append(d.Causes, StatusCause{Type: "FieldValueInvalid", Field: e.Path, Message: e.Error()})
		}
		return newStatus(http.StatusUnprocessableEntity, "Invalid", invalidMessage(oe, err.Error()), d)
	case errors.As(err, &fe) && len(fe) > 0:
		d := invalidDetails(details)
		for _, e := range fe {
			d.Causes = append(d.Causes, StatusCause{Type: "FieldValueInvalid", Field: e.Path, Message: e.Rule})
		}
		return newStatus(http.StatusUnprocessableEntity, "Invalid", invalidMessage(oe, err.Error()), d)
	case errors.Is(err, ports.ErrNotFound):
		if target != "" && oe.name != "" {
			return newStatus(http.StatusNotFound, "NotFound", target+" not found", details)
		}
		return newStatus(http.StatusNotFound, "NotFound", err.Error(), details)
	case errors.Is(err, app.ErrAlreadyExists):
		return newStatus(http.StatusConflict, "AlreadyExists", target+" already exists", details)
	case errors.Is(err, app.ErrConflict), errors.Is(err, ports.ErrConflict), errs.IsPermanent(err):
		msg := err.Error()
		if target != "" {
			msg = "Operation cannot be fulfilled on " + target + ": " + msg
		}
		return newStatus(http.StatusConflict, "Conflict", msg, details)
	}
	return newStatus(http.StatusInternalServerError, "InternalError", "Internal error occurred: "+err.Error(), details)
}

func invalidDetails(d *StatusDetails) *StatusDetails {
	if d == nil {
		return &StatusDetails{}
	}
	c := *d
	return &c
}

// invalidMessage words a 422 as Kubernetes does:
// `Certificate.cert-manager.io "web" is invalid: <what>`.
func invalidMessage(oe *objectError, msg string) string {
	if oe == nil {
		return msg
	}
	kind := oe.res.info.Kind
	if oe.res.group != "" {
		kind += "." + oe.res.group
	}
	return fmt.Sprintf("%s %q is invalid: %s", kind, oe.name, msg)
}

// fail answers err as a Status and logs it (cause, when set, is logged in
// place of the answer's message: a 401's reason).
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, user string, err, cause error) {
	st := toStatus(err)
	level := slog.LevelInfo
	if st.Code >= 500 {
		level = slog.LevelError
	}
	logged := err
	if cause != nil {
		logged = cause
	}
	h.cfg.Logger.Log(r.Context(), level, "kube api request failed", "method", r.Method, "path", r.URL.Path,
		"status", st.Code, "caller", user, "err", logged.Error())
	writeJSON(w, st.Code, st)
}
