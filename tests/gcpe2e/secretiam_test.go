package gcpe2e

import (
	"context"
	"fmt"
	"strings"

	smpb "cloud.google.com/go/secretmanager/apiv1/secretmanagerpb"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	gsm "github.com/certfn/certfn/adapters/gcp/secretmanager"
)

// secretGrant is what one service account may do with Secret Manager:
// the permissions it holds on the secrets of each class (a grant
// conditioned on the secret name's prefix, <prefix>_<class>_), and
// whether it may create secrets (secrets.create, unconditioned).
type secretGrant struct {
	perms  map[gsm.Class]map[string]bool
	create bool
}

// secretGrants mirrors infra/terraform/gcp/iam.tf (worker_secret_rw,
// worker_secret_ro, signer_secret_ro, the custom roles worker_secrets and
// secret_creator, roles/secretmanager.secretAccessor), which
// tests/terraform pins (expectedGCPGrants, TestGCPCustomRoles): the worker
// reads and writes tls and pk (ica too when it manages CA certificates)
// and reads sc; the signer reads ca, ica and pk; the api, scheduler and
// http01 hold no Secret Manager permission at all.
func secretGrants(manageCA bool) map[string]secretGrant {
	workerRW := map[string]bool{"secrets.get": true, "secrets.update": true, "secrets.delete": true,
		"versions.access": true, "versions.add": true, "versions.destroy": true, "versions.list": true}
	accessor := map[string]bool{"versions.access": true}
	worker := secretGrant{create: true, perms: map[gsm.Class]map[string]bool{
		gsm.ClassTLS: workerRW, gsm.ClassPrivateKey: workerRW, gsm.ClassSolverCredentials: accessor}}
	if manageCA {
		worker.perms[gsm.ClassIssuedCA] = workerRW
	}
	signer := secretGrant{perms: map[gsm.Class]map[string]bool{
		gsm.ClassCA: accessor, gsm.ClassIssuedCA: accessor, gsm.ClassPrivateKey: accessor}}
	return map[string]secretGrant{"worker": worker, "signer": signer}
}

// secretCall is one Secret Manager call of a service.
type secretCall struct {
	who, perm, secretID string
	class               gsm.Class
	denied              bool
}

func (c secretCall) String() string {
	return fmt.Sprintf("%s secretmanager.%s on %s", c.who, c.perm, c.secretID)
}

// secretGuard is the Secret Manager double as one service's account sees
// it: each call is recorded and checked against grants; a call the IAM
// of infra/terraform/gcp would refuse fails the test and is answered
// PermissionDenied, as Secret Manager would. What it cannot stand for:
// the real IAM evaluation of the conditions (docs/gcp.md, "Tested
// against what").
type secretGuard struct {
	gsm.API
	d      *deployment
	who    string
	grants secretGrant
}

// check records and judges perm on the secret named by resource (a
// secret or version resource name).
func (g *secretGuard) check(perm, resource string) error {
	_, rest, _ := strings.Cut(resource, "/secrets/")
	id, _, _ := strings.Cut(rest, "/")
	class, _, _, _ := g.d.secrets.ParseSecretID(id)
	ok := g.grants.perms[class][perm] || (perm == "secrets.create" && g.grants.create)
	c := secretCall{who: g.who, perm: perm, secretID: id, class: class, denied: !ok}
	g.d.smMu.Lock()
	g.d.smCalls = append(g.d.smCalls, c)
	g.d.smMu.Unlock()
	if !ok {
		g.d.t.Errorf("IAM (infra/terraform/gcp/iam.tf) denies %s", c)
		return status.Errorf(codes.PermissionDenied, "Permission 'secretmanager.%s' denied for resource '%s'", perm, resource)
	}
	return nil
}

// secretCalls returns the Secret Manager calls of who so far.
func (d *deployment) secretCalls(who string) []secretCall {
	d.smMu.Lock()
	defer d.smMu.Unlock()
	var out []secretCall
	for _, c := range d.smCalls {
		if c.who == who {
			out = append(out, c)
		}
	}
	return out
}

func (g *secretGuard) CreateSecret(ctx context.Context, req *smpb.CreateSecretRequest, opts ...gax.CallOption) (*smpb.Secret, error) {
	if err := g.check("secrets.create", req.GetParent()+"/secrets/"+req.GetSecretId()); err != nil {
		return nil, err
	}
	return g.API.CreateSecret(ctx, req, opts...)
}

func (g *secretGuard) GetSecret(ctx context.Context, req *smpb.GetSecretRequest, opts ...gax.CallOption) (*smpb.Secret, error) {
	if err := g.check("secrets.get", req.GetName()); err != nil {
		return nil, err
	}
	return g.API.GetSecret(ctx, req, opts...)
}

func (g *secretGuard) UpdateSecret(ctx context.Context, req *smpb.UpdateSecretRequest, opts ...gax.CallOption) (*smpb.Secret, error) {
	if err := g.check("secrets.update", req.GetSecret().GetName()); err != nil {
		return nil, err
	}
	return g.API.UpdateSecret(ctx, req, opts...)
}

func (g *secretGuard) DeleteSecret(ctx context.Context, req *smpb.DeleteSecretRequest, opts ...gax.CallOption) error {
	if err := g.check("secrets.delete", req.GetName()); err != nil {
		return err
	}
	return g.API.DeleteSecret(ctx, req, opts...)
}

func (g *secretGuard) AddSecretVersion(ctx context.Context, req *smpb.AddSecretVersionRequest, opts ...gax.CallOption) (*smpb.SecretVersion, error) {
	if err := g.check("versions.add", req.GetParent()); err != nil {
		return nil, err
	}
	return g.API.AddSecretVersion(ctx, req, opts...)
}

func (g *secretGuard) AccessSecretVersion(ctx context.Context, req *smpb.AccessSecretVersionRequest, opts ...gax.CallOption) (*smpb.AccessSecretVersionResponse, error) {
	if err := g.check("versions.access", req.GetName()); err != nil {
		return nil, err
	}
	return g.API.AccessSecretVersion(ctx, req, opts...)
}

func (g *secretGuard) DestroySecretVersion(ctx context.Context, req *smpb.DestroySecretVersionRequest, opts ...gax.CallOption) (*smpb.SecretVersion, error) {
	if err := g.check("versions.destroy", req.GetName()); err != nil {
		return nil, err
	}
	return g.API.DestroySecretVersion(ctx, req, opts...)
}

func (g *secretGuard) ListSecretVersionsPage(ctx context.Context, req *smpb.ListSecretVersionsRequest, opts ...gax.CallOption) (*smpb.ListSecretVersionsResponse, error) {
	if err := g.check("versions.list", req.GetParent()); err != nil {
		return nil, err
	}
	return g.API.ListSecretVersionsPage(ctx, req, opts...)
}
