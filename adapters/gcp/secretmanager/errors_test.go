package secretmanager_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	smpb "cloud.google.com/go/secretmanager/apiv1/secretmanagerpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/certfn/certfn/adapters/gcp/secretmanager"
	"github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// Transient gRPC codes stay transient, with their code; the codes no retry
// can change are permanent. No error carries secret data.
func TestErrorClasses(t *testing.T) {
	tests := []struct {
		code      codes.Code
		permanent bool
	}{
		{codes.Unavailable, false},
		{codes.ResourceExhausted, false},
		{codes.DeadlineExceeded, false},
		{codes.Aborted, false},
		{codes.Internal, false},
		{codes.Unknown, false},
		{codes.PermissionDenied, false}, // IAM changes take time to propagate
		{codes.Unauthenticated, false},
		{codes.InvalidArgument, true},
		{codes.OutOfRange, true},
		{codes.Unimplemented, true},
	}
	ops := []struct {
		rpc  string
		call func(s *secretmanager.Store) error
	}{
		{"AccessSecretVersion", func(s *secretmanager.Store) error {
			_, err := s.Get(context.Background(), "default", "web-tls")
			return err
		}},
		{"CreateSecret", func(s *secretmanager.Store) error {
			sec := tlsSecret("2", nil)
			sec.Name = "new"
			return s.Create(context.Background(), sec)
		}},
		{"AddSecretVersion", func(s *secretmanager.Store) error { return s.Put(context.Background(), tlsSecret("2", nil)) }},
		{"UpdateSecret", func(s *secretmanager.Store) error { return s.Put(context.Background(), tlsSecret("2", nil)) }},
		{"DeleteSecret", func(s *secretmanager.Store) error { return s.Delete(context.Background(), "default", "web-tls") }},
	}
	for _, op := range ops {
		for _, tc := range tests {
			if op.rpc == "UpdateSecret" && tc.code == codes.Aborted {
				continue // a lost etag race: re-read and retried (TestConcurrentPuts)
			}
			t.Run(op.rpc+"/"+tc.code.String(), func(t *testing.T) {
				b := newDoubleBackend(t)
				s := b.store(t, secretmanager.Options{})
				if err := s.Create(context.Background(), tlsSecret("1", nil)); err != nil {
					t.Fatal(err)
				}
				b.fake.FailNext(op.rpc, tc.code, 1)
				err := op.call(s)
				if err == nil {
					t.Fatal("no error")
				}
				if status.Code(err) != tc.code {
					t.Errorf("status code %s, want %s (%v)", status.Code(err), tc.code, err)
				}
				if errs.IsPermanent(err) != tc.permanent {
					t.Errorf("permanent = %v, want %v: %v", errs.IsPermanent(err), tc.permanent, err)
				}
				if errors.Is(err, ports.ErrNotFound) || errors.Is(err, ports.ErrAlreadyExists) {
					t.Errorf("an injected failure became %v", err)
				}
				if strings.Contains(err.Error(), marker) {
					t.Errorf("error leaks the value: %v", err)
				}
				// The same call succeeds once the service recovers.
				if err := op.call(s); err != nil {
					t.Errorf("retry: %v", err)
				}
			})
		}
	}
}

// A failed AddSecretVersion after CreateSecret leaves no empty secret
// behind, so the retried Create succeeds at once.
func TestCreateCleansUpAfterAFailedVersion(t *testing.T) {
	b := newDoubleBackend(t)
	s := b.store(t, secretmanager.Options{})
	b.fake.FailNext("AddSecretVersion", codes.Unavailable, 1)
	if err := s.Create(context.Background(), tlsSecret("1", nil)); errs.IsPermanent(err) || status.Code(err) != codes.Unavailable {
		t.Fatalf("Create: %v, want a transient Unavailable", err)
	}
	if ids := b.fake.SecretIDs(); len(ids) != 0 {
		t.Errorf("secrets left: %v", ids)
	}
	if err := s.Create(context.Background(), tlsSecret("1", nil)); err != nil {
		t.Fatalf("retried Create: %v", err)
	}
}

// No error ever carries secret values: not a malformed stored payload, not
// an oversized one, not a failed write.
func TestErrorsNeverLeak(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		s := b.store(t, secretmanager.Options{})
		stored := []string{
			`{"tls.key": "` + marker + `", oops`,
			`["` + marker + `"]`,
			`{"tls.key": ["` + marker + `"]}`,
			`{"..metadata": "` + marker + `"}`,
			`{"k": "` + marker + `", "..metadata": {"base64": ["k"]}}`,
		}
		for i, payload := range stored {
			name := fmt.Sprintf("broken-%d", i)
			b.addRaw(t, mustID(t, s, secretmanager.ClassTLS, "default", name), []byte(payload))
			_, err := s.Get(ctx, "default", name)
			if err == nil || !errs.IsPermanent(err) {
				t.Errorf("payload %d: Get error %v, want a permanent error", i, err)
			}
			if err != nil && strings.Contains(err.Error(), marker) {
				t.Errorf("payload %d: error leaks the value: %v", i, err)
			}
			// Put replaces an unreadable newest version.
			sec := ports.Secret{Namespace: "default", Name: name, Data: map[string][]byte{"tls.crt": []byte(marker)}}
			if err := s.Put(ctx, sec); err != nil {
				t.Errorf("payload %d: Put over it: %v", i, err)
			}
			if got, err := s.Get(ctx, "default", name); err != nil || !bytes.Equal(got.Data["tls.crt"], []byte(marker)) {
				t.Errorf("payload %d: Get after Put: %v", i, err)
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
	})
}

// A disabled newest version: Get fails permanently saying so, Put adds a
// readable one.
func TestDisabledNewestVersion(t *testing.T) {
	b := newDoubleBackend(t)
	s := b.store(t, secretmanager.Options{})
	ctx := context.Background()
	for _, gen := range []string{"1", "2"} {
		if err := s.Put(ctx, tlsSecret(gen, nil)); err != nil {
			t.Fatal(err)
		}
	}
	id := mustID(t, s, secretmanager.ClassTLS, "default", "web-tls")
	if err := b.fake.SetVersionState(id, 2, smpb.SecretVersion_DISABLED); err != nil {
		t.Fatal(err)
	}
	_, err := s.Get(ctx, "default", "web-tls")
	if !errs.IsPermanent(err) || !strings.Contains(err.Error(), "DISABLED") {
		t.Errorf("Get of a disabled newest version: %v, want a permanent error naming DISABLED", err)
	}
	if prev, err := s.Previous(ctx, "default", "web-tls"); err != nil || prev.Annotations["cert-manager.io/certificate-revision"] != "1" {
		t.Errorf("Previous: %v", err)
	}
	if err := s.Put(ctx, tlsSecret("3", nil)); err != nil {
		t.Fatal(err)
	}
	if got := revision(t, s, "default", "web-tls"); got != "3" {
		t.Errorf("revision %s after Put, want 3", got)
	}
	// The disabled version 2 is "previous" now: Rollback cannot read it.
	if err := s.Rollback(ctx, "default", "web-tls"); !errs.IsPermanent(err) || !strings.Contains(err.Error(), "not readable") {
		t.Errorf("Rollback to a disabled version: %v", err)
	}
}

// Options and names are checked before any call, with errors naming the
// field.
func TestBadInput(t *testing.T) {
	b := newDoubleBackend(t)
	s := b.store(t, secretmanager.Options{})
	ctx := context.Background()
	newErr := func(o secretmanager.Options) error {
		if o.Project == "" {
			o.Project = "p"
		}
		_, err := secretmanager.New(b.api, o)
		return err
	}
	key := "projects/k/locations/global/keyRings/r/cryptoKeys/c"
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"no project", func() error { _, err := secretmanager.New(b.api, secretmanager.Options{}); return err }, "project"},
		{"project with a slash", func() error { return newErr(secretmanager.Options{Project: "a/b"}) }, "project"},
		{"prefix with an underscore", func() error { return newErr(secretmanager.Options{Prefix: "cert_fn"}) }, "prefix"},
		{"prefix with upper case", func() error { return newErr(secretmanager.Options{Prefix: "Certfn"}) }, "prefix"},
		{"prefix too long", func() error { return newErr(secretmanager.Options{Prefix: strings.Repeat("a", 31)}) }, "prefix"},
		{"unknown class", func() error { return newErr(secretmanager.Options{Classes: []secretmanager.Class{"tls", "x"}}) }, "classes[1]"},
		{"repeated class", func() error { return newErr(secretmanager.Options{Classes: []secretmanager.Class{"tls", "tls"}}) }, "classes[1]"},
		{"keep 1", func() error { return newErr(secretmanager.Options{KeepVersions: 1}) }, "keepVersions"},
		{"keep 21", func() error { return newErr(secretmanager.Options{KeepVersions: 21}) }, "keepVersions"},
		{"bad key name", func() error { return newErr(secretmanager.Options{KMSKeyName: "alias/x"}) }, "kmsKeyName"},
		{"key and replicas", func() error {
			return newErr(secretmanager.Options{KMSKeyName: key, Replicas: []secretmanager.Replica{{Location: "europe-west1"}}})
		}, "kmsKeyName"},
		{"replica key elsewhere", func() error {
			return newErr(secretmanager.Options{Replicas: []secretmanager.Replica{{Location: "europe-west1", KMSKeyName: key}}})
		}, "replicas[0]: kmsKeyName"},
		{"repeated replica", func() error {
			return newErr(secretmanager.Options{Replicas: []secretmanager.Replica{{Location: "europe-west1"}, {Location: "europe-west1"}}})
		}, "replicas[1]"},
		{"reserved label", func() error { return newErr(secretmanager.Options{Labels: map[string]string{"certfn-x": "y"}}) }, `labels["certfn-x"]`},
		{"upper-case label", func() error { return newErr(secretmanager.Options{Labels: map[string]string{"Team": "y"}}) }, `labels["Team"]`},
		{"bad label value", func() error { return newErr(secretmanager.Options{Labels: map[string]string{"team": "a.b"}}) }, `labels["team"]`},
		{"upper-case namespace", func() error { _, err := s.Get(ctx, "Default", "web"); return err }, `namespace: "Default"`},
		{"namespace with a dot", func() error { _, err := s.Get(ctx, "a.b", "web"); return err }, `namespace: "a.b"`},
		{"name with a slash", func() error { return s.Delete(ctx, "default", "a/b") }, `name: "a/b"`},
		{"name with an underscore", func() error { return s.Rollback(ctx, "default", "a_b") }, `name: "a_b"`},
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
	if n := b.fake.TotalCalls(); n != 0 {
		t.Errorf("bad input reached the service: %v", b.fake.CallsByOp())
	}
}

// Calls per operation for a worker's store (classes tls, pk, sc): the
// first Get of a missing secret tries every class; a Put of unchanged
// content reads only; a renewal adds a version, sets labels and the
// previous alias, and from the third version on destroys one. The Store's
// Counts and metrics agree with the service's count.
func TestCallsAndCounts(t *testing.T) {
	b := newDoubleBackend(t)
	m := certtest.NewMetrics()
	s := b.store(t, secretmanager.Options{Classes: secretmanager.WorkerClasses(false), Metrics: m})
	ctx := context.Background()
	steps := []struct {
		name string
		do   func() error
		want map[string]int
	}{
		{"get missing", func() error { _, err := s.Get(ctx, "default", "web-tls"); return ignoreNotFound(err) },
			map[string]int{"AccessSecretVersion": 3}},
		{"put creates", func() error { return s.Put(ctx, tlsSecret("1", nil)) },
			map[string]int{"AccessSecretVersion": 3, "CreateSecret": 1, "AddSecretVersion": 1}},
		{"get", func() error { _, err := s.Get(ctx, "default", "web-tls"); return err },
			map[string]int{"AccessSecretVersion": 1}},
		{"put unchanged", func() error { return s.Put(ctx, tlsSecret("1", nil)) },
			map[string]int{"AccessSecretVersion": 1}},
		{"put renewed", func() error { return s.Put(ctx, tlsSecret("2", nil)) },
			map[string]int{"AccessSecretVersion": 1, "AddSecretVersion": 1, "GetSecret": 1, "ListSecretVersions": 1, "UpdateSecret": 1}},
		{"put renewed again", func() error { return s.Put(ctx, tlsSecret("3", nil)) },
			map[string]int{"AccessSecretVersion": 1, "AddSecretVersion": 1, "GetSecret": 1, "ListSecretVersions": 1, "UpdateSecret": 1, "DestroySecretVersion": 1}},
		{"delete", func() error { return s.Delete(ctx, "default", "web-tls") },
			map[string]int{"DeleteSecret": 2}},
	}
	for _, st := range steps {
		b.fake.ResetCalls()
		before := s.Counts()
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		got := b.fake.CallsByOp()
		if fmt.Sprint(got) != fmt.Sprint(st.want) {
			t.Errorf("%s: calls %v, want %v", st.name, got, st.want)
		}
		after := s.Counts()
		if n := after.Total() - before.Total(); n != int64(b.fake.TotalCalls()) {
			t.Errorf("%s: Counts grew by %d, the service saw %d calls", st.name, n, b.fake.TotalCalls())
		}
	}
	c := s.Counts()
	if c.VersionsAdded != 3 || c.VersionsDestroyed != 1 {
		t.Errorf("versions added %d destroyed %d, want 3 and 1", c.VersionsAdded, c.VersionsDestroyed)
	}
	if got := m.Get("certfn_gcp_secretmanager_requests_total{op=AccessSecretVersion}"); got != float64(c.Requests["AccessSecretVersion"]) {
		t.Errorf("metric AccessSecretVersion = %v, Counts %d", got, c.Requests["AccessSecretVersion"])
	}
	if r := s.ResetCounts(); r.Total() != c.Total() || s.Counts().Total() != 0 {
		t.Error("ResetCounts")
	}
	if b.fake.ActiveVersions() != 0 {
		t.Errorf("%d versions billed after Delete", b.fake.ActiveVersions())
	}
}

// The class a secret was found in is tried first next time: a signer
// reading a next private key (its third class) pays the full search once.
func TestClassHint(t *testing.T) {
	b := newDoubleBackend(t)
	ctx := context.Background()
	worker := b.store(t, secretmanager.Options{Classes: secretmanager.WorkerClasses(false)})
	signer := b.store(t, secretmanager.Options{Prefix: worker.Prefix(), Classes: secretmanager.SignerClasses()})
	nk := ports.Secret{Namespace: "default", Name: "web-next-private-key", Data: map[string][]byte{"tls.key": []byte("k")},
		Labels: map[string]string{"cert-manager.io/next-private-key": "true"}}
	if err := worker.Create(ctx, nk); err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{3, 1, 1} {
		b.fake.ResetCalls()
		if _, err := signer.Get(ctx, "default", "web-next-private-key"); err != nil {
			t.Fatal(err)
		}
		if got := b.fake.Calls("AccessSecretVersion"); got != want {
			t.Errorf("Get %d: %d reads, want %d", i+1, got, want)
		}
	}
	// Gone: the hint is tried, then the other classes.
	if err := worker.Delete(ctx, "default", "web-next-private-key"); err != nil {
		t.Fatal(err)
	}
	b.fake.ResetCalls()
	if _, err := signer.Get(ctx, "default", "web-next-private-key"); !errors.Is(err, ports.ErrNotFound) {
		t.Fatalf("Get after Delete: %v", err)
	}
	if got := b.fake.Calls("AccessSecretVersion"); got != 3 {
		t.Errorf("%d reads for a missing secret, want 3", got)
	}
}

func ignoreNotFound(err error) error {
	if errors.Is(err, ports.ErrNotFound) {
		return nil
	}
	return err
}

// A canceled context makes no call.
func TestCanceledContext(t *testing.T) {
	b := newDoubleBackend(t)
	s := b.store(t, secretmanager.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for name, call := range map[string]func() error{
		"Get":      func() error { _, err := s.Get(ctx, "default", "web-tls"); return err },
		"Create":   func() error { return s.Create(ctx, tlsSecret("1", nil)) },
		"Put":      func() error { return s.Put(ctx, tlsSecret("1", nil)) },
		"Delete":   func() error { return s.Delete(ctx, "default", "web-tls") },
		"Rollback": func() error { return s.Rollback(ctx, "default", "web-tls") },
	} {
		if err := call(); !errors.Is(err, context.Canceled) || errs.IsPermanent(err) {
			t.Errorf("%s: %v, want context.Canceled", name, err)
		}
	}
	if n := b.fake.TotalCalls(); n != 0 {
		t.Errorf("%d calls with a canceled context", n)
	}
}

// A renewal whose label and alias update failed after its version was
// added: the retried Put of the same content finishes the update instead
// of writing nothing.
func TestRetriedPutFinishesMaintenance(t *testing.T) {
	b := newDoubleBackend(t)
	s := b.store(t, secretmanager.Options{})
	ctx := context.Background()
	if err := s.Create(ctx, tlsSecret("1", nil)); err != nil {
		t.Fatal(err)
	}
	b.fake.FailNext("UpdateSecret", codes.Unavailable, 1)
	if err := s.Put(ctx, tlsSecret("2", nil)); status.Code(err) != codes.Unavailable {
		t.Fatalf("Put: %v, want Unavailable", err)
	}
	id := mustID(t, s, secretmanager.ClassTLS, "default", "web-tls")
	if got := b.fake.Secret(id).GetLabels()[secretmanager.KeyRevision]; got != "1" {
		t.Fatalf("revision label %q before the retry", got)
	}
	if err := s.Put(ctx, tlsSecret("2", nil)); err != nil {
		t.Fatal(err)
	}
	sec := b.fake.Secret(id)
	if sec.GetLabels()[secretmanager.KeyRevision] != "2" || sec.GetVersionAliases()[secretmanager.AliasPrevious] != 1 || len(b.fake.Versions(id)) != 2 {
		t.Errorf("after the retry: labels %v aliases %v, %d versions", sec.GetLabels(), sec.GetVersionAliases(), len(b.fake.Versions(id)))
	}
	// Finished: the next unchanged Put reads only.
	b.fake.ResetCalls()
	if err := s.Put(ctx, tlsSecret("2", nil)); err != nil {
		t.Fatal(err)
	}
	if b.fake.TotalCalls() != 1 {
		t.Errorf("unchanged Put after the repair: %v", b.fake.CallsByOp())
	}
}
