package certmanager

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	certificatemanager "cloud.google.com/go/certificatemanager/apiv1"
	cmpb "cloud.google.com/go/certificatemanager/apiv1/certificatemanagerpb"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/certfn/certfn/adapters/gcp/certmanager/gcmtest"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/ports"
)

// The real Certificate Manager variant of the tests runs when envProject
// is set (docs/deploy/gcp.md): a project whose Application
// Default Credentials may create, update, list and delete certificates
// (roles/certificatemanager.editor). envLocation picks the location
// ("global" when unset).
const (
	envProject  = "CERTFN_GCP_TEST_PROJECT"
	envLocation = "CERTFN_GCP_TEST_CERTMANAGER_LOCATION"
)

// doubleProject is the double's project.
const doubleProject = "certfn-test"

// backend is where a test's certificates live: the TEST DOUBLE (double !=
// nil; see gcmtest) or a real project (envProject).
type backend struct {
	double     *gcmtest.Double
	client     *certificatemanager.Client
	project    string
	location   string
	deployment string // unique per test, so runs against a real project do not meet
}

var uniq atomic.Int64

// eachBackend runs f on the double and, as subtest "gcp", on the real
// project when envProject is set (skipped with the reason otherwise).
func eachBackend(t *testing.T, f func(t *testing.T, b *backend)) {
	t.Run("double", func(t *testing.T) { f(t, newDoubleBackend(t)) })
	t.Run("gcp", func(t *testing.T) { f(t, newRealBackend(t)) })
}

// newDoubleBackend always uses the double (failure injection, call
// counts, operations that stay pending).
func newDoubleBackend(t *testing.T) *backend {
	t.Helper()
	d := gcmtest.New(t, doubleProject)
	c, err := NewClient(context.Background(), d.ClientOptions(t)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &backend{double: d, client: c, project: doubleProject, location: DefaultLocation, deployment: "certfn-test"}
}

// newRealBackend returns the real project, or skips.
func newRealBackend(t *testing.T) *backend {
	t.Helper()
	project := os.Getenv(envProject)
	if project == "" {
		t.Skipf("real Certificate Manager variant: set %s (a project whose Application Default Credentials have roles/certificatemanager.editor; %s picks the location) to run it; the double variant ran", envProject, envLocation)
	}
	location := os.Getenv(envLocation)
	if location == "" {
		location = DefaultLocation
	}
	c, err := NewClient(context.Background())
	if err != nil {
		t.Fatalf("Certificate Manager client with Application Default Credentials: %v", err)
	}
	b := &backend{client: c, project: project, location: location,
		deployment: fmt.Sprintf("certfn-test-%d-%d", time.Now().Unix()%1_000_000, uniq.Add(1))}
	t.Cleanup(func() {
		b.cleanup(t)
		_ = c.Close()
	})
	return b
}

// labelRun marks every certificate a test's importers create (whatever
// their deployment), for cleanup.
const labelRun = "test-run"

// cleanup deletes the certificates the test's importers created (real
// project only).
func (b *backend) cleanup(t *testing.T) {
	ctx := context.Background()
	it := b.client.ListCertificates(ctx, &cmpb.ListCertificatesRequest{
		Parent: b.parent(), Filter: fmt.Sprintf("labels.%s=%q", labelRun, LabelValue(b.deployment)),
	})
	for {
		c, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return
		}
		if err != nil {
			t.Logf("cleanup: list: %v", err)
			return
		}
		b.delete(t, c.GetName())
	}
}

func (b *backend) parent() string { return "projects/" + b.project + "/locations/" + b.location }

// importer returns an Importer for the backend; edit adjusts its options.
func (b *backend) importer(t *testing.T, edit ...func(*Options)) *Importer {
	t.Helper()
	opts := Options{Project: b.project, Location: b.location, Deployment: b.deployment,
		Labels: map[string]string{"team": "web", labelRun: LabelValue(b.deployment)}}
	for _, e := range edit {
		e(&opts)
	}
	im, err := New(b.client, opts)
	if err != nil {
		t.Fatal(err)
	}
	return im
}

// settle imports req, repeating while the operation is pending (the double
// completes its operations, the real service is given time). sawPending
// tells whether an attempt found the operation running, after which the
// import is reported as Imported false (the next attempt finds it done).
func (b *backend) settle(t *testing.T, im *Importer, req ports.CertificateImport) (res ports.CertificateImported, sawPending bool, err error) {
	t.Helper()
	for range 60 {
		res, err = im.Import(context.Background(), req)
		if !errors.Is(err, ErrPending) {
			return res, sawPending, err
		}
		sawPending = true
		if b.double != nil {
			b.double.CompleteAll()
		} else {
			time.Sleep(3 * time.Second)
		}
	}
	t.Fatalf("import still pending after 60 attempts: %v", err)
	return
}

// mustImport is settle that fails the test on an error.
func (b *backend) mustImport(t *testing.T, im *Importer, req ports.CertificateImport) ports.CertificateImported {
	t.Helper()
	res, _, err := b.settle(t, im, req)
	if err != nil {
		t.Fatalf("Import(%v): %v", req, err)
	}
	return res
}

// get reads name through the API (nil when it does not exist).
func (b *backend) get(t *testing.T, name string) *cmpb.Certificate {
	t.Helper()
	c, err := b.client.GetCertificate(context.Background(), &cmpb.GetCertificateRequest{Name: name})
	if err != nil {
		if status.Code(err) == codes.NotFound {
			return nil
		}
		t.Fatalf("GetCertificate %s: %v", name, err)
	}
	return c
}

// delete deletes name through the API and waits for it.
func (b *backend) delete(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	op, err := b.client.DeleteCertificate(ctx, &cmpb.DeleteCertificateRequest{Name: name})
	if err == nil {
		err = op.Wait(ctx)
	}
	if err != nil {
		t.Logf("delete %s: %v", name, err)
	}
}

// create creates a self-managed certificate directly (someone else's).
func (b *backend) create(t *testing.T, id string, labels map[string]string, kp *keyPair) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	op, err := b.client.CreateCertificate(ctx, &cmpb.CreateCertificateRequest{
		Parent: b.parent(), CertificateId: id,
		Certificate: &cmpb.Certificate{Labels: labels, Type: &cmpb.Certificate_SelfManaged{SelfManaged: selfManaged(kp.req)}},
	})
	if err == nil {
		_, err = op.Wait(ctx)
	}
	if err != nil {
		t.Fatalf("create %s: %v", id, err)
	}
	name := b.parent() + "/certificates/" + id
	if b.double == nil {
		t.Cleanup(func() { b.delete(t, name) })
	}
	return name
}

// keyPair is one issued certificate as the acmimport step sends it.
type keyPair struct {
	ca   *certtest.CA
	crt  *api.Certificate
	key  crypto.Signer
	req  ports.CertificateImport
	leaf string // PEM, trimmed
}

// issue returns a key pair for a Certificate with a name no other test
// uses, valid now (the real service may refuse expired certificates),
// issued by a CA sent as the chain; opts adjust the Certificate.
func issue(t *testing.T, opts ...func(*api.Certificate)) *keyPair {
	t.Helper()
	n := uniq.Add(1)
	host := fmt.Sprintf("gcm%d-%d.example.com", time.Now().UnixNano()%1_000_000_000, n)
	all := append([]func(*api.Certificate){func(c *api.Certificate) {
		c.Name, c.Spec.CommonName, c.Spec.DNSNames = fmt.Sprintf("web%d", n), host, []string{host}
	}}, opts...)
	kp := &keyPair{ca: certtest.NewCA(t), crt: certtest.Cert(all...)}
	kp.renew(t)
	return kp
}

// renew issues a new certificate (new key, new serial) for the same
// Certificate, keeping the recorded reference.
func (kp *keyPair) renew(t *testing.T) {
	t.Helper()
	kp.key = certtest.Key(t, kp.crt.Spec.PrivateKey)
	leaf, certPEM := kp.ca.Issue(t, kp.crt, kp.key, certtest.Leaf{NotBefore: time.Now().Add(-time.Hour)})
	kp.req = ports.CertificateImport{
		Ref: kp.req.Ref, Owner: api.KeyOf(kp.crt), Serial: leaf.SerialNumber,
		Certificate: certPEM, Chain: kp.ca.PEM, PrivateKey: certtest.KeyPEM(t, kp.key),
	}
	kp.leaf = strings.TrimSpace(string(certPEM))
}

// heldLeaf returns the leaf (PEM, trimmed) and the whole chain the
// certificate c holds.
func heldLeaf(c *cmpb.Certificate) (leaf, chain string) {
	chain = strings.TrimSpace(c.GetPemCertificate())
	end := "-----END CERTIFICATE-----"
	if i := strings.Index(chain, end); i >= 0 {
		return chain[:i+len(end)], chain
	}
	return chain, chain
}
