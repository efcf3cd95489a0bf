package localmode

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/certfn/certfn/adapters/local"
	"github.com/certfn/certfn/core/api"
)

// health is what a running serve reports about itself: when its
// scheduler last swept, and how often it sweeps.
type health struct {
	mu        sync.Mutex
	lastSweep time.Time
	interval  time.Duration
}

func (h *health) swept(at time.Time) {
	h.mu.Lock()
	h.lastSweep = at
	h.mu.Unlock()
}

func (h *health) serving(interval time.Duration) {
	h.mu.Lock()
	h.interval = interval
	h.mu.Unlock()
}

func (h *health) read() (time.Time, time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lastSweep, h.interval
}

// Metric names of a serve's own health.
const (
	MetricBuildInfo = "certfn_build_info"
	MetricLastSweep = "certfn_last_sweep_timestamp_seconds"
)

// buildInfo returns the version this binary was built as (Options.Version,
// else the module's), its VCS revision and the Go version.
func (r *Runtime) buildInfo() (version, revision, goVersion string) {
	version, revision = r.Opts.Version, "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if version == "" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				revision = s.Value
			}
		}
	}
	if version == "" {
		version = "dev"
	}
	return version, revision, runtime.Version()
}

// healthGauges are certfn_build_info (1, labelled with the build) and,
// once the scheduler has swept, certfn_last_sweep_timestamp_seconds (alert
// when it falls behind: the serve has stalled).
func (r *Runtime) healthGauges() []gaugeSet {
	version, revision, goVersion := r.buildInfo()
	sets := []gaugeSet{{MetricBuildInfo, []local.Gauge{{Labels: []string{"version", version, "revision", revision, "goversion", goVersion}, Value: 1}}}}
	if at, _ := r.health.read(); !at.IsZero() {
		sets = append(sets, gaugeSet{MetricLastSweep, []local.Gauge{{Value: float64(at.Unix())}}})
	}
	return sets
}

// gaugeSet is one gauge with its samples (its help is core/metrics.Catalog's).
type gaugeSet struct {
	name    string
	samples []local.Gauge
}

// ready says why the serve is not ready ("" when it is): its store must
// answer, and its scheduler must have swept within three sweep intervals
// (at least a minute) once it serves.
func (r *Runtime) ready(ctx context.Context) string {
	if _, err := r.Repo.List(ctx, api.KindClusterIssuer, ""); err != nil {
		return "the state store does not answer: " + err.Error()
	}
	at, interval := r.health.read()
	if interval == 0 {
		return "" // not a long-running serve (no sweeps expected)
	}
	limit := 3 * interval
	if limit < time.Minute {
		limit = time.Minute
	}
	if at.IsZero() {
		return "the scheduler has not swept yet"
	}
	if late := time.Since(at); late > limit {
		return fmt.Sprintf("the scheduler last swept %s ago (at %s), more than %s: the serve has stalled", late.Round(time.Second), at.UTC().Format(time.RFC3339), limit)
	}
	return ""
}

// healthRoutes adds GET /healthz (the process answers) and GET /readyz
// (Runtime.ready: 200, or 503 with the reason) to mux.
func (r *Runtime) healthRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if why := r.ready(req.Context()); why != "" {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("not ready: " + why + "\n"))
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
}
