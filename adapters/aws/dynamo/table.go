package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Attribute names of an item. Every expression refers to them through
// ExpressionAttributeNames (OWNER and DATA are DynamoDB reserved words).
const (
	attrPK        = "pk"          // S: the key, api.Key.String() ("Kind/namespace/name" or "Kind/name")
	attrVersion   = "version"     // N: 1 on create, +1 per update
	attrKind      = "kind"        // S: the key's kind (kind_ns index)
	attrNamespace = "namespace"   // S: the key's namespace, absent for cluster-scoped kinds
	attrOwner     = "owner"       // S: the owner's key; absent when none (owner index)
	attrData      = "data"        // B: the resource JSON, gzip-compressed when attrEnc says so; absent when empty
	attrEnc       = "enc"         // S: "gzip" when data is compressed; absent otherwise
	attrShard     = "due_shard"   // N: hash(pk) % shards; only while due (due index)
	attrNextRun   = "next_run_at" // N: NextRunAt in Unix milliseconds; only while due
	attrExpires   = "expires_at"  // N: TTL, Unix seconds; only when Options.ExpiresAt sets it
)

// Index names.
const (
	// IndexDue: partition due_shard, sort next_run_at, KEYS_ONLY. Sparse:
	// only items with a NextRunAt are in it.
	IndexDue = "due"
	// IndexKind: partition kind, sort pk, KEYS_ONLY (List by kind and
	// namespace: begins_with(pk, "Kind/namespace/")).
	IndexKind = "kind_ns"
	// IndexOwner: partition owner, sort pk, KEYS_ONLY, sparse (List by owner).
	IndexOwner = "owner"
)

// TTLAttribute is the attribute the table's time-to-live setting must name.
const TTLAttribute = attrExpires

// TableInput returns the CreateTable request for a certfn state table named
// name (on-demand capacity). infra/terraform declares the same table; the
// tests and local setups use this one.
func TableInput(name string) *dynamodb.CreateTableInput {
	keysOnly := &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}
	gsi := func(index, hash, rng string) types.GlobalSecondaryIndex {
		return types.GlobalSecondaryIndex{
			IndexName: aws.String(index),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(hash), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(rng), KeyType: types.KeyTypeRange},
			},
			Projection: keysOnly,
		}
	}
	attr := func(n string, t types.ScalarAttributeType) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(n), AttributeType: t}
	}
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			attr(attrPK, types.ScalarAttributeTypeS),
			attr(attrKind, types.ScalarAttributeTypeS),
			attr(attrOwner, types.ScalarAttributeTypeS),
			attr(attrShard, types.ScalarAttributeTypeN),
			attr(attrNextRun, types.ScalarAttributeTypeN),
		},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String(attrPK), KeyType: types.KeyTypeHash}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
			gsi(IndexDue, attrShard, attrNextRun),
			gsi(IndexKind, attrKind, attrPK),
			gsi(IndexOwner, attrOwner, attrPK),
		},
	}
}

// CreateTable creates the table described by TableInput and waits (up to
// wait) until it is active. Time to live is left to the caller
// (UpdateTimeToLive on TTLAttribute; Terraform does it), because some
// emulators do not implement it.
func CreateTable(ctx context.Context, db *dynamodb.Client, name string, wait time.Duration) error {
	if _, err := db.CreateTable(ctx, TableInput(name)); err != nil {
		return fmt.Errorf("create table %s: %w", name, err)
	}
	w := dynamodb.NewTableExistsWaiter(db, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 50*time.Millisecond, time.Second
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, wait); err != nil {
		return fmt.Errorf("create table %s: wait until active: %w", name, err)
	}
	return nil
}
