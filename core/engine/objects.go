package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
)

// Get returns one stored object.
func (e *Engine) Get(ctx context.Context, key api.Key) (api.Object, error) {
	rec, err := e.cfg.Store.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	return decode(rec)
}

// List returns the stored objects of a kind (namespace "" = all).
func (e *Engine) List(ctx context.Context, kind, namespace string) ([]api.Object, error) {
	recs, err := e.cfg.Store.List(ctx, ports.ListOptions{Kind: kind, Namespace: namespace})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", kind, err)
	}
	out := make([]api.Object, 0, len(recs))
	for _, r := range recs {
		o, err := decode(r)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// ListPage returns a page of the objects of kind in namespace ("" = all)
// and the continue token of the next page ("" after the last), as
// ports.Store.ListPage: at most limit objects (0 = all that remain).
func (e *Engine) ListPage(ctx context.Context, kind, namespace string, limit int, cont string) ([]api.Object, string, error) {
	p, err := e.cfg.Store.ListPage(ctx, ports.ListOptions{Kind: kind, Namespace: namespace, Limit: limit, Continue: cont})
	if err != nil {
		return nil, "", fmt.Errorf("list %s: %w", kind, err)
	}
	out := make([]api.Object, 0, len(p.Records))
	for _, r := range p.Records {
		o, err := decode(r)
		if err != nil {
			return nil, "", err
		}
		out = append(out, o)
	}
	return out, p.Continue, nil
}

// deleteTree deletes owned records first (so a crash leaves at worst an
// owner without children, which its steps recreate), then key.
func (e *run) deleteTree(ctx context.Context, key api.Key, version int64) error {
	for _, kind := range ownedKinds[key.Kind] {
		children, err := e.cfg.Store.List(ctx, ports.ListOptions{Kind: kind, Namespace: key.Namespace, Owner: key})
		if err != nil {
			return fmt.Errorf("list %s owned by %s: %w", kind, key, err)
		}
		for _, c := range children {
			if err := e.deleteTree(ctx, c.Key, 0); err != nil {
				return err
			}
		}
	}
	if d, ok := e.cfg.Handlers[key.Kind].(Deleter); ok {
		rec, err := e.cfg.Store.Get(ctx, key)
		if err == nil {
			err = d.BeforeDelete(ctx, e, rec)
		}
		if err != nil && !errors.Is(err, ports.ErrNotFound) {
			return fmt.Errorf("before deleting %s: %w", key, err)
		}
	}
	err := e.cfg.Store.Delete(ctx, key, version)
	if errors.Is(err, ports.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	e.cfg.Metrics.Inc("certfn_state_writes_total", "kind", key.Kind)
	return nil
}

// DeleteObject deletes key (conditionally when version > 0) and
// everything it owns outside a reconcile (the application service's
// delete), then wakes owner (if non-zero); see Objects.
func (e *Engine) DeleteObject(ctx context.Context, key api.Key, version int64, owner api.Key) error {
	return e.direct().DeleteObject(ctx, key, version, owner)
}

// ownedKinds lists which kinds a kind may own.
var ownedKinds = map[string][]string{
	api.KindCertificate:        {api.KindCertificateRequest},
	api.KindCertificateRequest: {"Order"},
	// The ACME Order of a CertificateSigningRequest, in the issuer's namespace.
	api.KindCertificateSigningRequest: {"Order"},
	"Order":                           {"Challenge"},
}

// Version returns the stored version of key (for tests and the CLI).
func (e *Engine) Version(ctx context.Context, key api.Key) (int64, error) {
	rec, err := e.cfg.Store.Get(ctx, key)
	if err != nil {
		return 0, err
	}
	return rec.Version, nil
}
