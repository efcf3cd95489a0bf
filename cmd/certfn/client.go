package main

import (
	"context"
	"fmt"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/internal/apiclient"
	"github.com/certfn/certfn/internal/localmode"
)

// client is what the verbs need from certfn. Every method acts for the
// CLI's caller and is refused (app.ErrForbidden) when the bindings do
// not allow it; a missing object is an error wrapping ports.ErrNotFound.
// `wait` polls Get. Two implementations: localmode.Client on the --data
// directory and apiclient.Client on the HTTP API at --server.
type client interface {
	// Apply validates every object and applies them only if all are valid
	// and allowed.
	Apply(ctx context.Context, objs []api.Object) ([]app.ApplyResult, error)
	// DryRun makes every check of Apply and writes nothing; it says what
	// Apply would do and what the policies decide about requests.
	DryRun(ctx context.Context, objs []api.Object) ([]app.DryRunResult, error)
	Get(ctx context.Context, key api.Key) (api.Object, error)
	// List lists kind in namespace ("" = every namespace) that the
	// selectors of opts select (app.Service.List decides, on both
	// clients).
	List(ctx context.Context, kind, namespace string, opts app.ListOptions) ([]api.Object, error)
	// ListPage lists a page of at most limit selected objects (0 = all
	// that remain) after the page cont ("" = the first) and returns the
	// token of the next page ("" after the last), as Kubernetes' limit
	// and continue.
	ListPage(ctx context.Context, kind, namespace string, opts app.ListOptions, limit int, cont string) ([]api.Object, string, error)
	// Delete deletes key with Kubernetes' dry run and preconditions.
	Delete(ctx context.Context, key api.Key, opts app.DeleteOptions) error
	// Status explains a Certificate (the report `certfn status` prints).
	Status(ctx context.Context, key api.Key) (*app.Report, error)
	Renew(ctx context.Context, key api.Key) (*app.RenewResult, error)
	// Approve approves (approve=true) or denies a CertificateRequest or a
	// CertificateSigningRequest (its approval subresource); an empty
	// message becomes "manually approved by <caller>".
	// Approve decides the request at key; a non-empty resourceVersion is a
	// precondition (the decision applies to that version only).
	Approve(ctx context.Context, key api.Key, approve bool, reason, message, resourceVersion string) error
}

// The local client is localmode's; the remote client is apiclient's.
var (
	_ client = (*localmode.Client)(nil)
	_ client = (*apiclient.Client)(nil)
)

// client returns the client of this invocation: remote when --server (or
// CERTFN_SERVER) is set, else local on --data (creating it only with
// createsData).
func (t *target) client(ctx context.Context, use dataUse) (client, error) {
	if t.cl != nil {
		return t.cl, nil
	}
	if !t.remote.enabled() {
		return t.localClient(use)
	}
	if t.as.set() {
		return nil, fmt.Errorf("--as and --as-group are local-only: with --server your identity is the one your credentials prove " +
			"(your AWS principal, the e-mail of your Google ID token, your client certificate's subject)")
	}
	rc, err := newRemoteClient(ctx, t.remote.options())
	if err != nil {
		return nil, err
	}
	t.cl = rc
	return rc, nil
}

// resolveKey turns CLI arguments into a key, defaulting the namespace.
func resolveKey(kindName, name, namespace string) (api.Key, api.KindInfo, error) {
	info, ok := api.KindForName(kindName)
	if !ok {
		return api.Key{}, info, fmt.Errorf("unknown resource type %q (try certificates, certificaterequests, issuers, clusterissuers)", kindName)
	}
	k := api.Key{Kind: info.Kind, Name: name}
	if info.Namespaced {
		k.Namespace = namespace
	}
	return k, info, nil
}
