// Command api is certfn's `api` function on AWS Lambda (DESIGN.md §4): the
// HTTP API of adapters/httpapi behind a Lambda Function URL with AWS_IAM
// auth (BUFFERED invoke mode). The caller is the IAM principal the Function
// URL verified (requestContext.authorizer.iam.userArn); the bindings decide
// what it may do, and it is recorded as the requester of the
// CertificateRequests it creates. The function reads and writes resources
// in the DynamoDB table and enqueues reconcile keys on the worker queue; it
// never reads the secret store.
//
// Configuration (environment; infra/terraform/aws sets it):
//
//	CERTFN_FUNCTION                    "api" (or unset)
//	CERTFN_TABLE                       DynamoDB table name (required)
//	CERTFN_DUE_SHARDS                  due-index shards of the table (default 16)
//	CERTFN_QUEUE_URL                   the worker queue's URL (required)
//	CERTFN_CLUSTER_RESOURCE_NAMESPACE  namespace of ClusterIssuer secrets (default cert-manager)
//	CERTFN_API_MAX_BODY                request body limit in bytes (default 1048576)
//	CERTFN_API_ADMINS                  comma-separated IAM user/role ARNs allowed everything
//	                                   (system:masters), e.g. to apply the first bindings;
//	                                   a role is named by its ARN without path
//
// plus the AWS SDK's own (AWS_REGION, AWS_ENDPOINT_URL_* for LocalStack).
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/certfn/certfn/adapters/aws/awscfg"
	"github.com/certfn/certfn/adapters/aws/dynamo"
	"github.com/certfn/certfn/adapters/aws/sqsq"
	"github.com/certfn/certfn/adapters/httpapi"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/engine"
	"github.com/certfn/certfn/core/policy"
	"github.com/certfn/certfn/core/policy/plugins/denydomains"
	"github.com/certfn/certfn/core/rbac"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	h, err := setup(context.Background(), os.Getenv, log)
	if err != nil {
		log.Error("certfn api: setup failed", "err", err)
		os.Exit(1)
	}
	lambda.Start(h)
}

// config is the function's configuration.
type config struct {
	Table                    string
	Shards                   int
	QueueURL                 string
	ClusterResourceNamespace string
	MaxBody                  int64
	// Admins are usernames (as rbac.FromAWSARN maps them) in system:masters.
	Admins map[string]bool
}

// configFromEnv reads the configuration; errors name the variable.
func configFromEnv(getenv func(string) string) (config, error) {
	c := config{
		Table:                    strings.TrimSpace(getenv("CERTFN_TABLE")),
		QueueURL:                 strings.TrimSpace(getenv("CERTFN_QUEUE_URL")),
		ClusterResourceNamespace: strings.TrimSpace(getenv("CERTFN_CLUSTER_RESOURCE_NAMESPACE")),
		MaxBody:                  httpapi.DefaultMaxBody,
	}
	if f := getenv("CERTFN_FUNCTION"); f != "" && f != "api" {
		return c, fmt.Errorf("CERTFN_FUNCTION: %q: this is the api function's binary", f)
	}
	if c.Table == "" {
		return c, fmt.Errorf("CERTFN_TABLE: required (the DynamoDB table name)")
	}
	if c.QueueURL == "" {
		return c, fmt.Errorf("CERTFN_QUEUE_URL: required (the worker queue's URL)")
	}
	if v := getenv("CERTFN_DUE_SHARDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return c, fmt.Errorf("CERTFN_DUE_SHARDS: %q is not a positive integer", v)
		}
		c.Shards = n
	}
	if v := getenv("CERTFN_API_MAX_BODY"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 || n > 6<<20 {
			return c, fmt.Errorf("CERTFN_API_MAX_BODY: %q: want a number of bytes from 1 to 6291456 (a Function URL's payload limit)", v)
		}
		c.MaxBody = n
	}
	for i, a := range strings.Split(getenv("CERTFN_API_ADMINS"), ",") {
		if a = strings.TrimSpace(a); a == "" {
			continue
		}
		id, err := rbac.FromAWSARN(a)
		if err != nil {
			return c, fmt.Errorf("CERTFN_API_ADMINS[%d]: %w", i, err)
		}
		if id.Username != a {
			return c, fmt.Errorf("CERTFN_API_ADMINS[%d]: %q is a session: name its role, %s", i, a, id.Username)
		}
		if c.Admins == nil {
			c.Admins = map[string]bool{}
		}
		c.Admins[a] = true
	}
	return c, nil
}

// setup builds the function's handler from the environment.
func setup(ctx context.Context, getenv func(string) string, log *slog.Logger) (urlHandler, error) {
	cfg, err := configFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	awsCfg, err := awscfg.Load(ctx, awscfg.Retry{})
	if err != nil {
		return nil, err
	}
	eng, err := newEngine(cfg, awsCfg, log)
	if err != nil {
		return nil, err
	}
	return newHandler(eng, cfg, log)
}

// newEngine builds the engine on the AWS adapters: the DynamoDB state
// store and the SQS worker queue. Its secret store refuses every read
// (the api function must not read private keys).
func newEngine(cfg config, awsCfg aws.Config, log *slog.Logger) (*engine.Engine, error) {
	store, err := dynamo.New(dynamodb.NewFromConfig(awsCfg), dynamo.Options{Table: cfg.Table, Shards: cfg.Shards})
	if err != nil {
		return nil, err
	}
	queue, err := sqsq.New(sqs.NewFromConfig(awsCfg), sqsq.Options{QueueURL: cfg.QueueURL})
	if err != nil {
		return nil, err
	}
	// The policy plugins compiled into certfn, as in the worker, so that a
	// policy using one validates the same on apply.
	ev, err := policy.NewEvaluator(policy.Options{Plugins: []policy.Plugin{denydomains.New()}})
	if err != nil {
		return nil, fmt.Errorf("policy evaluator: %w", err)
	}
	return engine.New(engine.Config{Store: store, Secrets: noSecrets{log: log}, Queue: queue, Clock: clock.Real{},
		Evaluator: ev, ClusterResourceNamespace: cfg.ClusterResourceNamespace})
}

// newHandler serves the API on eng for Function URL events, with the
// caller taken from the IAM identity the Function URL verified.
func newHandler(eng *engine.Engine, cfg config, log *slog.Logger) (urlHandler, error) {
	h, err := httpapi.New(httpapi.Config{Engine: eng, Authenticate: iamAuthenticator(cfg.Admins), MaxBody: cfg.MaxBody, Logger: log})
	if err != nil {
		return nil, err
	}
	return serveFunctionURL(h), nil
}
