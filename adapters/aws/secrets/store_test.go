package secrets

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"github.com/certfn/certfn/adapters/aws/secrets/secretstest"
	"maps"
	"math/big"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sm "github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/certfn/certfn/adapters/aws/awscfg"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/ports/porttest"
	"github.com/certfn/certfn/tests/emulators"
)

var fastRetry = awscfg.Retry{MaxAttempts: 4, MaxBackoff: 20 * time.Millisecond}

// backend is where a test's secrets live: the hand-written double
// (fake != nil), moto, or the external endpoint named by
// AWS_ENDPOINT_URL[_SECRETS_MANAGER] (LocalStack, AWS).
type backend struct {
	fake   *secretstest.Double
	client *sm.Client
}

// forEachBackend runs f against every backend: the double and moto
// (tests/emulators.Moto, one moto_server per test binary) always, and the
// endpoint of the environment when there is one (skipped with the reason
// otherwise).
func forEachBackend(t *testing.T, f func(t *testing.T, b *backend)) {
	t.Run("double", func(t *testing.T) { f(t, newDoubleBackend(t)) })
	t.Run("moto", func(t *testing.T) { f(t, newEndpointBackend(emulators.Moto(t))) })
	t.Run("endpoint", func(t *testing.T) {
		ep, ok := emulators.External(emulators.SecretsManager)
		if !ok {
			t.Skip("AWS_ENDPOINT_URL_SECRETS_MANAGER and AWS_ENDPOINT_URL unset: no external Secrets Manager to run against (LocalStack, AWS)")
		}
		f(t, newEndpointBackend(ep))
	})
}

// newEndpointBackend talks to the Secrets Manager at ep (moto, LocalStack).
func newEndpointBackend(ep string) *backend {
	return &backend{client: sm.NewFromConfig(awscfg.ForEndpoint(ep, fastRetry))}
}

// newDoubleBackend always uses the double (tests that inject failures or
// count calls).
func newDoubleBackend(t *testing.T) *backend {
	t.Helper()
	f := secretstest.New(t)
	return &backend{fake: f, client: sm.NewFromConfig(awscfg.ForEndpoint(f.URL(), fastRetry))}
}

var prefixSeq atomic.Int64

// store returns a Store with a prefix of its own; every secret it touched
// is force-deleted when t ends (an external backend is shared).
func (b *backend) store(t *testing.T, opts Options) *Store {
	t.Helper()
	if opts.Prefix == "" {
		opts.Prefix = fmt.Sprintf("certfn-test/%d-%d", time.Now().UnixNano()%1e9, prefixSeq.Add(1))
	}
	s, err := New(b.client, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, id := range b.created(t, opts.Prefix) {
			_, _ = b.client.DeleteSecret(context.Background(), &sm.DeleteSecretInput{SecretId: aws.String(id), ForceDeleteWithoutRecovery: aws.Bool(true)})
		}
	})
	return s
}

// created lists the secret names under prefix (the double's state, or
// ListSecrets-free bookkeeping for an external backend: the tracker).
func (b *backend) created(t *testing.T, prefix string) []string {
	if b.fake != nil {
		var out []string
		for _, name := range b.fake.Names() {
			if strings.HasPrefix(name, prefix+"/") {
				out = append(out, name)
			}
		}
		return out
	}
	return trackedIDs(prefix)
}

// tracked remembers, for external backends, the ids each test wrote.
var (
	trackMu sync.Mutex
	tracked = map[string]map[string]bool{}
)

func track(prefix, id string) {
	trackMu.Lock()
	defer trackMu.Unlock()
	if tracked[prefix] == nil {
		tracked[prefix] = map[string]bool{}
	}
	tracked[prefix][id] = true
}

func trackedIDs(prefix string) []string {
	trackMu.Lock()
	defer trackMu.Unlock()
	return slices.Collect(maps.Keys(tracked[prefix]))
}

// tracking wraps a Store so that the ids it writes are cleaned up.
type tracking struct{ *Store }

func (s tracking) Create(ctx context.Context, sec ports.Secret) error {
	if id, err := s.SecretID(sec.Namespace, sec.Name); err == nil {
		track(s.prefix, id)
	}
	return s.Store.Create(ctx, sec)
}

func (s tracking) Put(ctx context.Context, sec ports.Secret) error {
	if id, err := s.SecretID(sec.Namespace, sec.Name); err == nil {
		track(s.prefix, id)
	}
	return s.Store.Put(ctx, sec)
}

func TestSecretContract(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		porttest.SecretSuite(t, func(t *testing.T) ports.SecretStore {
			return tracking{b.store(t, Options{})}
		})
	})
}

const marker = "S3CRET-VALUE-MARKER"

// tlsSecret builds default/web-tls whose values carry marker and gen.
func tlsSecret(gen string, crt []byte) ports.Secret {
	if crt == nil {
		crt = []byte("-----BEGIN CERTIFICATE-----\n" + marker + " " + gen + "\n-----END CERTIFICATE-----\n")
	}
	return ports.Secret{Namespace: "default", Name: "web-tls",
		Data: map[string][]byte{
			"tls.crt": crt,
			"tls.key": []byte("-----BEGIN PRIVATE KEY-----\n" + marker + " " + gen + "\n-----END PRIVATE KEY-----\n"),
		},
		Annotations: map[string]string{
			api.AnnotationCertificateName: "web",
			api.AnnotationIssuerName:      "ca",
			api.AnnotationIssuerKind:      "ClusterIssuer",
			api.AnnotationRevision:        gen,
		},
	}
}

// selfSigned returns a PEM certificate valid until notAfter.
func selfSigned(t *testing.T, notAfter time.Time) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "web"},
		NotBefore: notAfter.Add(-90 * 24 * time.Hour), NotAfter: notAfter, DNSNames: []string{"web.example.com"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// describe returns a secret's tags and its version stages.
func describe(t *testing.T, b *backend, id string) (tags map[string]string, stages map[string][]string, kms string) {
	t.Helper()
	out, err := b.client.DescribeSecret(context.Background(), &sm.DescribeSecretInput{SecretId: aws.String(id)})
	if err != nil {
		t.Fatalf("DescribeSecret(%s): %v", id, err)
	}
	tags = map[string]string{}
	for _, tg := range out.Tags {
		tags[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
	}
	return tags, out.VersionIdsToStages, aws.ToString(out.KmsKeyId)
}

// rawValue returns the secret string of id at stage.
func rawValue(t *testing.T, b *backend, id, stage string) string {
	t.Helper()
	out, err := b.client.GetSecretValue(context.Background(), &sm.GetSecretValueInput{SecretId: aws.String(id), VersionStage: aws.String(stage)})
	if err != nil {
		t.Fatalf("GetSecretValue(%s, %s): %v", id, stage, err)
	}
	return aws.ToString(out.SecretString)
}

// The stored payload: the local store's keys, UTF-8 values as text,
// binary values base64 and listed, labels and annotations in ..metadata.
func TestPayloadLayout(t *testing.T) { forEachBackend(t, testPayloadLayout) }

func testPayloadLayout(t *testing.T, b *backend) {
	s := tracking{b.store(t, Options{Prefix: fmt.Sprintf("certfn-test/layout-%d", time.Now().UnixNano()%1e9)})}
	sec := ports.Secret{Namespace: "team-a", Name: "api-tls",
		Data: map[string][]byte{
			"tls.crt":      []byte("-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----\n"),
			"ca.crt":       {},
			"keystore.p12": {0x30, 0x82, 0xff, 0x00, 0xfe},
		},
		Labels:      map[string]string{"app": "api"},
		Annotations: map[string]string{api.AnnotationCertificateName: "api"},
	}
	if err := s.Create(context.Background(), sec); err != nil {
		t.Fatal(err)
	}
	id, err := s.SecretID("team-a", "api-tls")
	if err != nil {
		t.Fatal(err)
	}
	if want := s.prefix + "/team-a/api-tls"; id != want {
		t.Errorf("SecretID = %s, want %s", id, want)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(rawValue(t, b, id, StageCurrent)), &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"tls.crt":      "-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----\n",
		"ca.crt":       "",
		"keystore.p12": "MIL/AP4=",
		"..metadata": map[string]any{
			"labels":      map[string]any{"app": "api"},
			"annotations": map[string]any{api.AnnotationCertificateName: "api"},
			"base64":      []any{"keystore.p12"},
		},
	}
	gotJSON, _ := json.Marshal(doc)
	wantJSON, _ := json.Marshal(want)
	if !bytes.Equal(gotJSON, wantJSON) {
		t.Errorf("payload\n got %s\nwant %s", gotJSON, wantJSON)
	}
}

// Create sets the KMS key and the tags; Put of new content puts a new
// version, keeps the replaced one as AWSPREVIOUS and updates the tags;
// Rollback swaps them back.
func TestVersionsTagsAndRollback(t *testing.T) { forEachBackend(t, testVersionsTagsAndRollback) }

func testVersionsTagsAndRollback(t *testing.T, b *backend) {
	s := tracking{b.store(t, Options{KMSKeyID: "alias/certfn", Tags: map[string]string{"team": "platform"}})}
	ctx := context.Background()
	exp1 := time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)
	exp2 := exp1.Add(60 * 24 * time.Hour)
	v1, v2 := tlsSecret("1", selfSigned(t, exp1)), tlsSecret("2", selfSigned(t, exp2))
	id, _ := s.SecretID("default", "web-tls")

	if err := s.Create(ctx, v1); err != nil {
		t.Fatal(err)
	}
	tags, stages, kms := describe(t, b, id)
	wantTags := map[string]string{
		TagNamespace: "default", TagCertificate: "web", TagIssuer: "ClusterIssuer/ca",
		TagRevision: "1", TagNotAfter: "2031-03-04T05:06:07Z", "team": "platform", TagRole: RoleCertificate,
	}
	if !maps.Equal(tags, wantTags) {
		t.Errorf("tags after Create = %v, want %v", tags, wantTags)
	}
	if kms != "alias/certfn" {
		t.Errorf("KMS key %q, want alias/certfn", kms)
	}
	if len(stages) != 1 {
		t.Errorf("versions after Create: %v", stages)
	}

	if err := s.Put(ctx, v2); err != nil {
		t.Fatal(err)
	}
	tags, _, _ = describe(t, b, id)
	if tags[TagRevision] != "2" || tags[TagNotAfter] != "2031-05-03T05:06:07Z" || tags["team"] != "platform" {
		t.Errorf("tags after renewal = %v", tags)
	}
	prev, err := decodePayload(rawValue(t, b, id, StagePrevious))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(prev.Data["tls.key"], v1.Data["tls.key"]) {
		t.Errorf("AWSPREVIOUS does not hold the previous key pair")
	}

	// A repeated Put of the current content writes nothing: AWSPREVIOUS
	// still holds generation 1.
	if err := s.Put(ctx, v2); err != nil {
		t.Fatal(err)
	}
	if prev, _ := decodePayload(rawValue(t, b, id, StagePrevious)); !bytes.Equal(prev.Data["tls.key"], v1.Data["tls.key"]) {
		t.Errorf("a repeated Put pushed the previous key pair out of AWSPREVIOUS")
	}

	if err := s.Rollback(ctx, "default", "web-tls"); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "default", "web-tls")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Data["tls.key"], v1.Data["tls.key"]) || got.Annotations[api.AnnotationRevision] != "1" {
		t.Errorf("after Rollback: revision %s, want 1", got.Annotations[api.AnnotationRevision])
	}
	if tags, _, _ := describe(t, b, id); tags[TagRevision] != "1" || tags[TagNotAfter] != "2031-03-04T05:06:07Z" {
		t.Errorf("tags after Rollback = %v", tags)
	}
	if prev, _ := decodePayload(rawValue(t, b, id, StagePrevious)); !bytes.Equal(prev.Data["tls.key"], v2.Data["tls.key"]) {
		t.Errorf("after Rollback AWSPREVIOUS is not the rolled-back version")
	}
	// A second Rollback undoes the first.
	if err := s.Rollback(ctx, "default", "web-tls"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(ctx, "default", "web-tls"); !bytes.Equal(got.Data["tls.key"], v2.Data["tls.key"]) {
		t.Errorf("second Rollback did not restore generation 2")
	}
}

func TestRollbackErrors(t *testing.T) { forEachBackend(t, testRollbackErrors) }

func testRollbackErrors(t *testing.T, b *backend) {
	s := tracking{b.store(t, Options{})}
	ctx := context.Background()
	if err := s.Rollback(ctx, "default", "missing"); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("Rollback of a missing secret: %v, want ErrNotFound", err)
	}
	if err := s.Create(ctx, tlsSecret("1", nil)); err != nil {
		t.Fatal(err)
	}
	if err := s.Rollback(ctx, "default", "web-tls"); !errs.IsPermanent(err) || !strings.Contains(err.Error(), "no previous version") {
		t.Errorf("Rollback without a previous version: %v", err)
	}
}

// Calls per operation, on the double: a Put of unchanged content reads
// only; a renewal reads, puts and tags.
func TestPutCalls(t *testing.T) {
	b := newDoubleBackend(t)
	s := b.store(t, Options{})
	ctx := context.Background()
	steps := []struct {
		name string
		sec  ports.Secret
		want map[string]int
	}{
		{"put creates", tlsSecret("1", nil), map[string]int{"GetSecretValue": 1, "CreateSecret": 1}},
		{"put unchanged", tlsSecret("1", nil), map[string]int{"GetSecretValue": 2, "CreateSecret": 1}},
		{"put renewed", tlsSecret("2", nil), map[string]int{"GetSecretValue": 3, "CreateSecret": 1, "PutSecretValue": 1, "TagResource": 1}},
	}
	ops := []string{"GetSecretValue", "CreateSecret", "PutSecretValue", "TagResource"}
	for _, st := range steps {
		if err := s.Put(ctx, st.sec); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		for _, op := range ops {
			if got := b.fake.Calls(op); got != st.want[op] {
				t.Errorf("%s: %d %s calls, want %d", st.name, got, op, st.want[op])
			}
		}
	}
}

// Throttling is retried by the SDK's bounded retryer; past the bound the
// error is transient (the message is retried later with backoff).
func TestThrottlingRetried(t *testing.T) {
	tests := []struct {
		name     string
		throttle int
		wantErr  bool
	}{
		{"none", 0, false},
		{"three throttles", 3, false},
		{"past the attempt bound", 10, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newDoubleBackend(t)
			s := b.store(t, Options{})
			ctx := context.Background()
			if err := s.Create(ctx, tlsSecret("1", nil)); err != nil {
				t.Fatal(err)
			}
			before := b.fake.Calls("GetSecretValue")
			b.fake.SetThrottle(tc.throttle)
			_, err := s.Get(ctx, "default", "web-tls")
			calls := b.fake.Calls("GetSecretValue") - before
			if tc.wantErr {
				if err == nil || errs.Classify(err) != errs.Transient || !strings.Contains(err.Error(), "ThrottlingException") {
					t.Fatalf("Get: %v, want a transient ThrottlingException", err)
				}
				if calls != fastRetry.MaxAttempts {
					t.Errorf("%d attempts, want %d", calls, fastRetry.MaxAttempts)
				}
				return
			}
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			if calls != tc.throttle+1 {
				t.Errorf("%d attempts, want %d", calls, tc.throttle+1)
			}
		})
	}
}

// No error ever carries secret values: not a malformed stored payload, not
// an oversized one, not a failed write.
func TestErrorsNeverLeak(t *testing.T) {
	b := newDoubleBackend(t)
	s := b.store(t, Options{})
	ctx := context.Background()
	id, _ := s.SecretID("default", "broken")
	stored := []string{
		`{"tls.key": "` + marker + `", oops`,                       // not JSON
		`["` + marker + `"]`,                                       // not an object
		`{"tls.key": ["` + marker + `"]}`,                          // member not a string
		`{"..metadata": "` + marker + `"}`,                         // bad metadata
		`{"k": "` + marker + `", "..metadata": {"base64": ["k"]}}`, // bad base64
	}
	for i, payload := range stored {
		_, _ = b.client.DeleteSecret(ctx, &sm.DeleteSecretInput{SecretId: aws.String(id), ForceDeleteWithoutRecovery: aws.Bool(true)})
		if _, err := b.client.CreateSecret(ctx, &sm.CreateSecretInput{Name: aws.String(id), SecretString: aws.String(payload)}); err != nil {
			t.Fatal(err)
		}
		_, err := s.Get(ctx, "default", "broken")
		if err == nil || !errs.IsPermanent(err) {
			t.Errorf("payload %d: Get error %v, want a permanent error", i, err)
		}
		if err != nil && strings.Contains(err.Error(), marker) {
			t.Errorf("payload %d: error leaks the value: %v", i, err)
		}
		// Put replaces an unreadable current version.
		if err := s.Put(ctx, ports.Secret{Namespace: "default", Name: "broken", Data: map[string][]byte{"tls.key": []byte(marker)}}); err != nil {
			t.Errorf("payload %d: Put over it: %v", i, err)
		}
	}
	big := tlsSecret("1", nil)
	big.Data["keystore.p12"] = bytes.Repeat([]byte(marker+"\xff"), 5000)
	for name, call := range map[string]func() error{
		"Create": func() error { return s.Create(ctx, big) },
		"Put":    func() error { return s.Put(ctx, big) },
	} {
		err := call()
		if !errs.IsPermanent(err) || !strings.Contains(err.Error(), "keystore.p12=") || !strings.Contains(err.Error(), "limit") {
			t.Errorf("%s oversized: %v, want a permanent error naming sizes", name, err)
		}
		if err != nil && strings.Contains(err.Error(), marker) {
			t.Errorf("%s oversized: error leaks the value", name)
		}
	}
	if err := s.Create(ctx, tlsSecret("x", nil)); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, tlsSecret("y", nil)); !errors.Is(err, ports.ErrAlreadyExists) || strings.Contains(err.Error(), marker) {
		t.Errorf("second Create: %v", err)
	}
}

// A secret deleted with a recovery window (by hand, or by another tool) is
// marked for deletion: the store treats it as missing.
func TestMarkedForDeletion(t *testing.T) {
	b := newDoubleBackend(t)
	s := b.store(t, Options{})
	ctx := context.Background()
	if err := s.Create(ctx, tlsSecret("1", nil)); err != nil {
		t.Fatal(err)
	}
	id, _ := s.SecretID("default", "web-tls")
	if _, err := b.client.DeleteSecret(ctx, &sm.DeleteSecretInput{SecretId: aws.String(id), RecoveryWindowInDays: aws.Int64(7)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "default", "web-tls"); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("Get of a secret marked for deletion: %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, "default", "web-tls"); err != nil {
		t.Errorf("Delete of a secret marked for deletion: %v, want nil", err)
	}
}

// Options and names are checked with errors naming the field.
func TestBadInput(t *testing.T) {
	b := newDoubleBackend(t)
	s := b.store(t, Options{})
	ctx := context.Background()
	newErr := func(o Options) error { _, err := New(b.client, o); return err }
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"prefix with a leading slash", func() error { return newErr(Options{Prefix: "/certfn"}) }, "prefix"},
		{"prefix with a space", func() error { return newErr(Options{Prefix: "cert fn"}) }, "prefix"},
		{"reserved tag", func() error { return newErr(Options{Tags: map[string]string{"certfn.io/x": "y"}}) }, `tags["certfn.io/x"]`},
		{"aws tag", func() error { return newErr(Options{Tags: map[string]string{"aws:x": "y"}}) }, `tags["aws:x"]`},
		{"bad tag value", func() error { return newErr(Options{Tags: map[string]string{"team": "a,b"}}) }, `tags["team"]`},
		{"upper-case namespace", func() error { _, err := s.Get(ctx, "Default", "web"); return err }, `namespace: "Default" is not a valid name`},
		{"name with a slash", func() error { return s.Delete(ctx, "default", "a/b") }, `name: "a/b" is not a valid name`},
		{"reserved data key", func() error {
			return s.Create(ctx, ports.Secret{Namespace: "default", Name: "x", Data: map[string][]byte{"..metadata": nil}})
		}, `data["..metadata"]`},
		{"data key with a slash", func() error {
			return s.Put(ctx, ports.Secret{Namespace: "default", Name: "x", Data: map[string][]byte{"a/b": nil}})
		}, `data["a/b"]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); !errs.IsPermanent(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want a permanent error containing %q", err, tc.want)
			}
		})
	}
	if n := b.fake.Calls("CreateSecret") + b.fake.Calls("PutSecretValue"); n != 0 {
		t.Errorf("bad input reached the service (%d writes)", n)
	}
}

// Tag values are kept within AWS's rules.
func TestTagValue(t *testing.T) {
	tests := []struct{ in, want string }{
		{"web", "web"},
		{"ClusterIssuer/ca", "ClusterIssuer/ca"},
		{"2031-03-04T05:06:07Z", "2031-03-04T05:06:07Z"},
		{"a,b;c", "a_b_c"},
		{"é", "_"},
		{strings.Repeat("x", 300), strings.Repeat("x", 256)},
	}
	for _, tc := range tests {
		if got := tagValue(tc.in); got != tc.want {
			t.Errorf("tagValue(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// RoleOf decides the certfn-role tag IAM separates on (docs/deploy/aws.md).
func TestRoleOf(t *testing.T) {
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "ca"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	leaf := selfSigned(t, time.Now().Add(time.Hour))
	key := []byte("-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----\n")
	for _, tc := range []struct {
		name string
		sec  ports.Secret
		want string
	}{
		{"next private key", ports.Secret{Labels: map[string]string{api.LabelNextPrivateKey: "true"}, Data: map[string][]byte{"tls.key": key}}, RolePrivateKey},
		{"CA key pair issued by certfn", ports.Secret{Data: map[string][]byte{"tls.crt": caPEM, "tls.key": key}}, RoleIssuedCA},
		{"CA certificate without key is a certificate", ports.Secret{Data: map[string][]byte{"tls.crt": caPEM}}, RoleCertificate},
		{"leaf key pair", ports.Secret{Data: map[string][]byte{"tls.crt": leaf, "tls.key": key}}, RoleCertificate},
		{"ACME account key", ports.Secret{Data: map[string][]byte{"tls.key": key}}, RoleACMEAccount},
	} {
		if got := RoleOf(tc.sec); got != tc.want {
			t.Errorf("%s: RoleOf = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A Certificate's key pair never replaces what is no key pair: an ACME
// account key, DNS-01 credentials, a keystore password (role acme-account
// with data) or a next private key. The Put is refused permanently,
// naming the roles and no value, and the stored secret is unchanged; an
// empty secret, and a key pair becoming a CA, are replaced as before.
func TestPutNeverReplacesAnotherRole(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		leaf := selfSigned(t, time.Now().Add(time.Hour))
		key := []byte("-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----\n")
		pair := func(name string) ports.Secret {
			return ports.Secret{Namespace: "team-a", Name: name, Data: map[string][]byte{"tls.crt": leaf, "tls.key": key},
				Annotations: map[string]string{api.AnnotationCertificateName: "grab"}}
		}
		for _, tc := range []struct {
			name    string
			initial ports.Secret
			refused bool
		}{
			{"an ACME account key", ports.Secret{Namespace: "team-a", Name: "le-account", Data: map[string][]byte{"tls.key": []byte("account key")}}, true},
			{"DNS-01 credentials", ports.Secret{Namespace: "team-a", Name: "creds", Data: map[string][]byte{"api-token": []byte("token")}}, true},
			{"a next private key", ports.Secret{Namespace: "team-a", Name: "web-next-private-key", Data: map[string][]byte{"tls.key": key},
				Labels: map[string]string{api.LabelNextPrivateKey: "true"}}, true},
			{"an empty secret", ports.Secret{Namespace: "team-a", Name: "empty", Data: map[string][]byte{}}, false},
			{"a certificate key pair", pair("web-tls"), false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s := b.store(t, Options{})
				if err := s.Create(ctx, tc.initial); err != nil {
					t.Fatal(err)
				}
				err := s.Put(ctx, pair(tc.initial.Name))
				got, gerr := s.Get(ctx, "team-a", tc.initial.Name)
				if gerr != nil {
					t.Fatal(gerr)
				}
				if !tc.refused {
					if err != nil || !bytes.Equal(got.Data["tls.crt"], leaf) {
						t.Fatalf("Put = %v, want the key pair written", err)
					}
					return
				}
				if !errs.IsPermanent(err) || !strings.Contains(err.Error(), "certfn does not replace it with a secret of role certificate") {
					t.Fatalf("Put = %v, want a permanent refusal naming the roles", err)
				}
				if strings.Contains(err.Error(), "account key\"") || strings.Contains(err.Error(), "token") {
					t.Fatalf("error carries a value: %v", err)
				}
				if len(got.Data) != len(tc.initial.Data) || got.Data["tls.crt"] != nil {
					t.Fatalf("stored secret changed: keys %v", slices.Sorted(maps.Keys(got.Data)))
				}
			})
		}
	})
}
