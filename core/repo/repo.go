// Package repo is certfn's repository: typed reads of the objects in the
// state store (a record decoded into its api kind, resourceVersion filled
// in from the stored version), their encoding for conditional writes, and
// the cross-kind queries the controllers and the application service
// share (queries.go). Both read through one Repo over the same
// ports.Store; writes go through core/kernel, which wakes what they
// concern (docs/design/one-step.md).
//
// It depends on core/api and core/ports only, so that the kernel may use
// it without depending on any kind's package.
package repo

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
)

// Repo reads typed objects from a state store. It holds no state of its
// own and is safe for concurrent use.
type Repo struct {
	store ports.Store
	scope api.IssuerScope
}

// New returns the repository over store; scope is the deployment's issuer
// rule (where ClusterIssuer secrets live), which the secret queries use.
func New(store ports.Store, scope api.IssuerScope) *Repo {
	return &Repo{store: store, scope: scope}
}

// Store is the state store the repository reads, for records that are
// not api objects (ChallengeLease) and reads of a raw record.
func (r *Repo) Store() ports.Store { return r.store }

// Issuers is the deployment's issuer rule (see api.IssuerScope).
func (r *Repo) Issuers() api.IssuerScope { return r.scope }

// Decode unmarshals a stored record into a fresh object of its kind and
// fills in resourceVersion.
func Decode(rec ports.Record) (api.Object, error) {
	info, ok := api.KindInfoFor(rec.Key.Kind)
	if !ok {
		return nil, fmt.Errorf("stored record %s has unknown kind", rec.Key)
	}
	obj := info.New()
	if err := json.Unmarshal(rec.Data, obj); err != nil {
		return nil, fmt.Errorf("decode stored %s: %w", rec.Key, err)
	}
	obj.GetObjectMeta().ResourceVersion = strconv.FormatInt(rec.Version, 10)
	return obj, nil
}

// Encode marshals obj as stored: compact JSON without resourceVersion
// (the record's version is the store's).
func Encode(obj api.Object) ([]byte, error) {
	m := obj.GetObjectMeta()
	rv := m.ResourceVersion
	m.ResourceVersion = ""
	b, err := json.Marshal(obj)
	m.ResourceVersion = rv
	return b, err
}

// Get returns one stored object (an error wrapping ports.ErrNotFound if
// it is missing).
func (r *Repo) Get(ctx context.Context, key api.Key) (api.Object, error) {
	rec, err := r.store.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	return Decode(rec)
}

// List returns the stored objects of a kind (namespace "" = all).
func (r *Repo) List(ctx context.Context, kind, namespace string) ([]api.Object, error) {
	recs, err := r.store.List(ctx, ports.ListOptions{Kind: kind, Namespace: namespace})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", kind, err)
	}
	return decodeAll(recs)
}

// ListPage returns a page of the objects of kind in namespace ("" = all)
// and the continue token of the next page ("" after the last), as
// ports.Store.ListPage: at most limit objects (0 = all that remain).
func (r *Repo) ListPage(ctx context.Context, kind, namespace string, limit int, cont string) ([]api.Object, string, error) {
	p, err := r.store.ListPage(ctx, ports.ListOptions{Kind: kind, Namespace: namespace, Limit: limit, Continue: cont})
	if err != nil {
		return nil, "", fmt.Errorf("list %s: %w", kind, err)
	}
	out, err := decodeAll(p.Records)
	if err != nil {
		return nil, "", err
	}
	return out, p.Continue, nil
}

// Version returns the stored version of key (for tests and the CLI).
func (r *Repo) Version(ctx context.Context, key api.Key) (int64, error) {
	rec, err := r.store.Get(ctx, key)
	if err != nil {
		return 0, err
	}
	return rec.Version, nil
}

func decodeAll(recs []ports.Record) ([]api.Object, error) {
	out := make([]api.Object, 0, len(recs))
	for _, rec := range recs {
		o, err := Decode(rec)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}
