package secretmanager_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gsm "cloud.google.com/go/secretmanager/apiv1"
	smpb "cloud.google.com/go/secretmanager/apiv1/secretmanagerpb"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/certfn/certfn/adapters/gcp/secretmanager"
	"github.com/certfn/certfn/adapters/gcp/secretmanager/gsmtest"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/ports/porttest"
)

// EnvProject names the Google Cloud project the "service" variants of
// these tests run against (Application Default Credentials; the identity
// needs roles/secretmanager.admin on it). Unset, they skip and only the
// "double" variants run (gsmtest: no Secret Manager emulator exists).
const EnvProject = "CERTFN_GCP_TEST_PROJECT"

// EnvKMSKey names a Cloud KMS key (location "global") that Secret
// Manager's service agent of EnvProject may use, for the CMEK variant on
// the service.
const EnvKMSKey = "CERTFN_GCP_TEST_KMS_KEY"

var _ secretmanager.API = (*gsmtest.Double)(nil)

// backend is where a test's secrets live: the test double (fake != nil) or
// the real service.
type backend struct {
	api     secretmanager.API
	fake    *gsmtest.Double
	project string
}

// recording is an API that remembers the IDs of the secrets created
// through it, so that a test on the service deletes what it created.
type recording struct {
	secretmanager.API
	mu  sync.Mutex
	ids []string
}

func (r *recording) CreateSecret(ctx context.Context, req *smpb.CreateSecretRequest, opts ...gax.CallOption) (*smpb.Secret, error) {
	r.mu.Lock()
	r.ids = append(r.ids, req.GetSecretId())
	r.mu.Unlock()
	return r.API.CreateSecret(ctx, req, opts...)
}

var (
	clientOnce sync.Once
	client     *gsm.Client
	clientErr  error
)

// newServiceBackend returns the real service, or skips when EnvProject is
// unset. Every secret created through it is deleted when t ends.
func newServiceBackend(t *testing.T) *backend {
	t.Helper()
	project := os.Getenv(EnvProject)
	if project == "" {
		t.Skipf("%s is not set: this variant needs a Google Cloud project (Application Default Credentials); the double variant ran", EnvProject)
	}
	clientOnce.Do(func() { client, clientErr = gsm.NewClient(context.Background()) })
	if clientErr != nil {
		t.Fatalf("Secret Manager client: %v", clientErr)
	}
	rec := &recording{API: secretmanager.ClientAPI(client)}
	t.Cleanup(func() {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		for _, id := range rec.ids {
			_ = rec.API.DeleteSecret(context.Background(), &smpb.DeleteSecretRequest{Name: "projects/" + project + "/secrets/" + id})
		}
	})
	return &backend{api: rec, project: project}
}

// newDoubleBackend returns a fresh test double.
func newDoubleBackend(t *testing.T) *backend {
	t.Helper()
	d := gsmtest.New()
	return &backend{api: d, fake: d, project: "certfn-test"}
}

// newClientBackend returns a fresh test double behind Secret Manager's
// client library (gRPC on a loopback port).
func newClientBackend(t *testing.T) *backend {
	t.Helper()
	d := gsmtest.New()
	return &backend{api: secretmanager.ClientAPI(d.Client(t)), fake: d, project: "certfn-test"}
}

// backends runs f on the double, always: called directly ("double") and
// through the client library ("client"); and on the service when
// EnvProject names one ("service").
func backends(t *testing.T, f func(t *testing.T, b *backend)) {
	t.Run("double", func(t *testing.T) { f(t, newDoubleBackend(t)) })
	t.Run("client", func(t *testing.T) { f(t, newClientBackend(t)) })
	t.Run("service", func(t *testing.T) { f(t, newServiceBackend(t)) })
}

// store returns a Store on b with a prefix of its own.
func (b *backend) store(t *testing.T, opts secretmanager.Options) *secretmanager.Store {
	t.Helper()
	opts.Project = b.project
	if opts.Prefix == "" {
		var r [4]byte
		_, _ = rand.Read(r[:])
		opts.Prefix = "t" + hex.EncodeToString(r[:])
	}
	s, err := secretmanager.New(b.api, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// name is the resource name of secret id.
func (b *backend) name(id string) string { return "projects/" + b.project + "/secrets/" + id }

// secret returns secret id's metadata, nil when it is missing.
func (b *backend) secret(t *testing.T, id string) *smpb.Secret {
	t.Helper()
	s, err := b.api.GetSecret(context.Background(), &smpb.GetSecretRequest{Name: b.name(id)})
	if err != nil {
		if status.Code(err) == codes.NotFound {
			return nil
		}
		t.Fatalf("GetSecret(%s): %v", id, err)
	}
	return s
}

// versions returns secret id's versions by number with their states.
func (b *backend) versions(t *testing.T, id string) map[int64]smpb.SecretVersion_State {
	t.Helper()
	page, err := b.api.ListSecretVersionsPage(context.Background(), &smpb.ListSecretVersionsRequest{Parent: b.name(id), PageSize: 100})
	if err != nil {
		t.Fatalf("ListSecretVersions(%s): %v", id, err)
	}
	out := map[int64]smpb.SecretVersion_State{}
	for _, v := range page.GetVersions() {
		var n int64
		_, _ = fmt.Sscanf(v.GetName()[strings.LastIndex(v.GetName(), "/")+1:], "%d", &n)
		out[n] = v.GetState()
	}
	return out
}

// raw returns the data of version (a number, alias or "latest") of id.
func (b *backend) raw(t *testing.T, id, version string) []byte {
	t.Helper()
	resp, err := b.api.AccessSecretVersion(context.Background(), &smpb.AccessSecretVersionRequest{Name: b.name(id) + "/versions/" + version})
	if err != nil {
		t.Fatalf("AccessSecretVersion(%s/%s): %v", id, version, err)
	}
	return resp.GetPayload().GetData()
}

// addRaw creates secret id (if needed) and adds data as a version, as an
// operator would.
func (b *backend) addRaw(t *testing.T, id string, data []byte) {
	t.Helper()
	ctx := context.Background()
	_, err := b.api.CreateSecret(ctx, &smpb.CreateSecretRequest{Parent: "projects/" + b.project, SecretId: id,
		Secret: &smpb.Secret{Replication: &smpb.Replication{Replication: &smpb.Replication_Automatic_{Automatic: &smpb.Replication_Automatic{}}}}})
	if err != nil && status.Code(err) != codes.AlreadyExists {
		t.Fatalf("CreateSecret(%s): %v", id, err)
	}
	if data == nil {
		return
	}
	if _, err := b.api.AddSecretVersion(ctx, &smpb.AddSecretVersionRequest{Parent: b.name(id), Payload: &smpb.SecretPayload{Data: data}}); err != nil {
		t.Fatalf("AddSecretVersion(%s): %v", id, err)
	}
}

func mustID(t *testing.T, s *secretmanager.Store, c secretmanager.Class, ns, name string) string {
	t.Helper()
	id, err := s.SecretID(c, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestSecretContract(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		porttest.SecretSuite(t, func(t *testing.T) ports.SecretStore { return b.store(t, secretmanager.Options{}) })
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

// certPEM returns a PEM certificate valid until notAfter, a CA if isCA.
func certPEM(t *testing.T, notAfter time.Time, isCA bool) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "web"},
		NotBefore: notAfter.Add(-90 * 24 * time.Hour), NotAfter: notAfter, DNSNames: []string{"web.example.com"}}
	if isCA {
		tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage = true, true, x509.KeyUsageCertSign
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// revision returns the revision annotation of the secret's newest version.
func revision(t *testing.T, s *secretmanager.Store, ns, name string) string {
	t.Helper()
	got, err := s.Get(context.Background(), ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return got.Annotations[api.AnnotationRevision]
}

// live returns the numbers of the versions not destroyed, sorted.
func live(vs map[int64]smpb.SecretVersion_State) []int64 {
	var out []int64
	for n, st := range vs {
		if st != smpb.SecretVersion_DESTROYED {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// Put adds a version only for new content; "previous" names the version
// before the newest; versions beyond KeepVersions are destroyed, except one
// an operator pinned with an alias of their own.
func TestVersionsPreviousAndDestruction(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		for _, keep := range []int{2, 3} {
			t.Run(fmt.Sprintf("keep %d", keep), func(t *testing.T) {
				ctx := context.Background()
				s := b.store(t, secretmanager.Options{KeepVersions: keep})
				id := mustID(t, s, secretmanager.ClassTLS, "default", "web-tls")
				if err := s.Create(ctx, tlsSecret("1", nil)); err != nil {
					t.Fatal(err)
				}
				if a := b.secret(t, id).GetVersionAliases(); len(a) != 0 {
					t.Errorf("aliases after Create = %v, want none", a)
				}
				if _, err := s.Previous(ctx, "default", "web-tls"); !errors.Is(err, ports.ErrNotFound) {
					t.Errorf("Previous after Create: %v, want ErrNotFound", err)
				}
				for gen := 2; gen <= 5; gen++ {
					g := fmt.Sprint(gen)
					if err := s.Put(ctx, tlsSecret(g, nil)); err != nil {
						t.Fatal(err)
					}
					// A repeated Put writes nothing.
					if err := s.Put(ctx, tlsSecret(g, nil)); err != nil {
						t.Fatal(err)
					}
					vs := b.versions(t, id)
					if len(vs) != gen {
						t.Fatalf("gen %d: %d versions, want %d (a repeated Put added one?)", gen, len(vs), gen)
					}
					wantLive := []int64{}
					for n := max(1, gen-keep+1); n <= gen; n++ {
						wantLive = append(wantLive, int64(n))
					}
					if got := live(vs); !slices.Equal(got, wantLive) {
						t.Errorf("gen %d: versions not destroyed %v, want %v", gen, got, wantLive)
					}
					if a := b.secret(t, id).GetVersionAliases(); a[secretmanager.AliasPrevious] != int64(gen-1) {
						t.Errorf("gen %d: aliases %v, want previous=%d", gen, a, gen-1)
					}
					if got := revision(t, s, "default", "web-tls"); got != g {
						t.Errorf("gen %d: Get revision %s", gen, got)
					}
					prev, err := s.Previous(ctx, "default", "web-tls")
					if err != nil || prev.Annotations[api.AnnotationRevision] != fmt.Sprint(gen-1) {
						t.Errorf("gen %d: Previous = revision %q, %v; want %d", gen, prev.Annotations[api.AnnotationRevision], err, gen-1)
					}
				}
			})
		}
		t.Run("pinned by an operator", func(t *testing.T) {
			ctx := context.Background()
			s := b.store(t, secretmanager.Options{})
			id := mustID(t, s, secretmanager.ClassTLS, "default", "web-tls")
			if err := s.Create(ctx, tlsSecret("1", nil)); err != nil {
				t.Fatal(err)
			}
			cur := b.secret(t, id)
			if _, err := b.api.UpdateSecret(ctx, &smpb.UpdateSecretRequest{
				Secret:     &smpb.Secret{Name: cur.GetName(), VersionAliases: map[string]int64{"golden": 1}, Labels: map[string]string{"owner": "ops"}},
				UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"version_aliases", "labels"}},
			}); err != nil {
				t.Fatal(err)
			}
			for gen := 2; gen <= 4; gen++ {
				if err := s.Put(ctx, tlsSecret(fmt.Sprint(gen), nil)); err != nil {
					t.Fatal(err)
				}
			}
			if got := live(b.versions(t, id)); !slices.Equal(got, []int64{1, 3, 4}) {
				t.Errorf("versions not destroyed %v, want [1 3 4] (1 pinned by the alias golden)", got)
			}
			sec := b.secret(t, id)
			if want := map[string]int64{"golden": 1, secretmanager.AliasPrevious: 3}; !maps.Equal(sec.GetVersionAliases(), want) {
				t.Errorf("aliases %v, want %v", sec.GetVersionAliases(), want)
			}
			if sec.GetLabels()["owner"] != "ops" {
				t.Errorf("an operator's label was dropped: %v", sec.GetLabels())
			}
		})
	})
}

// Rollback restores the previous version as a new one; a second Rollback
// undoes the first.
func TestRollback(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		s := b.store(t, secretmanager.Options{})
		exp1 := time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)
		exp2 := exp1.Add(60 * 24 * time.Hour)
		id := mustID(t, s, secretmanager.ClassTLS, "default", "web-tls")
		if err := s.Rollback(ctx, "default", "web-tls"); !errors.Is(err, ports.ErrNotFound) {
			t.Errorf("Rollback of a missing secret: %v, want ErrNotFound", err)
		}
		if err := s.Create(ctx, tlsSecret("1", certPEM(t, exp1, false))); err != nil {
			t.Fatal(err)
		}
		if err := s.Rollback(ctx, "default", "web-tls"); !errs.IsPermanent(err) || !strings.Contains(err.Error(), "no previous version") {
			t.Errorf("Rollback without a previous version: %v", err)
		}
		if err := s.Put(ctx, tlsSecret("2", certPEM(t, exp2, false))); err != nil {
			t.Fatal(err)
		}
		if got := b.secret(t, id).GetLabels()[secretmanager.KeyNotAfter]; got != "2031-05-03t05_06_07z" {
			t.Errorf("not-after label after renewal = %q", got)
		}
		if err := s.Rollback(ctx, "default", "web-tls"); err != nil {
			t.Fatal(err)
		}
		if got := revision(t, s, "default", "web-tls"); got != "1" {
			t.Errorf("after Rollback: revision %s, want 1", got)
		}
		sec := b.secret(t, id)
		if sec.GetAnnotations()[secretmanager.KeyRevision] != "1" || sec.GetAnnotations()[secretmanager.KeyNotAfter] != "2031-03-04T05:06:07Z" || sec.GetLabels()[secretmanager.KeyNotAfter] != "2031-03-04t05_06_07z" {
			t.Errorf("labels %v annotations %v after Rollback, want revision 1 and the first notAfter", sec.GetLabels(), sec.GetAnnotations())
		}
		if prev, err := s.Previous(ctx, "default", "web-tls"); err != nil || prev.Annotations[api.AnnotationRevision] != "2" {
			t.Errorf("after Rollback previous is revision %q (%v), want 2", prev.Annotations[api.AnnotationRevision], err)
		}
		if err := s.Rollback(ctx, "default", "web-tls"); err != nil {
			t.Fatal(err)
		}
		if got := revision(t, s, "default", "web-tls"); got != "2" {
			t.Errorf("second Rollback: revision %s, want 2", got)
		}
		if got := live(b.versions(t, id)); len(got) != 2 {
			t.Errorf("after two rollbacks %d versions not destroyed, want 2", len(got))
		}
	})
}

// The content decides the class, the class is the ID's second segment, so
// that IAM conditions on the name separate them.
func TestClassesInIDs(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		s := b.store(t, secretmanager.Options{})
		exp := time.Now().Add(90 * 24 * time.Hour)
		key := []byte("-----BEGIN PRIVATE KEY-----\n" + marker + "\n-----END PRIVATE KEY-----\n")
		cases := []struct {
			sec  ports.Secret
			role secretmanager.Role
			want secretmanager.Class
		}{
			{ports.Secret{Namespace: "team-a", Name: "web.example.com-tls", Data: map[string][]byte{"tls.crt": certPEM(t, exp, false), "tls.key": key}}, secretmanager.RoleCertificate, secretmanager.ClassTLS},
			{ports.Secret{Namespace: "team-a", Name: "web-next-private-key", Data: map[string][]byte{"tls.key": key},
				Labels: map[string]string{api.LabelNextPrivateKey: "true"}}, secretmanager.RolePrivateKey, secretmanager.ClassPrivateKey},
			{ports.Secret{Namespace: "cert-manager", Name: "root-ca", Data: map[string][]byte{"tls.crt": certPEM(t, exp, true), "tls.key": key}}, secretmanager.RoleIssuedCA, secretmanager.ClassIssuedCA},
			{ports.Secret{Namespace: "cert-manager", Name: "letsencrypt-account", Data: map[string][]byte{"tls.key": key}}, secretmanager.RoleACMEAccount, secretmanager.ClassTLS},
			{ports.Secret{Namespace: "team-a", Name: "ca-bundle", Data: map[string][]byte{"tls.crt": certPEM(t, exp, true)}}, secretmanager.RoleCertificate, secretmanager.ClassTLS},
		}
		for _, tc := range cases {
			if got := secretmanager.RoleOf(tc.sec); got != tc.role {
				t.Errorf("%s: RoleOf = %s, want %s", tc.sec.Name, got, tc.role)
			}
			if err := s.Put(ctx, tc.sec); err != nil {
				t.Fatal(err)
			}
			id := mustID(t, s, tc.want, tc.sec.Namespace, tc.sec.Name)
			if want := s.Prefix() + "_" + string(tc.want) + "_" + tc.sec.Namespace + "_"; !strings.HasPrefix(id, want) {
				t.Errorf("%s: ID %s does not start with %s", tc.sec.Name, id, want)
			}
			sec := b.secret(t, id)
			if sec == nil {
				t.Fatalf("%s: no secret %s", tc.sec.Name, id)
			}
			if sec.GetLabels()[secretmanager.KeyRole] != string(tc.role) || sec.GetAnnotations()[secretmanager.KeyName] != tc.sec.Name {
				t.Errorf("%s: labels %v annotations %v", tc.sec.Name, sec.GetLabels(), sec.GetAnnotations())
			}
			got, err := s.Get(ctx, tc.sec.Namespace, tc.sec.Name)
			if err != nil || !bytes.Equal(got.Data["tls.key"], tc.sec.Data["tls.key"]) || !bytes.Equal(got.Data["tls.crt"], tc.sec.Data["tls.crt"]) {
				t.Errorf("%s: Get: %v", tc.sec.Name, err)
			}
		}
		if id := mustID(t, s, secretmanager.ClassTLS, "team-a", "web.example.com-tls"); id != s.Prefix()+"_tls_team-a_web_example_com-tls" {
			t.Errorf("ID %s", id)
		}
	})
}

// A secret whose content changes class moves: written in the new class,
// deleted from the old.
func TestClassMove(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		s := b.store(t, secretmanager.Options{})
		exp := time.Now().Add(90 * 24 * time.Hour)
		leaf, ca := tlsSecret("1", certPEM(t, exp, false)), tlsSecret("2", certPEM(t, exp, true))
		tlsID, icaID := mustID(t, s, secretmanager.ClassTLS, "default", "web-tls"), mustID(t, s, secretmanager.ClassIssuedCA, "default", "web-tls")
		if err := s.Put(ctx, leaf); err != nil {
			t.Fatal(err)
		}
		if err := s.Put(ctx, ca); err != nil {
			t.Fatal(err)
		}
		if b.secret(t, tlsID) != nil || b.secret(t, icaID) == nil {
			t.Errorf("after the CA Put: %s exists %v, %s exists %v; want only the second", tlsID, b.secret(t, tlsID) != nil, icaID, b.secret(t, icaID) != nil)
		}
		if got := revision(t, s, "default", "web-tls"); got != "2" {
			t.Errorf("Get revision %s, want 2", got)
		}
		if err := s.Put(ctx, leaf); err != nil {
			t.Fatal(err)
		}
		if b.secret(t, icaID) != nil || revision(t, s, "default", "web-tls") != "1" {
			t.Error("moving back to tls failed")
		}
		if err := s.Create(ctx, ca); !errors.Is(err, ports.ErrAlreadyExists) {
			t.Errorf("Create of CA content over a tls secret: %v, want ErrAlreadyExists", err)
		}
		if err := s.Delete(ctx, "default", "web-tls"); err != nil {
			t.Fatal(err)
		}
		if b.secret(t, tlsID) != nil || b.secret(t, icaID) != nil {
			t.Error("Delete left a secret")
		}
	})
}

// Operators' classes (ca, sc): read by the functions allowed to, never
// written or deleted; a store writes only the classes it serves.
func TestOperatorClassesAndFunctionClasses(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		all := b.store(t, secretmanager.Options{})
		prefix := all.Prefix()
		signer := b.store(t, secretmanager.Options{Prefix: prefix, Classes: secretmanager.SignerClasses()})
		worker := b.store(t, secretmanager.Options{Prefix: prefix, Classes: secretmanager.WorkerClasses(false)})
		workerCA := b.store(t, secretmanager.Options{Prefix: prefix, Classes: secretmanager.WorkerClasses(true)})
		exp := time.Now().Add(90 * 24 * time.Hour)
		installed := ports.Secret{Namespace: "cert-manager", Name: "my-ca", Data: map[string][]byte{
			"tls.crt": certPEM(t, exp, true), "tls.key": []byte("-----BEGIN PRIVATE KEY-----\n" + marker + "\n-----END PRIVATE KEY-----\n")}}
		// The operator installs it with the payload of docs/gcp-secret-manager.md.
		caID := mustID(t, all, secretmanager.ClassCA, "cert-manager", "my-ca")
		b.addRaw(t, caID, []byte(`{"tls.crt": `+jsonString(installed.Data["tls.crt"])+`, "tls.key": `+jsonString(installed.Data["tls.key"])+`}`))

		if got, err := signer.Get(ctx, "cert-manager", "my-ca"); err != nil || !bytes.Equal(got.Data["tls.key"], installed.Data["tls.key"]) {
			t.Errorf("signer Get of the installed CA: %v", err)
		}
		if _, err := worker.Get(ctx, "cert-manager", "my-ca"); !errors.Is(err, ports.ErrNotFound) {
			t.Errorf("worker Get of the installed CA: %v, want ErrNotFound (the worker never looks in class ca)", err)
		}
		for name, call := range map[string]func() error{
			"Put":      func() error { return all.Put(ctx, installed) },
			"Rollback": func() error { return all.Rollback(ctx, "cert-manager", "my-ca") },
		} {
			if err := call(); !errs.IsPermanent(err) || !strings.Contains(err.Error(), "operators own") {
				t.Errorf("%s over an operator's CA: %v, want a permanent error", name, err)
			}
		}
		if err := all.Delete(ctx, "cert-manager", "my-ca"); err != nil {
			t.Fatal(err)
		}
		if b.secret(t, caID) == nil {
			t.Error("Delete removed an operator's CA")
		}
		// CA content goes to class ica, which only a worker allowed to
		// manage CA certificates serves.
		issued := tlsSecret("1", certPEM(t, exp, true))
		if err := worker.Put(ctx, issued); !errs.IsPermanent(err) || !strings.Contains(err.Error(), "class ica") {
			t.Errorf("worker Put of a CA key pair: %v, want a permanent error naming class ica", err)
		}
		if err := signer.Put(ctx, tlsSecret("1", nil)); !errs.IsPermanent(err) || !strings.Contains(err.Error(), "class tls") {
			t.Errorf("signer Put of a key pair: %v, want a permanent error naming class tls", err)
		}
		if err := workerCA.Put(ctx, issued); err != nil {
			t.Fatal(err)
		}
		if got := revision(t, signer, "default", "web-tls"); got != "1" {
			t.Errorf("signer Get of the issued CA: revision %s", got)
		}
	})
}

func jsonString(b []byte) string {
	var sb strings.Builder
	sb.WriteByte('"')
	for _, c := range string(b) {
		switch c {
		case '\n':
			sb.WriteString(`\n`)
		case '"', '\\':
			sb.WriteRune('\\')
			sb.WriteRune(c)
		default:
			sb.WriteRune(c)
		}
	}
	sb.WriteByte('"')
	return sb.String()
}

// Managed labels are sanitised to Secret Manager's rules (the double
// refuses invalid ones as the service does); annotations keep the exact
// values; Options.Labels are added; operators' labels survive updates.
func TestLabelsAndAnnotations(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		s := b.store(t, secretmanager.Options{Labels: map[string]string{"team": "platform", "cost-center": "cc_42"}})
		exp := time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)
		longCert := strings.Repeat("Very.Long-Certificate_Name.", 4)
		sec := ports.Secret{Namespace: "team-a", Name: "www.example.com", Data: map[string][]byte{"tls.crt": certPEM(t, exp, false), "tls.key": []byte("k")},
			Annotations: map[string]string{
				api.AnnotationCertificateName: longCert,
				api.AnnotationIssuerName:      "Lets-Encrypt.Prod",
				api.AnnotationIssuerKind:      "ClusterIssuer",
				api.AnnotationRevision:        "12",
			}}
		if err := s.Create(ctx, sec); err != nil {
			t.Fatal(err)
		}
		id := mustID(t, s, secretmanager.ClassTLS, "team-a", "www.example.com")
		got := b.secret(t, id)
		wantLabels := map[string]string{
			secretmanager.KeyNamespace: "team-a", secretmanager.KeyName: "www_example_com",
			secretmanager.KeyCertificate: secretmanager.LabelValue(longCert), secretmanager.KeyIssuer: "clusterissuer_lets-encrypt_prod",
			secretmanager.KeyRevision: "12", secretmanager.KeyNotAfter: "2031-03-04t05_06_07z", secretmanager.KeyRole: "certificate",
			"team": "platform", "cost-center": "cc_42",
		}
		if !maps.Equal(got.GetLabels(), wantLabels) {
			t.Errorf("labels\n got %v\nwant %v", got.GetLabels(), wantLabels)
		}
		if l := got.GetLabels()[secretmanager.KeyCertificate]; len(l) != 63 || l != strings.ToLower(strings.ReplaceAll(longCert, ".", "_"))[:63] {
			t.Errorf("certificate label %q: want the lower-cased name, '.' as '_', cut at 63", l)
		}
		wantAnn := map[string]string{
			secretmanager.KeyNamespace: "team-a", secretmanager.KeyName: "www.example.com", secretmanager.KeyCertificate: longCert,
			secretmanager.KeyIssuer: "ClusterIssuer/Lets-Encrypt.Prod", secretmanager.KeyRevision: "12", secretmanager.KeyNotAfter: "2031-03-04T05:06:07Z", secretmanager.KeyRole: "certificate",
		}
		if !maps.Equal(got.GetAnnotations(), wantAnn) {
			t.Errorf("annotations\n got %v\nwant %v", got.GetAnnotations(), wantAnn)
		}
		// An operator's label and annotation survive a renewal, which
		// updates the managed ones.
		if _, err := b.api.UpdateSecret(ctx, &smpb.UpdateSecretRequest{
			Secret: &smpb.Secret{Name: got.GetName(), Labels: mergeMaps(got.GetLabels(), map[string]string{"owner": "ops"}),
				Annotations: mergeMaps(got.GetAnnotations(), map[string]string{"runbook": "https://example.com/rb"})},
			UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"labels", "annotations"}},
		}); err != nil {
			t.Fatal(err)
		}
		sec.Annotations[api.AnnotationRevision] = "13"
		if err := s.Put(ctx, sec); err != nil {
			t.Fatal(err)
		}
		got = b.secret(t, id)
		if got.GetLabels()["owner"] != "ops" || got.GetAnnotations()["runbook"] == "" || got.GetLabels()[secretmanager.KeyRevision] != "13" || got.GetAnnotations()[secretmanager.KeyRevision] != "13" {
			t.Errorf("after renewal: labels %v annotations %v", got.GetLabels(), got.GetAnnotations())
		}
	})
}

func mergeMaps(a, b map[string]string) map[string]string {
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}

// The customer-managed key reaches the replication settings of new
// secrets, and the versions are encrypted with it.
func TestCMEK(t *testing.T) {
	t.Run("double", func(t *testing.T) {
		b := newDoubleBackend(t)
		ctx := context.Background()
		key := "projects/kms-proj/locations/global/keyRings/certfn/cryptoKeys/secrets"
		s := b.store(t, secretmanager.Options{KMSKeyName: key})
		if err := s.Create(ctx, tlsSecret("1", nil)); err != nil {
			t.Fatal(err)
		}
		id := mustID(t, s, secretmanager.ClassTLS, "default", "web-tls")
		if got := b.secret(t, id).GetReplication().GetAutomatic().GetCustomerManagedEncryption().GetKmsKeyName(); got != key {
			t.Errorf("automatic replication key %q, want %q", got, key)
		}
		vs := b.fake.Versions(id)
		if len(vs) != 1 || vs[0].GetReplicationStatus().GetAutomatic().GetCustomerManagedEncryption().GetKmsKeyVersionName() != key+"/cryptoKeyVersions/1" {
			t.Errorf("version replication status %v", vs)
		}

		ew1 := "projects/kms-proj/locations/europe-west1/keyRings/certfn/cryptoKeys/secrets"
		s2 := b.store(t, secretmanager.Options{Replicas: []secretmanager.Replica{{Location: "europe-west1", KMSKeyName: ew1}, {Location: "europe-west4"}}})
		if err := s2.Create(ctx, tlsSecret("1", nil)); err != nil {
			t.Fatal(err)
		}
		reps := b.secret(t, mustID(t, s2, secretmanager.ClassTLS, "default", "web-tls")).GetReplication().GetUserManaged().GetReplicas()
		if len(reps) != 2 || reps[0].GetLocation() != "europe-west1" || reps[0].GetCustomerManagedEncryption().GetKmsKeyName() != ew1 ||
			reps[1].GetLocation() != "europe-west4" || reps[1].GetCustomerManagedEncryption() != nil {
			t.Errorf("user-managed replicas %v", reps)
		}
	})
	t.Run("service", func(t *testing.T) {
		b := newServiceBackend(t)
		key := os.Getenv(EnvKMSKey)
		if key == "" {
			t.Skipf("%s is not set: the CMEK variant on the service needs a key Secret Manager may use", EnvKMSKey)
		}
		s := b.store(t, secretmanager.Options{KMSKeyName: key})
		if err := s.Create(context.Background(), tlsSecret("1", nil)); err != nil {
			t.Fatal(err)
		}
		if got := b.secret(t, mustID(t, s, secretmanager.ClassTLS, "default", "web-tls")).GetReplication().GetAutomatic().GetCustomerManagedEncryption().GetKmsKeyName(); got != key {
			t.Errorf("replication key %q, want %q", got, key)
		}
	})
}

// A secret without any version (a Create that died between CreateSecret
// and AddSecretVersion) reads as missing; Create refuses it while it may be
// a concurrent Create in progress (ShellGrace) and takes it over after;
// Put fills it.
func TestEmptySecret(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		s := b.store(t, secretmanager.Options{})
		id := mustID(t, s, secretmanager.ClassTLS, "default", "web-tls")
		b.addRaw(t, id, nil)
		if _, err := s.Get(ctx, "default", "web-tls"); !errors.Is(err, ports.ErrNotFound) {
			t.Errorf("Get of a secret without versions: %v, want ErrNotFound", err)
		}
		if err := s.Create(ctx, tlsSecret("1", nil)); !errors.Is(err, ports.ErrAlreadyExists) {
			t.Errorf("Create over a fresh empty secret: %v, want ErrAlreadyExists", err)
		}
		later := b.store(t, secretmanager.Options{Prefix: s.Prefix(), Clock: clock.NewFake(time.Now().Add(secretmanager.ShellGrace + time.Minute))})
		if err := later.Create(ctx, tlsSecret("2", nil)); err != nil {
			t.Fatalf("Create over an abandoned empty secret: %v", err)
		}
		if got := revision(t, s, "default", "web-tls"); got != "2" {
			t.Errorf("revision %s, want 2", got)
		}

		id2 := mustID(t, s, secretmanager.ClassTLS, "default", "other")
		b.addRaw(t, id2, nil)
		other := tlsSecret("3", nil)
		other.Name = "other"
		if err := s.Put(ctx, other); err != nil {
			t.Fatal(err)
		}
		if got := revision(t, s, "default", "other"); got != "3" {
			t.Errorf("Put into an empty secret: revision %s", got)
		}
	})
}

// Concurrent Puts of different content: each succeeds or fails
// transiently, the secret ends with one of them, and the next write
// leaves KeepVersions versions.
func TestConcurrentPuts(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		s := b.store(t, secretmanager.Options{})
		if err := s.Create(ctx, tlsSecret("0", nil)); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errc := make(chan error, 6)
		for i := 1; i <= 6; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errc <- s.Put(ctx, tlsSecret(fmt.Sprint(i), nil))
			}()
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			if err != nil && errs.IsPermanent(err) {
				t.Errorf("concurrent Put: permanent error %v", err)
			}
		}
		if got := revision(t, s, "default", "web-tls"); got < "1" || got > "6" {
			t.Errorf("revision %q after the race", got)
		}
		if err := s.Put(ctx, tlsSecret("7", nil)); err != nil {
			t.Fatal(err)
		}
		id := mustID(t, s, secretmanager.ClassTLS, "default", "web-tls")
		vs := b.versions(t, id)
		newest := int64(0)
		for n := range vs {
			newest = max(newest, n)
		}
		if got := live(vs); len(got) != 2 || got[1] != newest {
			t.Errorf("versions not destroyed %v, want 2 ending with the newest, %d", got, newest)
		}
	})
}

// The payload is the AWS adapter's, byte for byte.
func TestPayloadLayout(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		s := b.store(t, secretmanager.Options{})
		if err := s.Create(context.Background(), awsLayoutSecret); err != nil {
			t.Fatal(err)
		}
		got := b.raw(t, mustID(t, s, secretmanager.ClassTLS, "team-a", "api-tls"), "latest")
		if string(got) != awsLayoutPayload {
			t.Errorf("payload\n got %s\nwant %s", got, awsLayoutPayload)
		}
	})
}

// awsLayoutSecret and awsLayoutPayload are the example of
// adapters/aws/secrets' TestPayloadLayout.
var awsLayoutSecret = ports.Secret{Namespace: "team-a", Name: "api-tls",
	Data: map[string][]byte{
		"tls.crt":      []byte("-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----\n"),
		"ca.crt":       {},
		"keystore.p12": {0x30, 0x82, 0xff, 0x00, 0xfe},
	},
	Labels:      map[string]string{"app": "api"},
	Annotations: map[string]string{api.AnnotationCertificateName: "api"},
}

const awsLayoutPayload = `{"..metadata":{"labels":{"app":"api"},"annotations":{"cert-manager.io/certificate-name":"api"},"base64":["keystore.p12"]},` +
	`"ca.crt":"","keystore.p12":"MIL/AP4=","tls.crt":"-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----\n"}`

// A Certificate's key pair never replaces what holds no key pair (an ACME
// account key, DNS-01 credentials, a password: role acme-account) or a
// next private key: the Put is refused permanently and the secret keeps
// its content. An empty secret becomes a key pair as before.
func TestPutNeverReplacesAnotherRole(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		s := b.store(t, secretmanager.Options{})
		pair := tlsSecret("1", certPEM(t, time.Now().Add(90*24*time.Hour), false))
		for _, tc := range []struct {
			name    string
			stored  ports.Secret
			refused bool
		}{
			{"an ACME account key", ports.Secret{Data: map[string][]byte{"tls.key": []byte("account key")}}, true},
			{"DNS-01 credentials", ports.Secret{Data: map[string][]byte{"api-token": []byte("token")}}, true},
			{"a next private key", ports.Secret{Data: map[string][]byte{"tls.key": []byte("k")}, Labels: map[string]string{api.LabelNextPrivateKey: "true"}}, true},
			{"an empty secret", ports.Secret{Data: map[string][]byte{}}, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				tc.stored.Namespace, tc.stored.Name = pair.Namespace, pair.Name
				if err := s.Delete(ctx, pair.Namespace, pair.Name); err != nil {
					t.Fatal(err)
				}
				if err := s.Create(ctx, tc.stored); err != nil {
					t.Fatal(err)
				}
				err := s.Put(ctx, pair)
				got, gerr := s.Get(ctx, pair.Namespace, pair.Name)
				if gerr != nil {
					t.Fatal(gerr)
				}
				if !tc.refused {
					if err != nil || got.Data["tls.crt"] == nil {
						t.Fatalf("Put = %v, want the key pair written", err)
					}
					return
				}
				if !errs.IsPermanent(err) || !strings.Contains(err.Error(), "does not replace it with a secret of role certificate") {
					t.Fatalf("Put = %v, want a permanent refusal naming the roles", err)
				}
				if len(got.Data) != len(tc.stored.Data) || got.Data["tls.crt"] != nil {
					t.Fatalf("stored secret changed")
				}
			})
		}
	})
}
