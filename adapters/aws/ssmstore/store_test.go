package ssmstore

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/certfn/certfn/adapters/aws/awscfg"
	"github.com/certfn/certfn/adapters/secretpayload"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/ports/porttest"
	"github.com/certfn/certfn/tests/emulators"
)

var fastRetry = awscfg.Retry{MaxAttempts: 4, MaxBackoff: 20 * time.Millisecond}

// ssmService is the suffix of AWS_ENDPOINT_URL_SSM.
const ssmService emulators.Service = "SSM"

// forEachBackend runs f against moto (tests/emulators.Moto, always; a
// missing moto_server fails the test) and against the SSM endpoint of the
// environment, AWS_ENDPOINT_URL_SSM or AWS_ENDPOINT_URL (LocalStack, AWS),
// skipped with the reason when unset.
func forEachBackend(t *testing.T, f func(t *testing.T, c *ssm.Client)) {
	t.Run("moto", func(t *testing.T) { f(t, client(emulators.Moto(t))) })
	t.Run("endpoint", func(t *testing.T) {
		ep, ok := emulators.External(ssmService)
		if !ok {
			t.Skip("AWS_ENDPOINT_URL_SSM and AWS_ENDPOINT_URL unset: no external Parameter Store to run against (LocalStack, AWS)")
		}
		f(t, client(ep))
	})
}

func client(ep string) *ssm.Client { return ssm.NewFromConfig(awscfg.ForEndpoint(ep, fastRetry)) }

var prefixSeq atomic.Int64

// tracking wraps a Store with a prefix of its own and deletes every
// secret it wrote when the test ends (an external backend is shared).
type tracking struct {
	*Store
	mu    sync.Mutex
	names map[[2]string]bool
}

func newTracking(t *testing.T, c API, opts Options) *tracking {
	t.Helper()
	if opts.Prefix == "" {
		opts.Prefix = fmt.Sprintf("certfn-test/%d-%d", time.Now().UnixNano()%1e9, prefixSeq.Add(1))
	}
	s, err := New(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	tr := &tracking{Store: s, names: map[[2]string]bool{}}
	t.Cleanup(func() {
		for k := range tr.names {
			_ = s.Delete(context.Background(), k[0], k[1])
		}
	})
	return tr
}

func (s *tracking) track(sec ports.Secret) {
	s.mu.Lock()
	s.names[[2]string{sec.Namespace, sec.Name}] = true
	s.mu.Unlock()
}

func (s *tracking) Create(ctx context.Context, sec ports.Secret) error {
	s.track(sec)
	return s.Store.Create(ctx, sec)
}

func (s *tracking) Put(ctx context.Context, sec ports.Secret) error {
	s.track(sec)
	return s.Store.Put(ctx, sec)
}

func TestSecretContract(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c *ssm.Client) {
		porttest.SecretSuite(t, func(t *testing.T) ports.SecretStore { return newTracking(t, c, Options{}) })
	})
}

const marker = "S3CRET-VALUE-MARKER"

// secretBuilder builds test secrets.
type secretBuilder struct{ sec ports.Secret }

func aSecret(ns, name string) *secretBuilder {
	return &secretBuilder{ports.Secret{Namespace: ns, Name: name, Data: map[string][]byte{}, Labels: map[string]string{}, Annotations: map[string]string{}}}
}

func (b *secretBuilder) data(k string, v []byte) *secretBuilder { b.sec.Data[k] = v; return b }
func (b *secretBuilder) label(k, v string) *secretBuilder       { b.sec.Labels[k] = v; return b }
func (b *secretBuilder) rev(r string) *secretBuilder {
	b.sec.Annotations[api.AnnotationRevision] = r
	return b
}
func (b *secretBuilder) keyPair(crt []byte, gen string) *secretBuilder {
	return b.data("tls.crt", crt).data("tls.key", []byte("-----BEGIN PRIVATE KEY-----\n"+marker+" "+gen+"\n-----END PRIVATE KEY-----\n"))
}
func (b *secretBuilder) build() ports.Secret { return b.sec }

// cert returns a self-signed PEM certificate, a CA one when isCA.
func cert(t *testing.T, isCA bool) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "x"}, NotBefore: now, NotAfter: now.Add(time.Hour),
		IsCA: isCA, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// describeTier returns the tier and type of parameter p.
func describeTier(t *testing.T, c *ssm.Client, p string) (types.ParameterTier, types.ParameterType) {
	t.Helper()
	out, err := c.DescribeParameters(context.Background(), &ssm.DescribeParametersInput{
		ParameterFilters: []types.ParameterStringFilter{{Key: aws.String("Name"), Option: aws.String("Equals"), Values: []string{p}}},
	})
	if err != nil {
		t.Fatalf("DescribeParameters(%s): %v", p, err)
	}
	if len(out.Parameters) != 1 {
		t.Fatalf("DescribeParameters(%s): %d parameters, want 1", p, len(out.Parameters))
	}
	return out.Parameters[0].Tier, out.Parameters[0].Type
}

// rawValue returns the decrypted value of p, and whether it exists.
func rawValue(t *testing.T, c *ssm.Client, p string) (string, bool) {
	t.Helper()
	out, err := c.GetParameter(context.Background(), &ssm.GetParameterInput{Name: aws.String(p), WithDecryption: aws.Bool(true)})
	var nf *types.ParameterNotFound
	if errors.As(err, &nf) {
		return "", false
	}
	if err != nil {
		t.Fatalf("GetParameter(%s): %v", p, err)
	}
	return aws.ToString(out.Parameter.Value), true
}

// Each secret lands in the path of its class, as a SecureString holding
// the secretpayload encoding, in the tier its size needs.
func TestLayoutClassesAndTiers(t *testing.T) { forEachBackend(t, testLayout) }

func testLayout(t *testing.T, c *ssm.Client) {
	ctx := context.Background()
	s := newTracking(t, c, Options{})
	tests := []struct {
		name  string
		sec   ports.Secret
		class Class
		tier  types.ParameterTier
	}{
		{"certificate", aSecret("default", "web-tls").keyPair(cert(t, false), "1").build(), ClassTLS, types.ParameterTierStandard},
		{"acme account", aSecret("default", "acme-key").data("tls.key", []byte(marker)).build(), ClassTLS, types.ParameterTierStandard},
		{"next private key", aSecret("default", "web-next").data("tls.key", []byte(marker)).label(api.LabelNextPrivateKey, "true").build(), ClassPrivateKey, types.ParameterTierStandard},
		{"issued CA", aSecret("cert-manager", "my-ca").keyPair(cert(t, true), "1").build(), ClassIssuedCA, types.ParameterTierStandard},
		{"advanced tier (no tls.key to split off)", aSecret("default", "big").data("tls.crt", cert(t, false)).data("truststore.p12", bytes.Repeat([]byte{0xff}, 5000)).build(), ClassTLS, types.ParameterTierAdvanced},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.Create(ctx, tc.sec); err != nil {
				t.Fatal(err)
			}
			p := "/" + s.Prefix() + "/" + string(tc.class) + "/" + tc.sec.Namespace + "/" + tc.sec.Name
			got, ok := rawValue(t, c, p)
			if !ok {
				t.Fatalf("%s missing", p)
			}
			want, err := secretpayload.Encode(tc.sec, MaxAdvancedBytes, "test")
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("%s holds %d bytes, not the payload encoding (%d bytes)", p, len(got), len(want))
			}
			tier, typ := describeTier(t, c, p)
			if tier != tc.tier || typ != types.ParameterTypeSecureString {
				t.Errorf("%s: tier %s type %s, want %s SecureString", p, tier, typ, tc.tier)
			}
		})
	}
	// Over the advanced tier's limit: a permanent error with sizes, no value.
	huge := aSecret("default", "huge").data("tls.key", bytes.Repeat([]byte(marker), 700)).build()
	err := s.Put(ctx, huge)
	if !errs.IsPermanent(err) || !strings.Contains(err.Error(), "8192") || !strings.Contains(err.Error(), "tls.key=13300") || strings.Contains(err.Error(), marker) {
		t.Errorf("Put of a payload over 8192 bytes: %v", err)
	}
}

// A secret over 4,096 bytes with a tls.key is kept in two standard
// parameters: the key alone in <parameter>_tls.key, the rest in the
// parameter with the key's version; Get joins them, an unchanged Put
// writes nothing, a renewal writes both, Rollback restores the previous
// pair, Delete removes both.
func TestSplitKeyPair(t *testing.T) { forEachBackend(t, testSplit) }

func testSplit(t *testing.T, c *ssm.Client) {
	ctx := context.Background()
	s := newTracking(t, c, Options{})
	pair := func(gen string) ports.Secret {
		return aSecret("default", "rsa-tls").data("tls.crt", append(cert(t, false), bytes.Repeat([]byte("c"), 3500)...)).
			data("tls.key", []byte("-----BEGIN PRIVATE KEY-----\n"+marker+" "+gen+strings.Repeat("k", 1600)+"\n-----END PRIVATE KEY-----\n")).build()
	}
	first, second := pair("1"), pair("2")
	if err := s.Create(ctx, first); err != nil {
		t.Fatal(err)
	}
	p := "/" + s.Prefix() + "/tls/default/rsa-tls"
	for _, name := range []string{p, p + "_tls.key"} {
		if tier, _ := describeTier(t, c, name); tier != types.ParameterTierStandard {
			t.Errorf("%s: tier %s, want Standard", name, tier)
		}
	}
	main, _ := rawValue(t, c, p)
	if strings.Contains(main, marker) || !strings.Contains(main, `"..parameters":{"tls.key":1}`) {
		t.Errorf("%s: the key is in it or its version is not named: %d bytes", p, len(main))
	}
	get := func() ports.Secret {
		t.Helper()
		got, err := s.Get(ctx, "default", "rsa-tls")
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := get(); !same(got, first) {
		t.Fatal("Get does not return the secret written")
	}
	if err := s.Put(ctx, first); err != nil {
		t.Fatal(err)
	}
	if v := version(t, c, p); v != 1 {
		t.Errorf("an unchanged Put wrote version %d", v)
	}
	if err := s.Put(ctx, second); err != nil {
		t.Fatal(err)
	}
	if got := get(); !same(got, second) {
		t.Fatal("Get after the renewal does not return the new pair")
	}
	if err := s.Rollback(ctx, "default", "rsa-tls"); err != nil {
		t.Fatal(err)
	}
	if got := get(); !same(got, first) {
		t.Fatal("Rollback did not restore the first pair (key and certificate)")
	}
	if err := s.Delete(ctx, "default", "rsa-tls"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{p, p + "_tls.key"} {
		if _, ok := rawValue(t, c, name); ok {
			t.Errorf("%s left after Delete", name)
		}
	}
}

// version returns the current version of parameter p.
func version(t *testing.T, c *ssm.Client, p string) int64 {
	t.Helper()
	out, err := c.GetParameter(context.Background(), &ssm.GetParameterInput{Name: aws.String(p)})
	if err != nil {
		t.Fatalf("GetParameter(%s): %v", p, err)
	}
	return out.Parameter.Version
}

// Put of new content adds a version; unchanged content adds none;
// Rollback writes the previous content back, and a second one undoes it.
func TestVersionsAndRollback(t *testing.T) { forEachBackend(t, testRollback) }

func testRollback(t *testing.T, c *ssm.Client) {
	ctx := context.Background()
	s := newTracking(t, c, Options{})
	v1 := aSecret("default", "web-tls").keyPair(cert(t, false), "1").rev("1").build()
	v2 := aSecret("default", "web-tls").keyPair(cert(t, false), "2").rev("2").build()
	if err := s.Rollback(ctx, "default", "web-tls"); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("Rollback of a missing secret: %v, want ErrNotFound", err)
	}
	if err := s.Create(ctx, v1); err != nil {
		t.Fatal(err)
	}
	if err := s.Rollback(ctx, "default", "web-tls"); !errs.IsPermanent(err) || !strings.Contains(err.Error(), "no previous version") {
		t.Errorf("Rollback without a previous version: %v", err)
	}
	p, _ := s.ParameterName(ClassTLS, "default", "web-tls")
	version := func() int64 {
		out, err := c.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(p)})
		if err != nil {
			t.Fatal(err)
		}
		return out.Parameter.Version
	}
	revision := func() string {
		got, err := s.Get(ctx, "default", "web-tls")
		if err != nil {
			t.Fatal(err)
		}
		return got.Annotations[api.AnnotationRevision]
	}
	steps := []struct {
		name        string
		do          func() error
		wantVersion int64
		wantRev     string
	}{
		{"renewal", func() error { return s.Put(ctx, v2) }, 2, "2"},
		{"unchanged put", func() error { return s.Put(ctx, v2) }, 2, "2"},
		{"rollback", func() error { return s.Rollback(ctx, "default", "web-tls") }, 3, "1"},
		{"second rollback", func() error { return s.Rollback(ctx, "default", "web-tls") }, 4, "2"},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if v, r := version(), revision(); v != st.wantVersion || r != st.wantRev {
			t.Errorf("after %s: version %d revision %s, want %d and %s", st.name, v, r, st.wantVersion, st.wantRev)
		}
	}
}

// A Put whose content changes class moves the secret: written in the new
// class, removed from the old one.
func TestPutMovesClass(t *testing.T) { forEachBackend(t, testMove) }

func testMove(t *testing.T, c *ssm.Client) {
	ctx := context.Background()
	s := newTracking(t, c, Options{})
	if err := s.Create(ctx, aSecret("default", "web").keyPair(cert(t, false), "1").build()); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, aSecret("default", "web").keyPair(cert(t, true), "2").build()); err != nil {
		t.Fatal(err)
	}
	tls, _ := s.ParameterName(ClassTLS, "default", "web")
	ica, _ := s.ParameterName(ClassIssuedCA, "default", "web")
	if _, ok := rawValue(t, c, tls); ok {
		t.Errorf("%s still exists after the content became a CA", tls)
	}
	if _, ok := rawValue(t, c, ica); !ok {
		t.Errorf("%s missing", ica)
	}
}
