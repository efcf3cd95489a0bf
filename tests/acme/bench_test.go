package acme

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/certfn/certfn/internal/localmode"
)

// BenchmarkACMERequestsPerCertificate counts the ACME HTTP requests of one
// single-name certificate over HTTP-01 with an account already registered
// (fake clock: waits are skipped, not measured).
//
//	go test -run '^$' -bench ACMERequestsPerCertificate -benchtime 20x ./tests/acme/
func BenchmarkACMERequestsPerCertificate(b *testing.B) {
	e := newEnv(b, envOpts{})
	e.apply(e.issuerYAML(http01Solvers))
	e.run()
	var total, ari int
	start := e.cnt.Count()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		before := e.rec.count()
		name := fmt.Sprintf("r%d", i)
		e.apply(certYAML(name, []string{name + ".example.test"}, ""))
		e.issue(name)
		for _, r := range e.rec.since(before) {
			total++
			if strings.Contains(r.line, "renewalInfo") {
				ari++
			}
		}
	}
	if counted := int(e.cnt.Count() - start); counted != total {
		b.Fatalf("the counting transport saw %d requests, the recorder %d", counted, total)
	}
	b.ReportMetric(float64(total)/float64(b.N), "requests/cert")
	b.ReportMetric(float64(total-ari)/float64(b.N), "order-requests/cert")
	b.ReportMetric(float64(ari)/float64(b.N), "ari-requests/cert")
}

// serveEnv runs `certfn serve`'s loops on the wall clock with `serve`'s
// defaults (ACME polling included: no benchmark-only setting).
func serveEnv(b *testing.B) (*env, func()) {
	e := newEnv(b, envOpts{realClock: true})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = e.rt.Serve(ctx, localmode.ServeOptions{Workers: 4, SweepInterval: 50 * time.Millisecond})
	}()
	return e, func() { cancel(); wg.Wait() }
}

func (e *env) waitReady(names []string, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		all := true
		for _, n := range names {
			if !e.ready(n) {
				all = false
				break
			}
		}
		if all {
			return true
		}
		time.Sleep(2 * time.Millisecond)
	}
	return false
}

// BenchmarkApplyToReady is the wall time from applying one certificate to
// Ready (median), with `serve`'s loops and defaults, a registered
// account and Pebble without VA sleeps.
//
//	go test -run '^$' -bench ApplyToReady -benchtime 20x ./tests/acme/
func BenchmarkApplyToReady(b *testing.B) {
	e, stop := serveEnv(b)
	defer stop()
	e.apply(e.issuerYAML(http01Solvers))
	if !e.waitIssuerReady(10 * time.Second) {
		b.Fatal("issuer not Ready")
	}
	var ds []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		name := fmt.Sprintf("t%d", i)
		start := time.Now()
		e.apply(certYAML(name, []string{name + ".example.test"}, ""))
		if !e.waitReady([]string{name}, 30*time.Second) {
			b.Fatalf("%s not Ready: %s %s", name, e.describe("Order"), e.describe("Challenge"))
		}
		ds = append(ds, time.Since(start))
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "ms-median")
	b.ReportMetric(float64(ds[len(ds)-1].Microseconds())/1000, "ms-max")
}

// Benchmark50Certificates applies 50 single-name certificates at once and
// waits until all are Ready (same setting as BenchmarkApplyToReady).
//
//	go test -run '^$' -bench 50Certificates -benchtime 1x ./tests/acme/
func Benchmark50Certificates(b *testing.B) {
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		e, stop := serveEnv(b)
		e.apply(e.issuerYAML(http01Solvers))
		if !e.waitIssuerReady(10 * time.Second) {
			b.Fatal("issuer not Ready")
		}
		var names []string
		var manifest strings.Builder
		for j := 0; j < 50; j++ {
			n := fmt.Sprintf("c%d", j)
			names = append(names, n)
			manifest.WriteString("---\n" + certYAML(n, []string{n + ".example.test"}, ""))
		}
		before := e.rec.count()
		b.StartTimer()
		start := time.Now()
		e.apply(manifest.String())
		if !e.waitReady(names, 60*time.Second) {
			b.Fatalf("not all Ready: %s", e.describe("Order"))
		}
		el := time.Since(start)
		b.StopTimer()
		b.ReportMetric(el.Seconds(), "s/50-certs")
		b.ReportMetric(float64(e.rec.count()-before)/50, "requests/cert")
		stop()
	}
}

func (e *env) waitIssuerReady(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if c := e.issuerReady(); c.Status == "True" {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return false
}
