package main

import (
	"context"
	"fmt"
	"os"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/internal/localmode"
)

// client is what the verbs need from certfn. Every method acts for the
// CLI's caller and is refused (app.ErrForbidden) when the bindings do
// not allow it; a missing object is an error wrapping ports.ErrNotFound.
// `wait` polls Get. Two implementations: localClient on the --data
// directory and remoteClient on the HTTP API at --server.
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

// localClient runs the verbs on the local runtime through the same
// application service (core/app) the HTTP API uses, so both check the
// same permissions.
type localClient struct {
	svc    *app.Service
	caller app.Caller
}

func newLocalClient(rt *localmode.Runtime, caller app.Caller) *localClient {
	return &localClient{svc: rt.App.Service, caller: caller}
}

func (c *localClient) Apply(ctx context.Context, objs []api.Object) ([]app.ApplyResult, error) {
	return c.svc.Apply(ctx, c.caller, objs)
}

func (c *localClient) DryRun(ctx context.Context, objs []api.Object) ([]app.DryRunResult, error) {
	return c.svc.DryRun(ctx, c.caller, objs)
}

func (c *localClient) Get(ctx context.Context, key api.Key) (api.Object, error) {
	return c.svc.Get(ctx, c.caller, key)
}

func (c *localClient) List(ctx context.Context, kind, namespace string, opts app.ListOptions) ([]api.Object, error) {
	return c.svc.List(ctx, c.caller, kind, namespace, opts)
}

func (c *localClient) ListPage(ctx context.Context, kind, namespace string, opts app.ListOptions, limit int, cont string) ([]api.Object, string, error) {
	return c.svc.ListPage(ctx, c.caller, kind, namespace, opts, limit, cont)
}

func (c *localClient) Delete(ctx context.Context, key api.Key, opts app.DeleteOptions) error {
	return c.svc.Delete(ctx, c.caller, key, opts)
}

func (c *localClient) Status(ctx context.Context, key api.Key) (*app.Report, error) {
	return c.svc.Status(ctx, c.caller, key)
}

func (c *localClient) Renew(ctx context.Context, key api.Key) (*app.RenewResult, error) {
	return c.svc.Renew(ctx, c.caller, key)
}

func (c *localClient) Approve(ctx context.Context, key api.Key, approve bool, reason, message, resourceVersion string) error {
	if key.Kind == api.KindCertificateSigningRequest {
		_, err := c.svc.ApproveCSR(ctx, c.caller, key.Name, approve, reason, message, resourceVersion)
		return err
	}
	_, err := c.svc.Approve(ctx, c.caller, key, approve, reason, message, resourceVersion)
	return err
}

// client returns the client of this invocation: remote when --server (or
// CERTFN_SERVER) is set, else local on --data.
func (g *globals) client(ctx context.Context) (client, error) {
	if g.cl != nil {
		return g.cl, nil
	}
	if g.server != "" {
		if g.as != "" || len(g.asGroups) > 0 {
			return nil, fmt.Errorf("--as and --as-group are local-only: with --server your identity is the one your credentials prove " +
				"(your AWS principal, the e-mail of your Google ID token, your client certificate's subject)")
		}
		token := g.token
		if g.flags == nil || !g.flags.Changed("token") {
			// Read here, not as the flag's default, which --help would print.
			token = os.Getenv("CERTFN_TOKEN")
		}
		rc, err := newRemoteClient(ctx, remoteOptions{Server: g.server, Auth: g.auth, Region: g.region, Audience: g.audience, Token: token,
			HTTPClient: g.httpClient, ClientCert: g.clientCert, ClientKey: g.clientKey, ServerCA: g.serverCA, Name: g.optionName})
		if err != nil {
			return nil, err
		}
		g.cl = rc
		return rc, nil
	}
	rt, err := g.runtime()
	if err != nil {
		return nil, err
	}
	g.cl = newLocalClient(rt, g.caller())
	return g.cl, nil
}

// remoteFlagEnv are the environment variables of the remote flags.
var remoteFlagEnv = map[string]string{"server": "CERTFN_SERVER", "auth": "CERTFN_AUTH", "audience": "CERTFN_AUDIENCE", "token": "CERTFN_TOKEN",
	"client-cert": "CERTFN_CLIENT_CERT", "client-key": "CERTFN_CLIENT_KEY", "server-ca": "CERTFN_SERVER_CA"}

// optionName is how errors call a remote option: "--<flag>", or its
// environment variable when the value came from there.
func (g *globals) optionName(flag string) string {
	if env := remoteFlagEnv[flag]; env != "" && os.Getenv(env) != "" && (g.flags == nil || !g.flags.Changed(flag)) {
		return env
	}
	return "--" + flag
}

// localOnly refuses a command that has no API counterpart in remote mode.
func (g *globals) localOnly(what, why string) error {
	if g.server != "" {
		return fmt.Errorf("%s is local-only (not available with --server): %s", what, why)
	}
	return nil
}
