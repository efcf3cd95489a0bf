// Package awse2e runs certfn's AWS deployment end to end in this process:
// the Lambda handlers of the worker, signer, scheduler and api functions
// (internal/awsmode) driving the flow, with the state in dynalite, the
// queues in local-aws-sqs (an emulation of Lambda's SQS event source
// mapping delivers their messages) and the secrets in the HAND-WRITTEN
// Secrets Manager TEST DOUBLE (adapters/aws/secrets/secretstest; not AWS)
// and, for the tests that say so, in moto (tests/emulators.Moto).
// A fake clock shared by every function is advanced for renewals. It
// issues from CA and self-signed issuers, and from ACME (HTTP-01) against
// an in-process Pebble set up as tests/cmd/pebble does (tests/acme's
// harness is not importable), with the http01 function answering the
// validation, and renews it; it solves DNS-01 through the route53
// provider on the HAND-WRITTEN Route 53 TEST DOUBLE
// (adapters/dns/route53/route53test) and imports into ACM on the
// HAND-WRITTEN ACM TEST DOUBLE (adapters/aws/acm/acmtest) and on moto;
// it publishes notifications on moto's EventBridge, routed by a rule to an
// SQS queue (notify_test.go).
//
// Every AWS service comes from the environment's endpoint when one is set
// (AWS_ENDPOINT_URL or AWS_ENDPOINT_URL_<SERVICE>: DynamoDB, SQS, Secrets
// Manager, Route 53, ACM, EventBridge; e.g. LocalStack) instead of the emulator or
// double; the moto variants use moto regardless.
package awse2e

import (
	"bytes"
	"context"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	sm "github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smithy "github.com/aws/smithy-go"

	"github.com/certfn/certfn/adapters/aws/secrets"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/internal/awsmode"
	"github.com/certfn/certfn/internal/awsmode/awstest"
	"github.com/certfn/certfn/tests/emulators"
)

var caller = app.Caller{Username: "arn:aws:iam::123456789012:role/platform", Groups: []string{"system:authenticated", app.SuperuserGroup}}

// deployment is the four functions of one awstest.Env.
type deployment struct {
	*awstest.Env
	t                          *testing.T
	api, worker, signer, sched *awsmode.Runtime
}

// deploy builds the functions; mods adjust one role's options.
func deploy(t *testing.T, mods map[string]func(*awsmode.Options)) *deployment {
	t.Helper()
	return deployEnv(t, nil, mods)
}

// deployEnv is deploy with setup of the Env (e.g. the IAM guard's
// settings) before the functions are built.
func deployEnv(t *testing.T, setup func(*awstest.Env), mods map[string]func(*awsmode.Options)) *deployment {
	t.Helper()
	e := awstest.New(t)
	if setup != nil {
		setup(e)
	}
	rt := func(r string) *awsmode.Runtime {
		if m, ok := mods[r]; ok {
			return e.Runtime(r, m)
		}
		return e.Runtime(r)
	}
	return &deployment{Env: e, t: t, api: rt(app.API.Name), worker: rt(app.Worker.Name), signer: rt(app.Signer.Name), sched: rt(app.Scheduler.Name)}
}

// apply sends manifests through the api function's engine.
func (d *deployment) apply(manifest string) {
	d.t.Helper()
	objs, err := api.Decode([]byte(manifest))
	if err != nil {
		d.t.Fatal(err)
	}
	for _, o := range objs {
		if _, err := d.api.App.Service.Apply(d.Ctx, caller, []api.Object{o}); err != nil {
			d.t.Fatalf("apply %s: %v", api.KeyOf(o), err)
		}
	}
}

func (d *deployment) applyFiles(glob string) {
	d.t.Helper()
	files, _ := filepath.Glob(glob)
	if len(files) == 0 {
		d.t.Fatalf("no files match %s", glob)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			d.t.Fatal(err)
		}
		d.apply(string(b))
	}
}

// run delivers both queues until idle.
func (d *deployment) run() { d.t.Helper(); d.RunUntilIdle(d.worker, d.signer, 500) }

// sweep invokes the scheduler, then runs until idle.
func (d *deployment) sweep() awsmode.SweepResult {
	d.t.Helper()
	res := d.Sweep(d.sched)
	d.run()
	return res
}

func (d *deployment) cert(ns, name string) *api.Certificate {
	d.t.Helper()
	o, err := d.api.Repo.Get(d.Ctx, api.Key{Kind: api.KindCertificate, Namespace: ns, Name: name})
	if err != nil {
		d.t.Fatalf("get certificate %s/%s: %v", ns, name, err)
	}
	return o.(*api.Certificate)
}

func (d *deployment) requireReady(ns, name string) *api.Certificate {
	d.t.Helper()
	c := d.cert(ns, name)
	if !api.IsTrue(c.Status.Conditions, "Ready") || api.IsTrue(c.Status.Conditions, "Issuing") {
		d.t.Fatalf("certificate %s/%s not Ready: %+v", ns, name, c.Status.Conditions)
	}
	return c
}

// secret reads a secret through the worker's secret store.
func (d *deployment) secret(ns, name string) ports.Secret {
	d.t.Helper()
	s, err := d.worker.Secrets.Get(d.Ctx, ns, name)
	if err != nil {
		d.t.Fatalf("secret %s/%s: %v", ns, name, err)
	}
	return s
}

// deliverUntil delivers both queues, in real time (SQS delays are real),
// until done returns true; past within it fails t with what.
func (d *deployment) deliverUntil(what string, within time.Duration, done func() bool) {
	d.t.Helper()
	deadline := time.Now().Add(within)
	for !done() {
		if time.Now().After(deadline) {
			d.t.Fatalf("not done after %s: %s", within, what)
		}
		n1, _ := d.Deliver(d.worker, d.WorkerQueueURL)
		n2, _ := d.Deliver(d.signer, d.SignerQueueURL)
		if n1 == 0 && n2 == 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
}

func revision(c *api.Certificate) int {
	if c.Status.Revision == nil {
		return 0
	}
	return *c.Status.Revision
}

func leaf(t *testing.T, pemChain []byte) *x509.Certificate {
	t.Helper()
	chain, err := pki.ParseChainPEM(pemChain)
	if err != nil {
		t.Fatalf("tls.crt: %v", err)
	}
	return chain[0]
}

// installCA stores an operator-installed CA key pair in
// cert-manager/<name> (as `aws secretsmanager create-secret` would, tagged
// certfn-role=ca) and a ClusterIssuer <name> that signs with it.
func (d *deployment) installCA(name string) *ct.CA {
	d.t.Helper()
	ca := ct.NewCA(d.t)
	d.InstallSecret(ca.Secret(d.t, "cert-manager", name), "ca")
	d.apply(fmt.Sprintf("apiVersion: cert-manager.io/v1\nkind: ClusterIssuer\nmetadata: {name: %s}\nspec: {ca: {secretName: %s}}\n", name, name))
	return ca
}

// leafYAML is a 90-day server certificate default/<name> from ClusterIssuer issuer.
func leafYAML(name, issuer string) string {
	return fmt.Sprintf(`apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: %[1]s, namespace: default}
spec:
  secretName: %[1]s-tls
  dnsNames: [%[1]s.example.internal]
  duration: 2160h
  privateKey: {algorithm: ECDSA, size: 256}
  issuerRef: {name: %[2]s, kind: ClusterIssuer}
`, name, issuer)
}

// scanForKeys fails t when any state item holds private key material.
func (d *deployment) scanForKeys() {
	d.t.Helper()
	out, err := d.DynamoDB.Scan(d.Ctx, &dynamodb.ScanInput{TableName: aws.String(d.Table)})
	if err != nil {
		d.t.Fatal(err)
	}
	if len(out.Items) == 0 {
		d.t.Fatal("the table is empty")
	}
	for _, it := range out.Items {
		for name, v := range it {
			s := fmt.Sprint(v)
			if strings.Contains(s, "PRIVATE KEY") {
				d.t.Fatalf("state item attribute %s holds private key material", name)
			}
		}
	}
}

// denySecrets is a Secrets Manager client that answers AccessDenied for
// the secret ids it is told to (an IAM deny, as the Terraform policies
// give the worker for CA key pairs) and records the attempts; write
// operations can be denied altogether (the signer's policy).
type denySecrets struct {
	secrets.API
	deny       func(id string) bool
	denyWrites bool

	mu       sync.Mutex
	attempts []string
}

var errDenied = &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "denied by the test's IAM policy"}

func (s *denySecrets) check(op, id string, write bool) error {
	if (s.deny != nil && s.deny(id)) || (write && s.denyWrites) {
		s.mu.Lock()
		s.attempts = append(s.attempts, op+" "+id)
		s.mu.Unlock()
		return fmt.Errorf("%s %s: %w", op, id, errDenied)
	}
	return nil
}

func (s *denySecrets) Attempts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.attempts...)
}

func (s *denySecrets) CreateSecret(ctx context.Context, in *sm.CreateSecretInput, o ...func(*sm.Options)) (*sm.CreateSecretOutput, error) {
	if err := s.check("CreateSecret", aws.ToString(in.Name), true); err != nil {
		return nil, err
	}
	return s.API.CreateSecret(ctx, in, o...)
}

func (s *denySecrets) GetSecretValue(ctx context.Context, in *sm.GetSecretValueInput, o ...func(*sm.Options)) (*sm.GetSecretValueOutput, error) {
	if err := s.check("GetSecretValue", aws.ToString(in.SecretId), false); err != nil {
		return nil, err
	}
	return s.API.GetSecretValue(ctx, in, o...)
}

func (s *denySecrets) PutSecretValue(ctx context.Context, in *sm.PutSecretValueInput, o ...func(*sm.Options)) (*sm.PutSecretValueOutput, error) {
	if err := s.check("PutSecretValue", aws.ToString(in.SecretId), true); err != nil {
		return nil, err
	}
	return s.API.PutSecretValue(ctx, in, o...)
}

func (s *denySecrets) DeleteSecret(ctx context.Context, in *sm.DeleteSecretInput, o ...func(*sm.Options)) (*sm.DeleteSecretOutput, error) {
	if err := s.check("DeleteSecret", aws.ToString(in.SecretId), true); err != nil {
		return nil, err
	}
	return s.API.DeleteSecret(ctx, in, o...)
}

func (s *denySecrets) DescribeSecret(ctx context.Context, in *sm.DescribeSecretInput, o ...func(*sm.Options)) (*sm.DescribeSecretOutput, error) {
	if err := s.check("DescribeSecret", aws.ToString(in.SecretId), false); err != nil {
		return nil, err
	}
	return s.API.DescribeSecret(ctx, in, o...)
}

func (s *denySecrets) TagResource(ctx context.Context, in *sm.TagResourceInput, o ...func(*sm.Options)) (*sm.TagResourceOutput, error) {
	if err := s.check("TagResource", aws.ToString(in.SecretId), true); err != nil {
		return nil, err
	}
	return s.API.TagResource(ctx, in, o...)
}

func (s *denySecrets) UpdateSecretVersionStage(ctx context.Context, in *sm.UpdateSecretVersionStageInput, o ...func(*sm.Options)) (*sm.UpdateSecretVersionStageOutput, error) {
	if err := s.check("UpdateSecretVersionStage", aws.ToString(in.SecretId), true); err != nil {
		return nil, err
	}
	return s.API.UpdateSecretVersionStage(ctx, in, o...)
}

var _ secrets.API = (*denySecrets)(nil)

// requirePrevious fails the test unless the previous version of the
// secret ns/name (Secrets Manager's AWSPREVIOUS, Parameter Store's version
// before the current one) holds want as its certificate: renewal keeps
// the previous key pair for rollback.
func (d *deployment) requirePrevious(ns, name string, want *x509.Certificate) {
	d.t.Helper()
	if got := leaf(d.t, d.PreviousSecret(ns, name).Data["tls.crt"]); !bytes.Equal(got.Raw, want.Raw) {
		d.t.Errorf("the previous version of %s/%s does not hold the first certificate", ns, name)
	}
}

// forEachSecretStore runs f with the functions' secret store on the Env's
// default Secrets Manager (the HAND-WRITTEN TEST DOUBLE, or the
// environment's AWS_ENDPOINT_URL[_SECRETS_MANAGER]), on moto's Secrets
// Manager, and on moto's Parameter Store (CERTFN_SECRET_STORE=ssm, as
// the Terraform module's secret_store = "ssm"). f passes use to the Env
// before its functions are built.
func forEachSecretStore(t *testing.T, f func(t *testing.T, use func(*awstest.Env))) {
	t.Run("default", func(t *testing.T) { f(t, func(*awstest.Env) {}) })
	t.Run("moto", func(t *testing.T) {
		ep := emulators.Moto(t)
		f(t, func(e *awstest.Env) { e.UseSecretsManager(ep) })
	})
	t.Run("ssm-moto", func(t *testing.T) {
		ep := emulators.Moto(t)
		f(t, func(e *awstest.Env) { e.UseSSM(ep) })
	})
}
