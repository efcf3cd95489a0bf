package gcpmode

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
)

// maxPushBody bounds a Pub/Sub or Cloud Tasks push request: its message is
// one reconcile key.
const maxPushBody = 64 << 10

// decodePush reads a push request's key and delivery attempt
// (pubsubq.DecodePush); set by FromEnvWith.
type pushDecoder func(r *http.Request, maxBody int64) (api.Key, int, error)

// ServeHTTP serves the routes of the role's events (core/app Role:
// Consumes, Sweeps, ServesAPI, HTTP01); anything else is 404:
//
//	worker, signer  POST /push    a Pub/Sub push (delayed messages too: a
//	                              Cloud Tasks task publishes them to the
//	                              topic when due): one reconcile key; 2xx
//	                              when the key is done or failed
//	                              permanently (recorded), 503 to retry
//	                              (Pub/Sub's retry policy backs off; after
//	                              max delivery attempts the dead-letter
//	                              topic keeps it); a body that can never
//	                              decode is acknowledged (204) and logged
//	scheduler       POST /sweep   Cloud Scheduler's minute: the due keys to
//	                              the worker topic
//	api             the HTTP API (docs/reference/api.md), Google ID tokens
//	http01          GET /.well-known/acme-challenge/{token}
//	every role      GET /healthz
func (rt *Runtime) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if healthy(w, r) {
		return
	}
	role := rt.Role
	switch {
	case role.Consumes != "" && r.URL.Path == "/push":
		if allow(w, r, http.MethodPost) {
			rt.push(w, r)
		}
	case role.Sweeps && r.URL.Path == "/sweep":
		if allow(w, r, http.MethodPost) {
			rt.sweep(w, r)
		}
	case role.ServesAPI:
		rt.handler.ServeHTTP(w, r)
	case role.HTTP01:
		rt.App.HTTP01.ServeHTTP(w, r)
	default:
		fail(w, http.StatusNotFound, "NotFound", errNoHandler)
	}
}

// push handles one delivered key.
func (rt *Runtime) push(w http.ResponseWriter, r *http.Request) {
	key, attempt, err := rt.decode(r, maxPushBody)
	switch {
	case err != nil && errs.IsPermanent(err):
		// Retrying cannot fix a message that is not a reconcile key:
		// acknowledged (2xx, or Pub/Sub would push it again until the
		// dead-letter topic) and logged, as the AWS worker drops it.
		rt.Log.Warn("dropped a push that is not a reconcile key", "err", err)
		w.WriteHeader(http.StatusNoContent)
		return
	case err != nil:
		fail(w, http.StatusServiceUnavailable, "Retry", err)
		return
	}
	if attempt < 1 {
		attempt = 1
	}
	d := rt.deliver.Deliver(r.Context(), key, attempt)
	switch {
	case d.Ack && d.Err != nil:
		rt.Log.Warn("acknowledged without retry", "key", key.String(), "attempt", attempt, "err", d.Err)
	case d.Ack && d.Why != "":
		rt.Log.Debug("nothing to do", "key", key.String(), "why", d.Why)
	case !d.Ack:
		rt.Log.Warn("will retry", "key", key.String(), "attempt", attempt, "err", d.Err)
		w.Header().Set("Retry-After", fmt.Sprint(int(d.RetryAfter/time.Second)))
		fail(w, http.StatusServiceUnavailable, "Retry", retryErr(d.Err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func retryErr(err error) error {
	if err == nil {
		return errors.New("retry")
	}
	return err
}

// SweepResult is the scheduler's answer.
type SweepResult struct {
	Due  int `json:"due"`
	Sent int `json:"sent"`
}

// sweep sends the due keys to the worker topic in batches (Kernel.Sweep
// through the scheduler's app.SweepQueue). A key not sent stays due for
// the next sweep; an error answers 500 (Cloud Scheduler's retry applies).
func (rt *Runtime) sweep(w http.ResponseWriter, r *http.Request) {
	due, err := rt.Kernel.Sweep(r.Context(), rt.Settings.SweepLimit)
	sent, ferr := rt.batch.Flush(r.Context())
	if err == nil {
		err = ferr
	}
	if err != nil {
		rt.Log.Error("sweep", "err", err)
		fail(w, http.StatusInternalServerError, "InternalError", fmt.Errorf("sweep: %w", err))
		return
	}
	if due > 0 {
		rt.Log.Info("sweep", "due", due, "sent", sent)
	}
	writeJSON(w, http.StatusOK, SweepResult{Due: due, Sent: sent})
}
