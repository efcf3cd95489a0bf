// Command api is certfn's `api` function on AWS Lambda (DESIGN.md §4): the
// HTTP API of adapters/httpapi behind a Lambda Function URL with AWS_IAM
// auth (BUFFERED invoke mode). The caller is the IAM principal the Function
// URL verified (requestContext.authorizer.iam.userArn); the bindings decide
// what it may do, and it is recorded as the requester of the
// CertificateRequests it creates. The function reads and writes resources
// in the DynamoDB table and enqueues reconcile keys on the worker queue; it
// never reads the secret store.
//
// Configuration (environment; infra/terraform/aws sets it). The variables
// every function shares are parsed by internal/awsmode (role api):
//
//	CERTFN_FUNCTION                    "api" (or unset)
//	CERTFN_TABLE                       DynamoDB table name (required)
//	CERTFN_DUE_SHARDS                  due-index shards of the table (default 16)
//	CERTFN_QUEUE_URL                   the worker queue's URL (required)
//	CERTFN_CLUSTER_RESOURCE_NAMESPACE  namespace of ClusterIssuer secrets (default cert-manager)
//	CERTFN_LOG_LEVEL                   debug, info (default), warn, error
//	CERTFN_INIT_ONLY                   1: exit after initialisation (cold-start measurement)
//
// and the api's own:
//
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
	"github.com/certfn/certfn/internal/awsmode"
)

func main() {
	h, err := setup(context.Background(), os.Getenv, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "certfn api:", err)
		os.Exit(1)
	}
	if awsmode.InitOnly(os.Getenv) {
		return
	}
	lambda.Start(h)
}

// config is the function's configuration.
type config struct {
	// Settings are the variables every certfn function shares, parsed and
	// checked by internal/awsmode (table, shards, queue, namespace, log level).
	awsmode.Settings
	// MaxBody is the request body limit (CERTFN_API_MAX_BODY).
	MaxBody int64
	// Admins are usernames (as rbac.FromAWSARN maps them) in system:masters
	// (CERTFN_API_ADMINS).
	Admins map[string]bool
}

// configFromEnv reads the configuration; errors name the variable.
func configFromEnv(getenv func(string) string) (config, error) {
	st, err := awsmode.ParseSettings(awsmode.RoleAPI, getenv)
	if err != nil {
		return config{}, err
	}
	c := config{Settings: st, MaxBody: httpapi.DefaultMaxBody}
	if v := strings.TrimSpace(getenv("CERTFN_API_MAX_BODY")); v != "" {
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

// setup builds the function's handler from the environment. A nil log
// writes JSON to stdout at CERTFN_LOG_LEVEL, as the other functions do.
func setup(ctx context.Context, getenv func(string) string, log *slog.Logger) (urlHandler, error) {
	cfg, err := configFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: cfg.LogLevel})).With("function", "api")
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
	store, err := dynamo.New(dynamodb.NewFromConfig(awsCfg), dynamo.Options{Table: cfg.Table, Shards: cfg.DueShards})
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
		Evaluator: ev, ClusterResourceNamespace: cfg.ClusterResourceNamespace, MaxQueueDelay: sqsq.MaxDelay})
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
