package gcpmode

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/certfn/certfn/core/certificatesigningrequests"
)

// CERTFN_METRICS=log: an exported metric is one Cloud Logging JSON line
// with its bounded labels; anything else writes nothing.
func TestLogMetrics(t *testing.T) {
	tests := []struct {
		name   string
		metric string
		labels []string
		want   map[string]any // nil: no line
	}{
		{"expiry keeps namespace", "certfn_certificate_expiry_seconds", []string{"namespace", "team", "name", "web"},
			map[string]any{"metric": "certfn_certificate_expiry_seconds", "value": 1.0, "namespace": "team"}},
		{"KEP-2784 requested", certificatesigningrequests.MetricRequestedDuration, []string{"signerName", "clusterissuers.cert-manager.io"},
			map[string]any{"metric": certificatesigningrequests.MetricRequestedDuration, "value": 1.0, "signerName": "clusterissuers.cert-manager.io"}},
		{"KEP-2784 honoured", certificatesigningrequests.MetricHonoredDuration, []string{"signerName", "issuers.cert-manager.io"},
			map[string]any{"metric": certificatesigningrequests.MetricHonoredDuration, "value": 1.0, "signerName": "issuers.cert-manager.io"}},
		{"not exported", "certfn_csrs_signed_total", []string{"signer", "issuers.cert-manager.io"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			LogMetrics{Log: CloudLogger(&buf, slog.LevelInfo)}.Inc(tc.metric, tc.labels...)
			if tc.want == nil {
				if buf.Len() != 0 {
					t.Fatalf("wrote %q", buf.String())
				}
				return
			}
			var got map[string]any
			if err := json.Unmarshal(buf.Bytes(), &got); err != nil || strings.Count(buf.String(), "\n") != 1 {
				t.Fatalf("not one JSON line: %q (%v)", buf.String(), err)
			}
			if got["severity"] != "INFO" || got["message"] != "metric" {
				t.Errorf("line %v: want severity INFO, message metric", got)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v (line %v)", k, got[k], v, got)
				}
			}
			if _, ok := got["name"]; ok {
				t.Errorf("unbounded label name written: %v", got)
			}
		})
	}
}
