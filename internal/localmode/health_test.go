package localmode

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// /healthz answers while the process runs; /readyz is 503, with the
// reason, until the scheduler sweeps and again when its sweeps stop;
// /metrics carries certfn_build_info and the last sweep's time, each with
// its HELP line.
func TestHealthEndpoints(t *testing.T) {
	rt, err := Open(Options{DataDir: t.TempDir(), Version: "1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	srv := httptest.NewServer(rt.MetricsHandler())
	defer srv.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		name      string
		setup     func()
		path      string
		code      int
		body      string
		bodyLacks string
	}{
		{"healthz", func() {}, "/healthz", 200, "ok", ""},
		{"ready before serving (no sweeps expected)", func() {}, "/readyz", 200, "ok", ""},
		{"serving, not swept yet", func() { rt.health.serving(10 * time.Second) }, "/readyz", 503, "not ready: the scheduler has not swept yet", ""},
		{"no sweep gauge before a sweep", func() {}, "/metrics", 200, `version="1.2.3"} 1`, "certfn_last_sweep_timestamp_seconds"},
		{"swept now", func() { rt.health.swept(time.Now()) }, "/readyz", 200, "ok", ""},
		{"sweeps stopped", func() { rt.health.swept(time.Now().Add(-5 * time.Minute)) }, "/readyz", 503, "the serve has stalled", ""},
		{"metrics", func() {}, "/metrics", 200, "# HELP certfn_last_sweep_timestamp_seconds When the scheduler last looked for due work", ""},
		{"build info help", func() {}, "/metrics", 200, "# HELP certfn_build_info certfn's build", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.setup()
			code, body := get(tc.path)
			if code != tc.code || !strings.Contains(body, tc.body) || (tc.bodyLacks != "" && strings.Contains(body, tc.bodyLacks)) {
				t.Fatalf("GET %s: %d %q, want %d containing %q", tc.path, code, body, tc.code, tc.body)
			}
		})
	}
}
