package awse2e

import (
	"bytes"
	"testing"
	"time"

	awsacm "github.com/aws/aws-sdk-go-v2/service/acm"

	"github.com/certfn/certfn/adapters/aws/acm/acmtest"
	"github.com/certfn/certfn/adapters/aws/awscfg"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/internal/awsmode"
	"github.com/certfn/certfn/internal/awsmode/awstest"
)

// ACM import on AWS: a Certificate annotated certfn.io/acm-import is
// issued by a CA ClusterIssuer through the worker and signer functions,
// and the worker (CERTFN_ACM_IMPORT=true) imports it into ACM — the
// HAND-WRITTEN TEST DOUBLE of adapters/aws/acm/acmtest (no ACM emulator
// exists), playing the worker's IAM policy for the deployment the
// function's name gives. The ARN is on the status; nothing is imported
// again before the renewal or on a resync; after the clock passes the
// renewal time and the scheduler's sweep, the new certificate is
// re-imported into the same ARN.
func TestACMImportOnAWS(t *testing.T) {
	const deploymentName = "certfn-e2e" // the Terraform module's name_prefix
	acmd := acmtest.New(t)
	acmd.Deployment = deploymentName
	e := awstest.New(t)
	e.Vars[awsmode.EnvACMImport] = "true"
	d := &deployment{Env: e, t: t, api: e.Runtime(awsmode.RoleAPI), signer: e.Runtime(awsmode.RoleSigner), sched: e.Runtime(awsmode.RoleScheduler),
		worker: e.Runtime(awsmode.RoleWorker, func(o *awsmode.Options) {
			o.ACM = awsacm.NewFromConfig(awscfg.ForEndpoint(acmd.URL, awstest.FastRetry))
			getenv := o.Getenv
			o.Getenv = func(k string) string {
				if k == "AWS_LAMBDA_FUNCTION_NAME" { // what Lambda sets
					return deploymentName + "-worker"
				}
				return getenv(k)
			}
		})}
	if !d.worker.Settings.ACMImport {
		t.Fatal("the worker's ACM import is off")
	}
	d.installCA("ops-ca")
	d.apply(`apiVersion: cert-manager.io/v1
kind: Certificate
metadata:
  name: web
  namespace: default
  annotations: {certfn.io/acm-import: "true"}
spec:
  secretName: web-tls
  dnsNames: [web.example.internal]
  duration: 2160h
  privateKey: {algorithm: ECDSA, size: 256}
  issuerRef: {name: ops-ca, kind: ClusterIssuer}
`)
	d.run()
	c := d.requireReady("default", "web")
	first := leaf(t, d.secret("default", "web-tls", "").Data["tls.crt"])
	arn := c.Status.ACMCertificateARN
	if arn == "" || !api.IsTrue(c.Status.Conditions, api.CertificateConditionACMImported) {
		t.Fatalf("not imported: ARN %q, conditions %+v", arn, c.Status.Conditions)
	}
	held, ok := acmd.Get(arn)
	if !ok {
		t.Fatalf("ACM holds no %s (ARNs %q)", arn, acmd.ARNs())
	}
	if !bytes.Equal(held.Leaf.Raw, first.Raw) || held.Imports != 1 {
		t.Fatalf("ACM holds another certificate (serial %s, %d imports), want the issued one (%s)", held.Leaf.SerialNumber, held.Imports, first.SerialNumber)
	}
	if held.Tags["certfn-deployment"] != deploymentName || held.Tags["certfn-certificate"] != "default/web" {
		t.Errorf("tags %v", held.Tags)
	}
	imports := func() int { return acmd.Calls("ImportCertificate") }

	// A resync of the settled Certificate imports nothing.
	d.Clock.Advance(24*time.Hour + time.Minute)
	if res := d.sweep(); res.Due == 0 {
		t.Fatal("the resync sweep found nothing due")
	}
	if n := imports(); n != 1 {
		t.Fatalf("%d imports after a resync, want 1", n)
	}

	// Renewal: nothing before the renewal time; after it, the new
	// certificate goes into the same ARN.
	renewAt := d.cert("default", "web").Status.RenewalTime.Time
	d.Clock.Set(renewAt.Add(-time.Minute))
	d.sweep()
	if c := d.cert("default", "web"); revision(c) != 1 || imports() != 1 {
		t.Fatalf("before the renewal time: revision %d, %d imports", revision(c), imports())
	}
	d.Clock.Set(renewAt.Add(time.Minute))
	if res := d.sweep(); res.Due == 0 {
		t.Fatal("the sweep found nothing due at the renewal time")
	}
	c = d.requireReady("default", "web")
	if revision(c) != 2 {
		t.Fatalf("revision %d after the renewal time, want 2", revision(c))
	}
	second := leaf(t, d.secret("default", "web-tls", "").Data["tls.crt"])
	if bytes.Equal(second.Raw, first.Raw) {
		t.Fatal("the secret still holds the first certificate")
	}
	if c.Status.ACMCertificateARN != arn || !api.IsTrue(c.Status.Conditions, api.CertificateConditionACMImported) {
		t.Fatalf("after renewal: ARN %q (want %s), conditions %+v", c.Status.ACMCertificateARN, arn, c.Status.Conditions)
	}
	held, _ = acmd.Get(arn)
	if !bytes.Equal(held.Leaf.Raw, second.Raw) || held.Imports != 2 {
		t.Fatalf("ACM's %s holds serial %s after %d imports, want the renewed %s after 2", arn, held.Leaf.SerialNumber, held.Imports, second.SerialNumber)
	}
	if c.Status.ACMCertificateSerial == "" || c.Status.ACMCertificateSerial != acmSerial(t, acmd, arn) {
		t.Errorf("status.acmCertificateSerial %q, ACM's %q", c.Status.ACMCertificateSerial, acmSerial(t, acmd, arn))
	}
	if a := acmd.ARNs(); len(a) != 1 || imports() != 2 {
		t.Fatalf("ACM holds %q after %d imports, want only %s after 2", a, imports(), arn)
	}
	if n := d.VisibleMessages(d.WorkerDLQURL) + d.VisibleMessages(d.SignerDLQURL); n != 0 {
		t.Errorf("%d messages in the dead-letter queues", n)
	}
	d.scanForKeys()
}

// acmSerial is the serial ACM reports for arn (DescribeCertificate).
func acmSerial(t *testing.T, acmd *acmtest.Double, arn string) string {
	t.Helper()
	c := awsacm.NewFromConfig(awscfg.ForEndpoint(acmd.URL, awstest.FastRetry))
	out, err := c.DescribeCertificate(t.Context(), &awsacm.DescribeCertificateInput{CertificateArn: &arn})
	if err != nil {
		t.Fatal(err)
	}
	return *out.Certificate.Serial
}
