package local

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/certfn/certfn/core/metrics"
	"github.com/certfn/certfn/core/ports"
)

// Counters is an in-memory ports.Metrics, safe for concurrent use. Inc adds
// to a counter; Observe adds to a summary kept as a sum and a count.
// Snapshot and WritePrometheus read it.
type Counters struct {
	mu     sync.Mutex
	series map[string]*series // by series id (see seriesID)
}

var _ ports.Metrics = (*Counters)(nil)

// series is one metric name with one label set.
type series struct {
	name    string
	labels  string // rendered `{a="1",b="2"}`, or "" without labels
	summary bool   // Observe (sum, count) rather than Inc (value)
	value   float64
	sum     float64
	count   uint64
}

// NewCounters returns an empty sink.
func NewCounters() *Counters { return &Counters{series: map[string]*series{}} }

// Inc adds 1 to the counter name{labels}. labels alternate name, value; a
// trailing name without a value gets the value "".
func (c *Counters) Inc(name string, labels ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.get(name, labels, false).value++
}

// Observe records value in the summary name{labels} (its _sum and _count).
func (c *Counters) Observe(name string, value float64, labels ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.get(name, labels, true)
	s.sum += value
	s.count++
}

// get returns (creating) the series; c.mu must be held.
func (c *Counters) get(name string, labels []string, summary bool) *series {
	name = sanitizeName(name)
	rendered := renderLabels(labels)
	id := name + rendered
	if summary {
		id = "summary:" + id
	}
	s, ok := c.series[id]
	if !ok {
		s = &series{name: name, labels: rendered, summary: summary}
		c.series[id] = s
	}
	return s
}

// sanitizeName maps characters outside [a-zA-Z0-9_:] (and a leading digit)
// to '_', so the output is always valid Prometheus text.
func sanitizeName(s string) string {
	if s == "" {
		return "_"
	}
	b := []byte(s)
	for i, ch := range b {
		ok := ch == '_' || ch == ':' || ('a' <= ch && ch <= 'z') || ('A' <= ch && ch <= 'Z') || (i > 0 && '0' <= ch && ch <= '9')
		if !ok {
			b[i] = '_'
		}
	}
	return string(b)
}

// helpEscaper escapes a HELP text for the text format.
var helpEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`)

// labelEscaper escapes a label value for the text format.
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// renderLabels renders alternating name, value pairs sorted by name (the
// last value wins for a repeated name), or "" if there are none.
func renderLabels(kv []string) string {
	if len(kv) == 0 {
		return ""
	}
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		v := ""
		if i+1 < len(kv) {
			v = kv[i+1]
		}
		m[sanitizeName(kv[i])] = v
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `%s="%s"`, n, labelEscaper.Replace(m[n]))
	}
	b.WriteByte('}')
	return b.String()
}

// Snapshot returns every series' current value, keyed by name plus sorted
// labels as in the text format: `certfn_issued_total{issuer="ca"}` for a
// counter, `<name>_sum{...}` and `<name>_count{...}` for a summary.
func (c *Counters) Snapshot() map[string]float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]float64, len(c.series))
	for _, s := range c.series {
		if s.summary {
			out[s.name+"_sum"+s.labels] = s.sum
			out[s.name+"_count"+s.labels] = float64(s.count)
		} else {
			out[s.name+s.labels] = s.value
		}
	}
	return out
}

// formatValue renders v as the text format expects.
func formatValue(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// WritePrometheus writes every series in the Prometheus text exposition
// format (version 0.0.4), sorted by name and labels, one # TYPE line per
// metric name (counters as `counter`, observations as `summary`), after
// the # HELP line of metrics.Catalog (none for a name it lacks, which
// core/metrics' tests refuse for certfn's own names).
func (c *Counters) WritePrometheus(w io.Writer) error {
	c.mu.Lock()
	all := make([]series, 0, len(c.series))
	for _, s := range c.series {
		all = append(all, *s)
	}
	c.mu.Unlock()
	sort.Slice(all, func(i, j int) bool {
		if all[i].name != all[j].name {
			return all[i].name < all[j].name
		}
		if all[i].summary != all[j].summary {
			return !all[i].summary
		}
		return all[i].labels < all[j].labels
	})
	bw := bufio.NewWriter(w)
	for i, s := range all {
		if i == 0 || all[i-1].name != s.name || all[i-1].summary != s.summary {
			kind := "counter"
			if s.summary {
				kind = "summary"
			}
			if help := metrics.Help(s.name); help != "" {
				fmt.Fprintf(bw, "# HELP %s %s\n", s.name, helpEscaper.Replace(help))
			}
			fmt.Fprintf(bw, "# TYPE %s %s\n", s.name, kind)
		}
		if s.summary {
			fmt.Fprintf(bw, "%s_sum%s %s\n", s.name, s.labels, formatValue(s.sum))
			fmt.Fprintf(bw, "%s_count%s %d\n", s.name, s.labels, s.count)
		} else {
			fmt.Fprintf(bw, "%s%s %s\n", s.name, s.labels, formatValue(s.value))
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("metrics: write: %w", err)
	}
	return nil
}

// Gauge is one sample of a gauge: labels alternate name, value.
type Gauge struct {
	Labels []string
	Value  float64
}

// WriteGauges writes the gauge name with its help text and samples in the
// Prometheus text format, samples sorted by labels; nothing without samples.
func WriteGauges(w io.Writer, name, help string, samples []Gauge) error {
	if len(samples) == 0 {
		return nil
	}
	name = sanitizeName(name)
	lines := make([]string, 0, len(samples))
	for _, s := range samples {
		lines = append(lines, name+renderLabels(s.Labels)+" "+formatValue(s.Value))
	}
	sort.Strings(lines)
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s gauge\n", name, helpEscaper.Replace(help), name)
	for _, l := range lines {
		fmt.Fprintln(bw, l)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("metrics: write: %w", err)
	}
	return nil
}
