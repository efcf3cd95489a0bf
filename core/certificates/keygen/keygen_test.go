package keygen_test

import (
	"context"
	"crypto"
	"errors"
	"testing"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/certificates/keygen"
)

// gate is a fake generator whose expensive keys block until released:
// the test decides what is in flight, no timing involved.
type gate struct {
	key     crypto.Signer
	started chan int      // the size of each generation, as it starts
	release chan struct{} // one receive per expensive key
}

func (g *gate) generate(spec *api.CertificatePrivateKey) (crypto.Signer, error) {
	g.started <- spec.Size
	if spec.Size >= 4096 {
		<-g.release
	}
	return g.key, nil
}

func rsa(size int) *api.CertificatePrivateKey {
	return &api.CertificatePrivateKey{Algorithm: api.RSAKeyAlgorithm, Size: size}
}

// One expensive key at a time per namespace and Limit in all; a refusal
// is immediate (the worker is not held) and cheap keys always pass.
func TestStageSharesExpensiveKeysPerNamespace(t *testing.T) {
	ctx := context.Background()
	g := &gate{key: ct.Key(t, nil), started: make(chan int, 16), release: make(chan struct{})}
	s := keygen.New(g.generate, 2)
	done := make(chan error, 4)
	start := func(ns string, spec *api.CertificatePrivateKey) {
		go func() { _, err := s.Generate(ctx, ns, spec); done <- err }()
		<-g.started // in generation (holding its share) from here
	}
	busy := func(ns string, spec *api.CertificatePrivateKey) {
		t.Helper()
		if _, err := s.Generate(ctx, ns, spec); !errors.Is(err, certificates.ErrKeyGenerationBusy) {
			t.Fatalf("Generate(%s, RSA %d) = %v, want ErrKeyGenerationBusy", ns, spec.Size, err)
		}
	}
	start("team-a", rsa(8192))
	// team-a's other RSA-8192 and RSA-4096 keys wait; its cheap keys do not.
	busy("team-a", rsa(8192))
	busy("team-a", rsa(4096))
	if _, err := s.Generate(ctx, "team-a", rsa(2048)); err != nil {
		t.Fatalf("cheap key held back: %v", err)
	}
	<-g.started
	// team-b's expensive key is generated while team-a's is.
	start("team-b", rsa(8192))
	// The limit (2 in all) is reached: team-c waits, cheap keys still pass.
	busy("team-c", rsa(4096))
	if _, err := s.Generate(ctx, "team-c", &api.CertificatePrivateKey{Algorithm: api.ECDSAKeyAlgorithm}); err != nil {
		t.Fatalf("ECDSA key held back: %v", err)
	}
	<-g.started
	// team-a's key done: its next one goes.
	g.release <- struct{}{}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	start("team-a", rsa(8192))
	g.release <- struct{}{}
	g.release <- struct{}{}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	// Nothing in flight: every namespace may start again.
	start("team-c", rsa(4096))
	g.release <- struct{}{}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
