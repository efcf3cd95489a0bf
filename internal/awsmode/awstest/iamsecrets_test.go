package awstest

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	sm "github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"github.com/certfn/certfn/adapters/aws/secrets"
	"github.com/certfn/certfn/core/app"
)

// taggedSM answers DescribeSecret with the certfn-role tags it holds
// (ResourceNotFound for other ids) and counts the other calls.
type taggedSM struct {
	secrets.API
	roles map[string]string
	calls int
}

func (s *taggedSM) DescribeSecret(_ context.Context, in *sm.DescribeSecretInput, _ ...func(*sm.Options)) (*sm.DescribeSecretOutput, error) {
	r, ok := s.roles[aws.ToString(in.SecretId)]
	if !ok {
		return nil, &smtypes.ResourceNotFoundException{Message: aws.String("not found")}
	}
	var tags []smtypes.Tag
	if r != "" {
		tags = []smtypes.Tag{{Key: aws.String(secrets.TagRole), Value: aws.String(r)}}
	}
	return &sm.DescribeSecretOutput{Tags: tags}, nil
}
func (s *taggedSM) GetSecretValue(context.Context, *sm.GetSecretValueInput, ...func(*sm.Options)) (*sm.GetSecretValueOutput, error) {
	s.calls++
	return &sm.GetSecretValueOutput{}, nil
}
func (s *taggedSM) PutSecretValue(context.Context, *sm.PutSecretValueInput, ...func(*sm.Options)) (*sm.PutSecretValueOutput, error) {
	s.calls++
	return &sm.PutSecretValueOutput{}, nil
}
func (s *taggedSM) CreateSecret(context.Context, *sm.CreateSecretInput, ...func(*sm.Options)) (*sm.CreateSecretOutput, error) {
	s.calls++
	return &sm.CreateSecretOutput{}, nil
}
func (s *taggedSM) TagResource(context.Context, *sm.TagResourceInput, ...func(*sm.Options)) (*sm.TagResourceOutput, error) {
	s.calls++
	return &sm.TagResourceOutput{}, nil
}

func TestSecretsGuard(t *testing.T) {
	roles := map[string]string{"certfn/ca": "ca", "certfn/issued": "issued-ca", "certfn/leaf": "certificate", "certfn/next": "private-key",
		"certfn/tsig": "solver-credentials", "certfn/bare": ""}
	get := func(id string) func(*SecretsGuard) error {
		return func(g *SecretsGuard) error {
			_, err := g.GetSecretValue(context.Background(), &sm.GetSecretValueInput{SecretId: aws.String(id)})
			return err
		}
	}
	put := func(id string) func(*SecretsGuard) error {
		return func(g *SecretsGuard) error {
			_, err := g.PutSecretValue(context.Background(), &sm.PutSecretValueInput{SecretId: aws.String(id)})
			return err
		}
	}
	create := func(id, role string) func(*SecretsGuard) error {
		return func(g *SecretsGuard) error {
			_, err := g.CreateSecret(context.Background(), &sm.CreateSecretInput{Name: aws.String(id),
				Tags: []smtypes.Tag{{Key: aws.String(secrets.TagRole), Value: aws.String(role)}}})
			return err
		}
	}
	retag := func(id, role string) func(*SecretsGuard) error {
		return func(g *SecretsGuard) error {
			_, err := g.TagResource(context.Background(), &sm.TagResourceInput{SecretId: aws.String(id),
				Tags: []smtypes.Tag{{Key: aws.String(secrets.TagRole), Value: aws.String(role)}}})
			return err
		}
	}
	for _, tc := range []struct {
		name     string
		role     string
		workerCA bool
		call     func(*SecretsGuard) error
		allow    bool
	}{
		{"worker reads a leaf", app.Worker.Name, false, get("certfn/leaf"), true},
		{"worker looks up a missing secret", app.Worker.Name, false, get("certfn/missing"), true},
		{"worker reads an untagged secret", app.Worker.Name, false, get("certfn/bare"), true},
		{"worker reads solver credentials", app.Worker.Name, false, get("certfn/tsig"), true},
		{"worker may not overwrite solver credentials", app.Worker.Name, false, put("certfn/tsig"), false},
		{"worker may not read a CA key", app.Worker.Name, true, get("certfn/ca"), false},
		{"worker may not read an issued CA", app.Worker.Name, false, get("certfn/issued"), false},
		{"worker reads an issued CA when it manages them", app.Worker.Name, true, get("certfn/issued"), true},
		{"worker creates a certificate", app.Worker.Name, false, create("certfn/new", "certificate"), true},
		{"worker may not create an issued CA", app.Worker.Name, false, create("certfn/new", "issued-ca"), false},
		{"worker may not create a CA key", app.Worker.Name, true, create("certfn/new", "ca"), false},
		{"worker may not re-tag a CA key", app.Worker.Name, false, retag("certfn/ca", "certificate"), false},
		{"worker re-tags its own", app.Worker.Name, false, retag("certfn/leaf", "certificate"), true},
		{"worker may not put an untagged secret", app.Worker.Name, false, put("certfn/bare"), false},
		{"signer reads a CA key", app.Signer.Name, false, get("certfn/ca"), true},
		{"signer reads a next private key", app.Signer.Name, false, get("certfn/next"), true},
		{"signer looks up a missing CA", app.Signer.Name, false, get("certfn/missing"), true},
		{"signer may not read a leaf", app.Signer.Name, false, get("certfn/leaf"), false},
		{"signer may not write", app.Signer.Name, false, put("certfn/next"), false},
		{"signer may not create", app.Signer.Name, false, create("certfn/new", "private-key"), false},
		{"api reads nothing", app.API.Name, false, get("certfn/missing"), false},
		{"scheduler reads nothing", app.Scheduler.Name, false, get("certfn/leaf"), false},
		{"worker may not look up outside the prefix", app.Worker.Name, false, get("other/missing"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner := &taggedSM{roles: roles}
			g := NewSecretsGuard(inner, tc.role, tc.workerCA)
			g.Prefix = "certfn"
			err := tc.call(g)
			checkGuarded(t, tc.allow, err, inner.calls, g.Denied())
		})
	}
}
