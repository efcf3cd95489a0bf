package awscfg

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go"
)

func TestRetryBounds(t *testing.T) {
	tests := []struct {
		name         string
		r            Retry
		wantAttempts int
	}{
		{"defaults", Retry{}, DefaultMaxAttempts},
		{"explicit", Retry{MaxAttempts: 3, MaxBackoff: time.Second}, 3},
		{"negative means default", Retry{MaxAttempts: -1}, DefaultMaxAttempts},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.r.Retryer()()
			if got := r.MaxAttempts(); got != tc.wantAttempts {
				t.Errorf("MaxAttempts = %d, want %d", got, tc.wantAttempts)
			}
			limit := tc.r.MaxBackoff
			if limit <= 0 {
				limit = DefaultMaxBackoff
			}
			for attempt := 1; attempt <= 10; attempt++ {
				d, err := r.RetryDelay(attempt, throttled)
				if err != nil {
					t.Fatal(err)
				}
				if d < 0 || d > limit {
					t.Errorf("attempt %d: delay %v outside [0, %v]", attempt, d, limit)
				}
			}
			if !r.IsErrorRetryable(throttled) {
				t.Errorf("ThrottlingException not retryable")
			}
		})
	}
}

// throttled is the API error a throttled call returns.
var throttled = &smithy.GenericAPIError{Code: "ThrottlingException", Message: "Rate exceeded"}

func TestForEndpoint(t *testing.T) {
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	cfg := ForEndpoint("http://127.0.0.1:4566", Retry{MaxAttempts: 2})
	if cfg.Region != "us-east-1" || aws.ToString(cfg.BaseEndpoint) != "http://127.0.0.1:4566" {
		t.Errorf("region %q endpoint %q", cfg.Region, aws.ToString(cfg.BaseEndpoint))
	}
	creds, err := cfg.Credentials.Retrieve(context.Background())
	if err != nil || creds.AccessKeyID != "test" {
		t.Errorf("credentials %+v, %v; want the static test pair", creds, err)
	}
	if got := cfg.Retryer().MaxAttempts(); got != 2 {
		t.Errorf("MaxAttempts = %d, want 2", got)
	}
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "x")
	cfg = ForEndpoint("http://e", Retry{})
	if creds, _ := cfg.Credentials.Retrieve(context.Background()); cfg.Region != "eu-west-1" || creds.AccessKeyID != "AKIDEXAMPLE" {
		t.Errorf("environment not used: region %q key %q", cfg.Region, creds.AccessKeyID)
	}
}

func TestLoad(t *testing.T) {
	t.Setenv("AWS_REGION", "eu-central-1")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	cfg, err := Load(context.Background(), Retry{MaxAttempts: 7})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Region != "eu-central-1" {
		t.Errorf("region %q", cfg.Region)
	}
	if got := cfg.Retryer().MaxAttempts(); got != 7 {
		t.Errorf("MaxAttempts = %d, want 7", got)
	}
}
