package emf

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestFlushWritesOneEMFLine(t *testing.T) {
	var out bytes.Buffer
	s := New(Options{Function: "worker", Out: &out, Metrics: map[string]Export{
		"certfn_certificate_expiry_seconds": {Name: "CertificateExpirySeconds", Unit: "Seconds"},
		"certfn_permanent_errors_total":     {Name: "PermanentErrors", Unit: "Count"},
	}})
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if err := s.Flush(now); err != nil || out.Len() != 0 {
		t.Fatalf("empty flush wrote %q (%v)", out.String(), err)
	}
	s.Observe("certfn_certificate_expiry_seconds", 86400*30, "namespace", "default")
	s.Observe("certfn_certificate_expiry_seconds", 86400*5, "namespace", "team-a")
	s.Inc("certfn_permanent_errors_total", "kind", "Certificate")
	s.Inc("certfn_permanent_errors_total", "kind", "Order")
	s.Inc("certfn_reconciles_total", "kind", "Certificate") // not exported
	if err := s.Flush(now); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d lines", len(lines))
	}
	var doc struct {
		AWS struct {
			Timestamp         int64 `json:"Timestamp"`
			CloudWatchMetrics []struct {
				Namespace  string     `json:"Namespace"`
				Dimensions [][]string `json:"Dimensions"`
				Metrics    []struct{ Name, Unit string }
			}
		} `json:"_aws"`
		Function                 string
		CertificateExpirySeconds []float64
		PermanentErrors          float64
		ReconcilesTotal          *float64 `json:"certfn_reconciles_total"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &doc); err != nil {
		t.Fatal(err)
	}
	cw := doc.AWS.CloudWatchMetrics
	if doc.AWS.Timestamp != now.UnixMilli() || len(cw) != 1 || cw[0].Namespace != Namespace || len(cw[0].Dimensions) != 1 ||
		cw[0].Dimensions[0][0] != "Function" || len(cw[0].Metrics) != 2 || cw[0].Metrics[0].Name != "CertificateExpirySeconds" ||
		cw[0].Metrics[0].Unit != "Seconds" {
		t.Fatalf("_aws %+v", doc.AWS)
	}
	if doc.Function != "worker" || doc.PermanentErrors != 2 || len(doc.CertificateExpirySeconds) != 2 || doc.ReconcilesTotal != nil {
		t.Fatalf("values %+v", doc)
	}
	// Reset after a flush.
	out.Reset()
	if err := s.Flush(now); err != nil || out.Len() != 0 {
		t.Fatalf("second flush wrote %q", out.String())
	}
	// More than maxValues: the smallest are kept.
	for i := range maxValues + 50 {
		s.Observe("certfn_certificate_expiry_seconds", float64(1000-i))
	}
	_ = s.Flush(now)
	var capped struct{ CertificateExpirySeconds []float64 }
	if err := json.Unmarshal(out.Bytes(), &capped); err != nil {
		t.Fatal(err)
	}
	if len(capped.CertificateExpirySeconds) != maxValues || capped.CertificateExpirySeconds[0] != float64(1000-maxValues-49) {
		t.Fatalf("capped values: %d, first %v", len(capped.CertificateExpirySeconds), capped.CertificateExpirySeconds[0])
	}
}
