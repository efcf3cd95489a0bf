package awstest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	sm "github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	smithy "github.com/aws/smithy-go"

	"github.com/certfn/certfn/adapters/aws/awscfg"
	"github.com/certfn/certfn/adapters/aws/secrets"
	"github.com/certfn/certfn/adapters/aws/ssmstore"
	"github.com/certfn/certfn/adapters/secretpayload"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/internal/awsmode"
)

// SecretsGuard is the Secrets Manager half of the IAM TEST DOUBLE (see
// IAMGuard): it wraps one function's Secrets Manager client and refuses,
// with an AccessDeniedException, each call that function's policy in
// infra/terraform/aws/iam.tf does not allow, judged as IAM does, on the
// secret's certfn-role tag (none for a secret that does not exist) and on
// the certfn-role tag of the request. The rules follow from each role's
// secret access (core/app), as iam.tf's Secrets Manager statements do
// (tests/terraform holds the planned documents to the same data).
type SecretsGuard struct {
	secrets.API
	role string
	// workerCA mirrors worker_manages_ca_certificates.
	workerCA bool
	// Prefix, when set, is the secret prefix every statement's resource
	// is limited to (<prefix>/*): names outside it are denied.
	Prefix string
	// Tags, when set, returns a secret's tags (nil when it does not
	// exist) without a Secrets Manager call, so that the guard's lookups
	// are not counted as the function's calls; else DescribeSecret is used.
	Tags func(id string) map[string]string

	mu     sync.Mutex
	denied []string
}

// NewSecretsGuard wraps api for role; workerManagesCA is the module's
// worker_manages_ca_certificates.
func NewSecretsGuard(api secrets.API, role string, workerManagesCA bool) *SecretsGuard {
	return &SecretsGuard{API: api, role: role, workerCA: workerManagesCA}
}

// Denied returns the refused calls so far.
func (g *SecretsGuard) Denied() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.denied)
}

// absent is the tag value of a secret without a certfn-role tag (or that
// does not exist).
const absent = ""

// classTags are the certfn-role tags of each secret class (the inverse
// of ssmstore.ClassOf).
var classTags = map[app.SecretClass][]string{
	app.ClassTLS:               {secrets.RoleCertificate, secrets.RoleACMEAccount},
	app.ClassPrivateKey:        {secrets.RolePrivateKey},
	app.ClassIssuedCA:          {secrets.RoleIssuedCA},
	app.ClassCA:                {"ca"},
	app.ClassSolverCredentials: {"solver-credentials"},
}

// tags returns the certfn-role tags role reads and writes: those of its
// secret access's classes.
func (g *SecretsGuard) tags() (read, write []string) {
	r, err := app.FunctionNamed(g.role)
	if err != nil {
		return nil, nil
	}
	rc, wc := r.SecretAccess().Classes(g.workerCA)
	for _, c := range rc {
		read = append(read, classTags[c]...)
	}
	for _, c := range wc {
		write = append(write, classTags[c]...)
	}
	return read, write
}

// allowed decides action for a secret whose certfn-role tag is have, with
// the certfn-role tag of the request req ("" when the request carries none).
func (g *SecretsGuard) allowed(action, have, req string) bool {
	read, rw := g.tags()
	if len(read) == 0 {
		return false
	}
	switch action {
	case "GetSecretValue", "DescribeSecret":
		return slices.Contains(read, have) || have == absent // LookUpMissingSecrets
	case "PutSecretValue", "UpdateSecretVersionStage", "DeleteSecret":
		return slices.Contains(rw, have)
	case "CreateSecret":
		return slices.Contains(rw, req) // CreateWorkerSecrets (the secret has no tags yet)
	case "TagResource":
		// CreateWorkerSecrets (a worker role in the request, the secret
		// untagged or a worker's) or RetagWorkerSecrets (a worker's
		// secret, any certfn-role in the request a worker role).
		return (slices.Contains(rw, req) && (have == absent || slices.Contains(rw, have))) ||
			(slices.Contains(rw, have) && (req == absent || slices.Contains(rw, req)))
	}
	return false
}

// tagOf reads the certfn-role tag of id with the unguarded client; absent
// when the secret does not exist or has none.
func (g *SecretsGuard) tagOf(ctx context.Context, id string) (string, error) {
	if g.Tags != nil {
		return g.Tags(id)[secrets.TagRole], nil
	}
	out, err := g.API.DescribeSecret(ctx, &sm.DescribeSecretInput{SecretId: aws.String(id)})
	var nf *smtypes.ResourceNotFoundException
	if errors.As(err, &nf) {
		return absent, nil
	}
	if err != nil {
		return "", err
	}
	for _, t := range out.Tags {
		if aws.ToString(t.Key) == secrets.TagRole {
			return aws.ToString(t.Value), nil
		}
	}
	return absent, nil
}

func roleIn(tags []smtypes.Tag) string {
	for _, t := range tags {
		if aws.ToString(t.Key) == secrets.TagRole {
			return aws.ToString(t.Value)
		}
	}
	return absent
}

func (g *SecretsGuard) check(ctx context.Context, action, id, req string, exists bool) error {
	have := absent
	if g.Prefix != "" && !strings.HasPrefix(id, g.Prefix+"/") {
		return g.deny(action, id, have, req)
	}
	if exists {
		var err error
		if have, err = g.tagOf(ctx, id); err != nil {
			return err
		}
	}
	if g.allowed(action, have, req) {
		return nil
	}
	return g.deny(action, id, have, req)
}

func (g *SecretsGuard) deny(action, id, have, req string) error {
	msg := fmt.Sprintf("%s function: secretsmanager:%s on %s (certfn-role %q, request certfn-role %q)", g.role, action, id, have, req)
	g.mu.Lock()
	g.denied = append(g.denied, msg)
	g.mu.Unlock()
	return &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "IAM TEST DOUBLE: not authorized: " + msg, Fault: smithy.FaultClient}
}

// CreateSecret implements secrets.API.
func (g *SecretsGuard) CreateSecret(ctx context.Context, in *sm.CreateSecretInput, o ...func(*sm.Options)) (*sm.CreateSecretOutput, error) {
	if err := g.check(ctx, "CreateSecret", aws.ToString(in.Name), roleIn(in.Tags), false); err != nil {
		return nil, err
	}
	if len(in.Tags) > 0 {
		// Tags given to CreateSecret are authorized as TagResource too.
		if err := g.check(ctx, "TagResource", aws.ToString(in.Name), roleIn(in.Tags), false); err != nil {
			return nil, err
		}
	}
	return g.API.CreateSecret(ctx, in, o...)
}

// GetSecretValue implements secrets.API.
func (g *SecretsGuard) GetSecretValue(ctx context.Context, in *sm.GetSecretValueInput, o ...func(*sm.Options)) (*sm.GetSecretValueOutput, error) {
	if err := g.check(ctx, "GetSecretValue", aws.ToString(in.SecretId), absent, true); err != nil {
		return nil, err
	}
	return g.API.GetSecretValue(ctx, in, o...)
}

// PutSecretValue implements secrets.API.
func (g *SecretsGuard) PutSecretValue(ctx context.Context, in *sm.PutSecretValueInput, o ...func(*sm.Options)) (*sm.PutSecretValueOutput, error) {
	if err := g.check(ctx, "PutSecretValue", aws.ToString(in.SecretId), absent, true); err != nil {
		return nil, err
	}
	return g.API.PutSecretValue(ctx, in, o...)
}

// DeleteSecret implements secrets.API.
func (g *SecretsGuard) DeleteSecret(ctx context.Context, in *sm.DeleteSecretInput, o ...func(*sm.Options)) (*sm.DeleteSecretOutput, error) {
	if err := g.check(ctx, "DeleteSecret", aws.ToString(in.SecretId), absent, true); err != nil {
		return nil, err
	}
	return g.API.DeleteSecret(ctx, in, o...)
}

// DescribeSecret implements secrets.API.
func (g *SecretsGuard) DescribeSecret(ctx context.Context, in *sm.DescribeSecretInput, o ...func(*sm.Options)) (*sm.DescribeSecretOutput, error) {
	if err := g.check(ctx, "DescribeSecret", aws.ToString(in.SecretId), absent, true); err != nil {
		return nil, err
	}
	return g.API.DescribeSecret(ctx, in, o...)
}

// TagResource implements secrets.API.
func (g *SecretsGuard) TagResource(ctx context.Context, in *sm.TagResourceInput, o ...func(*sm.Options)) (*sm.TagResourceOutput, error) {
	if err := g.check(ctx, "TagResource", aws.ToString(in.SecretId), roleIn(in.Tags), true); err != nil {
		return nil, err
	}
	return g.API.TagResource(ctx, in, o...)
}

// UpdateSecretVersionStage implements secrets.API.
func (g *SecretsGuard) UpdateSecretVersionStage(ctx context.Context, in *sm.UpdateSecretVersionStageInput, o ...func(*sm.Options)) (*sm.UpdateSecretVersionStageOutput, error) {
	if err := g.check(ctx, "UpdateSecretVersionStage", aws.ToString(in.SecretId), absent, true); err != nil {
		return nil, err
	}
	return g.API.UpdateSecretVersionStage(ctx, in, o...)
}

// InstallSecret stores sec as an operator would (`aws secretsmanager
// create-secret ... --tags Key=certfn-role,Value=<role>`, or with UseSSM
// `aws ssm put-parameter --type SecureString --name
// /<prefix>/<class>/<namespace>/<name>` in the class of role), outside
// every function and its IAM guard: CA key pairs ("ca"), solver
// credentials.
func (e *Env) InstallSecret(sec ports.Secret, role string) {
	e.T.Helper()
	if e.SSMEndpoint != "" {
		e.installParameter(sec, role)
		return
	}
	_, _, smc := awsmode.ClientsForEndpoints("", "", e.SMEndpoint, FastRetry)
	ops, err := secrets.New(smc, secrets.Options{Prefix: e.Vars[awsmode.EnvSecretPrefix], Tags: map[string]string{secrets.TagRole: role}})
	if err != nil {
		e.T.Fatal(err)
	}
	if err := ops.Create(e.Ctx, sec); err != nil {
		e.T.Fatalf("install secret %s/%s: %v", sec.Namespace, sec.Name, err)
	}
}

// installParameter is InstallSecret on Parameter Store.
func (e *Env) installParameter(sec ports.Secret, role string) {
	e.T.Helper()
	c := ssmstore.ClassOf(role)
	if c == "" {
		e.T.Fatalf("install secret %s/%s: role %q has no Parameter Store class", sec.Namespace, sec.Name, role)
	}
	payload, err := secretpayload.Encode(sec, ssmstore.MaxStandardBytes, "Parameter Store (standard tier)")
	if err != nil {
		e.T.Fatal(err)
	}
	name := "/" + e.Vars[awsmode.EnvSecretPrefix] + "/" + string(c) + "/" + sec.Namespace + "/" + sec.Name
	client := ssm.NewFromConfig(awscfg.ForEndpoint(e.SSMEndpoint, FastRetry))
	if _, err := client.PutParameter(e.Ctx, &ssm.PutParameterInput{Name: aws.String(name), Value: aws.String(string(payload)),
		Type: ssmtypes.ParameterTypeSecureString}); err != nil {
		e.T.Fatalf("install secret %s/%s as %s: %v", sec.Namespace, sec.Name, name, err)
	}
}

// PreviousSecret returns the version of namespace/name the secret store
// keeps from before the current one, read outside the functions:
// Secrets Manager's AWSPREVIOUS, or with UseSSM the parameter version
// before the current one (what ssmstore.Store.Rollback restores).
func (e *Env) PreviousSecret(namespace, name string) ports.Secret {
	e.T.Helper()
	if e.SSMEndpoint != "" {
		ops, err := ssmstore.New(ssm.NewFromConfig(awscfg.ForEndpoint(e.SSMEndpoint, FastRetry)), ssmstore.Options{Prefix: e.Vars[awsmode.EnvSecretPrefix]})
		if err != nil {
			e.T.Fatal(err)
		}
		sec, err := ops.Previous(e.Ctx, namespace, name)
		if err != nil {
			e.T.Fatal(err)
		}
		return sec
	}
	_, _, smc := awsmode.ClientsForEndpoints("", "", e.SMEndpoint, FastRetry)
	out, err := smc.GetSecretValue(e.Ctx, &sm.GetSecretValueInput{SecretId: aws.String(e.Vars[awsmode.EnvSecretPrefix] + "/" + namespace + "/" + name),
		VersionStage: aws.String("AWSPREVIOUS")})
	if err != nil {
		e.T.Fatalf("secret %s/%s at AWSPREVIOUS: %v", namespace, name, err)
	}
	sec, err := secretpayload.Decode([]byte(aws.ToString(out.SecretString)))
	if err != nil {
		e.T.Fatalf("previous version of %s/%s: %v", namespace, name, err)
	}
	sec.Namespace, sec.Name = namespace, name
	return sec
}
