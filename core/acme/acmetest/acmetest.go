// Package acmetest holds TEST DOUBLES and builders for the ACME steps: a
// scripted ACME client that records every call, and a rig (kernel on the
// in-memory ports of core/memory, a fake clock, a registered ClusterIssuer)
// on which the Order and Challenge controllers run one reconcile at a time.
package acmetest

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/acme/challenges"
	"github.com/certfn/certfn/core/acme/orders"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/issuers"
	"github.com/certfn/certfn/core/kernel"
	"github.com/certfn/certfn/core/memory"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/repo"
)

// Client is a scripted acme.Client TEST DOUBLE. Each method runs its
// function field when set, else answers a plausible default; every call
// is recorded as "Method arg".
type Client struct {
	mu    sync.Mutex
	calls []string

	NewOrderFn         func(req acme.NewOrderRequest) (acme.Order, error)
	GetOrderFn         func(url string) (acme.Order, error)
	GetAuthorizationFn func(url string) (acme.Authorization, error)
	AcceptFn           func(url string) (acme.Challenge, error)
	FinalizeFn         func(orderURL string) (acme.Order, error)
	ChainsFn           func(certURL string) ([]acme.Chain, error)
	// Revoked lists "serial:reason" of each Revoke.
	Revoked []string
}

var _ acme.Client = (*Client)(nil)

func (c *Client) record(s string) {
	c.mu.Lock()
	c.calls = append(c.calls, s)
	c.mu.Unlock()
}

// Calls returns the recorded calls.
func (c *Client) Calls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.calls...)
}

// Register implements acme.Client.
func (c *Client) Register(_ context.Context, req acme.RegisterRequest) (acme.Account, error) {
	c.record("Register")
	return acme.Account{URL: "https://acme.test/acct/1", Key: req.Key, Thumbprint: "thumb"}, nil
}

// NewOrder implements acme.Client; default: a pending order with one
// authorization per DNS name.
func (c *Client) NewOrder(_ context.Context, _ acme.Account, req acme.NewOrderRequest) (acme.Order, error) {
	c.record("NewOrder " + req.Replaces)
	if c.NewOrderFn != nil {
		return c.NewOrderFn(req)
	}
	o := acme.Order{URL: "https://acme.test/order/1", Status: acme.StatusPending, FinalizeURL: "https://acme.test/finalize/1"}
	for _, d := range req.DNSNames {
		o.Authorizations = append(o.Authorizations, "https://acme.test/authz/"+d)
	}
	return o, nil
}

// GetOrder implements acme.Client.
func (c *Client) GetOrder(_ context.Context, _ acme.Account, url string) (acme.Order, error) {
	c.record("GetOrder " + url)
	if c.GetOrderFn != nil {
		return c.GetOrderFn(url)
	}
	return acme.Order{URL: url, Status: acme.StatusValid, CertificateURL: "https://acme.test/cert/1"}, nil
}

// GetAuthorization implements acme.Client; default: a pending
// authorization for the name at the end of the URL, offering http-01
// and dns-01.
func (c *Client) GetAuthorization(_ context.Context, _ acme.Account, url string) (acme.Authorization, error) {
	c.record("GetAuthorization " + url)
	if c.GetAuthorizationFn != nil {
		return c.GetAuthorizationFn(url)
	}
	name := url[len("https://acme.test/authz/"):]
	return acme.Authorization{URL: url, Status: acme.StatusPending, Identifier: name, Challenges: []acme.Challenge{
		{URL: "https://acme.test/chall/http/" + name, Type: "http-01", Token: "tok-http-" + name, Status: acme.StatusPending},
		{URL: "https://acme.test/chall/dns/" + name, Type: "dns-01", Token: "tok-dns-" + name, Status: acme.StatusPending},
	}}, nil
}

// AcceptChallenge implements acme.Client.
func (c *Client) AcceptChallenge(_ context.Context, _ acme.Account, url string) (acme.Challenge, error) {
	c.record("AcceptChallenge " + url)
	if c.AcceptFn != nil {
		return c.AcceptFn(url)
	}
	return acme.Challenge{URL: url, Status: acme.StatusProcessing}, nil
}

// Finalize implements acme.Client.
func (c *Client) Finalize(_ context.Context, _ acme.Account, orderURL, _ string, _ []byte) (acme.Order, error) {
	c.record("Finalize " + orderURL)
	if c.FinalizeFn != nil {
		return c.FinalizeFn(orderURL)
	}
	return acme.Order{URL: orderURL, Status: acme.StatusProcessing}, nil
}

// Chains implements acme.Client.
func (c *Client) Chains(_ context.Context, _ acme.Account, certURL string) ([]acme.Chain, error) {
	c.record("Chains " + certURL)
	if c.ChainsFn != nil {
		return c.ChainsFn(certURL)
	}
	return nil, fmt.Errorf("acmetest: no ChainsFn")
}

// RenewalInfo implements acme.Client: unsupported.
// Revoke implements acme.Client: it records the serial and reason.
func (c *Client) Revoke(_ context.Context, _ acme.Account, leaf *x509.Certificate, reason int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Revoked = append(c.Revoked, fmt.Sprintf("%s:%d", leaf.SerialNumber, reason))
	return nil
}

func (c *Client) RenewalInfo(context.Context, *x509.Certificate) (acme.RenewalInfo, error) {
	c.record("RenewalInfo")
	return acme.RenewalInfo{}, acme.ErrARIUnsupported
}

// Dialer hands out one Client.
type Dialer struct{ C *Client }

// Client implements acme.Dialer.
func (d Dialer) Client(acme.ServerConfig) (acme.Client, error) { return d.C, nil }

// Thumbprint implements acme.Dialer.
func (d Dialer) Thumbprint(crypto.Signer) (string, error) { return "thumb", nil }

// Rig is a kernel on the in-memory store and queue of core/memory, a fake
// clock, in-memory secrets, the scripted client and a registered
// ClusterIssuer "le" with the given solvers.
type Rig struct {
	T        *testing.T
	Ctx      context.Context
	Clock    *clock.Fake
	Store    *memory.Store
	Secrets  *certtest.MemSecrets
	Client   *Client
	Accounts *acme.Accounts
	Kernel   *kernel.Kernel
	// Objects is the kernel's handle for writes outside a reconcile.
	Objects kernel.Objects
	// Queue is the kernel's queue (what reconciles wake).
	Queue  *memory.Queue
	Orders *orders.Controller
	Chals  *challenges.Controller

	solvers []api.ACMEChallengeSolver
}

// DefaultSolvers are the rig issuer's solvers when a test names none: a
// DNS-01 webhook solver (the tests' DNS-01 doubles ignore its settings)
// and an HTTP-01 solver.
var DefaultSolvers = []api.ACMEChallengeSolver{
	{DNS01: &api.ACMEChallengeSolverDNS01{Webhook: json.RawMessage(`{"groupName": "acme.certfn.test", "solverName": "test"}`)}},
	{HTTP01: &api.ACMEChallengeSolverHTTP01{}},
}

// T0 is the rig's start time.
var T0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// NewRig builds a rig; chCfg configures the Challenge controller (Accounts is filled in).
func NewRig(t *testing.T, solvers []api.ACMEChallengeSolver, chCfg challenges.Config) *Rig {
	t.Helper()
	clk := clock.NewFake(T0)
	store := memory.NewStore()
	if solvers == nil {
		solvers = DefaultSolvers
	}
	r := &Rig{T: t, Ctx: context.Background(), Clock: clk, Store: store, Secrets: certtest.NewMemSecrets(), Client: &Client{}, solvers: solvers}
	r.Accounts = acme.NewAccounts(r.Secrets, Dialer{r.Client}, acme.AllowAnyServer("acmetest"))
	chCfg.Accounts = r.Accounts
	r.Chals = challenges.New(chCfg)
	r.Orders = orders.New(orders.Config{Accounts: r.Accounts})
	r.Queue = memory.NewQueue(clk, time.Minute)
	// Test support: the rig drives only the Order and Challenge
	// controllers, not app.Build's whole table; the rows above them own
	// Orders as there, so that deletions cascade alike.
	var err error
	r.Kernel, err = kernel.New(kernel.Config{Store: store, Queue: r.Queue, Clock: clk, Controllers: []kernel.Row{
		{Kinds: []string{api.KindCertificateRequest}, Owns: []string{api.KindOrder}},
		{Kinds: []string{api.KindCertificateSigningRequest}, Owns: []string{api.KindOrder}},
		{Kinds: []string{api.KindOrder}, Controller: r.Orders, Owns: []string{api.KindChallenge}},
		{Kinds: []string{api.KindChallenge}, Controller: r.Chals},
	}})
	if err != nil {
		t.Fatal(err)
	}
	r.Objects = r.Kernel.Direct()
	iss := &api.ClusterIssuer{TypeMeta: api.TypeMeta{APIVersion: api.CertManagerV1, Kind: api.KindClusterIssuer},
		ObjectMeta: api.ObjectMeta{Name: "le", UID: "issuer-uid"},
		Spec: api.IssuerSpec{ACME: &api.ACMEIssuer{Server: "https://acme.test/dir", Email: "a@example.com",
			PrivateKeySecretRef: api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: "acct"}}, Solvers: solvers}}}
	ok, reason, msg, err := r.Accounts.Ready(r.Ctx, &issuers.State{Issuer: iss, Now: T0, SecretNamespace: "cert-manager"})
	if err != nil || !ok {
		t.Fatalf("register: %v %s %s", err, reason, msg)
	}
	api.SetCondition(&iss.Status.Conditions, api.Condition{Type: "Ready", Status: api.ConditionTrue, Reason: reason}, T0)
	if _, err := r.Objects.CreateObject(r.Ctx, iss, time.Time{}); err != nil {
		t.Fatal(err)
	}
	r.Client.calls = nil
	return r
}

// IssuerRef names the rig's issuer.
var IssuerRef = api.IssuerReference{Name: "le", Kind: api.KindClusterIssuer}

// Create stores obj. An Order or a Challenge without a controlling owner
// first gets the chain certfn's ACME issuer would have made (see
// acme.CheckOrder and acme.CheckChallenge): an Order an approved
// CertificateRequest carrying its CSR; a Challenge an Order (with such a
// request) whose status lists it as the server's offer, and, when it has
// none, the solver the rig's issuer selects. The owners are stored
// directly, without waking anything.
func (r *Rig) Create(obj api.Object) {
	r.T.Helper()
	switch o := obj.(type) {
	case *api.Order:
		if o.ControllerOf() == nil {
			o.OwnerReferences = []api.OwnerReference{acme.ControllerRef(r.approvedRequest(o.Namespace, o.Name+"-cr", o.Spec.Request, o.Spec.IssuerRef))}
		}
	case *api.Challenge:
		if o.ControllerOf() == nil {
			r.ownChallenge(o)
		}
	}
	if _, err := r.Objects.CreateObject(r.Ctx, obj, r.Clock.Now()); err != nil {
		r.T.Fatalf("create %s: %v", api.KeyOf(obj), err)
	}
}

// approvedRequest stores an approved CertificateRequest carrying csr.
func (r *Rig) approvedRequest(ns, name string, csr []byte, ref api.IssuerReference) *api.CertificateRequest {
	r.T.Helper()
	cr := &api.CertificateRequest{TypeMeta: api.TypeMeta{APIVersion: api.CertManagerV1, Kind: api.KindCertificateRequest},
		ObjectMeta: api.ObjectMeta{Name: name, Namespace: ns, UID: name + "-uid"},
		Spec:       api.CertificateRequestSpec{Request: csr, IssuerRef: ref}}
	api.SetCondition(&cr.Status.Conditions, api.Condition{Type: api.CertificateRequestConditionApproved, Status: api.ConditionTrue, Reason: "test"}, T0)
	r.put(cr)
	return cr
}

// ownChallenge gives c an Order that lists it, and the issuer's solver.
func (r *Rig) ownChallenge(c *api.Challenge) {
	r.T.Helper()
	acmeType := "http-01"
	if c.Spec.Type == api.ACMEChallengeTypeDNS01 {
		acmeType = "dns-01"
	}
	wild := c.Spec.Wildcard
	csr := []byte("csr of " + c.Name)
	o := &api.Order{TypeMeta: api.TypeMeta{APIVersion: api.ACMEV1, Kind: api.KindOrder},
		ObjectMeta: api.ObjectMeta{Name: c.Name + "-order", Namespace: c.Namespace, UID: c.Name + "-order-uid"},
		Spec:       api.OrderSpec{Request: csr, IssuerRef: c.Spec.IssuerRef, DNSNames: []string{c.Spec.DNSName}},
		Status: api.OrderStatus{URL: "https://acme.test/order/" + c.Name, State: api.StatePending,
			Authorizations: []api.ACMEAuthorization{{URL: c.Spec.AuthorizationURL, Identifier: c.Spec.DNSName, Wildcard: &wild,
				Challenges: []api.ACMEChallenge{{URL: c.Spec.URL, Token: c.Spec.Token, Type: acmeType}}}}}}
	o.OwnerReferences = []api.OwnerReference{acme.ControllerRef(r.approvedRequest(c.Namespace, c.Name+"-cr", csr, c.Spec.IssuerRef))}
	acme.StampSpec(&o.ObjectMeta, o.Spec)
	r.put(o)
	c.OwnerReferences = []api.OwnerReference{acme.ControllerRef(o)}
	if c.Spec.Solver.DNS01 == nil && c.Spec.Solver.HTTP01 == nil {
		if choice, ok := acme.SelectSolver(r.solvers, c.Spec.DNSName, wild, nil, []string{acmeType}); ok {
			c.Spec.Solver = choice.Solver
			acme.StampSpec(&c.ObjectMeta, c.Spec)
		}
	}
}

// put stores obj as it is, waking nothing.
func (r *Rig) put(obj api.Object) {
	r.T.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		r.T.Fatal(err)
	}
	if _, err := r.Store.Create(r.Ctx, ports.Record{Key: api.KeyOf(obj), Data: data}); err != nil && !errors.Is(err, ports.ErrAlreadyExists) {
		r.T.Fatalf("store %s: %v", api.KeyOf(obj), err)
	}
}

// Reconcile runs one step for key and returns the controller's error.
func (r *Rig) Reconcile(key api.Key) error { return r.Kernel.Reconcile(r.Ctx, key) }

// MustReconcile runs one step and fails the test on an error.
func (r *Rig) MustReconcile(key api.Key) {
	r.T.Helper()
	if err := r.Reconcile(key); err != nil {
		r.T.Fatalf("reconcile %s: %v", key, err)
	}
}

// Get loads key (nil when missing).
func (r *Rig) Get(key api.Key) api.Object {
	r.T.Helper()
	rec, err := r.Store.Get(r.Ctx, key)
	if err != nil {
		return nil
	}
	o, err := repo.Decode(rec)
	if err != nil {
		r.T.Fatal(err)
	}
	return o
}

// Record loads key's stored record.
func (r *Rig) Record(key api.Key) ports.Record {
	r.T.Helper()
	rec, err := r.Store.Get(r.Ctx, key)
	if err != nil {
		r.T.Fatal(err)
	}
	return rec
}

// Mutate loads key, applies fn and writes it back.
func (r *Rig) Mutate(key api.Key, fn func(api.Object)) {
	r.T.Helper()
	rec := r.Record(key)
	o, _ := repo.Decode(rec)
	fn(o)
	if _, err := r.Objects.UpdateObject(r.Ctx, o, rec.Version, rec.NextRunAt); err != nil {
		r.T.Fatal(err)
	}
}

// List returns the stored objects of kind.
func (r *Rig) List(kind string) []api.Object {
	r.T.Helper()
	objs, err := repo.New(r.Store, api.IssuerScope{}).List(r.Ctx, kind, "")
	if err != nil {
		r.T.Fatal(err)
	}
	return objs
}
