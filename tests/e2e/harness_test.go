// Package e2e runs certfn's whole local flow end to end: manifests applied,
// the queue run until idle, the fake clock advanced for renewals, with the
// real SQLite store, file secrets and the selfSigned/CA signers.
package e2e

import (
	"context"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/internal/localmode"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

type harness struct {
	t   *testing.T
	ctx context.Context
	clk *clock.Fake
	rt  *localmode.Runtime
}

// newHarness opens a fresh data directory with every signer auto-approved
// unless an option says otherwise.
func newHarness(t *testing.T, opts ...func(*localmode.Options)) *harness {
	t.Helper()
	clk := clock.NewFake(t0)
	o := localmode.Options{DataDir: t.TempDir(), Clock: clk, AutoApprove: []string{"*"}, Logger: quietLogger()}
	for _, f := range opts {
		f(&o)
	}
	rt, err := localmode.Open(o)
	if err != nil {
		t.Fatalf("open runtime: %v", err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	return &harness{t: t, ctx: context.Background(), clk: clk, rt: rt}
}

func (h *harness) apply(manifest string) {
	h.t.Helper()
	objs, err := api.Decode([]byte(manifest))
	if err != nil {
		h.t.Fatalf("decode: %v", err)
	}
	for _, o := range objs {
		if _, err := h.rt.App.Service.Apply(h.ctx, callerLocal, []api.Object{o}); err != nil {
			h.t.Fatalf("apply %s: %v", api.KeyOf(o), err)
		}
	}
}

func (h *harness) applyFile(path string) {
	h.t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		h.t.Fatal(err)
	}
	h.apply(string(b))
}

func (h *harness) applyExamples() {
	h.t.Helper()
	files, _ := filepath.Glob("../../examples/0*.yaml")
	if len(files) < 3 {
		h.t.Fatalf("examples not found: %v", files)
	}
	for _, f := range files {
		h.applyFile(f)
	}
}

// run processes everything visible now (no clock movement).
func (h *harness) run() int {
	h.t.Helper()
	n, err := h.rt.RunUntilIdle(h.ctx, 2)
	if err != nil {
		h.t.Fatalf("run: %v", err)
	}
	return n
}

// advance moves the fake clock and runs until idle.
func (h *harness) advance(d time.Duration) {
	h.t.Helper()
	h.clk.Advance(d)
	h.run()
}

func (h *harness) cert(ns, name string) *api.Certificate {
	h.t.Helper()
	o, err := h.rt.Repo.Get(h.ctx, api.Key{Kind: api.KindCertificate, Namespace: ns, Name: name})
	if err != nil {
		h.t.Fatalf("get certificate: %v", err)
	}
	return o.(*api.Certificate)
}

func (h *harness) secret(ns, name string) ports.Secret {
	h.t.Helper()
	s, err := h.rt.Secrets.Get(h.ctx, ns, name)
	if err != nil {
		h.t.Fatalf("get secret %s/%s: %v", ns, name, err)
	}
	return s
}

func (h *harness) requests(ns string) []*api.CertificateRequest {
	h.t.Helper()
	objs, err := h.rt.Repo.List(h.ctx, api.KindCertificateRequest, ns)
	if err != nil {
		h.t.Fatal(err)
	}
	out := make([]*api.CertificateRequest, len(objs))
	for i, o := range objs {
		out[i] = o.(*api.CertificateRequest)
	}
	return out
}

func (h *harness) requestNames(ns, prefix string) []string {
	var out []string
	for _, r := range h.requests(ns) {
		if strings.HasPrefix(r.Name, prefix) {
			out = append(out, r.Name)
		}
	}
	return out
}

func (h *harness) requireReady(ns, name string) *api.Certificate {
	h.t.Helper()
	c := h.cert(ns, name)
	if !api.IsTrue(c.Status.Conditions, "Ready") || api.IsTrue(c.Status.Conditions, "Issuing") {
		h.t.Fatalf("certificate %s/%s not Ready: %+v", ns, name, c.Status.Conditions)
	}
	return c
}

func (h *harness) counter(name string) float64 {
	var sum float64
	for k, v := range h.rt.Metrics.Snapshot() {
		if k == name || strings.HasPrefix(k, name+"{") {
			sum += v
		}
	}
	return sum
}

func leaf(t *testing.T, s ports.Secret) *x509.Certificate {
	t.Helper()
	chain, err := pki.ParseChainPEM(s.Data["tls.crt"])
	if err != nil {
		t.Fatalf("tls.crt: %v", err)
	}
	return chain[0]
}

func revision(c *api.Certificate) int {
	if c.Status.Revision == nil {
		return 0
	}
	return *c.Status.Revision
}
