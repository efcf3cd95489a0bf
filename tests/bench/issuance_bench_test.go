// Package bench measures the figures README.md reports. Run with
// `make bench` (or the go test -bench line in README.md).
package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/internal/localmode"
)

// countingSecrets counts secret-store writes (Create, Put, Delete) and reads.
type countingSecrets struct {
	ports.SecretStore
	writes, reads atomic.Int64
}

func (c *countingSecrets) Get(ctx context.Context, ns, name string) (ports.Secret, error) {
	c.reads.Add(1)
	return c.SecretStore.Get(ctx, ns, name)
}
func (c *countingSecrets) Create(ctx context.Context, s ports.Secret) error {
	c.writes.Add(1)
	return c.SecretStore.Create(ctx, s)
}
func (c *countingSecrets) Put(ctx context.Context, s ports.Secret) error {
	c.writes.Add(1)
	return c.SecretStore.Put(ctx, s)
}
func (c *countingSecrets) Delete(ctx context.Context, ns, name string) error {
	c.writes.Add(1)
	return c.SecretStore.Delete(ctx, ns, name)
}

const caManifests = `apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: selfsigned}
spec: {selfSigned: {}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: ca, namespace: cert-manager}
spec:
  isCA: true
  commonName: bench CA
  secretName: ca
  privateKey: {algorithm: ECDSA, size: 256}
  issuerRef: {name: selfsigned, kind: ClusterIssuer}
---
apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: ca}
spec: {ca: {secretName: ca}}
`

func leafManifest(i int) string {
	return fmt.Sprintf(`apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: leaf-%d, namespace: bench}
spec:
  secretName: leaf-%d-tls
  dnsNames: [leaf-%d.bench.internal]
  privateKey: {algorithm: ECDSA, size: 256}
  issuerRef: {name: ca, kind: ClusterIssuer}
`, i, i, i)
}

func applyAll(b *testing.B, rt *localmode.Runtime, manifest string) {
	objs, err := api.Decode([]byte(manifest))
	if err != nil {
		b.Fatal(err)
	}
	for _, o := range objs {
		if _, err := rt.App.Service.Apply(context.Background(), app.Caller{Username: "bench", Groups: []string{app.SuperuserGroup}}, []api.Object{o}); err != nil {
			b.Fatal(err)
		}
	}
}

func counter(rt *localmode.Runtime, name string) float64 {
	var sum float64
	for k, v := range rt.Metrics.Snapshot() {
		if k == name || strings.HasPrefix(k, name+"{") {
			sum += v
		}
	}
	return sum
}

// BenchmarkLocalIssuanceCA: apply → Ready for 500 leaf certificates at once
// (CA issuer, ECDSA P-256), on the real SQLite store and file secret store,
// 16 workers (CERTFN_BENCH_WORKERS overrides). Reports certificates per second and, per issued certificate,
// state-store writes (Event writes included, and also reported alone),
// secret-store writes and queue messages.
func BenchmarkLocalIssuanceCA(b *testing.B) {
	const n = 500
	workers := 16
	if w, err := strconv.Atoi(os.Getenv("CERTFN_BENCH_WORKERS")); err == nil && w > 0 {
		workers = w
	}
	for it := 0; it < b.N; it++ {
		b.StopTimer()
		sec := &countingSecrets{}
		rt, err := localmode.Open(localmode.Options{
			DataDir: b.TempDir(), Clock: clock.Real{}, AutoApprove: []string{"*"},
			Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
			WrapSecrets: func(s ports.SecretStore) ports.SecretStore { sec.SecretStore = s; return sec },
		})
		if err != nil {
			b.Fatal(err)
		}
		applyAll(b, rt, caManifests)
		if _, err := rt.RunUntilIdle(context.Background(), 4); err != nil {
			b.Fatal(err)
		}
		var all strings.Builder
		for i := 0; i < n; i++ {
			all.WriteString(leafManifest(i))
			all.WriteString("---\n")
		}
		objs, err := api.Decode([]byte(all.String()))
		if err != nil {
			b.Fatal(err)
		}
		w0, s0, q0 := counter(rt, "certfn_state_writes_total"), sec.writes.Load(), counter(rt, "certfn_queue_messages_total")
		e0 := counter(rt, "certfn_events_recorded_total")
		b.StartTimer()
		start := time.Now()
		for _, o := range objs {
			if _, err := rt.App.Service.Apply(context.Background(), app.Caller{Username: "bench", Groups: []string{app.SuperuserGroup}}, []api.Object{o}); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := rt.RunUntilIdle(context.Background(), workers); err != nil {
			b.Fatal(err)
		}
		elapsed := time.Since(start)
		b.StopTimer()
		ready := 0
		list, _ := rt.Repo.List(context.Background(), api.KindCertificate, "bench")
		for _, o := range list {
			if api.IsTrue(o.(*api.Certificate).Status.Conditions, "Ready") {
				ready++
			}
		}
		if ready != n {
			b.Fatalf("%d of %d certificates Ready", ready, n)
		}
		b.ReportMetric(float64(n)/elapsed.Seconds(), "certs/s")
		b.ReportMetric((counter(rt, "certfn_state_writes_total")-w0)/n, "state-writes/cert")
		b.ReportMetric((counter(rt, "certfn_events_recorded_total")-e0)/n, "event-writes/cert")
		b.ReportMetric(float64(sec.writes.Load()-s0)/n, "secret-writes/cert")
		b.ReportMetric((counter(rt, "certfn_queue_messages_total")-q0)/n, "queue-msgs/cert")
		_ = rt.Close()
		b.StartTimer()
	}
}
