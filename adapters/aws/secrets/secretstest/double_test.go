package secretstest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	sm "github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/certfn/certfn/adapters/aws/awscfg"
	"github.com/certfn/certfn/adapters/aws/secrets"
	"github.com/certfn/certfn/adapters/aws/secrets/secretstest"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/ports/porttest"
)

var fastRetry = awscfg.Retry{MaxAttempts: 3, MaxBackoff: 10 * time.Millisecond}

func newStore(t *testing.T, d *secretstest.Double) *secrets.Store {
	t.Helper()
	s, err := secrets.New(sm.NewFromConfig(awscfg.ForEndpoint(d.URL(), fastRetry)), secrets.Options{Prefix: "certfn"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The exported double passes the secret store contract suite through the
// real adapter, as the secrets package's own copy does.
func TestContractSuiteOnTheDouble(t *testing.T) {
	porttest.SecretSuite(t, func(t *testing.T) ports.SecretStore { return newStore(t, secretstest.New(t)) })
}

func TestCountsNamesTagsAndThrottle(t *testing.T) {
	ctx := context.Background()
	d := secretstest.New(t)
	s := newStore(t, d)
	sec := ports.Secret{Namespace: "team-a", Name: "web-tls", Data: map[string][]byte{"tls.crt": []byte("x")},
		Annotations: map[string]string{"cert-manager.io/certificate-name": "web"}}
	if err := s.Create(ctx, sec); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "team-a", "web-tls"); err != nil {
		t.Fatal(err)
	}
	if got := d.Calls("CreateSecret"); got != 1 {
		t.Errorf("CreateSecret calls = %d, want 1", got)
	}
	if got := d.Calls("GetSecretValue"); got != 1 {
		t.Errorf("GetSecretValue calls = %d, want 1", got)
	}
	if got, want := d.TotalCalls(), d.Calls("CreateSecret")+d.Calls("GetSecretValue"); got != want {
		t.Errorf("TotalCalls = %d, want %d (%v)", got, want, d.CallsByOp())
	}
	if names := d.Names(); len(names) != 1 || names[0] != "certfn/team-a/web-tls" {
		t.Errorf("Names = %v", names)
	}
	if tags := d.Tags("certfn/team-a/web-tls"); tags["certfn.io/certificate"] != "web" {
		t.Errorf("Tags = %v, want certfn.io/certificate=web", tags)
	}
	if d.Tags("certfn/none") != nil {
		t.Error("Tags of a missing secret is not nil")
	}
	d.ResetCalls()
	if d.TotalCalls() != 0 {
		t.Fatal("ResetCalls kept counts")
	}
	// Throttled past the retry bound: a transient error, one call per attempt.
	d.SetThrottle(fastRetry.MaxAttempts)
	_, err := s.Get(ctx, "team-a", "web-tls")
	if err == nil || errs.IsPermanent(err) || errors.Is(err, ports.ErrNotFound) {
		t.Fatalf("throttled Get = %v, want a transient error", err)
	}
	if got := d.Calls("GetSecretValue"); got != fastRetry.MaxAttempts {
		t.Errorf("throttled GetSecretValue calls = %d, want %d", got, fastRetry.MaxAttempts)
	}
}
