package policy

import (
	"context"
	"errors"
	"fmt"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/rbac"
)

// Objects is what LoadInput reads (core/repo.Repo is one).
type Objects interface {
	rbac.Lister
	// Get returns the stored object at key (an error wrapping
	// ports.ErrNotFound when it is missing).
	Get(ctx context.Context, key api.Key) (api.Object, error)
}

// LoadInput is the evaluation input of cr as the approver builds it for
// each decision: every CertificateRequestPolicy, the RBAC snapshot (for
// `use`), and the labels of the request's Namespace object.
func LoadInput(ctx context.Context, objs Objects, cr *api.CertificateRequest) (Input, error) {
	in := Input{Request: cr}
	pols, err := objs.List(ctx, api.KindCertificateRequestPolicy, "")
	if err != nil {
		return in, err
	}
	for _, o := range pols {
		in.Policies = append(in.Policies, o.(*api.CertificateRequestPolicy))
	}
	if in.Authorizer, err = rbac.Load(ctx, objs); err != nil {
		return in, err
	}
	ns, err := objs.Get(ctx, api.Key{Kind: api.KindNamespace, Name: cr.Namespace})
	switch {
	case err == nil:
		in.NamespaceLabels = ns.GetObjectMeta().Labels
	case !errors.Is(err, ports.ErrNotFound):
		return in, fmt.Errorf("read Namespace %s: %w", cr.Namespace, err)
	}
	return in, nil
}
