package awse2e

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsacm "github.com/aws/aws-sdk-go-v2/service/acm"
	acmtypes "github.com/aws/aws-sdk-go-v2/service/acm/types"

	"github.com/certfn/certfn/adapters/aws/acm"
	"github.com/certfn/certfn/adapters/aws/acm/acmtest"
	"github.com/certfn/certfn/adapters/aws/awscfg"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/internal/awsmode"
	"github.com/certfn/certfn/internal/awsmode/awstest"
	"github.com/certfn/certfn/tests/emulators"
)

// acmService is the AWS_ENDPOINT_URL_ suffix of ACM.
const acmService = emulators.Service("ACM")

// ACM import on AWS: a Certificate annotated certfn.io/acm-import is
// issued by a CA ClusterIssuer through the worker and signer functions,
// and the worker (CERTFN_ACM_IMPORT=true) imports it into ACM. The ARN is
// on the status; a renewal (forced, as `cmctl renew`) is re-imported into
// the same ARN; nothing is imported again on a resync or before the
// renewal time.
//
// ACM and Secrets Manager are, in turn: the HAND-WRITTEN TEST DOUBLES of
// adapters/aws/acm/acmtest (playing the worker's IAM policy for the
// deployment the function's name gives) and secretstest, or the endpoints
// of the environment (AWS_ENDPOINT_URL[_ACM], [_SECRETS_MANAGER]); and
// moto for both. ACM imports only certificates valid at the current time,
// so the functions' (fake) clock starts at the wall clock and the renewal
// is forced before the clock is moved on.
func TestACMImportOnAWS(t *testing.T) {
	t.Run("default", func(t *testing.T) {
		if ep, ok := emulators.External(acmService); ok {
			testACMImport(t, ep, nil, func(*awstest.Env) {})
			return
		}
		d := acmtest.New(t)
		testACMImport(t, d.URL, d, func(*awstest.Env) {})
	})
	t.Run("moto", func(t *testing.T) {
		ep := emulators.Moto(t)
		testACMImport(t, ep, nil, func(e *awstest.Env) { e.UseSecretsManager(ep) })
	})
}

var acmDeployments sync.Map

func testACMImport(t *testing.T, acmEP string, acmd *acmtest.Double, useSM func(*awstest.Env)) {
	// The Terraform module's name_prefix; unique, as an endpoint is shared.
	deploymentName := fmt.Sprintf("certfn-e2e-%d", time.Now().UnixNano()%1_000_000_000)
	if _, dup := acmDeployments.LoadOrStore(deploymentName, true); dup {
		t.Fatalf("deployment name %s used twice", deploymentName)
	}
	if acmd != nil {
		acmd.Deployment = deploymentName
	}
	client := awsacm.NewFromConfig(awscfg.ForEndpoint(acmEP, awstest.FastRetry))
	counted := &countingACM{API: client}
	e := awstest.New(t)
	e.Clock = clock.NewFake(time.Now().UTC().Truncate(time.Second)) // valid now for ACM
	useSM(e)
	e.Vars[awsmode.EnvACMImport] = "true"
	d := &deployment{Env: e, t: t, api: e.Runtime(app.API.Name), signer: e.Runtime(app.Signer.Name), sched: e.Runtime(app.Scheduler.Name),
		worker: e.Runtime(app.Worker.Name, func(o *awsmode.Options) {
			o.ACM = counted
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
	before := allARNs(t, client) // an endpoint may hold other tests' certificates
	d.installCA("ops-ca")
	d.apply(`apiVersion: cert-manager.io/v1
kind: Certificate
metadata:
  name: web
  namespace: default
  annotations: {certfn.io/acm-import: "true"}
spec:
  secretName: web-tls
  commonName: web.example.internal # moto answers 500 to an import without one
  dnsNames: [web.example.internal]
  duration: 2160h
  privateKey: {algorithm: ECDSA, size: 256}
  issuerRef: {name: ops-ca, kind: ClusterIssuer}
`)
	d.run()
	c := d.requireReady("default", "web")
	first := leaf(t, d.secret("default", "web-tls").Data["tls.crt"])
	arn := c.Status.ACMCertificateARN
	if arn == "" || !api.IsTrue(c.Status.Conditions, api.CertificateConditionACMImported) {
		t.Fatalf("not imported: ARN %q, conditions %+v", arn, c.Status.Conditions)
	}
	if held := heldLeaf(t, client, arn); !bytes.Equal(held, first.Raw) || counted.imports() != 1 {
		t.Fatalf("ACM holds another certificate after %d imports, want the issued one (serial %s) after 1", counted.imports(), first.SerialNumber)
	}
	if tags := acmTags(t, client, arn); tags[acm.TagDeployment] != deploymentName || tags[acm.TagCertificate] != "default/web" {
		t.Errorf("tags %v", tags)
	}

	// A renewal goes into the same ARN.
	if _, err := d.api.App.Service.Renew(d.Ctx, caller, api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "web"}); err != nil {
		t.Fatalf("renew: %v", err)
	}
	d.run()
	c = d.requireReady("default", "web")
	if revision(c) != 2 {
		t.Fatalf("revision %d after the renewal, want 2", revision(c))
	}
	second := leaf(t, d.secret("default", "web-tls").Data["tls.crt"])
	if bytes.Equal(second.Raw, first.Raw) {
		t.Fatal("the secret still holds the first certificate")
	}
	if c.Status.ACMCertificateARN != arn || !api.IsTrue(c.Status.Conditions, api.CertificateConditionACMImported) {
		t.Fatalf("after renewal: ARN %q (want %s), conditions %+v", c.Status.ACMCertificateARN, arn, c.Status.Conditions)
	}
	if held := heldLeaf(t, client, arn); !bytes.Equal(held, second.Raw) || counted.imports() != 2 {
		t.Fatalf("ACM's %s does not hold the renewed certificate (serial %s) after %d imports, want 2", arn, second.SerialNumber, counted.imports())
	}
	// ACM writes serials as colon-separated hex, moto in decimal.
	if s := acmSerial(t, client, arn); !acm.SameSerial(c.Status.ACMCertificateSerial, second.SerialNumber) || !acm.SameSerial(s, second.SerialNumber) {
		t.Errorf("status.acmCertificateSerial %q, ACM's %q, the renewed certificate's %s", c.Status.ACMCertificateSerial, s, second.SerialNumber)
	}
	var added []string
	for a := range allARNs(t, client) {
		if !before[a] {
			added = append(added, a)
		}
	}
	if len(added) != 1 || added[0] != arn {
		t.Fatalf("the test added %q to ACM, want only %s", added, arn)
	}

	// A resync of the settled Certificate imports nothing; neither does a
	// sweep before the renewal time.
	d.Clock.Advance(24*time.Hour + time.Minute)
	if res := d.sweep(); res.Due == 0 {
		t.Fatal("the resync sweep found nothing due")
	}
	d.Clock.Set(c.Status.RenewalTime.Time.Add(-time.Minute))
	d.sweep()
	if c := d.cert("default", "web"); revision(c) != 2 || counted.imports() != 2 {
		t.Fatalf("after a resync and before the renewal time: revision %d, %d imports; want 2 and 2", revision(c), counted.imports())
	}
	if n := d.VisibleMessages(d.WorkerDLQURL) + d.VisibleMessages(d.SignerDLQURL); n != 0 {
		t.Errorf("%d messages in the dead-letter queues", n)
	}
	d.scanForKeys()
}

// countingACM counts the worker's ImportCertificate calls.
type countingACM struct {
	acm.API
	mu sync.Mutex
	n  int
}

func (c *countingACM) ImportCertificate(ctx context.Context, in *awsacm.ImportCertificateInput, o ...func(*awsacm.Options)) (*awsacm.ImportCertificateOutput, error) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return c.API.ImportCertificate(ctx, in, o...)
}

func (c *countingACM) imports() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// heldLeaf is the DER of the certificate ACM holds at arn.
func heldLeaf(t *testing.T, c *awsacm.Client, arn string) []byte {
	t.Helper()
	out, err := c.GetCertificate(t.Context(), &awsacm.GetCertificateInput{CertificateArn: aws.String(arn)})
	if err != nil {
		t.Fatalf("GetCertificate %s: %v", arn, err)
	}
	return leaf(t, []byte(aws.ToString(out.Certificate))).Raw
}

// acmTags are the tags of arn.
func acmTags(t *testing.T, c *awsacm.Client, arn string) map[string]string {
	t.Helper()
	out, err := c.ListTagsForCertificate(t.Context(), &awsacm.ListTagsForCertificateInput{CertificateArn: aws.String(arn)})
	if err != nil {
		t.Fatalf("ListTagsForCertificate %s: %v", arn, err)
	}
	m := map[string]string{}
	for _, tg := range out.Tags {
		m[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
	}
	return m
}

// allARNs lists every certificate ACM holds (any key type).
func allARNs(t *testing.T, c *awsacm.Client) map[string]bool {
	t.Helper()
	in := &awsacm.ListCertificatesInput{Includes: &acmtypes.Filters{KeyTypes: []acmtypes.KeyAlgorithm{
		acmtypes.KeyAlgorithmRsa2048, acmtypes.KeyAlgorithmRsa3072, acmtypes.KeyAlgorithmRsa4096,
		acmtypes.KeyAlgorithmEcPrime256v1, acmtypes.KeyAlgorithmEcSecp384r1, acmtypes.KeyAlgorithmEcSecp521r1}}}
	arns := map[string]bool{}
	for p := awsacm.NewListCertificatesPaginator(c, in); p.HasMorePages(); {
		page, err := p.NextPage(t.Context())
		if err != nil {
			t.Fatalf("ListCertificates: %v", err)
		}
		for _, s := range page.CertificateSummaryList {
			arns[aws.ToString(s.CertificateArn)] = true
		}
	}
	return arns
}

// acmSerial is the serial ACM reports for arn (DescribeCertificate).
func acmSerial(t *testing.T, c *awsacm.Client, arn string) string {
	t.Helper()
	out, err := c.DescribeCertificate(t.Context(), &awsacm.DescribeCertificateInput{CertificateArn: &arn})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.Certificate.Serial)
}
