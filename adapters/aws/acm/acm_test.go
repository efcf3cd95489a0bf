package acm

import (
	"context"
	"crypto"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsacm "github.com/aws/aws-sdk-go-v2/service/acm"

	"github.com/certfn/certfn/adapters/aws/acm/acmtest"
	"github.com/certfn/certfn/adapters/aws/awscfg"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/tests/emulators"
)

var fastRetry = awscfg.Retry{MaxAttempts: 3, MaxBackoff: 10 * time.Millisecond}

// backend is where a test's certificates live: the hand-written double
// (fake != nil; adapters/aws/acm/acmtest), moto, or the endpoint named by
// AWS_ENDPOINT_URL / AWS_ENDPOINT_URL_ACM (LocalStack, AWS).
type backend struct {
	fake   *acmtest.Double
	client *awsacm.Client
}

// forEachBackend runs f against every backend: the double and moto
// (tests/emulators.Moto, one moto_server per test binary) always, and the
// endpoint of the environment when there is one (skipped with the reason
// otherwise).
func forEachBackend(t *testing.T, f func(t *testing.T, b *backend)) {
	t.Run("double", func(t *testing.T) { f(t, newDoubleBackend(t)) })
	t.Run("moto", func(t *testing.T) { f(t, newEndpointBackend(emulators.Moto(t))) })
	t.Run("endpoint", func(t *testing.T) {
		ep, ok := emulators.External(emulators.Service("ACM"))
		if !ok {
			t.Skip("AWS_ENDPOINT_URL_ACM and AWS_ENDPOINT_URL unset: no external ACM to run against (LocalStack, AWS)")
		}
		f(t, newEndpointBackend(ep))
	})
}

// newEndpointBackend talks to the ACM at ep (moto, LocalStack).
func newEndpointBackend(ep string) *backend {
	return &backend{client: awsacm.NewFromConfig(awscfg.ForEndpoint(ep, fastRetry))}
}

// newDoubleBackend always uses the double (failure injection, IAM
// emulation, call counts).
func newDoubleBackend(t *testing.T) *backend {
	t.Helper()
	d := acmtest.New(t)
	return &backend{fake: d, client: awsacm.NewFromConfig(awscfg.ForEndpoint(d.URL, fastRetry))}
}

// calls returns the double's count of op, or -1 on LocalStack.
func (b *backend) calls(op string) int {
	if b.fake == nil {
		return -1
	}
	return b.fake.Calls(op)
}

// held returns the leaf ACM holds at arn and its chain.
func (b *backend) held(t *testing.T, arn string) (string, string) {
	t.Helper()
	out, err := b.client.GetCertificate(context.Background(), &awsacm.GetCertificateInput{CertificateArn: aws.String(arn)})
	if err != nil {
		t.Fatalf("GetCertificate %s: %v", arn, err)
	}
	return strings.TrimSpace(aws.ToString(out.Certificate)), strings.TrimSpace(aws.ToString(out.CertificateChain))
}

// tagsOf returns the tags of arn.
func (b *backend) tagsOf(t *testing.T, arn string) map[string]string {
	t.Helper()
	out, err := b.client.ListTagsForCertificate(context.Background(), &awsacm.ListTagsForCertificateInput{CertificateArn: aws.String(arn)})
	if err != nil {
		t.Fatalf("ListTagsForCertificate %s: %v", arn, err)
	}
	m := map[string]string{}
	for _, tg := range out.Tags {
		m[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
	}
	return m
}

var uniq atomic.Int64

// keyPair is one issued certificate as the acmimport step sends it.
type keyPair struct {
	ca   *certtest.CA
	crt  *api.Certificate
	key  crypto.Signer
	req  ports.CertificateImport
	leaf string // PEM, trimmed
}

// issue returns a key pair for a Certificate with a name no other test
// (or earlier LocalStack run) uses, issued by an intermediate-like CA sent
// as the chain; opts adjust the Certificate. The CA and the leaves are
// made now and valid now (ACM refuses to import a certificate outside its
// validity period).
func issue(t *testing.T, opts ...func(*api.Certificate)) *keyPair {
	t.Helper()
	n := uniq.Add(1)
	host := fmt.Sprintf("acm%d-%d.example.com", time.Now().UnixNano()%1_000_000_000, n)
	all := append([]func(*api.Certificate){func(c *api.Certificate) {
		c.Name, c.Spec.CommonName, c.Spec.DNSNames = fmt.Sprintf("web%d", n), host, []string{host}
	}}, opts...)
	now := time.Now()
	kp := &keyPair{ca: certtest.NewCAValid(t, now.Add(-24*time.Hour), now.Add(10*365*24*time.Hour), true), crt: certtest.Cert(all...)}
	kp.renew(t)
	return kp
}

// renew issues a new certificate (new key, new serial) for the same Certificate.
func (kp *keyPair) renew(t *testing.T) {
	t.Helper()
	kp.key = certtest.Key(t, kp.crt.Spec.PrivateKey)
	leaf, certPEM := kp.ca.Issue(t, kp.crt, kp.key, certtest.Leaf{NotBefore: time.Now().Add(-time.Hour)})
	ref := kp.req.Ref
	kp.req = ports.CertificateImport{
		Ref: ref, Owner: api.KeyOf(kp.crt), Serial: leaf.SerialNumber,
		Certificate: certPEM, Chain: kp.ca.PEM, PrivateKey: certtest.KeyPEM(t, kp.key),
	}
	kp.leaf = strings.TrimSpace(string(certPEM))
}

func newImporter(t *testing.T, b *backend, deployment string) *Importer {
	t.Helper()
	im, err := New(b.client, Options{Deployment: deployment, Tags: map[string]string{"team": "web"}})
	if err != nil {
		t.Fatal(err)
	}
	return im
}

// TestImportLifecycle: a first import creates a tagged certificate holding
// the leaf and chain; importing the same serial again sends nothing; a
// renewal is re-imported into the same ARN.
func TestImportLifecycle(t *testing.T) { forEachBackend(t, testImportLifecycle) }

func testImportLifecycle(t *testing.T, b *backend) {
	ctx := context.Background()
	im := newImporter(t, b, "certfn-test")
	kp := issue(t)

	first, err := im.Import(ctx, kp.req)
	if err != nil || !first.Imported || !strings.HasPrefix(first.Ref, "arn:aws:acm:") {
		t.Fatalf("first Import = %+v, %v; want a new ARN", first, err)
	}
	leaf, chain := b.held(t, first.Ref)
	wantChain := strings.TrimSpace(string(kp.ca.PEM))
	if b.fake == nil {
		// moto (and LocalStack, built on it) appends its own Amazon
		// intermediate to the chain GetCertificate returns; ACM and the
		// double return the imported chain alone.
		chain = chain[:min(len(chain), len(wantChain))]
	}
	if leaf != kp.leaf || chain != wantChain {
		t.Fatalf("ACM holds leaf %q chain %q; want the imported ones", leaf, chain)
	}
	tags := b.tagsOf(t, first.Ref)
	owner := kp.crt.Namespace + "/" + kp.crt.Name
	if tags[TagDeployment] != "certfn-test" || tags[TagCertificate] != owner || tags["team"] != "web" {
		t.Fatalf("tags = %v, want %s=certfn-test, %s=%s, team=web", tags, TagDeployment, TagCertificate, owner)
	}

	kp.req.Ref = first.Ref
	imports := b.calls("ImportCertificate")
	again, err := im.Import(ctx, kp.req)
	if err != nil || again.Imported || again.Ref != first.Ref {
		t.Fatalf("same serial again = %+v, %v; want the same ARN, not imported", again, err)
	}
	if b.fake != nil && b.fake.Calls("ImportCertificate") != imports {
		t.Fatalf("ImportCertificate was called for an unchanged serial")
	}

	kp.renew(t)
	renewed, err := im.Import(ctx, kp.req)
	if err != nil || !renewed.Imported || renewed.Ref != first.Ref {
		t.Fatalf("renewal = %+v, %v; want a re-import into %s", renewed, err, first.Ref)
	}
	if leaf, _ := b.held(t, first.Ref); leaf != kp.leaf {
		t.Fatalf("ACM still holds the old leaf after the re-import")
	}
	if b.fake != nil {
		if c, _ := b.fake.Get(first.Ref); c.Imports != 2 || len(b.fake.ARNs()) != 1 {
			t.Fatalf("double holds %d certificates, this one imported %d times; want 1 and 2", len(b.fake.ARNs()), c.Imports)
		}
	}
}

// TestUnrecordedImportIsFound: without a recorded ARN, the earlier import
// for the same Certificate in this deployment is found by its tags (any
// key type), not duplicated; other Certificates and deployments are not
// taken.
func TestUnrecordedImportIsFound(t *testing.T) { forEachBackend(t, testUnrecordedImportIsFound) }

func testUnrecordedImportIsFound(t *testing.T, b *backend) {
	ctx := context.Background()
	cases := []struct {
		name       string
		opts       []func(*api.Certificate)
		renew      bool // a new serial since the lost import
		other      string
		wantSame   bool
		wantImport bool
	}{
		{name: "same serial: found, nothing sent", wantSame: true},
		{name: "ECDSA P-384 key found too", opts: []func(*api.Certificate){certtest.WithKeySpec(api.ECDSAKeyAlgorithm, 384)}, wantSame: true},
		{name: "RSA key found", opts: []func(*api.Certificate){certtest.WithKeySpec(api.RSAKeyAlgorithm, 2048)}, wantSame: true},
		{name: "renewed: re-imported into the found ARN", renew: true, wantSame: true, wantImport: true},
		{name: "another Certificate with the same names", other: "certificate", wantImport: true},
		{name: "another deployment's import", other: "deployment", wantImport: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := b
			if b.fake != nil {
				b = newDoubleBackend(t) // a double of its own: its Deployment is set below
			}
			kp := issue(t, tc.opts...)
			earlier := kp.req
			deployment := "certfn-test"
			switch tc.other {
			case "certificate":
				earlier.Owner.Name += "-other"
			case "deployment":
				deployment = "someone-else"
			}
			lost, err := newImporter(t, b, deployment).Import(ctx, earlier)
			if err != nil {
				t.Fatal(err)
			}
			if tc.renew {
				kp.renew(t)
			}
			if b.fake != nil {
				b.fake.Deployment = "certfn-test" // the worker's IAM policy from now on
			}
			got, err := newImporter(t, b, "certfn-test").Import(ctx, kp.req)
			if err != nil {
				t.Fatal(err)
			}
			if (got.Ref == lost.Ref) != tc.wantSame || got.Imported != tc.wantImport {
				t.Fatalf("Import = %+v (earlier %s); want same ARN %v, imported %v", got, lost.Ref, tc.wantSame, tc.wantImport)
			}
			if leaf, _ := b.held(t, got.Ref); leaf != kp.leaf {
				t.Fatalf("ACM does not hold the current leaf at %s", got.Ref)
			}
		})
	}
}

// A recorded ARN that ACM no longer has (deleted by hand) gets a new import.
func TestDeletedARNIsReplaced(t *testing.T) {
	b := newDoubleBackend(t) // deletes behind the importer's back
	im := newImporter(t, b, "certfn-test")
	kp := issue(t)
	first, err := im.Import(context.Background(), kp.req)
	if err != nil {
		t.Fatal(err)
	}
	b.fake.Delete(first.Ref)
	kp.req.Ref = first.Ref
	got, err := im.Import(context.Background(), kp.req)
	if err != nil || !got.Imported || got.Ref == first.Ref || got.Ref == "" {
		t.Fatalf("Import after deletion = %+v, %v; want a new ARN", got, err)
	}
}

// TestErrorsAreClassified: ACM refusing the certificate, key or
// permission is permanent; throttling and server errors are transient;
// no error ever quotes the private key.
func TestErrorsAreClassified(t *testing.T) {
	cases := []struct {
		name      string
		fail      func(b *backend, kp *keyPair) // nil: no injection
		mutate    func(t *testing.T, kp *keyPair)
		permanent bool
		want      string
	}{
		{name: "key of another certificate", mutate: func(t *testing.T, kp *keyPair) {
			kp.req.PrivateKey = certtest.KeyPEM(t, certtest.Key(t, kp.crt.Spec.PrivateKey))
		}, permanent: true, want: "the private key does not decode or does not match the certificate"},
		{name: "not PEM", mutate: func(_ *testing.T, kp *keyPair) { kp.req.Certificate = []byte("junk") }, permanent: true, want: "the certificate is not PEM"},
		{name: "throttled beyond the retries", fail: func(b *backend, _ *keyPair) {
			b.fake.FailNext(10, "ImportCertificate", "ThrottlingException", "Rate exceeded", 400)
		}, want: "ThrottlingException"},
		{name: "server error", fail: func(b *backend, _ *keyPair) { b.fake.FailNext(10, "ImportCertificate", "InternalFailure", "oops", 500) }, want: "InternalFailure"},
		{name: "access denied", fail: func(b *backend, _ *keyPair) {
			b.fake.FailNext(1, "ImportCertificate", "AccessDeniedException", "not authorized to perform acm:ImportCertificate", 400)
		}, permanent: true, want: "acm:ImportCertificate"},
		{name: "import quota", fail: func(b *backend, _ *keyPair) {
			b.fake.FailNext(10, "ImportCertificate", "LimitExceededException", "import limit reached", 400) // the SDK retries it as throttling first
		}, permanent: true, want: "LimitExceededException"},
		{name: "even from a list call", fail: func(b *backend, kp *keyPair) {
			lines := strings.Split(string(kp.req.PrivateKey), "\n")
			b.fake.FailNext(10, "ListCertificates", "InternalFailure", "echo "+lines[2], 500)
		}, want: "message withheld"},
		{name: "a message quoting the key is withheld", fail: func(b *backend, kp *keyPair) {
			lines := strings.Split(string(kp.req.PrivateKey), "\n")
			b.fake.FailNext(1, "ImportCertificate", "ValidationException", "bad key near "+lines[1], 400)
		}, permanent: true, want: "message withheld"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newDoubleBackend(t) // injects failures
			kp := issue(t)
			if tc.mutate != nil {
				tc.mutate(t, kp)
			}
			if tc.fail != nil {
				tc.fail(b, kp)
			}
			_, err := newImporter(t, b, "certfn-test").Import(context.Background(), kp.req)
			if err == nil || errs.IsPermanent(err) != tc.permanent || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want permanent=%v containing %q", err, tc.permanent, tc.want)
			}
			for _, line := range strings.Split(string(kp.req.PrivateKey), "\n") {
				if len(line) > 16 && !strings.HasPrefix(line, "-----") && strings.Contains(err.Error(), line) {
					t.Fatalf("error quotes the private key: %v", err)
				}
			}
		})
	}
}

func TestNew(t *testing.T) {
	b := newDoubleBackend(t)
	if _, err := New(nil, Options{Deployment: "x"}); !errs.IsPermanent(err) {
		t.Errorf("New without a client: %v", err)
	}
	if _, err := New(b.client, Options{}); !errs.IsPermanent(err) || !strings.Contains(err.Error(), TagDeployment) {
		t.Errorf("New without a deployment: %v", err)
	}
}

func TestDeploymentFromEnv(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"CERTFN_DEPLOYMENT": "prod", "AWS_LAMBDA_FUNCTION_NAME": "certfn-worker"}, "prod"},
		{map[string]string{"AWS_LAMBDA_FUNCTION_NAME": "my-certfn-worker"}, "my-certfn"},
		{map[string]string{}, "fallback"},
	} {
		if got := DeploymentFromEnv(func(k string) string { return tc.env[k] }, "fallback"); got != tc.want {
			t.Errorf("DeploymentFromEnv(%v) = %q, want %q", tc.env, got, tc.want)
		}
	}
}

func TestSameSerial(t *testing.T) {
	n := new(big.Int).SetBytes([]byte{0x0a, 0xff, 0x01})
	for _, tc := range []struct {
		acm  string
		want bool
	}{
		{"0a:ff:01", true}, {"0A:FF:01", true}, {"00:0a:ff:01", true}, {"0aff01", true},
		{new(big.Int).Set(n).String(), true}, // decimal, as some emulators write it
		{"0a:ff:02", false}, {"", false}, {"zz", false},
	} {
		if got := SameSerial(tc.acm, n); got != tc.want {
			t.Errorf("SameSerial(%q) = %v, want %v", tc.acm, got, tc.want)
		}
	}
	if SameSerial("0a", nil) {
		t.Error("SameSerial with no serial = true")
	}
}

// The double itself refuses what ACM refuses (so the tests above mean
// something): keys that do not match, tags on re-import, RSA_2048-only
// listing by default.
func TestDoubleBehaviour(t *testing.T) {
	b := newDoubleBackend(t)
	ctx := context.Background()
	kp := issue(t)
	out, err := b.client.ImportCertificate(ctx, &awsacm.ImportCertificateInput{Certificate: kp.req.Certificate, PrivateKey: kp.req.PrivateKey})
	if err != nil {
		t.Fatal(err)
	}
	list, err := b.client.ListCertificates(ctx, &awsacm.ListCertificatesInput{})
	if err != nil || len(list.CertificateSummaryList) != 0 {
		t.Fatalf("default listing of an EC certificate = %+v, %v; want none (RSA_2048 only)", list, err)
	}
	_, err = b.client.ImportCertificate(ctx, &awsacm.ImportCertificateInput{Certificate: kp.req.Certificate, PrivateKey: kp.req.PrivateKey,
		CertificateArn: out.CertificateArn, Tags: newImporter(t, b, "x").tags(kp.req)})
	if err == nil || !strings.Contains(err.Error(), "cannot apply tags when reimporting") {
		t.Fatalf("re-import with tags: %v", err)
	}
	if got := slices.Clone(b.fake.ARNs()); len(got) != 1 {
		t.Fatalf("ARNs = %v", got)
	}
	if _, err := pki.ParseChainPEM(kp.req.Certificate); err != nil {
		t.Fatal(err)
	}
}

// TestValidityPeriod: ACM imports a certificate only between its NotBefore
// and NotAfter ("The current time must be between the Not Before and Not
// After certificate fields", ImportCertificate's reference) and answers
// ValidationException otherwise, which the importer reports as permanent.
// The double must refuse what moto and ACM refuse.
func TestValidityPeriod(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		now := time.Now()
		cases := []struct {
			name    string
			leaf    certtest.Leaf
			wantErr bool
		}{
			{"valid now", certtest.Leaf{NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour)}, false},
			{"expired", certtest.Leaf{NotBefore: now.Add(-48 * time.Hour), NotAfter: now.Add(-24 * time.Hour)}, true},
			{"not yet valid", certtest.Leaf{NotBefore: now.Add(24 * time.Hour), NotAfter: now.Add(48 * time.Hour)}, true},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				kp := issue(t)
				leaf, certPEM := kp.ca.Issue(t, kp.crt, kp.key, tc.leaf)
				kp.req.Certificate, kp.req.Serial = certPEM, leaf.SerialNumber
				got, err := newImporter(t, b, "certfn-test").Import(context.Background(), kp.req)
				if !tc.wantErr {
					if err != nil || !got.Imported {
						t.Fatalf("Import = %+v, %v; want imported", got, err)
					}
					return
				}
				if err == nil || !errs.IsPermanent(err) || !strings.Contains(err.Error(), "ValidationException") {
					t.Fatalf("Import = %+v, %v; want a permanent ValidationException", got, err)
				}
			})
		}
	})
}
