package tfprovider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/internal/apiclient"
)

// defaultWaitTimeout bounds `wait` when it gives no timeout.
const defaultWaitTimeout = 10 * time.Minute

func parseTimeout(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("timeout %q: want a positive Go duration such as 30s, 5m or 1h", s)
	}
	return d, nil
}

func waitCondition(w *waitModel) string {
	if w == nil || w.Condition.IsNull() || w.Condition.ValueString() == "" {
		return api.CertificateConditionReady
	}
	return w.Condition.ValueString()
}

// statusOf is the part of a stored object wait reads.
type statusOf struct {
	Metadata struct {
		Generation int64 `json:"generation"`
	} `json:"metadata"`
	Status struct {
		Conditions []api.Condition `json:"conditions"`
	} `json:"status"`
}

// met reports whether condition cond of the object is True for its
// current generation; for a Certificate's Ready, also that no issuance is
// in flight (after an update the previous revision's Ready may still be
// True). otherwise says what the condition is.
func met(kind, cond string, o statusOf) (ok bool, otherwise string) {
	c := api.FindCondition(o.Status.Conditions, cond)
	if c == nil {
		return false, "no " + cond + " condition yet"
	}
	if c.ObservedGeneration != 0 && c.ObservedGeneration < o.Metadata.Generation {
		return false, fmt.Sprintf("%s=%s is for generation %d, not the applied %d yet", cond, c.Status, c.ObservedGeneration, o.Metadata.Generation)
	}
	if string(c.Status) != "True" {
		return false, fmt.Sprintf("%s=%s (%s): %s", cond, c.Status, c.Reason, c.Message)
	}
	if kind == api.KindCertificate && cond == api.CertificateConditionReady {
		if is := api.FindCondition(o.Status.Conditions, api.CertificateConditionIssuing); is != nil && string(is.Status) == "True" {
			return false, fmt.Sprintf("Issuing (%s): %s", is.Reason, is.Message)
		}
	}
	return true, ""
}

// wait polls the object until its condition is met, the Certificate's
// explanation says waiting cannot help (denied, failed, issuer
// misconfigured), or the timeout passes; the error then names the
// blocker, as `certfn status` words it.
func (r *manifestResource) wait(ctx context.Context, c *apiclient.Client, id identity, w *waitModel) error {
	cond := waitCondition(w)
	timeout := defaultWaitTimeout
	if !w.Timeout.IsNull() && w.Timeout.ValueString() != "" {
		var err error
		if timeout, err = parseTimeout(w.Timeout.ValueString()); err != nil {
			return err
		}
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	p, err := apiclient.ObjectPath(id.key())
	if err != nil {
		return err
	}
	delay, last := 50*time.Millisecond, ""
	for polls := 1; ; polls++ {
		var raw json.RawMessage
		err := c.Do(wctx, http.MethodGet, p, nil, &raw)
		switch {
		case err == nil:
			var o statusOf
			if err := json.Unmarshal(raw, &o); err != nil {
				return fmt.Errorf("undecodable %s: %w", id.ID(), err)
			}
			ok, why := met(id.Kind, cond, o)
			if ok {
				return nil
			}
			last = why
		case errors.Is(err, app.ErrForbidden), apiclient.IsUnauthenticated(err):
			return err // waiting cannot help
		case errors.Is(err, ports.ErrNotFound):
			last = "not found"
		case wctx.Err() == nil:
			last = "error: " + err.Error()
		}
		if id.Kind == api.KindCertificate && (polls%4 == 0 || wctx.Err() != nil) {
			// Ask certfn why, as `certfn wait` does: a denied or failed
			// request, or a misconfigured issuer, ends the wait now.
			var rep app.Report
			sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			serr := c.Do(sctx, http.MethodGet, p+"/status", nil, &rep)
			scancel()
			if serr == nil {
				last = rep.Summary
				if rep.Permanent {
					return fmt.Errorf("%s will not become %s without a change: %s", id.ID(), cond, rep.Summary)
				}
			}
		}
		if wctx.Err() != nil {
			return fmt.Errorf("timed out after %s waiting for %s=True; what blocks it: %s", timeout, cond, last)
		}
		t := time.NewTimer(delay)
		select {
		case <-wctx.Done():
			t.Stop()
			// One last look (and explanation) at the deadline.
			if id.Kind != api.KindCertificate {
				return fmt.Errorf("timed out after %s waiting for %s=True; what blocks it: %s", timeout, cond, last)
			}
		case <-t.C:
		}
		delay = min(delay*2, r.data.opts.PollInterval)
	}
}
