package ssmstore

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/aws/smithy-go"

	"github.com/certfn/certfn/adapters/secretpayload"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// stubAPI is a stub of the API interface, not SSM: it answers from a map
// of parameter values and a map of scripted errors by parameter name, and
// records the calls in order. It exists for what moto cannot show
// (AccessDenied, throttling past the retries, the order of class probes);
// the store's behaviour is tested on moto (store_test.go).
type stubAPI struct {
	mu     sync.Mutex
	values map[string]string
	// modified orders the writes (LastModifiedDate).
	modified map[string]int
	clock    int
	fail     map[string]error
	calls    []string
	puts     []*ssm.PutParameterInput
}

func newStub() *stubAPI {
	return &stubAPI{values: map[string]string{}, modified: map[string]int{}, fail: map[string]error{}}
}

// set stores a value as a write would.
func (a *stubAPI) set(name, value string) {
	a.clock++
	a.values[name], a.modified[name] = value, a.clock
}

func (a *stubAPI) GetParameters(_ context.Context, in *ssm.GetParametersInput, _ ...func(*ssm.Options)) (*ssm.GetParametersOutput, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, "Gets "+strings.Join(in.Names, ","))
	out := &ssm.GetParametersOutput{}
	for _, n := range in.Names {
		if err := a.fail[n]; err != nil {
			return nil, err
		}
		v, ok := a.values[n]
		if !ok {
			out.InvalidParameters = append(out.InvalidParameters, n)
			continue
		}
		out.Parameters = append(out.Parameters, types.Parameter{Name: aws.String(n), Value: aws.String(v), Version: 1,
			LastModifiedDate: aws.Time(time.Unix(int64(a.modified[n]), 0))})
	}
	return out, nil
}

func (a *stubAPI) record(op, name string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, op+" "+name)
	return a.fail[name]
}

func (a *stubAPI) GetParameter(_ context.Context, in *ssm.GetParameterInput, _ ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	name := aws.ToString(in.Name)
	if err := a.record("Get", name); err != nil {
		return nil, err
	}
	// The stub keeps one version: a ":<version>" selector reads it.
	name, _, _ = strings.Cut(name, ":")
	v, ok := a.values[name]
	if !ok {
		return nil, &types.ParameterNotFound{Message: aws.String("not found")}
	}
	return &ssm.GetParameterOutput{Parameter: &types.Parameter{Name: in.Name, Value: aws.String(v), Version: 1}}, nil
}

func (a *stubAPI) PutParameter(_ context.Context, in *ssm.PutParameterInput, _ ...func(*ssm.Options)) (*ssm.PutParameterOutput, error) {
	name := aws.ToString(in.Name)
	if err := a.record("Put", name); err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.puts = append(a.puts, in)
	if _, ok := a.values[name]; ok && !aws.ToBool(in.Overwrite) {
		return nil, &types.ParameterAlreadyExists{Message: aws.String("exists")}
	}
	a.set(name, aws.ToString(in.Value))
	return &ssm.PutParameterOutput{Version: 1, Tier: in.Tier}, nil
}

func (a *stubAPI) DeleteParameter(_ context.Context, in *ssm.DeleteParameterInput, _ ...func(*ssm.Options)) (*ssm.DeleteParameterOutput, error) {
	name := aws.ToString(in.Name)
	if err := a.record("Delete", name); err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.values[name]; !ok {
		return nil, &types.ParameterNotFound{Message: aws.String("not found")}
	}
	delete(a.values, name)
	return &ssm.DeleteParameterOutput{}, nil
}

func (a *stubAPI) takeCalls() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.calls
	a.calls = nil
	return c
}

func apiErr(code string) error {
	return &smithy.GenericAPIError{Code: code, Message: "scripted " + code}
}

func TestNewValidatesOptions(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{"defaults", Options{}, ""},
		{"nested prefix", Options{Prefix: "org/certfn.prod"}, ""},
		{"worker classes", Options{Classes: WorkerClasses(true)}, ""},
		{"leading slash", Options{Prefix: "/certfn"}, "prefix"},
		{"trailing slash", Options{Prefix: "certfn/"}, "prefix"},
		{"space", Options{Prefix: "cert fn"}, "prefix"},
		{"reserved aws", Options{Prefix: "AWS-certs"}, "prefix"},
		{"reserved ssm", Options{Prefix: "ssm/certfn"}, "prefix"},
		{"too deep", Options{Prefix: "a/b/c/d/e/f/g/h/i/j/k/l"}, "prefix"},
		{"unknown class", Options{Classes: []Class{ClassTLS, "secret"}}, "classes[1]"},
		{"repeated class", Options{Classes: []Class{ClassTLS, ClassTLS}}, "classes[1]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(newStub(), tc.opts)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if !errs.IsPermanent(err) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("New: %v, want a permanent error naming %s", err, tc.wantErr)
			}
		})
	}
}

func TestParameterName(t *testing.T) {
	s, err := New(newStub(), Options{Prefix: "org/certfn"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		class           Class
		namespace, name string
		want, wantErr   string
	}{
		{ClassTLS, "default", "web-tls", "/org/certfn/tls/default/web-tls", ""},
		{ClassPrivateKey, "team-a", "www.example.com", "/org/certfn/pk/team-a/www.example.com", ""},
		{ClassCA, "cert-manager", "my-ca", "/org/certfn/ca/cert-manager/my-ca", ""},
		{ClassTLS, "Default", "web", "", "namespace"},
		{ClassTLS, "default", "web/../x", "", "name"},
		{ClassTLS, "default", "", "", "name"},
		{"nope", "default", "web", "", "class"},
	}
	for _, tc := range tests {
		got, err := s.ParameterName(tc.class, tc.namespace, tc.name)
		if tc.wantErr != "" {
			if !errs.IsPermanent(err) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParameterName(%s, %q, %q): %v, want a permanent error naming %s", tc.class, tc.namespace, tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParameterName(%s, %q, %q) = %q, %v; want %q", tc.class, tc.namespace, tc.name, got, err, tc.want)
		}
	}
}

func TestClassOfEveryRole(t *testing.T) {
	for role, want := range map[string]Class{
		"certificate": ClassTLS, "acme-account": ClassTLS, "private-key": ClassPrivateKey,
		"issued-ca": ClassIssuedCA, "ca": ClassCA, "solver-credentials": ClassSolverCredentials, "other": "",
	} {
		if got := ClassOf(role); got != want {
			t.Errorf("ClassOf(%q) = %q, want %q", role, got, want)
		}
	}
}

func TestTierFor(t *testing.T) {
	tests := []struct {
		n    int
		want types.ParameterTier
	}{
		{0, types.ParameterTierStandard},
		{4096, types.ParameterTierStandard},
		{4097, types.ParameterTierAdvanced},
		{8192, types.ParameterTierAdvanced},
	}
	for _, tc := range tests {
		if got, err := TierFor(tc.n); err != nil || got != tc.want {
			t.Errorf("TierFor(%d) = %s, %v; want %s", tc.n, got, err, tc.want)
		}
	}
	if _, err := TierFor(8193); !errs.IsPermanent(err) || !strings.Contains(err.Error(), "8193 bytes") {
		t.Errorf("TierFor(8193): %v", err)
	}
}

// A Get is one GetParameters call naming the parameter of every
// configured class, found or missing; when two classes hold the secret
// (a class move cut short), the one written last is it.
func TestOneCallPerGet(t *testing.T) {
	a := newStub()
	s, err := New(a, Options{Prefix: "p", Classes: SignerClasses()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	all := []string{"Gets /p/ca/ns/x,/p/ica/ns/x,/p/pk/ns/x"}
	if _, err := s.Get(ctx, "ns", "x"); !errors.Is(err, ports.ErrNotFound) {
		t.Fatalf("Get of a missing secret: %v", err)
	}
	if got := a.takeCalls(); !slices.Equal(got, all) {
		t.Errorf("calls %v, want %v", got, all)
	}
	older, err := secretpayload.Encode(aSecret("ns", "x").data("tls.key", []byte(marker)).label(api.LabelNextPrivateKey, "true").build(), MaxAdvancedBytes, "t")
	if err != nil {
		t.Fatal(err)
	}
	a.set("/p/pk/ns/x", string(older))
	if got, err := s.Get(ctx, "ns", "x"); err != nil || string(got.Data["tls.key"]) != marker {
		t.Fatalf("Get: %v", err)
	}
	newer, err := secretpayload.Encode(aSecret("ns", "x").data("tls.key", []byte(marker+"2")).build(), MaxAdvancedBytes, "t")
	if err != nil {
		t.Fatal(err)
	}
	a.set("/p/ica/ns/x", string(newer))
	if got, err := s.Get(ctx, "ns", "x"); err != nil || string(got.Data["tls.key"]) != marker+"2" {
		t.Fatalf("Get with two classes holding the secret: %v, want the one written last", err)
	}
	if got := a.takeCalls(); !slices.Equal(got, append(all, all...)) {
		t.Errorf("calls %v, want one GetParameters per Get", got)
	}
}

// The store writes only its own writable classes, and never ca or sc;
// refusals come before any call.
func TestWritesOnlyItsClasses(t *testing.T) {
	ctx := context.Background()
	ca := aSecret("ns", "ca").keyPair(cert(t, true), "1").build()
	tests := []struct {
		name    string
		classes []Class
		sec     ports.Secret
	}{
		{"worker without CA management writing a CA", WorkerClasses(false), ca},
		{"signer writing a certificate", SignerClasses(), aSecret("ns", "web").keyPair(cert(t, false), "1").build()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newStub()
			s, err := New(a, Options{Classes: tc.classes})
			if err != nil {
				t.Fatal(err)
			}
			for _, op := range []func(context.Context, ports.Secret) error{s.Create, s.Put} {
				if err := op(ctx, tc.sec); !errs.IsPermanent(err) || !strings.Contains(err.Error(), "does not write") {
					t.Errorf("write: %v, want a permanent refusal", err)
				}
			}
			if calls := a.takeCalls(); len(calls) != 0 {
				t.Errorf("calls before refusing: %v", calls)
			}
		})
	}
	a := newStub()
	s, _ := New(a, Options{Prefix: "p"})
	if err := s.Delete(ctx, "ns", "x"); err != nil {
		t.Fatal(err)
	}
	for _, c := range a.takeCalls() {
		if strings.Contains(c, "/p/ca/") || strings.Contains(c, "/p/sc/") {
			t.Errorf("Delete touched an operator's class: %s", c)
		}
	}
}

// Errors are classified: AccessDenied and validation permanent (and stop
// the class search), throttling transient, ParameterAlreadyExists is
// ErrAlreadyExists. No error carries a value.
func TestErrorClassification(t *testing.T) {
	ctx := context.Background()
	sec := aSecret("ns", "web").keyPair(cert(t, false), "1").build()
	tests := []struct {
		name      string
		failOn    string
		err       error
		op        func(s *Store) error
		wantClass errs.Class
		wantIs    error
		wantCalls int
		// putOnly scripts the error on PutParameter only (the class
		// probes before the write pass).
		putOnly bool
	}{
		{"access denied is no miss", "/p/ca/ns/web", apiErr("AccessDeniedException"),
			func(s *Store) error { _, err := s.Get(ctx, "ns", "web"); return err }, errs.PermanentClass, nil, 1, false},
		{"throttled get", "/p/ca/ns/web", apiErr("ThrottlingException"),
			func(s *Store) error { _, err := s.Get(ctx, "ns", "web"); return err }, errs.Transient, nil, 1, false},
		{"too many updates", "/p/tls/ns/web", &types.TooManyUpdates{Message: aws.String("busy")},
			func(s *Store) error { return s.Create(ctx, sec) }, errs.Transient, nil, 2, true},
		{"invalid KMS key", "/p/tls/ns/web", &types.InvalidKeyId{Message: aws.String("no key")},
			func(s *Store) error { return s.Create(ctx, sec) }, errs.PermanentClass, nil, 2, true},
		{"kms access denied on put", "/p/tls/ns/web", apiErr("KMSAccessDeniedException"),
			func(s *Store) error { return s.Create(ctx, sec) }, errs.PermanentClass, nil, 2, true},
		{"already exists", "/p/tls/ns/web", &types.ParameterAlreadyExists{Message: aws.String("exists")},
			func(s *Store) error { return s.Create(ctx, sec) }, errs.Conflict, ports.ErrAlreadyExists, 2, true},
		{"delete denied", "/p/tls/ns/web", apiErr("AccessDeniedException"),
			func(s *Store) error { return s.Delete(ctx, "ns", "web") }, errs.PermanentClass, nil, 1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newStub()
			s, err := New(a, Options{Prefix: "p", Classes: []Class{ClassCA, ClassTLS, ClassPrivateKey, ClassIssuedCA, ClassSolverCredentials}})
			if err != nil {
				t.Fatal(err)
			}
			if tc.putOnly {
				s.client = putFails{a, tc.failOn, tc.err}
			} else {
				a.fail[tc.failOn] = tc.err
			}
			err = tc.op(s)
			if err == nil {
				t.Fatal("no error")
			}
			if got := errs.Classify(err); got != tc.wantClass {
				t.Errorf("class %v, want %v: %v", got, tc.wantClass, err)
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("%v is not %v", err, tc.wantIs)
			}
			if !strings.Contains(err.Error(), "ns/web") || strings.Contains(err.Error(), marker) || strings.Contains(err.Error(), "PRIVATE KEY") {
				t.Errorf("error %q must name the secret and no value", err)
			}
			if got := len(a.takeCalls()); got != tc.wantCalls {
				t.Errorf("%d calls, want %d", got, tc.wantCalls)
			}
		})
	}
}

// putFails wraps the stub so that PutParameter of one name fails.
type putFails struct {
	*stubAPI
	name string
	err  error
}

func (p putFails) PutParameter(ctx context.Context, in *ssm.PutParameterInput, o ...func(*ssm.Options)) (*ssm.PutParameterOutput, error) {
	if aws.ToString(in.Name) == p.name {
		_ = p.record("Put", p.name)
		return nil, p.err
	}
	return p.stubAPI.PutParameter(ctx, in, o...)
}

// Writes are SecureStrings with the KMS key, in the tier the size needs;
// a standard write refused over an advanced parameter is retried as
// advanced.
func TestPutParameterInput(t *testing.T) {
	ctx := context.Background()
	a := newStub()
	s, err := New(a, Options{Prefix: "p", KMSKeyID: "alias/certfn"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, aSecret("ns", "web").data("tls.key", []byte(marker)).build()); err != nil {
		t.Fatal(err)
	}
	in := a.puts[0]
	if in.Type != types.ParameterTypeSecureString || aws.ToString(in.KeyId) != "alias/certfn" || in.Tier != types.ParameterTierStandard || aws.ToBool(in.Overwrite) {
		t.Errorf("Create's PutParameter: type %s key %s tier %s overwrite %v", in.Type, aws.ToString(in.KeyId), in.Tier, aws.ToBool(in.Overwrite))
	}
	a.puts = nil
	refuse := &standardRefused{stubAPI: a}
	s.client = refuse
	if err := s.Put(ctx, aSecret("ns", "web").data("tls.key", []byte(marker+"2")).build()); err != nil {
		t.Fatal(err)
	}
	if len(a.puts) != 1 || a.puts[0].Tier != types.ParameterTierAdvanced || !aws.ToBool(a.puts[0].Overwrite) {
		t.Errorf("after a refused standard write: %d puts, want one advanced overwrite", len(a.puts))
	}
}

// standardRefused answers a standard-tier PutParameter with a
// ValidationException, as for a parameter already in the advanced tier.
type standardRefused struct{ *stubAPI }

func (r *standardRefused) PutParameter(ctx context.Context, in *ssm.PutParameterInput, o ...func(*ssm.Options)) (*ssm.PutParameterOutput, error) {
	if in.Tier == types.ParameterTierStandard {
		_ = r.record("Put", aws.ToString(in.Name))
		return nil, apiErr("ValidationException")
	}
	return r.stubAPI.PutParameter(ctx, in, o...)
}

// A split payload whose key reference is malformed, or names a key
// version that is gone, is a permanent error naming the parameters and
// never a value; a Put whose companion write fails writes no parameter
// (the old pair stays readable).
func TestSplitFailures(t *testing.T) {
	ctx := context.Background()
	big := aSecret("ns", "web").data("tls.crt", []byte(strings.Repeat("c", 3000))).data("tls.key", []byte(marker+strings.Repeat("k", 1500))).build()
	tests := []struct {
		name, value, want string
	}{
		{"reference not an object", `{"tls.crt":"c","..parameters":"tls.key=1","..metadata":{}}`, "member ..parameters is malformed"},
		{"version zero", `{"tls.crt":"c","..parameters":{"tls.key":0},"..metadata":{}}`, "member ..parameters is malformed"},
		{"another key", `{"tls.crt":"c","..parameters":{"tls.crt":1},"..metadata":{}}`, "member ..parameters is malformed"},
		{"key version gone", `{"tls.crt":"c","..parameters":{"tls.key":1},"..metadata":{}}`, "/p/tls/ns/web_tls.key: version 1, which /p/tls/ns/web names, is gone"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newStub()
			s, err := New(a, Options{Prefix: "p", Classes: WorkerClasses(false)})
			if err != nil {
				t.Fatal(err)
			}
			a.set("/p/tls/ns/web", tc.value)
			_, err = s.Get(ctx, "ns", "web")
			if !errs.IsPermanent(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Get: %v, want a permanent error containing %q", err, tc.want)
			}
		})
	}
	a := newStub()
	s, err := New(a, Options{Prefix: "p"})
	if err != nil {
		t.Fatal(err)
	}
	s.client = putFails{a, "/p/tls/ns/web_tls.key", apiErr("ThrottlingException")}
	if err := s.Put(ctx, big); err == nil || errs.IsPermanent(err) || strings.Contains(err.Error(), marker) {
		t.Fatalf("Put with the key write throttled: %v, want a transient error without the value", err)
	}
	if _, ok := a.values["/p/tls/ns/web"]; ok {
		t.Error("the parameter was written although its key was not")
	}
}

// A Certificate's key pair never replaces a parameter of an operator's
// class (ca, sc), nor one that holds no key pair (an ACME account key,
// credentials: role acme-account) or a next private key: the Put is
// refused permanently before any write, and the parameter is unchanged.
// An empty secret becomes a key pair as before.
func TestPutNeverReplacesAnotherClass(t *testing.T) {
	ctx := context.Background()
	pair := aSecret("team-a", "x").keyPair(cert(t, false), "1").build()
	for _, tc := range []struct {
		name   string
		class  Class
		stored ports.Secret
		want   string // "": written
	}{
		{"an operator's CA key pair", ClassCA, aSecret("team-a", "x").keyPair(cert(t, true), "ca").build(), "in class ca"},
		{"an operator's solver credentials", ClassSolverCredentials, aSecret("team-a", "x").data("api-token", []byte("t")).build(), "in class sc"},
		{"an ACME account key", ClassTLS, aSecret("team-a", "x").data("tls.key", []byte("k")).build(), "of role acme-account"},
		{"a next private key", ClassPrivateKey, aSecret("team-a", "x").data("tls.key", []byte("k")).label(api.LabelNextPrivateKey, "true").build(), "of role private-key"},
		{"an empty secret", ClassTLS, aSecret("team-a", "x").build(), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newStub()
			s, err := New(a, Options{Prefix: "p"})
			if err != nil {
				t.Fatal(err)
			}
			p, _ := s.ParameterName(tc.class, "team-a", "x")
			enc, err := encode(tc.stored)
			if err != nil {
				t.Fatal(err)
			}
			a.set(p, enc.main)
			err = s.Put(ctx, pair)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Put = %v", err)
				}
				return
			}
			if !errs.IsPermanent(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Put = %v, want a permanent refusal %q", err, tc.want)
			}
			if len(a.puts) != 0 || a.values[p] != enc.main {
				t.Fatalf("written despite the refusal: %d puts", len(a.puts))
			}
		})
	}
}
