package main

import (
	"context"
	"log/slog"

	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// noSecrets is the api function's secret store: it has none (DESIGN.md §4:
// the api function must not read private keys; its IAM role denies every
// secret value). Reads and writes fail permanently. Deleting a
// Certificate through the API asks to delete its next-private-key secret:
// that is logged (by name) and left to the secret's lifecycle, because the
// function may not touch secrets at all.
type noSecrets struct{ log *slog.Logger }

var _ ports.SecretStore = noSecrets{}

func (noSecrets) Get(_ context.Context, ns, name string) (ports.Secret, error) {
	return ports.Secret{}, errs.Permanentf("secret %s/%s: the api function has no access to the secret store", ns, name)
}

func (noSecrets) Create(_ context.Context, s ports.Secret) error {
	return errs.Permanentf("secret %s/%s: the api function has no access to the secret store", s.Namespace, s.Name)
}

func (noSecrets) Put(_ context.Context, s ports.Secret) error {
	return errs.Permanentf("secret %s/%s: the api function has no access to the secret store", s.Namespace, s.Name)
}

func (n noSecrets) Delete(ctx context.Context, ns, name string) error {
	n.log.WarnContext(ctx, "secret left in place: the api function has no access to the secret store", "namespace", ns, "name", name)
	return nil
}
