package awstest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	smithy "github.com/aws/smithy-go"

	"github.com/certfn/certfn/adapters/aws/dynamo"
	"github.com/certfn/certfn/core/app"
)

// IAMGuard is a TEST DOUBLE of IAM for DynamoDB (no emulator enforces IAM):
// it wraps one function's DynamoDB client and refuses, with an
// AccessDeniedException, every call that function's policy in
// infra/terraform/aws/iam.tf does not allow, recording it. The rules are a
// hand-written copy of that file's DynamoDB statements; tests/terraform
// evaluates the planned policy documents themselves against the same
// accesses ("signer lists CertificateRequests", "scheduler may not read
// items", ...). This guard checks the other half: that the code of each
// function only makes the calls those policies allow.
type IAMGuard struct {
	dynamo.API
	role  string
	table string

	mu     sync.Mutex
	denied []string
}

// dynamoRule is one Allow statement: actions on the table or an index,
// with partition key values (dynamodb:LeadingKeys) matching one of
// leading (a trailing "*" is a prefix; empty means any).
type dynamoRule struct {
	actions []string
	targets []string // "" for the table, else an index name
	leading []string
}

var tableRW = []string{"GetItem", "BatchGetItem", "Query", "PutItem", "UpdateItem", "DeleteItem"}

// dynamoRules mirror iam.tf's DynamoDB statements per state store access
// (core/app Role.StoreAccess).
var dynamoRules = map[app.StoreAccess][]dynamoRule{
	app.StoreAll: {{actions: tableRW, targets: []string{"", dynamo.IndexKind, dynamo.IndexOwner}}},
	app.StoreSigning: {
		{actions: []string{"GetItem", "BatchGetItem", "PutItem", "UpdateItem"}, targets: []string{""},
			leading: []string{"CertificateRequest/*", "CertificateSigningRequest/*", "Issuer/*", "ClusterIssuer/*", "Event/*"}},
		{actions: []string{"Query"}, targets: []string{dynamo.IndexKind}, leading: []string{"CertificateRequest", "CertificateSigningRequest"}},
	},
	app.StoreDue: {{actions: []string{"Query"}, targets: []string{dynamo.IndexDue}}},
	app.StoreChallenges: {{actions: []string{"GetItem", "BatchGetItem", "Query"}, targets: []string{"", dynamo.IndexKind},
		leading: []string{"Challenge/*", "Challenge"}}},
}

// NewIAMGuard wraps api for role on table.
func NewIAMGuard(api dynamo.API, role string, table string) *IAMGuard {
	return &IAMGuard{API: api, role: role, table: table}
}

// Denied returns the refused calls so far ("Action target keys").
func (g *IAMGuard) Denied() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.denied)
}

// check returns an AccessDeniedException unless a rule allows action on
// target (table name or "index/<name>") with every one of keys.
func (g *IAMGuard) check(action, table, index string, keys []string) error {
	if role, err := app.FunctionNamed(g.role); err == nil && table == g.table {
		for _, r := range dynamoRules[role.StoreAccess()] {
			if slices.Contains(r.actions, action) && slices.Contains(r.targets, index) && allMatch(keys, r.leading) {
				return nil
			}
		}
	}
	target := table
	if index != "" {
		target += "/index/" + index
	}
	msg := fmt.Sprintf("%s function: dynamodb:%s on %s with keys %v", g.role, action, target, keys)
	g.mu.Lock()
	g.denied = append(g.denied, msg)
	g.mu.Unlock()
	return &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "IAM TEST DOUBLE: not authorized: " + msg, Fault: smithy.FaultClient}
}

func allMatch(keys, patterns []string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, k := range keys {
		if !slices.ContainsFunc(patterns, func(p string) bool {
			if prefix, ok := strings.CutSuffix(p, "*"); ok {
				return strings.HasPrefix(k, prefix)
			}
			return k == p
		}) {
			return false
		}
	}
	return true
}

func pkOf(item map[string]types.AttributeValue) string {
	if v, ok := item["pk"].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// GetItem implements dynamo.API.
func (g *IAMGuard) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if err := g.check("GetItem", aws.ToString(in.TableName), "", []string{pkOf(in.Key)}); err != nil {
		return nil, err
	}
	return g.API.GetItem(ctx, in, o...)
}

// PutItem implements dynamo.API.
func (g *IAMGuard) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if err := g.check("PutItem", aws.ToString(in.TableName), "", []string{pkOf(in.Item)}); err != nil {
		return nil, err
	}
	return g.API.PutItem(ctx, in, o...)
}

// DeleteItem implements dynamo.API.
func (g *IAMGuard) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	if err := g.check("DeleteItem", aws.ToString(in.TableName), "", []string{pkOf(in.Key)}); err != nil {
		return nil, err
	}
	return g.API.DeleteItem(ctx, in, o...)
}

// Query implements dynamo.API. The leading key is the value bound to the
// partition key of the table or index queried (":h" or ":s" in certfn's
// key conditions; every value is taken when the name is unknown).
func (g *IAMGuard) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	vals := in.ExpressionAttributeValues
	if h, ok := vals[":h"]; ok {
		vals = map[string]types.AttributeValue{":h": h}
	} else if sh, ok := vals[":s"]; ok {
		vals = map[string]types.AttributeValue{":s": sh}
	}
	var keys []string
	for _, v := range vals {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			keys = append(keys, v.Value)
		case *types.AttributeValueMemberN:
			keys = append(keys, v.Value)
		}
	}
	if err := g.check("Query", aws.ToString(in.TableName), aws.ToString(in.IndexName), keys); err != nil {
		return nil, err
	}
	return g.API.Query(ctx, in, o...)
}

// BatchGetItem implements dynamo.API.
func (g *IAMGuard) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	for table, ka := range in.RequestItems {
		keys := make([]string, 0, len(ka.Keys))
		for _, k := range ka.Keys {
			keys = append(keys, pkOf(k))
		}
		if err := g.check("BatchGetItem", table, "", keys); err != nil {
			return nil, err
		}
	}
	return g.API.BatchGetItem(ctx, in, o...)
}
