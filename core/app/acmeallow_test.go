package app_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/acme/acmetest"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/kernel"
	"github.com/certfn/certfn/core/memory"
	"github.com/certfn/certfn/core/ports"
)

// acmeDeployment is the local role with the scripted ACME client on
// memory ports, approving every request.
type acmeDeployment struct {
	t     *testing.T
	app   *app.App
	queue *memory.Queue
}

func newACMEDeployment(t *testing.T, store ports.Store, secrets ports.SecretStore, client *acmetest.Client, allow []string, opts ...func(*app.Settings)) *acmeDeployment {
	t.Helper()
	clk := clock.NewFake(ct.T0)
	list, err := acme.ParseServerAllowList("--acme-server-allow", allow)
	if err != nil {
		t.Fatal(err)
	}
	q := memory.NewQueue(clk, time.Minute)
	settings := app.Settings{AutoApprove: []string{"*"}, ACME: app.ACMESettings{NamespacedServers: list}}
	for _, o := range opts {
		o(&settings)
	}
	a, err := app.Build(app.Ports{Store: store, Secrets: secrets, Queue: q, Clock: clk, ACME: acmetest.Dialer{C: client}}, settings, app.Local)
	if err != nil {
		t.Fatal(err)
	}
	return &acmeDeployment{t: t, app: a, queue: q}
}

func (d *acmeDeployment) apply(manifest string) {
	d.t.Helper()
	objs, err := api.Decode([]byte(manifest))
	if err != nil {
		d.t.Fatal(err)
	}
	if _, err := d.app.Service.Apply(context.Background(), app.Caller{Username: "admin", Groups: []string{app.SuperuserGroup}}, objs); err != nil {
		d.t.Fatal(err)
	}
}

// drain handles every visible message until none is (the clock stands still).
func (d *acmeDeployment) drain() {
	d.t.Helper()
	ctx := context.Background()
	for i := 0; i < 200; i++ {
		ds, err := d.queue.Receive(ctx, 100)
		if err != nil {
			d.t.Fatal(err)
		}
		if len(ds) == 0 {
			return
		}
		for _, m := range ds {
			disp := d.app.Kernel.Handle(ctx, kernel.Message{Key: m.Key, Attempt: m.Attempt})
			if disp.Ack {
				_ = d.queue.Ack(ctx, m)
			} else {
				_ = d.queue.Nack(ctx, m, time.Hour) // retried later: not within this drain
			}
		}
	}
	d.t.Fatal("queue never drained")
}

func (d *acmeDeployment) ready(k api.Key) *api.Condition {
	d.t.Helper()
	o, err := d.app.Repo.Get(context.Background(), k)
	if err != nil {
		d.t.Fatal(err)
	}
	return api.FindCondition(o.(api.GenericIssuer).GetStatus().Conditions, api.IssuerConditionReady)
}

func acmeIssuerYAML(kind, namespace, name, server string) string {
	meta := fmt.Sprintf("{name: %s, namespace: %s}", name, namespace)
	if namespace == "" {
		meta = fmt.Sprintf("{name: %s}", name)
	}
	return fmt.Sprintf(`apiVersion: cert-manager.io/v1
kind: %s
metadata: %s
spec:
  acme:
    server: %s
    email: ops@example.com
    privateKeySecretRef: {name: %s-account}
    solvers: [{http01: {ingress: {}}}]
---
`, kind, meta, server, name)
}

func acmeCertYAML(namespace, issuer string) string {
	return fmt.Sprintf(`apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web, namespace: %s}
spec:
  secretName: web-tls
  dnsNames: [web.example.com]
  issuerRef: {name: %s}
`, namespace, issuer)
}

func countCalls(c *acmetest.Client, prefix string) int {
	n := 0
	for _, call := range c.Calls() {
		if strings.HasPrefix(call, prefix) {
			n++
		}
	}
	return n
}

// With --acme-server-allow, a namespaced Issuer on another server is not
// Ready (the reason names the setting) and nothing of its is sent to any
// ACME server, its Certificates included; allowed Issuers and every
// ClusterIssuer register as usual.
func TestACMEServerAllowList(t *testing.T) {
	client := &acmetest.Client{}
	d := newACMEDeployment(t, memory.NewStore(), memory.NewSecrets(), client, []string{"https://acme.test/dir"})
	d.apply(acmeIssuerYAML("Issuer", "team-a", "evil", "https://169.254.169.254/latest/dir") +
		acmeIssuerYAML("Issuer", "team-a", "ok", "https://acme.test/dir") +
		acmeIssuerYAML("ClusterIssuer", "", "platform", "https://acme.test/private/dir"))
	d.drain()
	for _, tc := range []struct {
		key    api.Key
		status api.ConditionStatus
		reason string
		msg    string
	}{
		{api.Key{Kind: api.KindIssuer, Namespace: "team-a", Name: "evil"}, api.ConditionFalse, acme.ReasonServerNotAllowed,
			`spec.acme.server "https://169.254.169.254/latest/dir" is not allowed for namespaced Issuers: the deployment allows only servers starting with https://acme.test/dir (--acme-server-allow)`},
		{api.Key{Kind: api.KindIssuer, Namespace: "team-a", Name: "ok"}, api.ConditionTrue, acme.ReasonAccountRegistered, ""},
		{api.Key{Kind: api.KindClusterIssuer, Name: "platform"}, api.ConditionTrue, acme.ReasonAccountRegistered, ""},
	} {
		c := d.ready(tc.key)
		if c == nil || c.Status != tc.status || c.Reason != tc.reason || !strings.Contains(c.Message, tc.msg) {
			t.Errorf("%s Ready = %+v, want %s %s %q", tc.key, c, tc.status, tc.reason, tc.msg)
		}
	}
	if got := client.Calls(); !slices.Equal(got, []string{"Register", "Register"}) {
		t.Fatalf("ACME calls %v, want the two allowed registrations", got)
	}
	d.apply(acmeCertYAML("team-a", "evil"))
	d.drain()
	if got := client.Calls(); len(got) != 2 {
		t.Fatalf("a Certificate of the refused issuer made ACME calls: %v", got[2:])
	}
	if orders, _ := d.app.Repo.List(context.Background(), api.KindOrder, "team-a"); len(orders) != 0 {
		t.Fatalf("%d Orders for a refused issuer", len(orders))
	}
}

// An Issuer that was Ready before its server was refused (the allow-list
// was set later) gets no ACME request: its Order waits and wakes the
// Issuer, which records why it is not Ready.
func TestACMEServerAllowListAfterTheFact(t *testing.T) {
	store, secrets, client := memory.NewStore(), memory.NewSecrets(), &acmetest.Client{}
	before := newACMEDeployment(t, store, secrets, client, []string{"*"})
	before.apply(acmeIssuerYAML("Issuer", "team-b", "le", "https://old.example/dir"))
	before.drain()
	key := api.Key{Kind: api.KindIssuer, Namespace: "team-b", Name: "le"}
	if c := before.ready(key); c == nil || c.Status != api.ConditionTrue {
		t.Fatalf("Ready before the list: %+v", c)
	}
	calls := len(client.Calls())

	after := newACMEDeployment(t, store, secrets, client, []string{"https://acme.test/"})
	after.apply(acmeCertYAML("team-b", "le"))
	after.drain()
	if got := client.Calls()[calls:]; len(got) != 0 {
		t.Fatalf("ACME calls for a refused server: %v", got)
	}
	if c := after.ready(key); c == nil || c.Status != api.ConditionFalse || c.Reason != acme.ReasonServerNotAllowed {
		t.Fatalf("Ready after the list: %+v", c)
	}
	if countCalls(client, "NewOrder") != 0 {
		t.Fatal("an order was placed")
	}
	// The request went as far as an Order (the Issuer was Ready), which
	// waits without a URL.
	orders, err := after.app.Repo.List(context.Background(), api.KindOrder, "team-b")
	if err != nil || len(orders) != 1 || orders[0].(*api.Order).Status.URL != "" {
		t.Fatalf("orders %v %v", orders, err)
	}
}
