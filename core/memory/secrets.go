package memory

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// Secrets is a ports.SecretStore in memory.
//
// Contract (the one of ports.SecretStore, checked by porttest.SecretSuite):
// Get of a missing secret is ports.ErrNotFound; Create of an existing one
// is ports.ErrAlreadyExists and changes nothing; Put creates or replaces
// the whole secret (data, labels and annotations; no previous version is
// kept); Delete of a missing secret is nil. A secret needs a name; the
// namespace may be empty. Errors name the secret, never its data.
//
// Secrets are deep-copied on the way in and out. Secrets is safe for
// concurrent use: each method is atomic.
type Secrets struct {
	mu   sync.RWMutex
	data map[secretRef]ports.Secret
}

// secretRef addresses one secret.
type secretRef struct{ namespace, name string }

var _ ports.SecretStore = (*Secrets)(nil)

// NewSecrets returns a store holding copies of initial (a later one of the
// same namespace and name replaces an earlier one).
func NewSecrets(initial ...ports.Secret) *Secrets {
	s := &Secrets{data: map[secretRef]ports.Secret{}}
	for _, sec := range initial {
		s.data[secretRef{sec.Namespace, sec.Name}] = copySecret(sec)
	}
	return s
}

// copySecret returns a deep copy of s: its maps and byte slices are its
// own (nil stays nil).
func copySecret(s ports.Secret) ports.Secret {
	out := ports.Secret{Namespace: s.Namespace, Name: s.Name, Labels: maps.Clone(s.Labels), Annotations: maps.Clone(s.Annotations)}
	if s.Data != nil {
		out.Data = make(map[string][]byte, len(s.Data))
		for k, v := range s.Data {
			out.Data[k] = slices.Clone(v)
		}
	}
	return out
}

// checkSecret validates a secret's address for op.
func checkSecret(op, namespace, name string) error {
	if name == "" {
		return errs.Permanentf("memory secrets: %s %s/: name: must not be empty", op, namespace)
	}
	return nil
}

// Get returns a copy of the secret, or ports.ErrNotFound.
func (s *Secrets) Get(ctx context.Context, namespace, name string) (ports.Secret, error) {
	if err := live(ctx, "memory secrets: get "+namespace+"/"+name); err != nil {
		return ports.Secret{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	sec, ok := s.data[secretRef{namespace, name}]
	if !ok {
		return ports.Secret{}, fmt.Errorf("memory secrets: get %s/%s: %w", namespace, name, ports.ErrNotFound)
	}
	return copySecret(sec), nil
}

// Create stores a copy of sec; ports.ErrAlreadyExists if it exists.
func (s *Secrets) Create(ctx context.Context, sec ports.Secret) error {
	if err := checkSecret("create", sec.Namespace, sec.Name); err != nil {
		return err
	}
	if err := live(ctx, "memory secrets: create "+sec.Namespace+"/"+sec.Name); err != nil {
		return err
	}
	c := copySecret(sec)
	s.mu.Lock()
	defer s.mu.Unlock()
	ref := secretRef{sec.Namespace, sec.Name}
	if _, ok := s.data[ref]; ok {
		return fmt.Errorf("memory secrets: create %s/%s: %w", sec.Namespace, sec.Name, ports.ErrAlreadyExists)
	}
	s.data[ref] = c
	return nil
}

// Put stores a copy of sec, replacing the whole secret if it exists.
func (s *Secrets) Put(ctx context.Context, sec ports.Secret) error {
	if err := checkSecret("put", sec.Namespace, sec.Name); err != nil {
		return err
	}
	if err := live(ctx, "memory secrets: put "+sec.Namespace+"/"+sec.Name); err != nil {
		return err
	}
	c := copySecret(sec)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data[secretRef{sec.Namespace, sec.Name}] = c
	return nil
}

// Delete removes the secret; a missing one is not an error.
func (s *Secrets) Delete(ctx context.Context, namespace, name string) error {
	if err := live(ctx, "memory secrets: delete "+namespace+"/"+name); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.data, secretRef{namespace, name})
	return nil
}

// Len returns the number of stored secrets.
func (s *Secrets) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.data)
}

// ListSecrets implements ports.SecretLister.
func (s *Secrets) ListSecrets(ctx context.Context, namespace string) ([]ports.SecretRef, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []ports.SecretRef
	for r := range s.data {
		if namespace == "" || r.namespace == namespace {
			out = append(out, ports.SecretRef{Namespace: r.namespace, Name: r.name})
		}
	}
	slices.SortFunc(out, func(a, b ports.SecretRef) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return out, nil
}
