package gcpe2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	smpb "cloud.google.com/go/secretmanager/apiv1/secretmanagerpb"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/certfn/certfn/adapters/gcp/secretmanager"
	"github.com/certfn/certfn/adapters/gcp/secretmanager/gsmtest"
)

// secretGrant is what one service account may do with Secret Manager:
// the permissions it holds on the secrets of each class (a grant
// conditioned on the secret name's prefix, <prefix>_<class>_), and
// whether it may create secrets (secrets.create, unconditioned).
type secretGrant struct {
	perms  map[secretmanager.Class]map[string]bool
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
	worker := secretGrant{create: true, perms: map[secretmanager.Class]map[string]bool{
		secretmanager.ClassTLS: workerRW, secretmanager.ClassPrivateKey: workerRW, secretmanager.ClassSolverCredentials: accessor}}
	if manageCA {
		worker.perms[secretmanager.ClassIssuedCA] = workerRW
	}
	signer := secretGrant{perms: map[secretmanager.Class]map[string]bool{
		secretmanager.ClassCA: accessor, secretmanager.ClassIssuedCA: accessor, secretmanager.ClassPrivateKey: accessor}}
	return map[string]secretGrant{"worker": worker, "signer": signer}
}

// secretCall is one Secret Manager call of a service.
type secretCall struct {
	who, perm, secretID string
	class               secretmanager.Class
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
	secretmanager.API
	who    string
	grants secretGrant
	// ids parses secret IDs (the deployment's prefix).
	ids *secretmanager.Store
	// record receives every call, denied or not.
	record func(secretCall)
}

// guard returns the Secret Manager of service who: d.sm through grants,
// each call recorded in d.smCalls, a denied one failing the test.
func (d *deployment) guard(who string, grants secretGrant) *secretGuard {
	return &secretGuard{API: d.sm, who: who, grants: grants, ids: d.secrets, record: func(c secretCall) {
		d.smMu.Lock()
		d.smCalls = append(d.smCalls, c)
		d.smMu.Unlock()
		if c.denied {
			d.t.Errorf("IAM (infra/terraform/gcp/iam.tf) denies %s", c)
		}
	}}
}

// check records and judges perm on the secret named by resource (a
// secret or version resource name).
func (g *secretGuard) check(perm, resource string) error {
	_, rest, _ := strings.Cut(resource, "/secrets/")
	id, _, _ := strings.Cut(rest, "/")
	class, _, _, _ := g.ids.ParseSecretID(id)
	ok := g.grants.perms[class][perm] || (perm == "secrets.create" && g.grants.create)
	g.record(secretCall{who: g.who, perm: perm, secretID: id, class: class, denied: !ok})
	if !ok {
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

// The guard judges as iam.tf grants: a table of calls by service.
func TestSecretGuard(t *testing.T) {
	ids, err := secretmanager.New(gsmtest.New(), secretmanager.Options{Project: project})
	if err != nil {
		t.Fatal(err)
	}
	secret := func(id string) string { return "projects/" + project + "/secrets/" + id }
	tests := []struct {
		who      string
		manageCA bool
		call     func(g *secretGuard) error
		allowed  bool
	}{
		{"worker", false, func(g *secretGuard) error {
			_, err := g.AccessSecretVersion(context.Background(), &smpb.AccessSecretVersionRequest{Name: secret("certfn_ca_cert-manager_ops-ca") + "/versions/latest"})
			return err
		}, false},
		{"worker", false, func(g *secretGuard) error {
			_, err := g.AccessSecretVersion(context.Background(), &smpb.AccessSecretVersionRequest{Name: secret("certfn_ica_cert-manager_root-ca") + "/versions/latest"})
			return err
		}, false},
		{"worker", true, func(g *secretGuard) error {
			_, err := g.AccessSecretVersion(context.Background(), &smpb.AccessSecretVersionRequest{Name: secret("certfn_ica_cert-manager_root-ca") + "/versions/latest"})
			return err
		}, true},
		{"worker", false, func(g *secretGuard) error {
			_, err := g.AddSecretVersion(context.Background(), &smpb.AddSecretVersionRequest{Parent: secret("certfn_sc_default_dns")})
			return err
		}, false},
		{"worker", false, func(g *secretGuard) error {
			_, err := g.CreateSecret(context.Background(), &smpb.CreateSecretRequest{Parent: "projects/" + project, SecretId: "certfn_ca_default_x"})
			return err
		}, true}, // secrets.create is unconditioned (iam.tf: worker-secret-create)
		{"signer", false, func(g *secretGuard) error {
			_, err := g.AccessSecretVersion(context.Background(), &smpb.AccessSecretVersionRequest{Name: secret("certfn_ca_cert-manager_ops-ca") + "/versions/latest"})
			return err
		}, true},
		{"signer", false, func(g *secretGuard) error {
			_, err := g.AccessSecretVersion(context.Background(), &smpb.AccessSecretVersionRequest{Name: secret("certfn_tls_default_web-tls") + "/versions/latest"})
			return err
		}, false},
		{"signer", false, func(g *secretGuard) error {
			_, err := g.AddSecretVersion(context.Background(), &smpb.AddSecretVersionRequest{Parent: secret("certfn_pk_default_web-next")})
			return err
		}, false},
		{"api", false, func(g *secretGuard) error {
			_, err := g.AccessSecretVersion(context.Background(), &smpb.AccessSecretVersionRequest{Name: secret("certfn_tls_default_web-tls") + "/versions/latest"})
			return err
		}, false},
	}
	for i, tc := range tests {
		var calls []secretCall
		g := &secretGuard{API: gsmtest.New(), who: tc.who, grants: secretGrants(tc.manageCA)[tc.who], ids: ids,
			record: func(c secretCall) { calls = append(calls, c) }}
		err := tc.call(g)
		if len(calls) != 1 || calls[0].denied == tc.allowed {
			t.Errorf("case %d (%s): calls %v, want one, allowed %t", i, tc.who, calls, tc.allowed)
		}
		if denied := status.Code(err) == codes.PermissionDenied; denied == tc.allowed {
			t.Errorf("case %d (%s %v): err %v, want allowed %t", i, tc.who, calls, err, tc.allowed)
		}
	}
}
