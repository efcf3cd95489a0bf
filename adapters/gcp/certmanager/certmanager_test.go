package certmanager

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	certificatemanager "cloud.google.com/go/certificatemanager/apiv1"
	cmpb "cloud.google.com/go/certificatemanager/apiv1/certificatemanagerpb"
	"google.golang.org/api/option"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/errs"
)

// sends counts the writes the double received (-1 on a real project).
func (b *backend) sends() int {
	if b.double == nil {
		return -1
	}
	return b.double.Calls("CreateCertificate") + b.double.Calls("UpdateCertificate")
}

// TestImportContract runs every case of ports.CertificateImporter's
// contract (core/ports/certimport.go) on the double and, when
// CERTFN_GCP_TEST_PROJECT is set, on real Certificate Manager.
func TestImportContract(t *testing.T) {
	legacy := func(o *Options) { o.NamePrefix = "legacy" }
	cases := []struct {
		name string
		// setup prepares the backend and the request; it returns the
		// reference of the earlier import ("" when there is none).
		setup func(t *testing.T, b *backend, kp *keyPair, im *Importer) string
		// want is the reference Import must return: "derived" (im.Name),
		// "earlier" (setup's) or "new" (derived, and not the earlier one).
		want     string
		imported bool
		sends    int // writes (create or update) the double receives
	}{
		{
			name:  "Ref empty, nothing earlier: a new certificate at the derived name",
			setup: func(*testing.T, *backend, *keyPair, *Importer) string { return "" },
			want:  "derived", imported: true, sends: 1,
		},
		{
			name: "Ref set, same serial: nothing sent",
			setup: func(t *testing.T, b *backend, kp *keyPair, im *Importer) string {
				kp.req.Ref = b.mustImport(t, im, kp.req).Ref
				return kp.req.Ref
			},
			want: "earlier", imported: false, sends: 0,
		},
		{
			name: "Ref set, renewed: re-imported in place",
			setup: func(t *testing.T, b *backend, kp *keyPair, im *Importer) string {
				kp.req.Ref = b.mustImport(t, im, kp.req).Ref
				kp.renew(t)
				return kp.req.Ref
			},
			want: "earlier", imported: true, sends: 1,
		},
		{
			name: "Ref empty, unrecorded earlier import with the same serial: found by its derived name, nothing sent",
			setup: func(t *testing.T, b *backend, kp *keyPair, im *Importer) string {
				return b.mustImport(t, im, kp.req).Ref
			},
			want: "earlier", imported: false, sends: 0,
		},
		{
			name: "Ref empty, unrecorded earlier import, renewed: updated in place",
			setup: func(t *testing.T, b *backend, kp *keyPair, im *Importer) string {
				ref := b.mustImport(t, im, kp.req).Ref
				kp.renew(t)
				return ref
			},
			want: "earlier", imported: true, sends: 1,
		},
		{
			name: "Ref empty, unrecorded import under another name prefix: found by its owner label",
			setup: func(t *testing.T, b *backend, kp *keyPair, _ *Importer) string {
				ref := b.mustImport(t, b.importer(t, legacy), kp.req).Ref
				kp.renew(t)
				return ref
			},
			want: "earlier", imported: true, sends: 1,
		},
		{
			name: "Ref set under another name prefix, same serial: nothing sent",
			setup: func(t *testing.T, b *backend, kp *keyPair, _ *Importer) string {
				kp.req.Ref = b.mustImport(t, b.importer(t, legacy), kp.req).Ref
				return kp.req.Ref
			},
			want: "earlier", imported: false, sends: 0,
		},
		{
			name: "Ref set but deleted: created again",
			setup: func(t *testing.T, b *backend, kp *keyPair, im *Importer) string {
				kp.req.Ref = b.mustImport(t, im, kp.req).Ref
				b.delete(t, kp.req.Ref)
				return kp.req.Ref
			},
			want: "derived", imported: true, sends: 1,
		},
		{
			name: "Ref set under another name prefix but deleted: a new certificate",
			setup: func(t *testing.T, b *backend, kp *keyPair, _ *Importer) string {
				kp.req.Ref = b.mustImport(t, b.importer(t, legacy), kp.req).Ref
				b.delete(t, kp.req.Ref)
				return kp.req.Ref
			},
			want: "new", imported: true, sends: 1,
		},
		{
			name: "Ref in another location (Options.Location changed): a new certificate here",
			setup: func(t *testing.T, b *backend, kp *keyPair, _ *Importer) string {
				other := "asia-east1"
				if b.location == other {
					other = "global"
				}
				kp.req.Ref = "projects/" + b.project + "/locations/" + other + "/certificates/" + CertificateID(DefaultNamePrefix, b.deployment, kp.req.Owner)
				return kp.req.Ref
			},
			want: "new", imported: true, sends: 1,
		},
		{
			name: "Ref is an ACM ARN (a status copied from AWS): a new certificate",
			setup: func(t *testing.T, b *backend, kp *keyPair, _ *Importer) string {
				kp.req.Ref = "arn:aws:acm:eu-west-1:123456789012:certificate/0c5e0000-0000-4000-8000-000000000001"
				return kp.req.Ref
			},
			want: "new", imported: true, sends: 1,
		},
		{
			name: "another Certificate's import of the same names is not taken",
			setup: func(t *testing.T, b *backend, kp *keyPair, im *Importer) string {
				other := kp.req
				other.Owner.Name += "-other"
				return b.mustImport(t, im, other).Ref
			},
			want: "new", imported: true, sends: 1,
		},
		{
			name: "another deployment's import of the same Certificate is not taken",
			setup: func(t *testing.T, b *backend, kp *keyPair, _ *Importer) string {
				return b.mustImport(t, b.importer(t, func(o *Options) { o.Deployment += "-other" }), kp.req).Ref
			},
			want: "new", imported: true, sends: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, b *backend) {
				im := b.importer(t)
				kp := issue(t)
				earlier := tc.setup(t, b, kp, im)
				derived := im.Name(kp.req.Owner)
				before := b.sends()
				res, sawPending, err := b.settle(t, im, kp.req)
				if err != nil {
					t.Fatalf("Import: %v", err)
				}
				want := map[string]string{"derived": derived, "earlier": earlier, "new": derived}[tc.want]
				if res.Ref != want || (tc.want == "new" && res.Ref == earlier) {
					t.Fatalf("Import = %+v; want reference %s (%s; earlier %q)", res, want, tc.want, earlier)
				}
				if tc.imported && !res.Imported && !sawPending || !tc.imported && res.Imported {
					t.Fatalf("Import = %+v; want Imported %v", res, tc.imported)
				}
				if b.double != nil {
					if got := b.sends() - before; got != tc.sends {
						t.Fatalf("the double received %d creates/updates; want %d", got, tc.sends)
					}
					if b.double.Running() != 0 {
						t.Fatalf("%d operations still running", b.double.Running())
					}
				}
				c := b.get(t, res.Ref)
				if c == nil {
					t.Fatalf("%s does not exist", res.Ref)
				}
				leaf, chain := heldLeaf(c)
				if leaf != kp.leaf || !strings.HasSuffix(chain, strings.TrimSpace(string(kp.ca.PEM))) {
					t.Fatalf("%s holds leaf %q chain %q; want the imported leaf and the CA after it", res.Ref, leaf, chain)
				}
				if got := c.GetLabels()[LabelOwner]; got != OwnerHash(b.deployment, kp.req.Owner) {
					t.Fatalf("label %s = %q; want the owner's hash", LabelOwner, got)
				}
			})
		})
	}
}

// TestNewCertificate: a first import carries the labels, description and
// scope, under the derived ID.
func TestNewCertificate(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		im := b.importer(t)
		kp := issue(t)
		res := b.mustImport(t, im, kp.req)
		c := b.get(t, res.Ref)
		want := map[string]string{
			LabelDeployment: LabelValue(b.deployment), LabelNamespace: kp.crt.Namespace, LabelCertificate: kp.crt.Name,
			LabelOwner: OwnerHash(b.deployment, kp.req.Owner), "team": "web",
		}
		for k, v := range want {
			if c.GetLabels()[k] != v {
				t.Errorf("label %s = %q; want %q (labels %v)", k, c.GetLabels()[k], v, c.GetLabels())
			}
		}
		if !strings.Contains(c.GetDescription(), kp.req.Owner.String()) || !strings.Contains(c.GetDescription(), b.deployment) {
			t.Errorf("description %q names neither the Certificate nor the deployment", c.GetDescription())
		}
		if c.GetScope() != cmpb.Certificate_DEFAULT || c.GetManaged() != nil {
			t.Errorf("scope %v, managed %v; want a DEFAULT self-managed certificate", c.GetScope(), c.GetManaged())
		}
		if want := "projects/" + b.project + "/locations/" + b.location + "/certificates/" + CertificateID(DefaultNamePrefix, b.deployment, kp.req.Owner); res.Ref != want {
			t.Errorf("Ref = %s; want %s", res.Ref, want)
		}
	})
}

// TestForeignCertificatesAreNotOverwritten: a certificate certfn did not
// create for this owner is never updated, whether the request names it or
// it sits at the derived name.
func TestForeignCertificatesAreNotOverwritten(t *testing.T) {
	cases := []struct {
		name       string
		doubleOnly bool
		setup      func(t *testing.T, b *backend, kp *keyPair, im *Importer) string // returns the foreign certificate
	}{
		{name: "the derived name holds a certificate without certfn's labels", setup: func(t *testing.T, b *backend, kp *keyPair, im *Importer) string {
			other := issue(t)
			return b.create(t, CertificateID(DefaultNamePrefix, b.deployment, kp.req.Owner), map[string]string{"owner": "someone"}, other)
		}},
		{name: "Ref names another deployment's import", setup: func(t *testing.T, b *backend, kp *keyPair, im *Importer) string {
			kp.req.Ref = b.mustImport(t, b.importer(t, func(o *Options) { o.Deployment += "-other" }), kp.req).Ref
			kp.renew(t)
			return kp.req.Ref
		}},
		{name: "the derived name holds a Google-managed certificate", doubleOnly: true, setup: func(t *testing.T, b *backend, kp *keyPair, im *Importer) string {
			name := im.Name(kp.req.Owner)
			b.double.AddManaged(name, im.labels(kp.req.Owner))
			return name
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := eachBackend
			if tc.doubleOnly {
				run = func(t *testing.T, f func(*testing.T, *backend)) { f(t, newDoubleBackend(t)) }
			}
			run(t, func(t *testing.T, b *backend) {
				im := b.importer(t)
				kp := issue(t)
				foreign := tc.setup(t, b, kp, im)
				before := b.get(t, foreign)
				_, err := im.Import(context.Background(), kp.req)
				if !errs.IsPermanent(err) || !strings.Contains(err.Error(), foreign) {
					t.Fatalf("Import = %v; want a permanent error naming %s", err, foreign)
				}
				if after := b.get(t, foreign); after.GetPemCertificate() != before.GetPemCertificate() {
					t.Fatalf("%s was overwritten", foreign)
				}
			})
		})
	}
}

// TestErrorsAreClassified: the certificate or key refused, a missing
// permission or project are permanent; server errors, throttling and
// quotas are transient; no error quotes the private key.
func TestErrorsAreClassified(t *testing.T) {
	keyLine := func(kp *keyPair, i int) string { return strings.Split(string(kp.req.PrivateKey), "\n")[i] }
	cases := []struct {
		name       string
		realToo    bool // runs on a real project too (no injection)
		renewal    bool // fail the re-import of a renewal rather than the first import
		prepare    func(t *testing.T, b *backend, kp *keyPair)
		permanent  bool
		want       string
		wantPolled bool
	}{
		{name: "certificate not PEM", realToo: true, prepare: func(_ *testing.T, _ *backend, kp *keyPair) { kp.req.Certificate = []byte("junk") },
			permanent: true, want: "the certificate is not PEM"},
		{name: "no private key", realToo: true, prepare: func(_ *testing.T, _ *backend, kp *keyPair) { kp.req.PrivateKey = nil },
			permanent: true, want: "no private key"},
		{name: "key of another certificate", realToo: true, prepare: func(t *testing.T, _ *backend, kp *keyPair) {
			kp.req.PrivateKey = certtest.KeyPEM(t, certtest.Key(t, kp.crt.Spec.PrivateKey))
		}, permanent: true, want: "InvalidArgument"},
		{name: "key of another certificate, on renewal", realToo: true, renewal: true, prepare: func(t *testing.T, _ *backend, kp *keyPair) {
			kp.req.PrivateKey = certtest.KeyPEM(t, certtest.Key(t, kp.crt.Spec.PrivateKey))
		}, permanent: true, want: "InvalidArgument"},
		{name: "permission denied", prepare: func(_ *testing.T, b *backend, _ *keyPair) {
			b.double.FailNext(1, "CreateCertificate", codes.PermissionDenied, "Permission 'certificatemanager.certs.create' denied")
		}, permanent: true, want: "certificatemanager.certs.create"},
		{name: "credentials refused", prepare: func(_ *testing.T, b *backend, _ *keyPair) {
			b.double.FailNext(1, "GetCertificate", codes.Unauthenticated, "Request had invalid authentication credentials")
		}, permanent: true, want: "Unauthenticated"},
		{name: "project or location not found", prepare: func(_ *testing.T, b *backend, _ *keyPair) {
			b.double.FailNext(1, "ListCertificates", codes.NotFound, "Location not found")
		}, permanent: true, want: "Location not found"},
		{name: "server error", prepare: func(_ *testing.T, b *backend, _ *keyPair) {
			b.double.FailNext(1, "CreateCertificate", codes.Internal, "internal error")
		}, want: "internal error"},
		{name: "rate limit or quota", renewal: true, prepare: func(_ *testing.T, b *backend, _ *keyPair) {
			b.double.FailNext(1, "UpdateCertificate", codes.ResourceExhausted, "Quota exceeded")
		}, want: "Quota exceeded"},
		{name: "concurrent change", renewal: true, prepare: func(_ *testing.T, b *backend, _ *keyPair) {
			b.double.FailNext(1, "UpdateCertificate", codes.FailedPrecondition, "resource is being modified")
		}, want: "being modified"},
		{name: "operation failed: refused", prepare: func(_ *testing.T, b *backend, _ *keyPair) {
			b.double.FailNextOperation(codes.InvalidArgument, "certificate chain invalid")
		}, permanent: true, want: "certificate chain invalid", wantPolled: true},
		{name: "operation failed: server error", prepare: func(_ *testing.T, b *backend, _ *keyPair) {
			b.double.FailNextOperation(codes.Internal, "backend failure")
		}, want: "backend failure", wantPolled: true},
		{name: "operation could not be polled", prepare: func(_ *testing.T, b *backend, _ *keyPair) {
			b.double.FailNext(1, "GetOperation", codes.Internal, "poll failed")
		}, want: "import in progress", wantPolled: true},
		{name: "Ed25519 key (the double's load-balancer key types)", prepare: func(t *testing.T, _ *backend, kp *keyPair) {
			kp.crt.Spec.PrivateKey = &api.CertificatePrivateKey{Algorithm: api.Ed25519KeyAlgorithm}
			kp.renew(t)
		}, permanent: true, want: "Unsupported private key type"},
		{name: "a refusal quoting the key is withheld", prepare: func(_ *testing.T, b *backend, kp *keyPair) {
			b.double.FailNext(1, "CreateCertificate", codes.InvalidArgument, "bad key near "+keyLine(kp, 1))
		}, permanent: true, want: "message withheld"},
		{name: "a list error quoting the key is withheld, transient", prepare: func(_ *testing.T, b *backend, kp *keyPair) {
			b.double.FailNext(1, "ListCertificates", codes.Internal, "echo "+keyLine(kp, 2))
		}, want: "message withheld"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := func(t *testing.T, f func(*testing.T, *backend)) { f(t, newDoubleBackend(t)) }
			if tc.realToo {
				run = eachBackend
			}
			run(t, func(t *testing.T, b *backend) {
				im := b.importer(t)
				kp := issue(t)
				if tc.renewal {
					kp.req.Ref = b.mustImport(t, im, kp.req).Ref
					kp.renew(t)
				}
				tc.prepare(t, b, kp)
				polls := 0
				if b.double != nil {
					polls = b.double.Calls("GetOperation")
				}
				_, err := im.Import(context.Background(), kp.req)
				if err == nil || errs.IsPermanent(err) != tc.permanent || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v; want permanent=%v containing %q", err, tc.permanent, tc.want)
				}
				if b.double != nil && tc.wantPolled != (b.double.Calls("GetOperation") > polls) {
					t.Fatalf("GetOperation called: %v; want %v", b.double.Calls("GetOperation") > polls, tc.wantPolled)
				}
				for _, line := range strings.Split(string(kp.req.PrivateKey), "\n") {
					if len(line) > 16 && !strings.HasPrefix(line, "-----") && strings.Contains(err.Error(), line) {
						t.Fatalf("error quotes the private key: %v", err)
					}
				}
			})
		})
	}
}

// TestPendingOperations: an operation not done is a transient ErrPending
// with the suggested delay and the operation's name; the next attempt
// needs no operation name and settles without sending anything again.
func TestPendingOperations(t *testing.T) {
	ctx := context.Background()
	b := newDoubleBackend(t)
	im := b.importer(t, func(o *Options) { o.PendingRetry = 7 * time.Second })
	kp := issue(t)
	b.double.SetOperationPolls(5)

	_, err := im.Import(ctx, kp.req)
	if d, ok := errs.SuggestedDelay(err); !errors.Is(err, ErrPending) || errs.IsPermanent(err) || !ok || d != 7*time.Second ||
		!strings.Contains(err.Error(), "/operations/") {
		t.Fatalf("first Import = %v; want a transient ErrPending naming the operation, retry after 7s", err)
	}
	if b.get(t, im.Name(kp.req.Owner)) != nil {
		t.Fatal("the certificate is readable before its create is done")
	}
	if _, err := im.Import(ctx, kp.req); !errors.Is(err, ErrPending) {
		t.Fatalf("Import while the create runs = %v; want ErrPending", err)
	}
	if n := b.double.Calls("CreateCertificate"); n != 2 {
		t.Fatalf("CreateCertificate calls = %d; want 2 (the second one AlreadyExists)", n)
	}
	b.double.CompleteAll()
	res, err := im.Import(ctx, kp.req)
	if err != nil || res.Imported || res.Ref != im.Name(kp.req.Owner) {
		t.Fatalf("Import once the create is done = %+v, %v; want the derived name, nothing sent", res, err)
	}

	kp.req.Ref = res.Ref
	old := kp.leaf
	kp.renew(t)
	if _, err := im.Import(ctx, kp.req); !errors.Is(err, ErrPending) {
		t.Fatalf("renewal = %v; want ErrPending", err)
	}
	if leaf, _ := heldLeaf(b.get(t, res.Ref)); leaf != old {
		t.Fatal("the update took effect before its operation was done")
	}
	b.double.CompleteAll()
	res, err = im.Import(ctx, kp.req)
	if err != nil || res.Imported || res.Ref != kp.req.Ref {
		t.Fatalf("renewal once the update is done = %+v, %v; want the same name, nothing sent", res, err)
	}
	if c, _ := b.double.Get(res.Ref); c.Updates != 1 {
		t.Fatalf("updates = %d; want 1", c.Updates)
	}
}

// TestSearchIsBestEffort: without the list permission, or with a filter
// the service refuses, a first import still creates the derived
// certificate.
func TestSearchIsBestEffort(t *testing.T) {
	for _, code := range []codes.Code{codes.PermissionDenied, codes.InvalidArgument} {
		b := newDoubleBackend(t)
		b.double.FailNext(1, "ListCertificates", code, "no")
		im := b.importer(t)
		kp := issue(t)
		res, err := im.Import(context.Background(), kp.req)
		if err != nil || !res.Imported || res.Ref != im.Name(kp.req.Owner) || b.double.Calls("ListCertificates") != 1 {
			t.Fatalf("%v on the search: Import = %+v, %v; want the derived certificate created", code, res, err)
		}
	}
}

// TestOperationsDoneAtOnce: an operation done in the answer is not polled.
func TestOperationsDoneAtOnce(t *testing.T) {
	b := newDoubleBackend(t)
	b.double.SetOperationPolls(0)
	im := b.importer(t)
	kp := issue(t)
	if res := b.mustImport(t, im, kp.req); !res.Imported {
		t.Fatalf("Import = %+v; want imported", res)
	}
	if n := b.double.Calls("GetOperation"); n != 0 {
		t.Fatalf("GetOperation calls = %d; want 0", n)
	}
}

// TestSettledCostsOneRead: a recorded certificate that holds the serial
// costs one GetCertificate.
func TestSettledCostsOneRead(t *testing.T) {
	b := newDoubleBackend(t)
	im := b.importer(t)
	kp := issue(t)
	kp.req.Ref = b.mustImport(t, im, kp.req).Ref
	gets, lists, sends := b.double.Calls("GetCertificate"), b.double.Calls("ListCertificates"), b.sends()
	if res := b.mustImport(t, im, kp.req); res.Imported {
		t.Fatalf("Import = %+v; want nothing sent", res)
	}
	if g, l, s := b.double.Calls("GetCertificate")-gets, b.double.Calls("ListCertificates")-lists, b.sends()-sends; g != 1 || l != 0 || s != 0 {
		t.Fatalf("calls: %d gets, %d lists, %d writes; want 1, 0, 0", g, l, s)
	}
}

// TestRegionalLocation: a regional importer creates regional certificates.
func TestRegionalLocation(t *testing.T) {
	b := newDoubleBackend(t)
	im := b.importer(t, func(o *Options) { o.Location = "europe-west1" })
	kp := issue(t)
	res := b.mustImport(t, im, kp.req)
	if !strings.HasPrefix(res.Ref, "projects/"+doubleProject+"/locations/europe-west1/certificates/") {
		t.Fatalf("Ref = %s; want a certificate in europe-west1", res.Ref)
	}
}

// TestNoKeyInClientLogs: NewClient's client does not log requests even
// when asked to; the client library's own logging would print the key.
func TestNoKeyInClientLogs(t *testing.T) {
	d := newDoubleBackend(t).double
	kp := issue(t)
	keyLine := strings.Split(string(kp.req.PrivateKey), "\n")[1]
	var buf bytes.Buffer
	debug := option.WithLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))

	ours, err := NewClient(context.Background(), append(d.ClientOptions(t), debug)...)
	if err != nil {
		t.Fatal(err)
	}
	defer ours.Close()
	im, err := New(ours, Options{Project: doubleProject, Deployment: "certfn-test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := im.Import(context.Background(), kp.req); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), keyLine) || strings.Contains(buf.String(), "pem_private_key") {
		t.Fatalf("NewClient's client logged the request: %.300s", buf.String())
	}

	// The guard is needed: the library's client logs the key at debug.
	plain, err := certificatemanager.NewClient(context.Background(), append(d.ClientOptions(t), debug)...)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	_, _ = plain.CreateCertificate(context.Background(), &cmpb.CreateCertificateRequest{
		Parent: "projects/" + doubleProject + "/locations/global", CertificateId: "logged",
		Certificate: &cmpb.Certificate{Type: &cmpb.Certificate_SelfManaged{SelfManaged: selfManaged(kp.req)}},
	})
	if !strings.Contains(buf.String(), keyLine) {
		t.Fatal("the library's client did not log the key at debug level: the check above proves nothing (has the library's logging changed?)")
	}
}

func TestNew(t *testing.T) {
	b := newDoubleBackend(t)
	ok := Options{Project: doubleProject, Deployment: "prod"}
	for _, tc := range []struct {
		name string
		api  API
		edit func(*Options)
		want string
	}{
		{"no client", nil, nil, "no client"},
		{"no project", b.client, func(o *Options) { o.Project = "" }, "project"},
		{"bad project", b.client, func(o *Options) { o.Project = "My Project" }, "project"},
		{"no deployment", b.client, func(o *Options) { o.Deployment = " " }, LabelDeployment},
		{"bad location", b.client, func(o *Options) { o.Location = "Europe West" }, "location"},
		{"bad prefix", b.client, func(o *Options) { o.NamePrefix = "9lives" }, "name prefix"},
		{"reserved label", b.client, func(o *Options) { o.Labels = map[string]string{LabelOwner: "x"} }, "certfn-"},
		{"bad label key", b.client, func(o *Options) { o.Labels = map[string]string{"Team": "x"} }, "label key"},
		{"bad label value", b.client, func(o *Options) { o.Labels = map[string]string{"team": "Web Team"} }, "value"},
		{"ALL_REGIONS outside global", b.client, func(o *Options) { o.Location, o.Scope = "europe-west1", cmpb.Certificate_ALL_REGIONS }, "ALL_REGIONS"},
	} {
		opts := ok
		if tc.edit != nil {
			tc.edit(&opts)
		}
		if _, err := New(tc.api, opts); !errs.IsPermanent(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New = %v; want a permanent error containing %q", tc.name, err, tc.want)
		}
	}
	im, err := New(b.client, Options{Project: " 123456789012 ", Deployment: "prod"})
	if err != nil || im.opts.Location != DefaultLocation || im.opts.NamePrefix != DefaultNamePrefix || im.opts.PendingRetry != defaultPendingRetry {
		t.Fatalf("New with defaults = %+v, %v", im, err)
	}
}

func TestNames(t *testing.T) {
	owner := api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "web"}
	id := CertificateID("certfn", "prod", owner)
	if !strings.HasPrefix(id, "certfn-default-web-") || len(id) != len("certfn-default-web-")+12 {
		t.Errorf("CertificateID = %q", id)
	}
	long := api.Key{Kind: api.KindCertificate, Namespace: strings.Repeat("n", 63), Name: strings.Repeat("a.", 100) + "b"}
	for _, tc := range []struct {
		prefix, deployment string
		owner              api.Key
	}{
		{"certfn", "prod", owner}, {"certfn", "prod", long}, {"x", "d", long},
		{"abcdefghijklmnopqrst", "prod", long}, {"certfn", "prod", api.Key{Namespace: "--", Name: ".."}},
	} {
		got := CertificateID(tc.prefix, tc.deployment, tc.owner)
		if len(got) > maxIDLen || !nameRe.MatchString("projects/p/locations/global/certificates/"+got) || strings.Contains(got, "--") {
			t.Errorf("CertificateID(%q, %q, %v) = %q: not a valid ID", tc.prefix, tc.deployment, tc.owner, got)
		}
		if got != CertificateID(tc.prefix, tc.deployment, tc.owner) {
			t.Errorf("CertificateID is not stable")
		}
	}
	distinct := map[string]bool{}
	for _, k := range []api.Key{owner, {Namespace: "default", Name: "web2"}, {Namespace: "default-web", Name: ""}, {Namespace: "a.b", Name: "c"}, {Namespace: "a-b", Name: "c"}} {
		distinct[CertificateID("certfn", "prod", k)] = true
	}
	if len(distinct) != 5 || CertificateID("certfn", "prod", owner) == CertificateID("certfn", "staging", owner) {
		t.Errorf("CertificateID collides: %v", distinct)
	}
	for in, want := range map[string]string{
		"default": "default", "My.App_1": "my-app_1", "": "", strings.Repeat("x", 70): strings.Repeat("x", 63), "é": "-",
	} {
		if got := LabelValue(in); got != want || !labelValueRe.MatchString(got) {
			t.Errorf("LabelValue(%q) = %q; want %q", in, got, want)
		}
	}
	if h := OwnerHash("prod", owner); len(h) != 32 || !labelValueRe.MatchString(h) {
		t.Errorf("OwnerHash = %q", h)
	}
}

// TestRedact keeps class, code and delay.
func TestRedact(t *testing.T) {
	key := []byte("-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n-----END PRIVATE KEY-----\n")
	leak := status.Error(codes.InvalidArgument, "near MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg")
	got := redact(errs.Permanent(leak), key)
	if !errs.IsPermanent(got) || status.Code(got) != codes.InvalidArgument || strings.Contains(got.Error(), "MIGH") {
		t.Errorf("redact(permanent) = %v (code %v)", got, status.Code(got))
	}
	got = redact(errs.RetryAfter(leak, time.Second), key)
	if d, ok := errs.SuggestedDelay(got); errs.IsPermanent(got) || !ok || d != time.Second {
		t.Errorf("redact(retry after) = %v", got)
	}
	clean := status.Error(codes.Internal, "oops")
	if redact(clean, key) != clean || redact(nil, key) != nil {
		t.Error("redact changed an error that quotes nothing")
	}
}
