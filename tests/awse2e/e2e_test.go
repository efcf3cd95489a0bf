package awse2e

import (
	"bytes"
	"crypto/x509"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/internal/awsmode"
	"github.com/certfn/certfn/internal/awsmode/awstest"
)

// The examples (a self-signed root, a CA ClusterIssuer on it, a leaf with
// a PKCS#12 keystore) are issued by the worker and signer functions, then
// the leaf is renewed by the scheduler's sweep after the clock passes its
// renewal time; Secrets Manager keeps the previous key pair as AWSPREVIOUS.
//
// The examples' CA is a Certificate with isCA (certfn-role issued-ca):
// the deployment has worker_manages_ca_certificates, as docs/deploy/aws.md
// says such a CA needs; without it the worker's CreateSecret is refused.
//
// The secret store is Secrets Manager on the double (or the environment's
// endpoint) and on moto, and Parameter Store on moto.
func TestExamplesIssueAndRenewOnAWS(t *testing.T) {
	forEachSecretStore(t, testExamplesIssueAndRenew)
}

func testExamplesIssueAndRenew(t *testing.T, useSM func(*awstest.Env)) {
	d := deployEnv(t, func(e *awstest.Env) { e.WorkerManagesCACertificates = true; useSM(e) }, nil)
	d.applyFiles("../../examples/0[123]*.yaml")
	d.run()
	d.requireReady("cert-manager", "demo-ca")
	web := d.requireReady("default", "web")
	if revision(web) != 1 {
		t.Fatalf("web revision %d, want 1", revision(web))
	}
	sec := d.secret("default", "web-tls")
	for _, k := range []string{"tls.crt", "tls.key", "ca.crt", "tls-combined.pem", "keystore.p12"} {
		if len(sec.Data[k]) == 0 {
			t.Errorf("secret default/web-tls has no %s", k)
		}
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(sec.Data["ca.crt"]) {
		t.Fatal("ca.crt holds no certificate")
	}
	first := leaf(t, sec.Data["tls.crt"])
	if _, err := first.Verify(x509.VerifyOptions{Roots: roots, DNSName: "api.example.internal", CurrentTime: awstest.T0.Add(time.Hour)}); err != nil {
		t.Fatalf("leaf does not verify against the CA: %v", err)
	}
	// The signer signed both CA-signed and self-signed requests, the
	// worker handed them over, and no key material is in the table.
	if n := d.Metrics.Sum("certfn_requests_signed_total"); n != 2 {
		t.Errorf("requests signed %v, want 2 (demo-ca self-signed, web by the CA)", n)
	}
	if n := d.Metrics.Sum("certfn_handoffs_total"); n < 3 {
		t.Errorf("hand-offs to the signer %v, want at least 3 (two requests, the CA issuer)", n)
	}
	d.scanForKeys()
	// The temporary next-private-key secret is gone.
	if _, err := d.worker.Secrets.Get(d.Ctx, "default", "web-next-private-key"); err == nil {
		t.Error("next-private-key secret left behind")
	}

	// Renewal: nothing before the renewal time; the sweep renews after it.
	renewAt := web.Status.RenewalTime.Time
	if want := awstest.T0.Add(60 * 24 * time.Hour); renewAt.Sub(want).Abs() > time.Minute {
		t.Fatalf("renewalTime %s, want 2/3 of 90 days = %s", renewAt, want)
	}
	d.Clock.Set(renewAt.Add(-time.Minute))
	d.sweep()
	if revision(d.cert("default", "web")) != 1 {
		t.Fatal("renewed before the renewal time")
	}
	d.Clock.Set(renewAt.Add(time.Minute))
	if res := d.sweep(); res.Due == 0 {
		t.Fatal("the sweep found nothing due at the renewal time")
	}
	web = d.requireReady("default", "web")
	if revision(web) != 2 {
		t.Fatalf("web revision %d after the renewal time, want 2", revision(web))
	}
	renewed := leaf(t, d.secret("default", "web-tls").Data["tls.crt"])
	if renewed.NotBefore.Before(renewAt) || bytes.Equal(renewed.Raw, first.Raw) {
		t.Fatalf("secret holds the old certificate (notBefore %s)", renewed.NotBefore)
	}
	// rotationPolicy Always: a new key; the previous version is kept.
	if bytes.Equal(renewed.RawSubjectPublicKeyInfo, first.RawSubjectPublicKeyInfo) {
		t.Error("the key was not rotated (rotationPolicy: Always)")
	}
	d.requirePrevious("default", "web-tls", first)
	// The secrets went to the store the deployment names.
	ops := d.Usage().SecretStore
	if d.SSMEndpoint != "" {
		if ops["PutParameter"] == 0 || ops["GetSecretValue"]+ops["PutSecretValue"]+ops["CreateSecret"] != 0 {
			t.Errorf("secret store calls %v: want Parameter Store's only (CERTFN_SECRET_STORE=ssm)", ops)
		}
	} else if ops["PutSecretValue"]+ops["CreateSecret"] == 0 || ops["PutParameter"] != 0 {
		t.Errorf("secret store calls %v: want Secrets Manager's only", ops)
	}
	// Nothing is left to do and no message went to a dead-letter queue.
	if n := d.VisibleMessages(d.WorkerDLQURL) + d.VisibleMessages(d.SignerDLQURL); n != 0 {
		t.Errorf("%d messages in the dead-letter queues", n)
	}
}

// The worker never reads a CA key pair: with an IAM-like deny on the CA
// secret for the worker, and a signer that may not write any secret, a
// leaf is issued and the worker made no attempt on the CA secret.
func TestWorkerNeverReadsTheCAKey(t *testing.T) {
	var caID string // the CA secret's id, once the deployment's prefix is known
	workerSM := &denySecrets{deny: func(id string) bool { return caID != "" && strings.HasPrefix(id, caID) }}
	signerSM := &denySecrets{denyWrites: true}
	d := deploy(t, map[string]func(*awsmode.Options){
		app.Worker.Name: func(o *awsmode.Options) { workerSM.API = o.SecretsManager; o.SecretsManager = workerSM },
		app.Signer.Name: func(o *awsmode.Options) { signerSM.API = o.SecretsManager; o.SecretsManager = signerSM },
	})
	caID = d.Vars[awsmode.EnvSecretPrefix] + "/cert-manager/ops-ca"
	d.installCA("ops-ca")
	d.apply(leafYAML("app", "ops-ca"))
	d.run()
	d.requireReady("default", "app")
	if a := workerSM.Attempts(); len(a) != 0 {
		t.Fatalf("the worker tried to touch the CA key pair: %v", a)
	}
	if a := signerSM.Attempts(); len(a) != 0 {
		t.Fatalf("the signer tried to write secrets: %v", a)
	}
	iss, err := d.api.Repo.Get(d.Ctx, api.Key{Kind: api.KindClusterIssuer, Name: "ops-ca"})
	if err != nil || !api.IsTrue(iss.(*api.ClusterIssuer).Status.Conditions, api.IssuerConditionReady) {
		t.Fatalf("ops-ca not Ready: %v %+v", err, iss)
	}
}
