package gcpmode

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/certfn/certfn/core/certificatesigningrequests"
)

// followUpReserve is the request time the worker's follow-ups leave unused
// (Cloud Run's request timeout is the context's deadline).
const followUpReserve = 10 * time.Second

// CloudLogger writes JSON lines Cloud Logging understands: "severity"
// (DEBUG, INFO, WARNING, ERROR) and "message" instead of slog's "level"
// and "msg", and "time" in RFC 3339.
func CloudLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) > 0 {
			return a
		}
		switch a.Key {
		case slog.LevelKey:
			lv, _ := a.Value.Any().(slog.Level)
			sev := "DEFAULT"
			switch {
			case lv >= slog.LevelError:
				sev = "ERROR"
			case lv >= slog.LevelWarn:
				sev = "WARNING"
			case lv >= slog.LevelInfo:
				sev = "INFO"
			default:
				sev = "DEBUG"
			}
			return slog.String("severity", sev)
		case slog.MessageKey:
			return slog.Attr{Key: "message", Value: a.Value}
		}
		return a
	}}))
}

// writeJSON answers v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// fail answers an error as the API does: {"error", "reason"}.
func fail(w http.ResponseWriter, status int, reason string, err error) {
	msg := err.Error()
	if len(msg) > 1024 {
		msg = msg[:1024] + "…"
	}
	writeJSON(w, status, map[string]string{"error": msg, "reason": reason})
}

// allow refuses a method other than the one a route takes.
func allow(w http.ResponseWriter, r *http.Request, method string) bool {
	if r.Method == method {
		return true
	}
	w.Header().Set("Allow", method)
	fail(w, http.StatusMethodNotAllowed, "MethodNotAllowed", fmt.Errorf("method %s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, method))
	return false
}

// healthy answers Cloud Run's and a load balancer's health checks.
func healthy(w http.ResponseWriter, r *http.Request) bool {
	if r.URL.Path == "/healthz" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		w.WriteHeader(http.StatusNoContent)
		return true
	}
	return false
}

// ExportedMetrics are the metrics CERTFN_METRICS=log writes: few, since
// each line is a billed log entry (the expiry alert counts the first).
// KEP-2784's two CertificateSigningRequest counters (docs/design/request-duration.md: requested
// versus honoured lifetime, by signer domain) are written by the signer,
// one or two lines per CSR it signs with spec.expirationSeconds.
var ExportedMetrics = map[string]bool{
	"certfn_certificate_expiry_seconds":                true,
	"certfn_permanent_errors_total":                    true,
	"certfn_transient_errors_total":                    true,
	certificatesigningrequests.MetricRequestedDuration: true,
	certificatesigningrequests.MetricHonoredDuration:   true,
}

// exportedLabels are the labels a metric line keeps: bounded ones only.
var exportedLabels = map[string]bool{"namespace": true, "kind": true, "signerName": true}

// LogMetrics writes each observation of an exported metric as one log
// line {"severity": "INFO", "message": "metric", "metric", "value"} with
// its "namespace", "kind" and "signerName" labels, which Cloud Logging's
// log-based metrics count (infra/terraform/gcp: the certificate expiry
// alert).
type LogMetrics struct{ Log *slog.Logger }

// Inc implements ports.Metrics.
func (m LogMetrics) Inc(name string, labels ...string) { m.Observe(name, 1, labels...) }

// Observe implements ports.Metrics.
func (m LogMetrics) Observe(name string, v float64, labels ...string) {
	if !ExportedMetrics[name] {
		return
	}
	args := []any{"metric", name, "value", v}
	for i := 0; i+1 < len(labels); i += 2 {
		if exportedLabels[labels[i]] {
			args = append(args, labels[i], labels[i+1])
		}
	}
	m.Log.Info("metric", args...)
}
