// Package emf is a ports.Metrics sink for Lambda that writes CloudWatch
// Embedded Metric Format: one JSON log line per invocation, from which
// CloudWatch Logs extracts the metrics itself (no API call, no IAM
// permission beyond writing the function's own logs).
//
// Only the metrics named in Options.Metrics are exported, each under its
// CloudWatch name with one dimension, Function: every exported name is a
// custom metric billed per month, so certfn exports a handful (the
// Terraform module's alarms use them) rather than every counter.
package emf

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/certfn/certfn/core/ports"
)

// Namespace is the CloudWatch namespace of certfn's metrics.
const Namespace = "certfn"

// maxValues bounds the values of one metric in one line (EMF allows 100).
const maxValues = 100

// Export maps a certfn metric to its CloudWatch name and unit.
type Export struct {
	Name string
	Unit string // "Count", "Seconds", ...
}

// Options configure a Sink.
type Options struct {
	// Function is the Function dimension's value (worker, signer, ...).
	Function string
	// Metrics are the exported certfn metrics (ports.Metrics names).
	Metrics map[string]Export
	// Out receives the lines (the Lambda function's stdout).
	Out io.Writer
}

// Sink collects exported metrics until Flush. Safe for concurrent use.
type Sink struct {
	o  Options
	mu sync.Mutex
	// counts sums Inc by metric; values keeps Observe's values (the
	// smallest maxValues when more arrive: alarms watch minimums).
	counts map[string]float64
	values map[string][]float64
}

var _ ports.Metrics = (*Sink)(nil)

// New returns a Sink.
func New(o Options) *Sink {
	return &Sink{o: o, counts: map[string]float64{}, values: map[string][]float64{}}
}

// Inc implements ports.Metrics; labels are not exported.
func (s *Sink) Inc(name string, _ ...string) {
	if _, ok := s.o.Metrics[name]; !ok {
		return
	}
	s.mu.Lock()
	s.counts[name]++
	s.mu.Unlock()
}

// Observe implements ports.Metrics; labels are not exported.
func (s *Sink) Observe(name string, v float64, _ ...string) {
	if _, ok := s.o.Metrics[name]; !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	vs := append(s.values[name], v)
	if len(vs) > maxValues {
		sort.Float64s(vs)
		vs = vs[:maxValues]
	}
	s.values[name] = vs
}

// Flush writes what was collected since the last Flush as one EMF line
// stamped now, and resets; it writes nothing when nothing was collected.
func (s *Sink) Flush(now time.Time) error {
	s.mu.Lock()
	counts, values := s.counts, s.values
	s.counts, s.values = map[string]float64{}, map[string][]float64{}
	s.mu.Unlock()
	if len(counts) == 0 && len(values) == 0 {
		return nil
	}
	type metricDef struct {
		Name string `json:"Name"`
		Unit string `json:"Unit,omitempty"`
	}
	doc := map[string]any{"Function": s.o.Function}
	var defs []metricDef
	for name, n := range counts {
		e := s.o.Metrics[name]
		defs = append(defs, metricDef(e))
		doc[e.Name] = n
	}
	for name, vs := range values {
		e := s.o.Metrics[name]
		defs = append(defs, metricDef(e))
		doc[e.Name] = vs
	}
	sort.Slice(defs, func(i, j int) bool { return defs[i].Name < defs[j].Name })
	doc["_aws"] = map[string]any{
		"Timestamp": now.UnixMilli(),
		"CloudWatchMetrics": []any{map[string]any{
			"Namespace":  Namespace,
			"Dimensions": [][]string{{"Function"}},
			"Metrics":    defs,
		}},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("emf: %w", err)
	}
	if _, err := s.o.Out.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("emf: write: %w", err)
	}
	return nil
}
