package localmode

import (
	"context"
	"os"
	"os/user"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/ports"
)

// ClientConfig is a one-shot command on a data directory (`certfn apply`,
// `get`, `revoke`, ...) as plain data.
type ClientConfig struct {
	Data Data
	// Create makes OpenClient create the data directory and state.db when
	// missing (the commands that write: apply, create secret); without
	// it, a directory without certfn data is refused with a *NoDataError.
	Create bool
	// Caller is who acts (see Caller); every verb is authorized for it.
	Caller app.Caller
}

// Validate reports the first invalid field of c, as an error naming its
// flag and the rule it breaks; nil when OpenClient would open the data
// directory (which may still be missing or unsafe).
func (c ClientConfig) Validate() error {
	if err := c.Data.checkQuotas(); err != nil {
		return err
	}
	return c.Data.checkStore()
}

// Client runs the verbs of a one-shot command on a data directory,
// through the same application service (core/app) the HTTP API uses, so
// both check the same permissions. Its enqueues go to the inbox: a
// running `certfn serve` picks the work up.
type Client struct {
	rt     *Runtime
	caller app.Caller
}

// OpenClient checks cfg (Validate) and opens its data directory for a
// one-shot command. Close it when done.
func OpenClient(cfg ClientConfig) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d := cfg.Data
	rt, err := Open(Options{DataDir: d.Dir, MustExist: !cfg.Create, ClusterResourceNamespace: d.ClusterResourceNamespace, QueueToInbox: true,
		ACME: ACMEOptions{ServerAllow: d.ACMEServerAllow, AllowPrivateNetworks: d.ACMEAllowPrivateNetworks}, Quotas: d.Quotas})
	if err != nil {
		return nil, err
	}
	return &Client{rt: rt, caller: cfg.Caller}, nil
}

// Close releases the data directory.
func (c *Client) Close() error { return c.rt.Close() }

// Caller is the identity of a local command. The local user — whoever can
// open the data directory — is "local:<os user>" in the groups
// system:authenticated, certfn:local and system:masters (allowed
// everything, like a cluster admin). A non-empty as (--as, with groups
// from --as-group) acts as another identity, which gets only what the
// bindings grant it (see docs/reference/policy.md).
func Caller(as string, groups []string) app.Caller {
	if as != "" {
		return app.Caller{Username: as, Groups: append([]string{"system:authenticated"}, groups...)}
	}
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if name == "" {
		name = "unknown"
	}
	return app.Caller{Username: "local:" + name, Groups: []string{"system:authenticated", "certfn:local", app.SuperuserGroup}}
}

// Apply validates every object and applies them only if all are valid and allowed.
func (c *Client) Apply(ctx context.Context, objs []api.Object) ([]app.ApplyResult, error) {
	return c.rt.App.Service.Apply(ctx, c.caller, objs)
}

// DryRun makes every check of Apply and writes nothing.
func (c *Client) DryRun(ctx context.Context, objs []api.Object) ([]app.DryRunResult, error) {
	return c.rt.App.Service.DryRun(ctx, c.caller, objs)
}

// Get reads key.
func (c *Client) Get(ctx context.Context, key api.Key) (api.Object, error) {
	return c.rt.App.Service.Get(ctx, c.caller, key)
}

// List lists kind in namespace ("" = every namespace) that opts select.
func (c *Client) List(ctx context.Context, kind, namespace string, opts app.ListOptions) ([]api.Object, error) {
	return c.rt.App.Service.List(ctx, c.caller, kind, namespace, opts)
}

// ListPage lists a page of at most limit selected objects after the page cont.
func (c *Client) ListPage(ctx context.Context, kind, namespace string, opts app.ListOptions, limit int, cont string) ([]api.Object, string, error) {
	return c.rt.App.Service.ListPage(ctx, c.caller, kind, namespace, opts, limit, cont)
}

// Delete deletes key with Kubernetes' dry run and preconditions.
func (c *Client) Delete(ctx context.Context, key api.Key, opts app.DeleteOptions) error {
	return c.rt.App.Service.Delete(ctx, c.caller, key, opts)
}

// Status explains a Certificate.
func (c *Client) Status(ctx context.Context, key api.Key) (*app.Report, error) {
	return c.rt.App.Service.Status(ctx, c.caller, key)
}

// Renew triggers a re-issuance of a Certificate.
func (c *Client) Renew(ctx context.Context, key api.Key) (*app.RenewResult, error) {
	return c.rt.App.Service.Renew(ctx, c.caller, key)
}

// Approve approves or denies a CertificateRequest or, through its approval
// subresource, a CertificateSigningRequest; a non-empty resourceVersion
// is a precondition.
func (c *Client) Approve(ctx context.Context, key api.Key, approve bool, reason, message, resourceVersion string) error {
	if key.Kind == api.KindCertificateSigningRequest {
		_, err := c.rt.App.Service.ApproveCSR(ctx, c.caller, key.Name, approve, reason, message, resourceVersion)
		return err
	}
	_, err := c.rt.App.Service.Approve(ctx, c.caller, key, approve, reason, message, resourceVersion)
	return err
}

// Revoke revokes a Certificate's current certificate at its ACME CA and
// triggers a re-issuance (local only: the HTTP API has no such route).
func (c *Client) Revoke(ctx context.Context, key api.Key, reason string) error {
	return c.rt.App.Service.Revoke(ctx, c.caller, key, reason)
}

// Secret reads a secret from the file secret store. It is not authorized
// per caller: whoever can open the data directory can read its files.
func (c *Client) Secret(ctx context.Context, namespace, name string) (ports.Secret, error) {
	return c.rt.Secrets.Get(ctx, namespace, name)
}

// StoreSecret writes s to the file secret store: with overwrite it
// replaces a secret of that name (keeping the previous version), without
// it a secret of that name is an error wrapping ports.ErrAlreadyExists.
// Callers check the caller's right (`certfn create secret` needs
// system:masters) first.
func (c *Client) StoreSecret(ctx context.Context, s ports.Secret, overwrite bool) error {
	if overwrite {
		return c.rt.Secrets.Put(ctx, s)
	}
	return c.rt.Secrets.Create(ctx, s)
}

// Stored lists every stored object of kind in every namespace, without an
// authorization check (`certfn check` reports what the data directory
// holds).
func (c *Client) Stored(ctx context.Context, kind string) ([]api.Object, error) {
	return c.rt.Repo.List(ctx, kind, "")
}
