package e2e

import (
	"strings"
	"testing"
	"time"

	awsacm "github.com/aws/aws-sdk-go-v2/service/acm"

	"github.com/certfn/certfn/adapters/aws/acm"
	"github.com/certfn/certfn/adapters/aws/acm/acmtest"
	"github.com/certfn/certfn/adapters/aws/awscfg"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/internal/localmode"
)

// annotatedLeaf is leafYAML's Certificate asking for ACM import.
func annotatedLeaf() string {
	return strings.Replace(leafYAML(""), "metadata: {name: app, namespace: default}",
		`metadata: {name: app, namespace: default, annotations: {certfn.io/acm-import: "true"}}`, 1)
}

// withACM gives the runtime an ACM importer over the hand-written ACM
// double (adapters/aws/acm/acmtest), which also plays the worker's IAM
// policy for deployment "certfn-e2e".
func withACM(t *testing.T) (*acmtest.Double, func(*localmode.Options)) {
	t.Helper()
	d := acmtest.New(t)
	d.Deployment = "certfn-e2e"
	client := awsacm.NewFromConfig(awscfg.ForEndpoint(d.URL, awscfg.Retry{MaxAttempts: 2, MaxBackoff: 10 * time.Millisecond}))
	imp, err := acm.New(client, acm.Options{Deployment: "certfn-e2e"})
	if err != nil {
		t.Fatal(err)
	}
	return d, func(o *localmode.Options) { o.CertificateImporter = imp }
}

// TestACMImportFollowsIssuanceAndRenewal: an annotated Certificate is
// imported once it is Ready (the leaf, the rest of tls.crt as the chain),
// not again while nothing changes, and its renewal goes into the same ARN.
func TestACMImportFollowsIssuanceAndRenewal(t *testing.T) {
	d, opt := withACM(t)
	h := newHarness(t, opt)
	d.Now = h.clk.Now // ACM checks validity at the harness's (fake) time
	h.applyExamples()
	h.apply(annotatedLeaf())
	h.run()
	c := h.requireReady("default", "app")
	arn := c.Status.ACMCertificateARN
	if arn == "" || !api.IsTrue(c.Status.Conditions, api.CertificateConditionACMImported) {
		t.Fatalf("status after issuance: arn %q, conditions %+v", arn, c.Status.Conditions)
	}
	checkHeld(t, h, d, arn)
	if d.Calls("ImportCertificate") != 1 {
		t.Fatalf("%d ImportCertificate calls after the first issuance, want 1", d.Calls("ImportCertificate"))
	}

	h.advance(25 * time.Hour) // resyncs: nothing changed
	if n := d.Calls("ImportCertificate"); n != 1 {
		t.Fatalf("%d ImportCertificate calls after resyncs, want still 1", n)
	}

	h.clk.Set(c.Status.RenewalTime.Time.Add(time.Minute))
	h.run()
	c = h.requireReady("default", "app")
	if revision(c) != 2 || c.Status.ACMCertificateARN != arn {
		t.Fatalf("after renewal: revision %d, arn %q; want 2 and %q", revision(c), c.Status.ACMCertificateARN, arn)
	}
	checkHeld(t, h, d, arn)
	if held, _ := d.Get(arn); held.Imports != 2 || len(d.ARNs()) != 1 {
		t.Fatalf("ACM: %d certificates, %d imports into %s; want 1 and 2", len(d.ARNs()), held.Imports, arn)
	}
}

// checkHeld: ACM holds the stored leaf and the rest of tls.crt, and the
// status records its serial.
func checkHeld(t *testing.T, h *harness, d *acmtest.Double, arn string) {
	t.Helper()
	held, ok := d.Get(arn)
	if !ok {
		t.Fatalf("ACM has no %s", arn)
	}
	sec := h.secret("default", "app-tls")
	chain, err := pki.ParseChainPEM(sec.Data["tls.crt"])
	if err != nil {
		t.Fatal(err)
	}
	if !held.Leaf.Equal(chain[0]) {
		t.Fatalf("ACM holds serial %x, the secret %x", held.Leaf.SerialNumber, chain[0].SerialNumber)
	}
	var wantChain []byte
	if len(chain) > 1 {
		wantChain = pki.EncodeCertificatesPEM(chain[1:]...)
	}
	if string(held.ChainPEM) != string(wantChain) {
		t.Fatalf("ACM chain %q, want %q", held.ChainPEM, wantChain)
	}
	c := h.cert("default", "app")
	if c.Status.ACMCertificateSerial != certificates.FormatACMSerial(chain[0].SerialNumber) {
		t.Fatalf("status serial %q, want %s", c.Status.ACMCertificateSerial, certificates.FormatACMSerial(chain[0].SerialNumber))
	}
}

// Annotating a Certificate issued earlier imports it on the next run;
// without an importer the annotation only yields a condition.
func TestACMImportAnnotationLaterAndNotConfigured(t *testing.T) {
	t.Run("added later", func(t *testing.T) {
		d, opt := withACM(t)
		h := newHarness(t, opt)
		d.Now = h.clk.Now // ACM checks validity at the harness's (fake) time
		h.applyExamples()
		h.apply(leafYAML(""))
		h.run()
		if c := h.requireReady("default", "app"); c.Status.ACMCertificateARN != "" || d.Calls("ImportCertificate") != 0 {
			t.Fatalf("imported without the annotation: %q", c.Status.ACMCertificateARN)
		}
		h.apply(annotatedLeaf())
		h.run()
		c := h.requireReady("default", "app")
		if c.Status.ACMCertificateARN == "" || revision(c) != 1 {
			t.Fatalf("after annotating: arn %q, revision %d; want an import of revision 1", c.Status.ACMCertificateARN, revision(c))
		}
		checkHeld(t, h, d, c.Status.ACMCertificateARN)
	})
	t.Run("no importer", func(t *testing.T) {
		h := newHarness(t)
		h.applyExamples()
		h.apply(annotatedLeaf())
		h.run()
		c := h.requireReady("default", "app")
		cond := api.FindCondition(c.Status.Conditions, api.CertificateConditionACMImported)
		if cond == nil || cond.Status != api.ConditionFalse || cond.Reason != certificates.ReasonACMNotConfigured || !strings.Contains(cond.Message, "no ACM importer") {
			t.Fatalf("ACMImported = %+v, want False/NotConfigured", cond)
		}
		if c.Status.ACMCertificateARN != "" {
			t.Fatalf("arn %q without an importer", c.Status.ACMCertificateARN)
		}
	})
}
