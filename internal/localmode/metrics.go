package localmode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/certfn/certfn/adapters/local"
	"github.com/certfn/certfn/core/api"
)

// Certificate gauges under cert-manager's metric names and labels, so that
// dashboards and alerts written for cert-manager's controller work on
// `certfn serve --metrics-listen` unchanged.
const (
	MetricExpiration = "certmanager_certificate_expiration_timestamp_seconds"
	MetricRenewal    = "certmanager_certificate_renewal_timestamp_seconds"
	MetricReady      = "certmanager_certificate_ready_status"
)

// WriteMetrics writes certfn's counters and, read from the store now, the
// certificate gauges: expiration and renewal time (Unix seconds) of every
// Certificate that has them, and its Ready condition as three series
// (condition True, False, Unknown; the current one is 1).
func (r *Runtime) WriteMetrics(ctx context.Context, buf *bytes.Buffer) error {
	objs, err := r.Engine.List(ctx, api.KindCertificate, "")
	if err != nil {
		return fmt.Errorf("metrics: list certificates: %w", err)
	}
	var exp, ren, ready []local.Gauge
	for _, o := range objs {
		c := o.(*api.Certificate)
		ref := c.Spec.IssuerRef
		kind := ref.Kind
		if kind == "" {
			kind = api.KindIssuer
		}
		group := ref.Group
		if group == "" {
			group = api.CertManagerGroup
		}
		labels := []string{"name", c.Name, "namespace", c.Namespace, "issuer_name", ref.Name, "issuer_kind", kind, "issuer_group", group}
		if c.Status.NotAfter != nil {
			exp = append(exp, local.Gauge{Labels: labels, Value: float64(c.Status.NotAfter.Unix())})
		}
		if c.Status.RenewalTime != nil {
			ren = append(ren, local.Gauge{Labels: labels, Value: float64(c.Status.RenewalTime.Unix())})
		}
		current := string(api.ConditionUnknown)
		if cond := api.FindCondition(c.Status.Conditions, api.CertificateConditionReady); cond != nil {
			current = string(cond.Status)
		}
		for _, s := range []string{string(api.ConditionTrue), string(api.ConditionFalse), string(api.ConditionUnknown)} {
			v := 0.0
			if s == current {
				v = 1
			}
			ready = append(ready, local.Gauge{Labels: append(append([]string{}, labels...), "condition", s), Value: v})
		}
	}
	for _, g := range []struct {
		name, help string
		samples    []local.Gauge
	}{
		{MetricExpiration, "The date after which the certificate expires, as a Unix timestamp.", exp},
		{MetricRenewal, "The time the certificate will be renewed, as a Unix timestamp.", ren},
		{MetricReady, "The Ready condition of the certificate (1 for the current status).", ready},
	} {
		if err := local.WriteGauges(buf, g.name, g.help, g.samples); err != nil {
			return err
		}
	}
	return r.Metrics.WritePrometheus(buf)
}

// MetricsHandler serves GET /metrics in the Prometheus text format.
func (r *Runtime) MetricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, req *http.Request) {
		var buf bytes.Buffer
		if err := r.WriteMetrics(req.Context(), &buf); err != nil {
			r.Log.Warn("metrics", "err", err)
			http.Error(w, "metrics unavailable: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write(buf.Bytes())
	})
	return mux
}

// ListenMetrics serves MetricsHandler on addr and returns the bound
// address and a function that stops it.
func (r *Runtime) ListenMetrics(addr string) (string, func(), error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("--metrics-listen %s: %w", addr, err)
	}
	srv := &http.Server{Handler: r.MetricsHandler(), ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 30 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			r.Log.Warn("metrics", "err", err)
		}
	}()
	return l.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}
