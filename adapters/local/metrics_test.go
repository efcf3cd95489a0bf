package local

import (
	"bytes"
	"errors"
	"math"
	"sync"
	"testing"

	"github.com/certfn/certfn/core/metrics"
)

func TestCountersSnapshot(t *testing.T) {
	tests := []struct {
		name string
		feed func(c *Counters)
		want map[string]float64
	}{
		{"counter without labels", func(c *Counters) { c.Inc("certfn_steps_total"); c.Inc("certfn_steps_total") },
			map[string]float64{"certfn_steps_total": 2}},
		{"labels sorted by name", func(c *Counters) {
			c.Inc("certfn_issued_total", "issuer", "ca", "kind", "Issuer")
			c.Inc("certfn_issued_total", "kind", "Issuer", "issuer", "ca")
			c.Inc("certfn_issued_total", "issuer", "le", "kind", "ClusterIssuer")
		}, map[string]float64{
			`certfn_issued_total{issuer="ca",kind="Issuer"}`:        2,
			`certfn_issued_total{issuer="le",kind="ClusterIssuer"}`: 1,
		}},
		{"observations as sum and count", func(c *Counters) {
			c.Observe("certfn_step_seconds", 0.5, "kind", "Certificate")
			c.Observe("certfn_step_seconds", 1.5, "kind", "Certificate")
		}, map[string]float64{
			`certfn_step_seconds_sum{kind="Certificate"}`:   2,
			`certfn_step_seconds_count{kind="Certificate"}`: 2,
		}},
		{"dangling label name gets an empty value", func(c *Counters) { c.Inc("x_total", "a", "1", "b") },
			map[string]float64{`x_total{a="1",b=""}`: 1}},
		{"repeated label: last wins", func(c *Counters) { c.Inc("x_total", "a", "1", "a", "2") },
			map[string]float64{`x_total{a="2"}`: 1}},
		{"escaping and sanitising", func(c *Counters) { c.Inc("bad-name.total", "re-ason", "say \"hi\"\\\n") },
			map[string]float64{`bad_name_total{re_ason="say \"hi\"\\\n"}`: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCounters()
			tc.feed(c)
			got := c.Snapshot()
			if len(got) != len(tc.want) {
				t.Errorf("Snapshot = %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("Snapshot[%s] = %v, want %v (all: %v)", k, got[k], v, got)
				}
			}
		})
	}
}

func TestCountersConcurrent(t *testing.T) {
	c := NewCounters()
	const goroutines, each = 16, 500
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				c.Inc("certfn_reconciles_total", "kind", "Certificate")
				c.Observe("certfn_step_seconds", 1)
			}
		}()
	}
	wg.Wait()
	snap := c.Snapshot()
	if got := snap[`certfn_reconciles_total{kind="Certificate"}`]; got != goroutines*each {
		t.Errorf("counter = %v, want %d", got, goroutines*each)
	}
	if got := snap[`certfn_step_seconds_count`]; got != goroutines*each {
		t.Errorf("observation count = %v, want %d", got, goroutines*each)
	}
}

func TestCountersPrometheusText(t *testing.T) {
	c := NewCounters()
	c.Inc("certfn_issued_total", "issuer", "ca")
	c.Inc("certfn_issued_total", "issuer", "ca")
	c.Inc("certfn_issued_total", "issuer", "acme")
	c.Inc("certfn_acme_calls_total")
	c.Observe("certfn_step_seconds", 0.25, "kind", "Certificate")
	c.Observe("certfn_step_seconds", 0.5, "kind", "Certificate")
	c.Observe("certfn_weird", math.Inf(1))
	var b bytes.Buffer
	if err := c.WritePrometheus(&b); err != nil {
		t.Fatal(err)
	}
	want := `# TYPE certfn_acme_calls_total counter
certfn_acme_calls_total 1
# TYPE certfn_issued_total counter
certfn_issued_total{issuer="acme"} 1
certfn_issued_total{issuer="ca"} 2
# TYPE certfn_step_seconds summary
certfn_step_seconds_sum{kind="Certificate"} 0.75
certfn_step_seconds_count{kind="Certificate"} 2
# TYPE certfn_weird summary
certfn_weird_sum +Inf
certfn_weird_count 1
`
	if b.String() != want {
		t.Errorf("text format:\n%s\nwant:\n%s", b.String(), want)
	}
	if err := c.WritePrometheus(failingWriter{}); err == nil {
		t.Error("WritePrometheus to a failing writer: want an error")
	}
}

// A metric of core/metrics.Catalog gets its HELP line before its TYPE
// line; names the catalog lacks (above) get none.
func TestCountersHelpFromCatalog(t *testing.T) {
	c := NewCounters()
	c.Inc("certfn_reconciles_total", "kind", "Certificate")
	c.Observe("certfn_certificate_expiry_seconds", 86400, "namespace", "default")
	var b bytes.Buffer
	if err := c.WritePrometheus(&b); err != nil {
		t.Fatal(err)
	}
	want := "# HELP certfn_certificate_expiry_seconds " + metrics.Help("certfn_certificate_expiry_seconds") + `
# TYPE certfn_certificate_expiry_seconds summary
certfn_certificate_expiry_seconds_sum{namespace="default"} 86400
certfn_certificate_expiry_seconds_count{namespace="default"} 1
# HELP certfn_reconciles_total Reconciles run, by kind of object.
# TYPE certfn_reconciles_total counter
certfn_reconciles_total{kind="Certificate"} 1
`
	if metrics.Help("certfn_certificate_expiry_seconds") == "" || b.String() != want {
		t.Errorf("text format:\n%s\nwant:\n%s", b.String(), want)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }
