// Package keygen is the key generation stage of Certificates: expensive
// keys (RSA of pki.ExpensiveRSAKeySize bits or more, up to
// pki.MaxRSAKeySize) are generated at most one at a time per namespace,
// and at most Limit at a time in all, so that a namespace asking for many
// RSA-8192 keys holds one worker and one CPU, not all of them, while
// other namespaces' keys are generated. Cheap keys (RSA-2048, ECDSA,
// Ed25519) are never held back.
//
// A refusal does not wait: Generate returns an error wrapping
// certificates.ErrKeyGenerationBusy at once and the Certificate looks
// again later (certificates.KeyGenerationRetry), its worker free for
// other work meanwhile. The stage is per process: in local mode (`certfn
// serve`) it shares the workers of one process; a Cloud Run worker
// instance handling several Pub/Sub pushes at once (request_concurrency,
// 8 by default) shares them the same way. A Lambda function instance
// handles one message at a time, so the stage never refuses there: a
// namespace's share is the share of the function's concurrency its
// messages get. Lambda's reserved concurrency is per function, not per
// namespace: a tenant with many expensive keys can still hold many
// concurrent invocations (bounded by the objects quota on Certificates);
// a per-tenant share would need a function (or queue) per tenant.
package keygen

import (
	"context"
	"crypto"
	"fmt"
	"runtime"
	"sync"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates"
	"github.com/certfn/certfn/core/pki"
)

// Stage is a certificates.KeyGenerator. It is safe for concurrent use.
type Stage struct {
	generate func(*api.CertificatePrivateKey) (crypto.Signer, error)
	limit    int

	mu       sync.Mutex
	inFlight map[string]int // expensive generations per namespace
	total    int
}

var _ certificates.KeyGenerator = (*Stage)(nil)

// New returns a stage generating keys with generate (nil: pki.GenerateKey)
// and at most limit expensive keys at a time in all (0 or less:
// runtime.GOMAXPROCS, one per CPU).
func New(generate func(*api.CertificatePrivateKey) (crypto.Signer, error), limit int) *Stage {
	if generate == nil {
		generate = pki.GenerateKey
	}
	if limit <= 0 {
		limit = runtime.GOMAXPROCS(0)
	}
	return &Stage{generate: generate, limit: limit, inFlight: map[string]int{}}
}

// Generate generates spec's key for a Certificate of namespace. An
// expensive key is refused at once, with an error wrapping
// certificates.ErrKeyGenerationBusy, while namespace has one in
// generation or Limit are in generation in all.
func (s *Stage) Generate(ctx context.Context, namespace string, spec *api.CertificatePrivateKey) (crypto.Signer, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !pki.ExpensiveKey(spec) {
		return s.generate(spec)
	}
	if err := s.acquire(namespace); err != nil {
		return nil, err
	}
	defer s.release(namespace)
	return s.generate(spec)
}

func (s *Stage) acquire(namespace string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.inFlight[namespace] > 0:
		return fmt.Errorf("%w: namespace %q has an expensive private key in generation, this one waits for it", certificates.ErrKeyGenerationBusy, namespace)
	case s.total >= s.limit:
		return fmt.Errorf("%w: %d expensive private keys are in generation (the limit), this one waits", certificates.ErrKeyGenerationBusy, s.total)
	}
	s.inFlight[namespace]++
	s.total++
	return nil
}

func (s *Stage) release(namespace string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inFlight[namespace]--; s.inFlight[namespace] <= 0 {
		delete(s.inFlight, namespace)
	}
	s.total--
}
