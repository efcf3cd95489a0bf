// Package apptest is the test rig of core's kernel, controllers and
// application service: one role assembled by app.Build on core/memory's ports, a fake
// clock at certtest.T0, a store that can fail and count listings, and an
// approver a test switches (or, with NewPolicyRig, certfn's own approver
// deciding by CertificateRequestPolicy). Tests drive it step by step (Reconcile) or
// until the queue is empty (Drain).
package apptest

import (
	"context"
	"encoding/base64"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/certificaterequests"
	"github.com/certfn/certfn/core/certificates"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/kernel"
	"github.com/certfn/certfn/core/memory"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/repo"
)

// WaitPoll is the rig's WaitPoll.
const WaitPoll = 10 * time.Minute

// Role is the rig's role: the local role without the ACME issuer.
var Role = app.Role{Name: "test", Engine: true, Approves: true, Signs: []string{"selfSigned", "ca"}, Secrets: true, ServiceWritesSecrets: true}

// FaultyStore is a test double wrapping a real store: Get fails with
// GetErr when it is set, calls AfterGet (when set) after a Get that
// succeeded, as another writer between a read and a write would, and
// List calls are counted per kind.
type FaultyStore struct {
	ports.Store
	mu       sync.Mutex
	GetErr   error
	afterGet func(api.Key)
	lists    map[string]int // List calls per kind
}

// SetAfterGet makes every Get that succeeds call fn with its key (nil:
// call nothing).
func (f *FaultyStore) SetAfterGet(fn func(api.Key)) {
	f.mu.Lock()
	f.afterGet = fn
	f.mu.Unlock()
}

// List implements ports.Store.
func (f *FaultyStore) List(ctx context.Context, opts ports.ListOptions) ([]ports.Record, error) {
	f.mu.Lock()
	if f.lists == nil {
		f.lists = map[string]int{}
	}
	f.lists[opts.Kind]++
	f.mu.Unlock()
	return f.Store.List(ctx, opts)
}

// Listed returns and resets the List calls of kind.
func (f *FaultyStore) Listed(kind string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.lists[kind]
	delete(f.lists, kind)
	return n
}

// SetGetErr makes every Get fail with err (nil: succeed again).
func (f *FaultyStore) SetGetErr(err error) {
	f.mu.Lock()
	f.GetErr = err
	f.mu.Unlock()
}

// Get implements ports.Store.
func (f *FaultyStore) Get(ctx context.Context, key api.Key) (ports.Record, error) {
	f.mu.Lock()
	err, after := f.GetErr, f.afterGet
	f.mu.Unlock()
	if err != nil {
		return ports.Record{}, err
	}
	rec, err := f.Store.Get(ctx, key)
	if err == nil && after != nil {
		after(key)
	}
	return rec, err
}

// SwitchApprover is a test double whose decision a test changes.
type SwitchApprover struct {
	mu sync.Mutex
	d  certificaterequests.Decision
}

// Decide implements certificaterequests.Approver.
func (a *SwitchApprover) Decide(context.Context, *api.CertificateRequest) (certificaterequests.Decision, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.d, nil
}

// Set makes the approver decide r from now on.
func (a *SwitchApprover) Set(r certificaterequests.Result) {
	a.mu.Lock()
	a.d = certificaterequests.Decision{Result: r, Reason: "test", Message: fmt.Sprintf("decided %d by a test", r)}
	a.mu.Unlock()
}

// Rig is Role on memory ports and a fake clock at certtest.T0.
type Rig struct {
	T        *testing.T
	Ctx      context.Context
	Clock    *clock.Fake
	Store    *FaultyStore
	Secrets  *memory.Secrets
	Queue    *memory.Queue
	Metrics  *ct.Metrics
	Approver *SwitchApprover // nil in a NewPolicyRig
	App      *app.App
	Kernel   *kernel.Kernel
	// Repo reads the stored objects; Objects writes outside a reconcile
	// (the kernel's direct handle).
	Repo    *repo.Repo
	Objects kernel.Objects
	Service *app.Service
}

// Caller applies the rig's manifests: a superuser, so that applying
// needs no bindings (its identity is recorded on requests it applies).
var Caller = app.Caller{Username: "alice", UID: "u-1", Groups: []string{"team-a", "system:authenticated", app.SuperuserGroup}}

// NewRig returns a rig whose approver approves every request; opts
// change the settings app.Build gets (e.g. quotas).
func NewRig(t *testing.T, opts ...func(*app.Settings)) *Rig {
	t.Helper()
	return newRig(t, Role, &SwitchApprover{d: certificaterequests.Decision{Result: certificaterequests.Approved, Reason: "test", Message: "approved by a test"}}, nil, opts...)
}

// NewReadingRig is NewRig whose service reads the secret store, as local
// mode's does (Role with ServiceReadsSecrets: Status shows a secret's
// certificate).
func NewReadingRig(t *testing.T, opts ...func(*app.Settings)) *Rig {
	t.Helper()
	role := Role
	role.ServiceReadsSecrets = true
	return newRig(t, role, &SwitchApprover{d: certificaterequests.Decision{Result: certificaterequests.Approved, Reason: "test", Message: "approved by a test"}}, nil, opts...)
}

// NewNotifyingRig is NewRig with n as the deployment's notifier
// (app.Ports.Notifier) and certificates.NotifyDefaultExpiryWindow; opts may change
// the window.
func NewNotifyingRig(t *testing.T, n ports.Notifier, opts ...func(*app.Settings)) *Rig {
	t.Helper()
	opts = append([]func(*app.Settings){func(s *app.Settings) { s.NotifyExpiryWindow = certificates.NotifyDefaultExpiryWindow }}, opts...)
	return newRig(t, Role, &SwitchApprover{d: certificaterequests.Decision{Result: certificaterequests.Approved, Reason: "test", Message: "approved by a test"}}, n, opts...)
}

// WithQuotas sets the rig's quotas (NewRig's option).
func WithQuotas(q app.Quotas) func(*app.Settings) {
	return func(s *app.Settings) { s.Quotas = q }
}

// NewPolicyRig returns a rig with certfn's own approver: no auto-approved
// signers, so requests are decided by the CertificateRequestPolicies
// applied to it (Rig.Approver is nil); opts change the settings.
func NewPolicyRig(t *testing.T, opts ...func(*app.Settings)) *Rig {
	t.Helper()
	return newRig(t, Role, nil, nil, opts...)
}

func newRig(t *testing.T, role app.Role, approver *SwitchApprover, notifier ports.Notifier, opts ...func(*app.Settings)) *Rig {
	t.Helper()
	r := &Rig{T: t, Ctx: context.Background(), Clock: clock.NewFake(ct.T0), Store: &FaultyStore{Store: memory.NewStore()},
		Secrets: memory.NewSecrets(), Metrics: ct.NewMetrics(), Approver: approver}
	r.Queue = memory.NewQueue(r.Clock, 5*time.Minute)
	// Namespaced ACME Issuers may use any server in the rig (the
	// deployments deny them every server by default).
	settings := app.Settings{WaitPoll: WaitPoll, ResyncInterval: 24 * time.Hour, ACME: app.ACMESettings{NamespacedServers: acme.AllowAnyServer("apptest")}}
	if approver != nil {
		settings.Approver = approver
	}
	for _, o := range opts {
		o(&settings)
	}
	var err error
	r.App, err = app.Build(app.Ports{Store: r.Store, Secrets: r.Secrets, Queue: r.Queue, Clock: r.Clock, Metrics: r.Metrics, Notifier: notifier},
		settings, role)
	if err != nil {
		t.Fatalf("app.Build: %v", err)
	}
	r.Kernel, r.Repo, r.Service = r.App.Kernel, r.App.Repo, r.App.Service
	r.Objects = r.Kernel.Direct()
	return r
}

// Apply applies every document of manifest as Caller and returns the
// last result.
func (r *Rig) Apply(manifest string) app.ApplyResult {
	r.T.Helper()
	objs, err := api.Decode([]byte(manifest))
	if err != nil {
		r.T.Fatalf("decode: %v", err)
	}
	res, err := r.Service.Apply(r.Ctx, Caller, objs)
	if err != nil {
		r.T.Fatalf("apply: %v", err)
	}
	return res[len(res)-1]
}

// Rec returns the stored record at k.
func (r *Rig) Rec(k api.Key) ports.Record {
	r.T.Helper()
	rec, err := r.Store.Store.Get(r.Ctx, k)
	if err != nil {
		r.T.Fatalf("get %s: %v", k, err)
	}
	return rec
}

// Get returns the stored object at k.
func (r *Rig) Get(k api.Key) api.Object {
	r.T.Helper()
	o, err := r.Repo.Get(r.Ctx, k)
	if err != nil {
		r.T.Fatalf("get %s: %v", k, err)
	}
	return o
}

// Reconcile runs one step for k.
func (r *Rig) Reconcile(k api.Key) {
	r.T.Helper()
	if err := r.Kernel.Reconcile(r.Ctx, k); err != nil {
		r.T.Fatalf("reconcile %s: %v", k, err)
	}
}

// Drain handles every visible message until none is visible (no clock
// movement); a failure other than a lost race fails the test.
func (r *Rig) Drain() {
	r.T.Helper()
	for i := 0; i < 1000; i++ {
		ds, err := r.Queue.Receive(r.Ctx, 100)
		if err != nil {
			r.T.Fatal(err)
		}
		if len(ds) == 0 {
			return
		}
		for _, d := range ds {
			disp := r.Kernel.Handle(r.Ctx, kernel.Message{Key: d.Key, Attempt: d.Attempt})
			if disp.Ack {
				if disp.Err != nil {
					r.T.Fatalf("handle %s: %v", d.Key, disp.Err)
				}
				_ = r.Queue.Ack(r.Ctx, d)
			} else {
				if errs.Classify(disp.Err) != errs.Conflict {
					r.T.Fatalf("handle %s: %v", d.Key, disp.Err)
				}
				_ = r.Queue.Nack(r.Ctx, d, disp.RetryAfter)
			}
		}
	}
	r.T.Fatal("queue never drained")
}

// Visible returns the keys visible in the queue now, leaving them queued.
func (r *Rig) Visible() []string {
	r.T.Helper()
	ds, err := r.Queue.Receive(r.Ctx, 1000)
	if err != nil {
		r.T.Fatal(err)
	}
	var out []string
	for _, d := range ds {
		out = append(out, d.Key.String())
		_ = r.Queue.Nack(r.Ctx, d, 0)
	}
	return out
}

// ClearQueue acknowledges every visible message.
func (r *Rig) ClearQueue() {
	for {
		ds, _ := r.Queue.Receive(r.Ctx, 1000)
		if len(ds) == 0 {
			return
		}
		for _, d := range ds {
			_ = r.Queue.Ack(r.Ctx, d)
		}
	}
}

// Manifests and keys the rig's tests share.
const (
	CAIssuerYAML = `apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: ca, namespace: default}
spec: {ca: {secretName: ca-key-pair}}
`
	SelfSignedYAML = `apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: selfsigned}
spec: {selfSigned: {}}
`
	CertYAML = `apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web, namespace: default}
spec:
  secretName: web-tls
  dnsNames: [web.example.com]
  privateKey: {algorithm: ECDSA, size: 256}
  issuerRef: {name: selfsigned, kind: ClusterIssuer}
`
)

var (
	CAKey   = api.Key{Kind: api.KindIssuer, Namespace: "default", Name: "ca"}
	CertKey = api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "web"}
)

// NamedCertYAML is a Certificate default/name for <name>.example.com of
// the selfsigned ClusterIssuer, stored in secretName.
func NamedCertYAML(name, secretName string) string {
	return fmt.Sprintf(`apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: %s, namespace: default}
spec:
  secretName: %s
  dnsNames: [%s.example.com]
  privateKey: {algorithm: ECDSA, size: 256}
  issuerRef: {name: selfsigned, kind: ClusterIssuer}
`, name, secretName, name)
}

// NamedCertKey is the key of the Certificate default/name.
func NamedCertKey(name string) api.Key {
	return api.Key{Kind: api.KindCertificate, Namespace: "default", Name: name}
}

// CSRRequestYAML is a CertificateRequest manifest whose body claims an
// identity (username mallory, group system:masters).
func CSRRequestYAML(t *testing.T, duration string) string {
	crt := ct.Cert()
	csr := ct.CSR(t, crt, ct.Key(t, nil))
	return fmt.Sprintf(`apiVersion: cert-manager.io/v1
kind: CertificateRequest
metadata: {name: req, namespace: default}
spec:
  request: %s
  duration: %s
  issuerRef: {name: ca}
  username: mallory
  uid: forged
  groups: [system:masters]
  extra: {scopes: [all]}
`, B64(csr), duration)
}

// MustDecode decodes a one-document manifest.
func MustDecode(t *testing.T, manifest string) api.Object {
	t.Helper()
	objs, err := api.Decode([]byte(manifest))
	if err != nil || len(objs) != 1 {
		t.Fatalf("decode: %v", err)
	}
	return objs[0]
}

// B64 is standard base64.
func B64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
