package awstest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	smithy "github.com/aws/smithy-go"

	"github.com/certfn/certfn/adapters/aws/ssmstore"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/internal/awsmode"
)

// SSMGuard is the Parameter Store half of the IAM TEST DOUBLE (see
// IAMGuard, SecretsGuard): it wraps one function's SSM client and refuses,
// with an AccessDeniedException, each call that function's policy in
// infra/terraform/aws/iam.tf does not allow. With CERTFN_SECRET_STORE=ssm
// the policies scope by parameter path, /<prefix>/<class>/*
// (ssmstore's classes): the worker reads tls, pk and sc and writes tls and
// pk (ica too with worker_manages_ca_certificates); the signer reads ca,
// ica and pk and writes nothing; no other function has a statement. The
// rules follow from each role's secret access (core/app), as
// tests/terraform holds the planned documents to.
type SSMGuard struct {
	ssmstore.API
	role string
	// Prefix is the parameter prefix (CERTFN_SECRET_PREFIX, no slashes
	// around it).
	Prefix string
	read   []ssmstore.Class
	write  []ssmstore.Class

	mu     sync.Mutex
	denied []string
}

// SSMClasses are the classes role reads and writes under the Terraform
// module's policy (workerManagesCA: worker_manages_ca_certificates): those
// of its secret access (awsmode.SSMClasses); read is also the
// CERTFN_SECRET_CLASSES value lambda.tf sets, in its order.
func SSMClasses(role string, workerManagesCA bool) (read, write []ssmstore.Class) {
	r, err := app.FunctionNamed(role)
	if err != nil {
		return nil, nil
	}
	return awsmode.SSMClasses(r.SecretAccess(), workerManagesCA)
}

// NewSSMGuard wraps api for role under prefix.
func NewSSMGuard(api ssmstore.API, role string, prefix string, workerManagesCA bool) *SSMGuard {
	g := &SSMGuard{API: api, role: role, Prefix: prefix}
	g.read, g.write = SSMClasses(role, workerManagesCA)
	return g
}

// Denied returns the refused calls so far.
func (g *SSMGuard) Denied() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.denied)
}

// classOf returns the class segment of parameter name (a selector such as
// ":3" is not part of the resource IAM sees), or false when the name is
// outside /<prefix>/<class>/.
func (g *SSMGuard) classOf(name string) (ssmstore.Class, bool) {
	if i := strings.LastIndexByte(name, ':'); i >= 0 {
		name = name[:i]
	}
	rest, ok := strings.CutPrefix(name, "/"+g.Prefix+"/")
	if !ok {
		return "", false
	}
	c, _, ok := strings.Cut(rest, "/")
	return ssmstore.Class(c), ok
}

func (g *SSMGuard) check(action, name string, classes []ssmstore.Class) error {
	if c, ok := g.classOf(name); ok && slices.Contains(classes, c) {
		return nil
	}
	msg := fmt.Sprintf("%s function: ssm:%s on parameter %s", g.role, action, name)
	g.mu.Lock()
	g.denied = append(g.denied, msg)
	g.mu.Unlock()
	return &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "IAM TEST DOUBLE: not authorized: " + msg, Fault: smithy.FaultClient}
}

// GetParameter implements ssmstore.API.
func (g *SSMGuard) GetParameter(ctx context.Context, in *ssm.GetParameterInput, o ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	if err := g.check("GetParameter", aws.ToString(in.Name), g.read); err != nil {
		return nil, err
	}
	return g.API.GetParameter(ctx, in, o...)
}

// GetParameters implements ssmstore.API: IAM authorizes every named
// parameter, and one refused name refuses the call.
func (g *SSMGuard) GetParameters(ctx context.Context, in *ssm.GetParametersInput, o ...func(*ssm.Options)) (*ssm.GetParametersOutput, error) {
	for _, n := range in.Names {
		if err := g.check("GetParameters", n, g.read); err != nil {
			return nil, err
		}
	}
	return g.API.GetParameters(ctx, in, o...)
}

// PutParameter implements ssmstore.API.
func (g *SSMGuard) PutParameter(ctx context.Context, in *ssm.PutParameterInput, o ...func(*ssm.Options)) (*ssm.PutParameterOutput, error) {
	if err := g.check("PutParameter", aws.ToString(in.Name), g.write); err != nil {
		return nil, err
	}
	return g.API.PutParameter(ctx, in, o...)
}

// DeleteParameter implements ssmstore.API.
func (g *SSMGuard) DeleteParameter(ctx context.Context, in *ssm.DeleteParameterInput, o ...func(*ssm.Options)) (*ssm.DeleteParameterOutput, error) {
	if err := g.check("DeleteParameter", aws.ToString(in.Name), g.write); err != nil {
		return nil, err
	}
	return g.API.DeleteParameter(ctx, in, o...)
}

// countingSSM is an ssmstore.API that counts every call in counts.
type countingSSM struct {
	api    ssmstore.API
	counts *SecretCounts
}

func (s countingSSM) GetParameter(ctx context.Context, in *ssm.GetParameterInput, o ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	s.counts.inc("GetParameter")
	return s.api.GetParameter(ctx, in, o...)
}

func (s countingSSM) GetParameters(ctx context.Context, in *ssm.GetParametersInput, o ...func(*ssm.Options)) (*ssm.GetParametersOutput, error) {
	s.counts.inc("GetParameters")
	return s.api.GetParameters(ctx, in, o...)
}

func (s countingSSM) PutParameter(ctx context.Context, in *ssm.PutParameterInput, o ...func(*ssm.Options)) (*ssm.PutParameterOutput, error) {
	s.counts.inc("PutParameter")
	return s.api.PutParameter(ctx, in, o...)
}

func (s countingSSM) DeleteParameter(ctx context.Context, in *ssm.DeleteParameterInput, o ...func(*ssm.Options)) (*ssm.DeleteParameterOutput, error) {
	s.counts.inc("DeleteParameter")
	return s.api.DeleteParameter(ctx, in, o...)
}
