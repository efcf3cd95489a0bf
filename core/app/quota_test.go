package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/acme/acmetest"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/app/apptest"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/memory"
	"github.com/certfn/certfn/core/ports"
)

// issuerYAML is a selfSigned Issuer named name in ns.
func issuerYAML(ns, name string) string {
	return fmt.Sprintf("apiVersion: cert-manager.io/v1\nkind: Issuer\nmetadata: {name: %s, namespace: %s}\nspec: {selfSigned: {}}\n", name, ns)
}

// decode decodes manifests joined with "---".
func decode(t *testing.T, docs ...string) []api.Object {
	t.Helper()
	objs, err := api.Decode([]byte(strings.Join(docs, "---\n")))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func countIn(t *testing.T, r *apptest.Rig, ns string) int {
	t.Helper()
	n := 0
	for _, kind := range app.QuotaKinds {
		objs, err := r.Repo.List(r.Ctx, kind, ns)
		if err != nil {
			t.Fatal(err)
		}
		n += len(objs)
	}
	return n
}

func TestObjectsQuota(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit int
		// before is applied first (and reconciled); batch is then applied.
		before []string
		batch  []string
		// wantErr: the batch is refused with a message containing it;
		// nothing of it is stored.
		wantErr string
	}{
		{name: "off by default", before: []string{issuerYAML("team-a", "i0"), issuerYAML("team-a", "i1")},
			batch: []string{issuerYAML("team-a", "i2"), issuerYAML("team-a", "i3"), issuerYAML("team-a", "i4")}},
		{name: "limit exactly reached", limit: 4, before: []string{issuerYAML("team-a", "i0")},
			batch: []string{issuerYAML("team-a", "i1"), issuerYAML("team-a", "i2"), issuerYAML("team-a", "i3")}},
		{name: "batch over the limit refused whole", limit: 3, before: []string{issuerYAML("team-a", "i0"), issuerYAML("team-a", "i1")},
			batch:   []string{issuerYAML("team-a", "i2"), issuerYAML("team-a", "i3")},
			wantErr: "exceeded quota: namespace team-a holds 2 objects and this apply would create 2 more, over its quota of 3 (CERTFN_QUOTA_OBJECTS"},
		{name: "one namespace over refuses the other's objects too", limit: 2, before: []string{issuerYAML("team-a", "i0"), issuerYAML("team-a", "i1")},
			batch:   []string{issuerYAML("team-b", "i0"), issuerYAML("team-a", "i2")},
			wantErr: "namespace team-a holds 2 objects and this apply would create 1 more, over its quota of 2"},
		{name: "another namespace is not affected", limit: 2, before: []string{issuerYAML("team-a", "i0"), issuerYAML("team-a", "i1")},
			batch: []string{issuerYAML("team-b", "i0"), issuerYAML("team-b", "i1")}},
		{name: "updates of a namespace at its limit are allowed", limit: 2, before: []string{issuerYAML("team-a", "i0"), issuerYAML("team-a", "i1")},
			batch: []string{strings.Replace(issuerYAML("team-a", "i0"), "{selfSigned: {}}", "{selfSigned: {crlDistributionPoints: [\"http://crl\"]}}", 1),
				issuerYAML("team-a", "i1")}},
		{name: "the same object twice in a batch counts once", limit: 2, before: []string{issuerYAML("team-a", "i0")},
			batch: []string{issuerYAML("team-a", "i1"), issuerYAML("team-a", "i1")}},
		{name: "cluster-scoped kinds do not count", limit: 1, before: []string{issuerYAML("team-a", "i0")},
			batch: []string{apptest.SelfSignedYAML}},
		{name: "roles and bindings count", limit: 2, before: []string{issuerYAML("team-a", "i0")},
			batch: []string{
				"apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: r, namespace: team-a}\nrules: []\n",
				"apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: b, namespace: team-a}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: r}\nsubjects: [{kind: User, name: bob}]\n",
			},
			wantErr: "namespace team-a holds 1 objects and this apply would create 2 more, over its quota of 2"},
		{name: "requests certfn created for a Certificate count", limit: 3,
			before:  []string{issuerYAML("default", "selfsigned"), strings.Replace(apptest.CertYAML, "kind: ClusterIssuer", "kind: Issuer", 1)},
			batch:   []string{issuerYAML("default", "other")},
			wantErr: "namespace default holds 3 objects and this apply would create 1 more, over its quota of 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := apptest.NewRig(t, apptest.WithQuotas(app.Quotas{ObjectsPerNamespace: tc.limit}))
			if len(tc.before) > 0 {
				if _, err := r.Service.Apply(r.Ctx, caller, decode(t, tc.before...)); err != nil {
					t.Fatalf("before: %v", err)
				}
				r.Drain()
			}
			counts := map[string]int{"team-a": countIn(t, r, "team-a"), "team-b": countIn(t, r, "team-b"), "default": countIn(t, r, "default")}
			r.Store.Listed(api.KindCertificate)
			_, err := r.Service.Apply(r.Ctx, caller, decode(t, tc.batch...))
			if lists := r.Store.Listed(api.KindCertificate); tc.limit == 0 && lists > 0 {
				t.Errorf("no quota, yet the apply listed Certificates %d times", lists)
			}
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("apply: %v", err)
				}
				return
			}
			if !errors.Is(err, app.ErrForbidden) || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "nothing was applied") {
				t.Fatalf("apply = %v\nwant ErrForbidden containing %q", err, tc.wantErr)
			}
			for ns, n := range counts {
				if got := countIn(t, r, ns); got != n {
					t.Errorf("namespace %s holds %d objects after a refused apply, %d before", ns, got, n)
				}
			}
		})
	}
}

// caIssuer applies a CA Issuer "ca" in ns with its key pair.
func caIssuer(t *testing.T, r *apptest.Rig, ns string) {
	t.Helper()
	r.Apply(strings.Replace(apptest.CAIssuerYAML, "namespace: default", "namespace: "+ns, 1))
	if err := r.Secrets.Put(r.Ctx, ct.NewCA(t).Secret(t, ns, "ca-key-pair")); err != nil {
		t.Fatal(err)
	}
}

func requestYAML(t *testing.T, ns, name string) string {
	csr := ct.CSR(t, ct.Cert(), ct.Key(t, nil))
	return fmt.Sprintf("apiVersion: cert-manager.io/v1\nkind: CertificateRequest\nmetadata: {name: %s, namespace: %s}\nspec:\n  request: %s\n  issuerRef: {name: ca}\n",
		name, ns, apptest.B64(csr))
}

// The issuance quota end to end on the kernel: the third request of a
// namespace within an hour stays Pending until the first issuance is an
// hour old, while another namespace is signed; then it is signed.
func TestIssuanceQuota(t *testing.T) {
	r := apptest.NewRig(t, apptest.WithQuotas(app.Quotas{IssuancesPerHourPerNamespace: 2}))
	caIssuer(t, r, "team-a")
	caIssuer(t, r, "team-b")
	r.Drain()
	key := func(ns, name string) api.Key {
		return api.Key{Kind: api.KindCertificateRequest, Namespace: ns, Name: name}
	}
	cr := func(k api.Key) *api.CertificateRequest { return r.Get(k).(*api.CertificateRequest) }

	first := r.Clock.Now()
	for i, at := range []time.Duration{0, 20 * time.Minute} {
		r.Clock.Set(first.Add(at))
		k := key("team-a", fmt.Sprintf("r%d", i))
		r.Apply(requestYAML(t, k.Namespace, k.Name))
		r.Drain()
		if !cr(k).IsIssued() {
			t.Fatalf("%s within the quota not issued: %+v", k, cr(k).Status.Conditions)
		}
	}
	r.Clock.Set(first.Add(30 * time.Minute))
	held := key("team-a", "r2")
	r.Apply(requestYAML(t, held.Namespace, held.Name))
	r.Apply(requestYAML(t, "team-b", "r0"))
	r.Drain()
	c := api.FindCondition(cr(held).Status.Conditions, api.CertificateRequestConditionReady)
	free := first.Add(time.Hour)
	if cr(held).IsIssued() || c == nil || c.Reason != api.CertificateRequestReasonPending ||
		!strings.Contains(c.Message, "Issuance quota of namespace team-a reached: 2 CertificateRequests issued in the last hour, limit 2 per hour") ||
		!strings.Contains(c.Message, free.Format(time.RFC3339)) {
		t.Fatalf("third request of team-a: Ready %+v", c)
	}
	if next := r.Rec(held).NextRunAt; !next.Equal(free) {
		t.Fatalf("held request due at %s, want %s (the oldest issuance + 1h)", next, free)
	}
	if k := key("team-b", "r0"); !cr(k).IsIssued() {
		t.Fatalf("team-b's request not issued: %+v", cr(k).Status.Conditions)
	}

	// A second before the oldest leaves the window: still held.
	r.Clock.Set(free.Add(-time.Second))
	r.Reconcile(held)
	if cr(held).IsIssued() {
		t.Fatal("signed before the quota freed up")
	}
	// When it does, the scheduler finds the request due and it is signed.
	r.Clock.Set(free)
	if _, err := r.Kernel.Sweep(r.Ctx, 100); err != nil {
		t.Fatal(err)
	}
	r.Drain()
	if !cr(held).IsIssued() {
		t.Fatalf("not issued once the quota freed up: %+v", cr(held).Status.Conditions)
	}
}

func TestQuotasValidated(t *testing.T) {
	for _, q := range []app.Quotas{{ObjectsPerNamespace: -1}, {IssuancesPerHourPerNamespace: -2}} {
		if err := q.Validate(); err == nil || !strings.Contains(err.Error(), "want 0 (unlimited) or more") {
			t.Errorf("%+v: %v", q, err)
		}
	}
}

// putIssued stores a CertificateRequest of ns issued at at, as if signed
// before.
func putIssued(t *testing.T, store ports.Store, ns, name string, at time.Time) {
	t.Helper()
	cr := ct.Request(t, ct.Cert(), ct.Key(t, nil), 1, ct.WithName(name), ct.Issued([]byte("chain"), nil, at))
	cr.Namespace, cr.OwnerReferences = ns, nil
	b, err := json.Marshal(cr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Create(context.Background(), ports.Record{Key: api.KeyOf(cr), Data: b}); err != nil {
		t.Fatal(err)
	}
}

// ACME requests count against the issuance quota too, and no Order is
// created for a namespace at its limit (nothing is sent to the ACME
// server); another namespace orders as usual.
func TestIssuanceQuotaACME(t *testing.T) {
	store, client := memory.NewStore(), &acmetest.Client{}
	putIssued(t, store, "team-a", "earlier", ct.T0.Add(-10*time.Minute))
	d := newACMEDeployment(t, store, memory.NewSecrets(), client, []string{"*"}, func(s *app.Settings) {
		s.Quotas.IssuancesPerHourPerNamespace = 1
	})
	d.apply(acmeIssuerYAML("Issuer", "team-a", "le", "https://acme.test/dir") + acmeIssuerYAML("Issuer", "team-b", "le", "https://acme.test/dir"))
	d.drain()
	d.apply(acmeCertYAML("team-a", "le"))
	d.apply(acmeCertYAML("team-b", "le"))
	d.drain()
	ctx := context.Background()
	if orders, _ := d.app.Repo.List(ctx, api.KindOrder, "team-a"); len(orders) != 0 {
		t.Fatalf("%d Orders in team-a at its issuance quota", len(orders))
	}
	if orders, _ := d.app.Repo.List(ctx, api.KindOrder, "team-b"); len(orders) != 1 {
		t.Fatalf("%d Orders in team-b, want 1", len(orders))
	}
	if n := countCalls(client, "NewOrder"); n != 1 {
		t.Fatalf("%d NewOrder calls, want team-b's only", n)
	}
	crs, err := d.app.Repo.List(ctx, api.KindCertificateRequest, "team-a")
	if err != nil {
		t.Fatal(err)
	}
	var held *api.Condition
	for _, o := range crs {
		if cr := o.(*api.CertificateRequest); cr.Name != "earlier" {
			held = api.FindCondition(cr.Status.Conditions, api.CertificateRequestConditionReady)
		}
	}
	want := "signing waits until " + ct.T0.Add(50*time.Minute).Format(time.RFC3339)
	if held == nil || held.Reason != api.CertificateRequestReasonPending || !strings.Contains(held.Message, want) {
		t.Fatalf("team-a's request: Ready %+v, want Pending with %q", held, want)
	}
}
