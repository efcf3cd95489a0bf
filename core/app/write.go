package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/rbac"
)

// ErrAlreadyExists is the answer of Create when the object exists: it is
// ErrConflict too (errors.Is), as Kubernetes' 409 AlreadyExists.
var ErrAlreadyExists = ports.ErrAlreadyExists

// alreadyExists is a Create refusal that is both ErrConflict and
// ErrAlreadyExists.
type alreadyExists struct{ key api.Key }

func (e *alreadyExists) Error() string { return fmt.Sprintf("%s already exists", e.key) }
func (e *alreadyExists) Is(target error) bool {
	return target == ErrConflict || target == ErrAlreadyExists
}

// Create stores obj if no object has its key, as a Kubernetes POST:
// the caller needs `create` on it (checked first: the same ErrForbidden
// whether it exists or not), an existing object is ErrAlreadyExists (also
// ErrConflict) and nothing is written; otherwise it is Apply of the one
// object (validation, escalation, quota), and the store's create is
// conditional, so a concurrent create of the same key also ends in
// ErrAlreadyExists.
func (s *Service) Create(ctx context.Context, caller Caller, obj api.Object) (ApplyResult, error) {
	key := api.KeyOf(obj)
	if err := s.authz().check(ctx, caller, rbac.VerbCreate, key); err != nil {
		return ApplyResult{}, err
	}
	if obj.GetObjectMeta().ResourceVersion != "" {
		return ApplyResult{}, fieldErrorf("metadata.resourceVersion", "%s: metadata.resourceVersion must not be set on create", key)
	}
	if secretStoreKind(key.Kind) {
		if err := s.refuseSecretWrites(key); err != nil {
			return ApplyResult{}, err
		}
	}
	exists, err := s.exists(ctx, key)
	if err != nil {
		return ApplyResult{}, err
	}
	if exists {
		return ApplyResult{}, &alreadyExists{key: key}
	}
	p, err := s.checkApply(ctx, caller, []api.Object{obj})
	if err != nil {
		return ApplyResult{}, err
	}
	if p.stored[0] != nil || p.oldSecrets[0] != nil {
		return ApplyResult{}, &alreadyExists{key: key}
	}
	if sec, ok := obj.(*api.Secret); ok {
		return s.applySecret(ctx, sec, nil)
	}
	res := ApplyResult{Key: key, Ignored: api.IgnoredFields(obj)}
	if c, ok := obj.(*api.Certificate); ok {
		c.Status.IgnoredFields = res.Ignored
	}
	created, changed, err := s.applyOnce(ctx, obj, nil)
	if errors.Is(err, ports.ErrAlreadyExists) {
		return ApplyResult{}, &alreadyExists{key: key}
	}
	res.Created, res.Changed = created, changed
	return res, err
}

// Update replaces the spec, labels and annotations of the stored object
// at obj's key, as a Kubernetes PUT: the caller needs `update` (checked
// first), a missing object is ErrNotFound (never created), and the write
// is conditional on obj's metadata.resourceVersion, or on the version
// Update read when obj carries none (a concurrent change is then
// ErrConflict rather than overwritten). Secrets in the secret store are
// refused (ErrBadRequest): they have no versions to update against.
func (s *Service) Update(ctx context.Context, caller Caller, obj api.Object) (ApplyResult, error) {
	key := api.KeyOf(obj)
	if err := s.authz().check(ctx, caller, rbac.VerbUpdate, key); err != nil {
		return ApplyResult{}, err
	}
	if secretStoreKind(key.Kind) {
		return ApplyResult{}, badRequestf("%s: secrets cannot be updated in place (%v): delete and create it", key, errNoSecretVersions)
	}
	stored, err := s.repo.Get(ctx, key)
	if err != nil {
		return ApplyResult{}, err
	}
	m := obj.GetObjectMeta()
	if m.ResourceVersion == "" {
		m.ResourceVersion = stored.GetObjectMeta().ResourceVersion
	}
	res, err := s.Apply(ctx, caller, []api.Object{obj})
	if err != nil {
		return ApplyResult{}, err
	}
	return res[0], nil
}

// exists reports whether an object (or a secret in the secret store) has key.
func (s *Service) exists(ctx context.Context, key api.Key) (bool, error) {
	if secretStoreKind(key.Kind) {
		if s.secrets == nil {
			return false, nil
		}
		sec, err := s.existingSecret(ctx, key)
		return sec != nil, err
	}
	_, err := s.repo.Get(ctx, key)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ports.ErrNotFound):
		return false, nil
	}
	return false, err
}
