package localmode

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/pki"
)

// One team's backlog of expensive keys does not hold another team's
// issuance: team-a queues eight RSA-8192 Certificates, then team-b one
// ECDSA Certificate; serve's worker takes the next key from the namespace
// with the least in flight, so team-b's key is the second generated, not
// the ninth. The generator is a fake (RSA keys are refused, so the test
// takes no CPU) and the worker is one, so the order is deterministic.
func TestServeGeneratesAnotherTeamsKeyBeforeABacklog(t *testing.T) {
	var (
		mu    sync.Mutex
		order []string
	)
	generate := func(spec *api.CertificatePrivateKey) (crypto.Signer, error) {
		alg, size := pki.KeyParams(spec)
		mu.Lock()
		order = append(order, fmt.Sprintf("%s %d", alg, size))
		mu.Unlock()
		if alg == api.RSAKeyAlgorithm {
			return nil, errors.New("fake generator: no RSA keys in this test")
		}
		return pki.GenerateKey(spec)
	}
	rt, err := Open(Options{DataDir: t.TempDir(), Clock: clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)),
		AutoApprove: []string{"*"}, GenerateKey: generate, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	ctx := context.Background()
	var m strings.Builder
	m.WriteString("apiVersion: cert-manager.io/v1\nkind: ClusterIssuer\nmetadata: {name: selfsigned}\nspec: {selfSigned: {}}\n")
	cert := func(ns, name, key string) {
		fmt.Fprintf(&m, "---\napiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: %s, namespace: %s}\n"+
			"spec: {secretName: %s-tls, dnsNames: [%s.%s.example.com], privateKey: %s, issuerRef: {name: selfsigned, kind: ClusterIssuer}}\n",
			name, ns, name, name, ns, key)
	}
	for i := 1; i <= 8; i++ {
		cert("team-a", fmt.Sprintf("big-%d", i), "{algorithm: RSA, size: 8192}")
	}
	cert("team-b", "web", "{algorithm: ECDSA, size: 256}")
	objs, err := api.Decode([]byte(m.String()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.App.Service.Apply(ctx, app.Caller{Username: "admin", Groups: []string{app.SuperuserGroup}}, objs); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.RunUntilIdle(ctx, 1); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(order) != 9 {
		t.Fatalf("keys generated: %v, want nine", order)
	}
	if order[1] != "ECDSA 256" {
		t.Fatalf("generation order %v: team-b's ECDSA key waited for team-a's backlog, want it second", order)
	}
}
