// Package awscfg builds the aws-sdk-go-v2 configuration that certfn's AWS
// adapters share: the SDK's default credential and endpoint chain (which
// reads AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_<SERVICE>, so LocalStack and
// emulators need no code) with the standard retryer bounded in attempts and
// backoff. Throttling (ThrottlingException,
// ProvisionedThroughputExceededException, ...), 5xx and network errors are
// retried there; what is still failing afterwards is returned to the caller,
// which core/errs classifies as transient.
package awscfg

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// Defaults of Retry.
const (
	DefaultMaxAttempts = 5
	DefaultMaxBackoff  = 5 * time.Second
)

// Retry bounds the SDK's standard retryer. The zero value means the
// defaults above.
type Retry struct {
	// MaxAttempts counts every attempt of one call, the first included.
	MaxAttempts int
	// MaxBackoff caps the exponential, jittered delay between attempts. A
	// short-lived function must keep MaxAttempts×MaxBackoff well under its
	// timeout.
	MaxBackoff time.Duration
}

// Retryer returns a factory of standard retryers with r's bounds, for
// aws.Config.Retryer or a client's Options.Retryer.
func (r Retry) Retryer() func() aws.Retryer {
	attempts, backoff := r.MaxAttempts, r.MaxBackoff
	if attempts <= 0 {
		attempts = DefaultMaxAttempts
	}
	if backoff <= 0 {
		backoff = DefaultMaxBackoff
	}
	return func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = attempts
			o.MaxBackoff = backoff
			o.Backoff = retry.NewExponentialJitterBackoff(backoff)
		})
	}
}

// Load returns the default configuration (environment, shared files, the
// function's role) with r's retryer; optFns are applied after it.
func Load(ctx context.Context, r Retry, optFns ...func(*config.LoadOptions) error) (aws.Config, error) {
	opts := append([]func(*config.LoadOptions) error{config.WithRetryer(r.Retryer())}, optFns...)
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("aws config: %w", err)
	}
	return cfg, nil
}

// ForEndpoint returns a configuration for an emulator or LocalStack at
// endpoint: static credentials (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY
// when set, else "test"/"test"), region AWS_REGION or us-east-1, and r's
// retryer. It never reads shared files or instance metadata.
func ForEndpoint(endpoint string, r Retry) aws.Config {
	region := os.Getenv("AWS_REGION")
	if region == "" {
		region = "us-east-1"
	}
	id, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	if id == "" || secret == "" {
		id, secret = "test", "test"
	}
	return aws.Config{
		Region:       region,
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider(id, secret, ""),
		Retryer:      r.Retryer(),
	}
}
