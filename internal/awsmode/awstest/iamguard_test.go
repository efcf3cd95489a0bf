package awstest

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	smithy "github.com/aws/smithy-go"

	"github.com/certfn/certfn/adapters/aws/dynamo"
	"github.com/certfn/certfn/core/app"
)

// okAPI answers every call with an empty output.
type okAPI struct{ calls int }

func (a *okAPI) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	a.calls++
	return &dynamodb.GetItemOutput{}, nil
}
func (a *okAPI) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	a.calls++
	return &dynamodb.PutItemOutput{}, nil
}
func (a *okAPI) DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	a.calls++
	return &dynamodb.DeleteItemOutput{}, nil
}
func (a *okAPI) Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	a.calls++
	return &dynamodb.QueryOutput{}, nil
}
func (a *okAPI) BatchGetItem(context.Context, *dynamodb.BatchGetItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	a.calls++
	return &dynamodb.BatchGetItemOutput{}, nil
}

func pkKey(pk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}
}

func query(index, h string) *dynamodb.QueryInput {
	return &dynamodb.QueryInput{TableName: aws.String("t"), IndexName: aws.String(index),
		ExpressionAttributeValues: map[string]types.AttributeValue{":h": &types.AttributeValueMemberS{Value: h},
			":prefix": &types.AttributeValueMemberS{Value: h + "/"}}}
}

func TestIAMGuard(t *testing.T) {
	get := func(pk string) func(*IAMGuard) error {
		return func(g *IAMGuard) error {
			_, err := g.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String("t"), Key: pkKey(pk)})
			return err
		}
	}
	put := func(pk string) func(*IAMGuard) error {
		return func(g *IAMGuard) error {
			_, err := g.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String("t"), Item: pkKey(pk)})
			return err
		}
	}
	del := func(pk string) func(*IAMGuard) error {
		return func(g *IAMGuard) error {
			_, err := g.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String("t"), Key: pkKey(pk)})
			return err
		}
	}
	q := func(in *dynamodb.QueryInput) func(*IAMGuard) error {
		return func(g *IAMGuard) error { _, err := g.Query(context.Background(), in); return err }
	}
	batch := func(pks ...string) func(*IAMGuard) error {
		return func(g *IAMGuard) error {
			var keys []map[string]types.AttributeValue
			for _, pk := range pks {
				keys = append(keys, pkKey(pk))
			}
			_, err := g.BatchGetItem(context.Background(), &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{"t": {Keys: keys}}})
			return err
		}
	}
	due := &dynamodb.QueryInput{TableName: aws.String("t"), IndexName: aws.String(dynamo.IndexDue),
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberN{Value: "3"}, ":t": &types.AttributeValueMemberN{Value: "1700000000"}}}
	for _, tc := range []struct {
		name  string
		role  string
		call  func(*IAMGuard) error
		allow bool
	}{
		{"worker reads a Certificate", app.Worker.Name, get("Certificate/default/web"), true},
		{"worker deletes a Challenge", app.Worker.Name, del("Challenge/default/web-1-0-1"), true},
		{"worker may not query the due index", app.Worker.Name, q(due), false},
		{"worker on another table", app.Worker.Name, func(g *IAMGuard) error {
			_, err := g.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String("other"), Key: pkKey("Certificate/a/b")})
			return err
		}, false},
		{"signer reads a request", app.Signer.Name, get("CertificateRequest/default/web-1"), true},
		{"signer writes an issuer", app.Signer.Name, put("ClusterIssuer/ca"), true},
		{"signer may not write a Certificate", app.Signer.Name, put("Certificate/default/web"), false},
		{"signer may not delete a request", app.Signer.Name, del("CertificateRequest/default/web-1"), false},
		{"signer lists requests", app.Signer.Name, q(query(dynamo.IndexKind, "CertificateRequest")), true},
		{"signer may not list Certificates", app.Signer.Name, q(query(dynamo.IndexKind, "Certificate")), false},
		{"signer may not list by owner", app.Signer.Name, q(query(dynamo.IndexOwner, "Certificate/default/web")), false},
		{"signer batch of requests", app.Signer.Name, batch("CertificateRequest/a/b-1", "CertificateRequest/a/c-1"), true},
		{"signer batch with a Certificate", app.Signer.Name, batch("CertificateRequest/a/b-1", "Certificate/a/b"), false},
		{"scheduler sweeps the due index", app.Scheduler.Name, q(due), true},
		{"scheduler may not read items", app.Scheduler.Name, get("Certificate/default/web"), false},
		{"http01 lists Challenges", app.HTTP01.Name, q(query(dynamo.IndexKind, "Challenge")), true},
		{"http01 reads a Challenge", app.HTTP01.Name, get("Challenge/default/web-1-0-1"), true},
		{"http01 may not write a Challenge", app.HTTP01.Name, put("Challenge/default/web-1-0-1"), false},
		{"http01 may not list Orders", app.HTTP01.Name, q(query(dynamo.IndexKind, "Order")), false},
		{"api lists by owner", app.API.Name, q(query(dynamo.IndexOwner, "Certificate/default/web")), true},
		{"api may not sweep", app.API.Name, q(due), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner := &okAPI{}
			g := NewIAMGuard(inner, tc.role, "t")
			err := tc.call(g)
			checkGuarded(t, tc.allow, err, inner.calls, g.Denied())
		})
	}
}

// checkGuarded checks one guarded call: allowed, it reached the client
// once and nothing was refused; else it failed with AccessDeniedException
// without reaching the client, and one refusal was recorded.
func checkGuarded(t *testing.T, allow bool, err error, calls int, denied []string) {
	t.Helper()
	if allow {
		if err != nil || calls != 1 || len(denied) != 0 {
			t.Fatalf("want allowed: err %v, calls %d, denied %v", err, calls, denied)
		}
		return
	}
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "AccessDeniedException" || calls != 0 || len(denied) != 1 {
		t.Fatalf("want AccessDeniedException and no call: err %v, calls %d, denied %v", err, calls, denied)
	}
}
