package gcmtest

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	certificatemanager "cloud.google.com/go/certificatemanager/apiv1"
	cmpb "cloud.google.com/go/certificatemanager/apiv1/certificatemanagerpb"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
)

const (
	project = "certfn-test"
	parent  = "projects/" + project + "/locations/global"
)

func client(t *testing.T, d *Double) *certificatemanager.Client {
	t.Helper()
	c, err := certificatemanager.NewClient(context.Background(), d.ClientOptions(t)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// pair is a self-signed leaf and its key, PEM.
type pair struct{ cert, key string }

func newPair(t *testing.T, key crypto.Signer) pair {
	t.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "a.example.com"},
		DNSNames: []string{"a.example.com"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	k, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pair{
		cert: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		key:  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: k})),
	}
}

func ecKey(t *testing.T, c elliptic.Curve) crypto.Signer {
	t.Helper()
	k, err := ecdsa.GenerateKey(c, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func selfManaged(p pair) *cmpb.Certificate_SelfManaged {
	return &cmpb.Certificate_SelfManaged{SelfManaged: &cmpb.Certificate_SelfManagedCertificate{PemCertificate: p.cert, PemPrivateKey: p.key}}
}

// create creates id and waits for it.
func create(ctx context.Context, c *certificatemanager.Client, id string, labels map[string]string, p pair) (*cmpb.Certificate, error) {
	op, err := c.CreateCertificate(ctx, &cmpb.CreateCertificateRequest{Parent: parent, CertificateId: id,
		Certificate: &cmpb.Certificate{Labels: labels, Type: selfManaged(p)}})
	if err != nil {
		return nil, err
	}
	return op.Wait(ctx)
}

// TestKeyPairValidation: what Certificate Manager refuses, the double
// refuses with InvalidArgument, in messages that never quote the key.
func TestKeyPairValidation(t *testing.T) {
	p256 := newPair(t, ecKey(t, elliptic.P256()))
	other := newPair(t, ecKey(t, elliptic.P256()))
	rsa1024, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	encrypted := string(pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: []byte{1, 2, 3}}))
	for _, tc := range []struct {
		name string
		p    pair
		want string // "" : accepted
	}{
		{"P-256", p256, ""},
		{"P-384", newPair(t, ecKey(t, elliptic.P384())), ""},
		{"leaf then chain", pair{p256.cert + other.cert, p256.key}, ""},
		{"key of another certificate", pair{p256.cert, other.key}, "does not match"},
		{"chain led by another leaf", pair{other.cert + p256.cert, p256.key}, "does not match"},
		{"no certificate", pair{"", p256.key}, "pem_certificate is required"},
		{"no key", pair{p256.cert, " "}, "pem_private_key is required"},
		{"certificate not PEM", pair{"junk", p256.key}, "no certificate found"},
		{"key in the chain", pair{p256.cert + p256.key, p256.key}, "unexpected PRIVATE KEY block"},
		{"key not PEM", pair{p256.cert, "junk"}, "Failed to parse the PEM private key"},
		{"encrypted key", pair{p256.cert, encrypted}, "encrypted"},
		{"P-521", newPair(t, ecKey(t, elliptic.P521())), "Unsupported elliptic curve P-521"},
		{"RSA 1024", newPair(t, rsa1024), "Unsupported RSA key size 1024"},
		{"Ed25519", newPair(t, edKey), "Unsupported private key type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leaf, err := checkKeyPair(selfManaged(tc.p).SelfManaged)
			if tc.want == "" {
				if err != nil || leaf == nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want InvalidArgument containing %q", err, tc.want)
			}
			for _, line := range strings.Split(tc.p.key, "\n") {
				if len(line) > 16 && !strings.HasPrefix(line, "-----") && strings.Contains(err.Error(), line) {
					t.Fatalf("message quotes the key: %v", err)
				}
			}
		})
	}
}

// TestCertificateLifecycle: names, AlreadyExists, NotFound, another
// project, the output view (no key), updates by mask.
func TestCertificateLifecycle(t *testing.T) {
	ctx := context.Background()
	d := New(t, project)
	c := client(t, d)
	p := newPair(t, ecKey(t, elliptic.P256()))

	got, err := create(ctx, c, "web", map[string]string{"team": "web"}, p)
	if err != nil {
		t.Fatal(err)
	}
	if got.GetName() != parent+"/certificates/web" || got.GetPemCertificate() != p.cert || got.GetSanDnsnames()[0] != "a.example.com" ||
		got.GetExpireTime() == nil || got.GetSelfManaged() != nil || strings.Contains(got.String(), "PRIVATE KEY") {
		t.Fatalf("created certificate = %v", got)
	}
	if _, err := create(ctx, c, "web", nil, p); status.Code(err) != codes.AlreadyExists {
		t.Fatalf("second create: %v; want AlreadyExists", err)
	}
	for _, tc := range []struct {
		name string
		err  error
		want codes.Code
	}{
		{"missing", get(ctx, c, parent+"/certificates/missing"), codes.NotFound},
		{"other project", get(ctx, c, "projects/someone-else/locations/global/certificates/web"), codes.PermissionDenied},
		{"malformed", get(ctx, c, "web"), codes.InvalidArgument},
		{"bad id", func() error { _, err := create(ctx, c, "9web", nil, p); return err }(), codes.InvalidArgument},
		{"bad label", func() error { _, err := create(ctx, c, "web2", map[string]string{"Team": "x"}, p); return err }(), codes.InvalidArgument},
	} {
		if status.Code(tc.err) != tc.want {
			t.Errorf("%s: %v; want %v", tc.name, tc.err, tc.want)
		}
	}

	p2 := newPair(t, ecKey(t, elliptic.P384()))
	update := func(paths []string, crt *cmpb.Certificate) error {
		crt.Name = parent + "/certificates/web"
		op, err := c.UpdateCertificate(ctx, &cmpb.UpdateCertificateRequest{Certificate: crt, UpdateMask: &fieldmaskpb.FieldMask{Paths: paths}})
		if err != nil {
			return err
		}
		_, err = op.Wait(ctx)
		return err
	}
	if err := update(nil, &cmpb.Certificate{Type: selfManaged(p2)}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("update without a mask: %v", err)
	}
	if err := update([]string{"scope"}, &cmpb.Certificate{}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("update of scope: %v", err)
	}
	if err := update([]string{"self_managed"}, &cmpb.Certificate{Type: selfManaged(pair{p2.cert, p.key})}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("update with a mismatched key: %v", err)
	}
	if err := update([]string{"self_managed"}, &cmpb.Certificate{Type: selfManaged(p2), Labels: map[string]string{"x": "y"}}); err != nil {
		t.Fatal(err)
	}
	held, _ := d.Get(parent + "/certificates/web")
	if held.ChainPEM != p2.cert || held.KeyPEM != p2.key || held.Updates != 1 || held.Labels["team"] != "web" || held.Labels["x"] != "" {
		t.Fatalf("after the update: %+v; want the new pair, labels untouched", held)
	}
	d.AddManaged(parent+"/certificates/managed", nil)
	crt := &cmpb.Certificate{Type: selfManaged(p2), Name: parent + "/certificates/managed"}
	if _, err := c.UpdateCertificate(ctx, &cmpb.UpdateCertificateRequest{Certificate: crt, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"self_managed"}}}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("self_managed on a managed certificate: %v", err)
	}
	op, err := c.DeleteCertificate(ctx, &cmpb.DeleteCertificateRequest{Name: parent + "/certificates/web"})
	if err == nil {
		err = op.Wait(ctx)
	}
	if err != nil || len(d.Names()) != 1 {
		t.Fatalf("delete: %v, names %v", err, d.Names())
	}
}

func get(ctx context.Context, c *certificatemanager.Client, name string) error {
	_, err := c.GetCertificate(ctx, &cmpb.GetCertificateRequest{Name: name})
	return err
}

// TestListFilterAndPages: label filters, unsupported filters, pages.
func TestListFilterAndPages(t *testing.T) {
	ctx := context.Background()
	d := New(t, project)
	d.SetOperationPolls(0)
	c := client(t, d)
	p := newPair(t, ecKey(t, elliptic.P256()))
	for i := range 7 {
		labels := map[string]string{"owner": fmt.Sprintf("o%d", i%2)}
		if i == 3 {
			labels["special"] = ""
		}
		if _, err := create(ctx, c, fmt.Sprintf("c%d", i), labels, p); err != nil {
			t.Fatal(err)
		}
	}
	list := func(filter string, pageSize int32) ([]string, error) {
		it := c.ListCertificates(ctx, &cmpb.ListCertificatesRequest{Parent: parent, Filter: filter, PageSize: pageSize})
		var names []string
		for {
			crt, err := it.Next()
			if errors.Is(err, iterator.Done) {
				return names, nil
			}
			if err != nil {
				return nil, err
			}
			names = append(names, crt.GetName()[len(parent)+len("/certificates/"):])
		}
	}
	for _, tc := range []struct {
		filter string
		want   string
	}{
		{"", "c0 c1 c2 c3 c4 c5 c6"},
		{`labels.owner="o1"`, "c1 c3 c5"},
		{`labels.owner=o0`, "c0 c2 c4 c6"},
		{`labels.owner = "o1" AND labels.special:*`, "c3"},
		{`labels.owner="o9"`, ""},
	} {
		got, err := list(tc.filter, 2)
		if err != nil || strings.Join(got, " ") != tc.want {
			t.Errorf("filter %q = %v, %v; want %s", tc.filter, got, err, tc.want)
		}
	}
	if calls := d.Calls("ListCertificates"); calls < 4+4+1 {
		t.Errorf("ListCertificates calls = %d: pages of 2 were not used", calls)
	}
	for _, f := range []string{`name="x"`, `labels.owner="o1" OR labels.owner="o0"`, `labels.Owner="o1"`} {
		if _, err := list(f, 0); status.Code(err) != codes.InvalidArgument {
			t.Errorf("filter %q: %v; want InvalidArgument", f, err)
		}
	}
}

// TestOperations: a create is not visible until its operation is done,
// but its ID is taken; failures and polls.
func TestOperations(t *testing.T) {
	ctx := context.Background()
	d := New(t, project)
	c := client(t, d)
	p := newPair(t, ecKey(t, elliptic.P256()))
	d.SetOperationPolls(3)
	op, err := c.CreateCertificate(ctx, &cmpb.CreateCertificateRequest{Parent: parent, CertificateId: "slow", Certificate: &cmpb.Certificate{Type: selfManaged(p)}})
	if err != nil || op.Done() || !strings.HasPrefix(op.Name(), parent+"/operations/") {
		t.Fatalf("create = %v, %v; want a running operation", op, err)
	}
	if meta, err := op.Metadata(); err != nil || meta.GetTarget() != parent+"/certificates/slow" || meta.GetVerb() != "create" {
		t.Fatalf("metadata = %v, %v", meta, err)
	}
	if err := get(ctx, c, parent+"/certificates/slow"); status.Code(err) != codes.NotFound {
		t.Fatalf("get while creating: %v; want NotFound", err)
	}
	if _, err := create(ctx, c, "slow", nil, p); status.Code(err) != codes.AlreadyExists {
		t.Fatalf("create while creating: %v; want AlreadyExists", err)
	}
	for i := range 2 {
		if res, err := op.Poll(ctx); err != nil || res != nil || op.Done() {
			t.Fatalf("poll %d = %v, %v; want not done", i, res, err)
		}
	}
	if res, err := op.Poll(ctx); err != nil || !op.Done() || res.GetName() != parent+"/certificates/slow" {
		t.Fatalf("third poll = %v, %v; want done", res, err)
	}
	if err := get(ctx, c, parent+"/certificates/slow"); err != nil {
		t.Fatal(err)
	}

	d.SetOperationPolls(1)
	d.FailNextOperation(codes.InvalidArgument, "refused later")
	op, err = c.CreateCertificate(ctx, &cmpb.CreateCertificateRequest{Parent: parent, CertificateId: "failing", Certificate: &cmpb.Certificate{Type: selfManaged(p)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := op.Poll(ctx); !op.Done() || status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "refused later") {
		t.Fatalf("failed operation: done %v, %v", op.Done(), err)
	}
	if _, ok := d.Get(parent + "/certificates/failing"); ok || d.Running() != 0 {
		t.Fatal("a failed create left a certificate or a running operation")
	}
	if _, err := create(ctx, c, "failing", nil, p); err != nil {
		t.Fatalf("the ID of a failed create stays taken: %v", err)
	}

	d.FailNext(2, "GetCertificate", codes.Internal, "injected")
	for range 2 {
		if err := get(ctx, c, parent+"/certificates/slow"); status.Code(err) != codes.Internal {
			t.Fatalf("injected: %v", err)
		}
	}
	if err := get(ctx, c, parent+"/certificates/slow"); err != nil || d.Calls("GetCertificate") != 5 {
		t.Fatalf("after the injected failures: %v, %d calls", err, d.Calls("GetCertificate"))
	}
}
