package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/certificatesigningrequests"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/memory"
	"github.com/certfn/certfn/core/ports"
)

// batchQueue gives a memory queue the batch send of a cloud queue.
type batchQueue struct{ *memory.Queue }

func (b batchQueue) EnqueueBatch(ctx context.Context, keys []api.Key, delay time.Duration) error {
	for _, k := range keys {
		if err := b.Enqueue(ctx, k, delay); err != nil {
			return err
		}
	}
	return nil
}

// cloudRig is the cloud shape on memory ports: the worker (approves,
// hands CA and selfSigned signing off) and the signer (signs, never
// approves, never reads RBAC), each behind app.Deliverer, and the api.
type cloudRig struct {
	t              *testing.T
	ctx            context.Context
	store          ports.Store
	secrets        *memory.Secrets
	wq, sq         *memory.Queue
	worker, signer *app.Deliverer
	api            *app.App
	signerKinds    map[string]int // kinds the signer handled
}

func newCloudRig(t *testing.T) *cloudRig {
	clk := clock.NewFake(ct.T0)
	r := &cloudRig{t: t, ctx: context.Background(), store: memory.NewStore(), secrets: memory.NewSecrets(),
		wq: memory.NewQueue(clk, 5*time.Minute), sq: memory.NewQueue(clk, 5*time.Minute), signerKinds: map[string]int{}}
	s := app.Settings{WaitPoll: 10 * time.Minute, ResyncInterval: 24 * time.Hour, AutoApprove: []string{"issuers.cert-manager.io/default.ca"}}
	worker := app.Worker
	worker.ACME, worker.Signs = false, nil // the routing under test, without the ACME issuer's ports
	build := func(role app.Role, q ports.Queue) *app.App {
		a, err := app.Build(app.Ports{Store: r.store, Secrets: r.secrets, Queue: q, Clock: clk, SignerQueue: r.sq}, s, role)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	r.worker = &app.Deliverer{App: build(worker, r.wq), Queue: batchQueue{r.wq}, HandOff: r.sq}
	r.signer = &app.Deliverer{App: build(app.Signer, r.wq), Queue: batchQueue{r.wq}}
	r.api = build(app.API, r.wq)
	return r
}

// drain delivers every visible message of both queues until none is left.
func (r *cloudRig) drain() {
	for i := 0; i < 200; i++ {
		moved := false
		for _, q := range []struct {
			q *memory.Queue
			d *app.Deliverer
		}{{r.wq, r.worker}, {r.sq, r.signer}} {
			ds, err := q.q.Receive(r.ctx, 100)
			if err != nil {
				r.t.Fatal(err)
			}
			for _, d := range ds {
				moved = true
				if q.q == r.sq {
					r.signerKinds[d.Key.Kind]++
				}
				disp := q.d.DeliverOne(r.ctx, d.Key, d.Attempt)
				if !disp.Ack {
					r.t.Fatalf("deliver %s: %v", d.Key, disp.Err)
				}
				_ = q.q.Ack(r.ctx, d)
			}
		}
		if !moved {
			return
		}
	}
	r.t.Fatal("queues never drained")
}

func (r *cloudRig) apply(caller app.Caller, manifest string) {
	r.t.Helper()
	objs, err := api.Decode([]byte(manifest))
	if err != nil {
		r.t.Fatal(err)
	}
	if _, err := r.api.Service.Apply(r.ctx, caller, objs); err != nil {
		r.t.Fatalf("apply: %v", err)
	}
}

func (r *cloudRig) csr(name string) *api.CertificateSigningRequest {
	o, err := r.api.Repo.Get(r.ctx, api.Key{Kind: api.KindCertificateSigningRequest, Name: name})
	if err != nil {
		r.t.Fatal(err)
	}
	return o.(*api.CertificateSigningRequest)
}

// On the cloud shape the worker approves a CSR (its auto-approve list)
// and hands it to the signer, which signs it without reading RBAC; a CSR
// whose requester may not reference the namespaced Issuer is failed by
// the worker and never reaches the signer.
func TestCSROnWorkerAndSigner(t *testing.T) {
	r := newCloudRig(t)
	if err := r.secrets.Put(r.ctx, ct.NewCA(t).Secret(t, "default", "ca-key-pair")); err != nil {
		t.Fatal(err)
	}
	admin := app.Caller{Username: "admin", Groups: []string{app.SuperuserGroup}}
	r.apply(admin, `apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: ca, namespace: default}
spec: {ca: {secretName: ca-key-pair}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: csr-requester}
rules:
- {apiGroups: [certificates.k8s.io], resources: [certificatesigningrequests], verbs: [create, get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: bob-requests}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: csr-requester}
subjects: [{kind: User, name: bob}]
`)
	r.drain()
	r.apply(admin, csrSpec{name: "ok", signer: "issuers.cert-manager.io/default.ca", expirationSeconds: 3600}.yaml(t))
	r.apply(app.Caller{Username: "bob"}, csrSpec{name: "noref", signer: "issuers.cert-manager.io/default.ca"}.yaml(t))
	r.signerKinds = map[string]int{}
	r.drain()
	ok := r.csr("ok")
	if !ok.IsIssued() || ok.Status.HonouredDuration.Duration != time.Hour {
		t.Fatalf("ok: %+v", ok.Status)
	}
	if r.signerKinds[api.KindCertificateSigningRequest] != 1 {
		t.Fatalf("the signer handled %v; want the one approved CSR", r.signerKinds)
	}
	if f := r.csr("noref").Status.Condition(api.CSRConditionFailed); f == nil || f.Reason != certificatesigningrequests.ReasonDeniedReference {
		t.Fatalf("noref: %+v", r.csr("noref").Status.Conditions)
	}
}
