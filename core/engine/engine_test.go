package engine_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/engine"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/memory"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/requests"
	"github.com/certfn/certfn/core/signers"
	"github.com/certfn/certfn/core/signers/ca"
	"github.com/certfn/certfn/core/signers/selfsigned"
)

const waitPoll = 10 * time.Minute

// faultyStore is a test double wrapping the real store: Get fails with
// getErr when it is set.
type faultyStore struct {
	ports.Store
	mu     sync.Mutex
	getErr error
	lists  map[string]int // List calls per kind
}

func (f *faultyStore) List(ctx context.Context, opts ports.ListOptions) ([]ports.Record, error) {
	f.mu.Lock()
	if f.lists == nil {
		f.lists = map[string]int{}
	}
	f.lists[opts.Kind]++
	f.mu.Unlock()
	return f.Store.List(ctx, opts)
}

// listed returns and resets the List calls of kind.
func (f *faultyStore) listed(kind string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.lists[kind]
	delete(f.lists, kind)
	return n
}

func (f *faultyStore) Get(ctx context.Context, key api.Key) (ports.Record, error) {
	f.mu.Lock()
	err := f.getErr
	f.mu.Unlock()
	if err != nil {
		return ports.Record{}, err
	}
	return f.Store.Get(ctx, key)
}

// switchApprover is a test double whose decision a test changes.
type switchApprover struct {
	mu sync.Mutex
	d  requests.Decision
}

func (a *switchApprover) Decide(context.Context, *api.CertificateRequest) (requests.Decision, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.d, nil
}

func (a *switchApprover) set(r requests.Result) {
	a.mu.Lock()
	a.d = requests.Decision{Result: r, Reason: "test", Message: fmt.Sprintf("decided %d by a test", r)}
	a.mu.Unlock()
}

// rig is an engine on the in-memory ports of core/memory (store, secrets,
// queue: they pass the adapters' contract suites) and a fake clock at T0.
type rig struct {
	t        *testing.T
	ctx      context.Context
	clk      *clock.Fake
	store    *faultyStore
	secrets  *memory.Secrets
	q        *memory.Queue
	m        *ct.Metrics
	approver *switchApprover
	eng      *engine.Engine
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{t: t, ctx: context.Background(), clk: clock.NewFake(ct.T0), store: &faultyStore{Store: memory.NewStore()},
		secrets: memory.NewSecrets(), m: ct.NewMetrics(),
		approver: &switchApprover{d: requests.Decision{Result: requests.Approved, Reason: "test", Message: "approved by a test"}}}
	r.q = memory.NewQueue(r.clk, 5*time.Minute)
	var err error
	r.eng, err = engine.New(engine.Config{Store: r.store, Secrets: r.secrets, Queue: r.q, Clock: r.clk, Metrics: r.m,
		Approver: r.approver, WaitPoll: waitPoll, ResyncInterval: 24 * time.Hour,
		Signers: map[string]signers.Signer{"selfSigned": selfsigned.New(r.secrets, r.clk), "ca": ca.New(r.secrets, r.clk, r.m)}})
	if err != nil {
		t.Fatalf("engine.New: %v", err)
	}
	return r
}

var caller = engine.Caller{Username: "alice", UID: "u-1", Groups: []string{"team-a", "system:authenticated"}}

func (r *rig) apply(manifest string) engine.ApplyResult {
	r.t.Helper()
	objs, err := api.Decode([]byte(manifest))
	if err != nil {
		r.t.Fatalf("decode: %v", err)
	}
	var res engine.ApplyResult
	for _, o := range objs {
		if res, err = r.eng.Apply(r.ctx, o, caller); err != nil {
			r.t.Fatalf("apply %s: %v", api.KeyOf(o), err)
		}
	}
	return res
}

func (r *rig) rec(k api.Key) ports.Record {
	r.t.Helper()
	rec, err := r.store.Store.Get(r.ctx, k)
	if err != nil {
		r.t.Fatalf("get %s: %v", k, err)
	}
	return rec
}

func (r *rig) get(k api.Key) api.Object {
	r.t.Helper()
	o, err := r.eng.Get(r.ctx, k)
	if err != nil {
		r.t.Fatalf("get %s: %v", k, err)
	}
	return o
}

func (r *rig) reconcile(k api.Key) {
	r.t.Helper()
	if err := r.eng.Reconcile(r.ctx, k); err != nil {
		r.t.Fatalf("reconcile %s: %v", k, err)
	}
}

// drain handles every visible message until none is visible (no clock movement).
func (r *rig) drain() {
	r.t.Helper()
	for i := 0; i < 1000; i++ {
		ds, err := r.q.Receive(r.ctx, 100)
		if err != nil {
			r.t.Fatal(err)
		}
		if len(ds) == 0 {
			return
		}
		for _, d := range ds {
			disp := r.eng.Handle(r.ctx, engine.Message{Key: d.Key, Attempt: d.Attempt})
			if disp.Ack {
				if disp.Err != nil {
					r.t.Fatalf("handle %s: %v", d.Key, disp.Err)
				}
				_ = r.q.Ack(r.ctx, d)
			} else {
				if errs.Classify(disp.Err) != errs.Conflict {
					r.t.Fatalf("handle %s: %v", d.Key, disp.Err)
				}
				_ = r.q.Nack(r.ctx, d, disp.RetryAfter)
			}
		}
	}
	r.t.Fatal("queue never drained")
}

// visible returns the keys visible in the queue now, leaving them queued.
func (r *rig) visible() []string {
	r.t.Helper()
	ds, err := r.q.Receive(r.ctx, 1000)
	if err != nil {
		r.t.Fatal(err)
	}
	var out []string
	for _, d := range ds {
		out = append(out, d.Key.String())
		_ = r.q.Nack(r.ctx, d, 0)
	}
	return out
}

func (r *rig) clearQueue() {
	for {
		ds, _ := r.q.Receive(r.ctx, 1000)
		if len(ds) == 0 {
			return
		}
		for _, d := range ds {
			_ = r.q.Ack(r.ctx, d)
		}
	}
}

const caIssuerYAML = `apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: ca, namespace: default}
spec: {ca: {secretName: ca-key-pair}}
`

const selfSignedYAML = `apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: selfsigned}
spec: {selfSigned: {}}
`

const certYAML = `apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web, namespace: default}
spec:
  secretName: web-tls
  dnsNames: [web.example.com]
  privateKey: {algorithm: ECDSA, size: 256}
  issuerRef: {name: selfsigned, kind: ClusterIssuer}
`

var (
	caKey   = api.Key{Kind: api.KindIssuer, Namespace: "default", Name: "ca"}
	certKey = api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "web"}
)

func TestHandleAcknowledgesWhatCannotBeRetried(t *testing.T) {
	for _, tc := range []struct {
		body    string
		wantErr string // "" = acknowledged without error
	}{
		{"", "want Kind/namespace/name"},
		{"garbage", "want Kind/namespace/name"},
		{"a/b/c/d", "want Kind/namespace/name"},
		{"Widget/default/x", `unknown kind "Widget"`},
		{"Certificate/web", "namespaced and needs a namespace"},
		{"ClusterIssuer/default/x", "cluster-scoped"},
		{"Certificate/default/", "empty name"},
		{strings.Repeat("x", 600), "longer than 512 bytes"},
		{"Certificate/default/does-not-exist", ""},
		{"ClusterIssuer/gone", ""},
	} {
		t.Run(tc.body, func(t *testing.T) {
			r := newRig(t)
			d := r.eng.HandleBody(r.ctx, tc.body, 1)
			if !d.Ack || d.RetryAfter != 0 {
				t.Fatalf("disposition %+v, want ack", d)
			}
			if tc.wantErr == "" {
				if d.Err != nil {
					t.Fatalf("missing resource reported as error: %v", d.Err)
				}
				return
			}
			if d.Err == nil || !strings.Contains(d.Err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", d.Err, tc.wantErr)
			}
			if r.m.Get("certfn_bad_messages_total") != 1 {
				t.Error("bad message not counted")
			}
		})
	}
}

func TestHandleRetries(t *testing.T) {
	transient := errors.New("connection reset")
	for _, tc := range []struct {
		name      string
		err       error
		attempt   int
		wantAck   bool
		wantRetry time.Duration
		metric    string
	}{
		{"transient, first attempt", transient, 1, false, time.Second, "certfn_transient_errors_total"},
		{"transient, fourth attempt", transient, 4, false, 8 * time.Second, "certfn_transient_errors_total"},
		{"transient, capped", transient, 30, false, 5 * time.Minute, "certfn_transient_errors_total"},
		{"suggested delay", errs.RetryAfter(transient, 42*time.Second), 1, false, 42 * time.Second, "certfn_transient_errors_total"},
		{"lost race: at once", fmt.Errorf("update: %w", ports.ErrConflict), 3, false, 0, "certfn_conflicts_total"},
		{"permanent: recorded and acknowledged", errs.Permanentf("bad spec"), 1, true, 0, "certfn_permanent_errors_total"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			r.store.getErr = tc.err
			d := r.eng.Handle(r.ctx, engine.Message{Key: certKey, Attempt: tc.attempt})
			if d.Ack != tc.wantAck || d.RetryAfter != tc.wantRetry || !errors.Is(d.Err, tc.err) {
				t.Fatalf("disposition %+v, want ack=%v retry=%s err %v", d, tc.wantAck, tc.wantRetry, tc.err)
			}
			if !strings.Contains(d.Err.Error(), "load Certificate/default/web") {
				t.Errorf("error lacks context: %v", d.Err)
			}
			if r.m.Get(tc.metric) != 1 {
				t.Errorf("%s not counted: %v", tc.metric, r.m.Counts)
			}
		})
	}
}

func TestRetryBackoff(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		attempt int
		want    time.Duration
	}{
		{0, s}, {1, s}, {2, 2 * s}, {3, 4 * s}, {5, 16 * s}, {9, 256 * s}, {10, 5 * time.Minute}, {100, 5 * time.Minute},
	} {
		if got := engine.RetryBackoff(tc.attempt); got != tc.want {
			t.Errorf("RetryBackoff(%d) = %s, want %s", tc.attempt, got, tc.want)
		}
	}
}

// settle keeps the due index right when no step writes.
func TestReconcileSettlesTheDueTime(t *testing.T) {
	r := newRig(t)
	r.apply(caIssuerYAML) // the CA secret does not exist: not ready, re-checked every WaitPoll
	if got := r.rec(caKey); got.Version != 1 || !got.NextRunAt.Equal(ct.T0.Add(2*time.Minute)) {
		t.Fatalf("after apply: version %d nextRunAt %s", got.Version, got.NextRunAt)
	}
	r.reconcile(caKey)
	rec := r.rec(caKey)
	if rec.Version != 2 || !rec.NextRunAt.Equal(ct.T0.Add(waitPoll)) {
		t.Fatalf("after the status write: version %d nextRunAt %s, want 2 and T0+WaitPoll", rec.Version, rec.NextRunAt)
	}

	// Nothing changed: no write.
	r.reconcile(caKey)
	if got := r.rec(caKey); got.Version != 2 || !got.NextRunAt.Equal(rec.NextRunAt) {
		t.Fatalf("unchanged reconcile wrote: version %d nextRunAt %s", got.Version, got.NextRunAt)
	}
	// The short wait also went on the queue, delayed.
	r.clearQueue()
	r.reconcile(caKey)
	if due, ok := r.q.NextDue(); !ok || !due.Equal(ct.T0.Add(waitPoll)) {
		t.Fatalf("queue next due = %s %v, want T0+WaitPoll", due, ok)
	}

	// Past its due time, the record moves to the time it wants now.
	r.clk.Advance(25 * time.Minute)
	r.reconcile(caKey)
	rec = r.rec(caKey)
	if rec.Version != 3 || !rec.NextRunAt.Equal(r.clk.Now().Add(waitPoll)) {
		t.Fatalf("stale due time: version %d nextRunAt %s, want 3 and now+WaitPoll", rec.Version, rec.NextRunAt)
	}
	r.reconcile(caKey)
	if got := r.rec(caKey); got.Version != 3 {
		t.Fatalf("rescheduled twice: version %d", got.Version)
	}

	// A record due later than it wants is moved earlier.
	late := rec
	late.NextRunAt = r.clk.Now().Add(48 * time.Hour)
	if _, err := r.store.Store.Update(r.ctx, late); err != nil {
		t.Fatal(err)
	}
	r.reconcile(caKey)
	if got := r.rec(caKey); !got.NextRunAt.Equal(r.clk.Now().Add(waitPoll)) {
		t.Fatalf("late due time not pulled in: %s", got.NextRunAt)
	}
}

func TestReconcileKindsWithoutStepsLeaveTheIndex(t *testing.T) {
	r := newRig(t)
	r.apply(`{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}`)
	k := api.Key{Kind: api.KindNamespace, Name: "team-a"}
	r.clk.Advance(3 * time.Minute)
	r.reconcile(k)
	rec := r.rec(k)
	if !rec.NextRunAt.IsZero() || rec.Version != 2 {
		t.Fatalf("namespace: nextRunAt %s version %d, want none and 2", rec.NextRunAt, rec.Version)
	}
	r.reconcile(k)
	if got := r.rec(k); got.Version != 2 {
		t.Fatalf("second reconcile wrote (version %d)", got.Version)
	}
}

func TestSweepEnqueuesOnlyDueKeys(t *testing.T) {
	r := newRig(t)
	mk := func(name string, next time.Time) {
		_, err := r.store.Store.Create(r.ctx, ports.Record{Key: api.Key{Kind: api.KindNamespace, Name: name}, NextRunAt: next,
			Data: []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + name + `"}}`)})
		if err != nil {
			t.Fatal(err)
		}
	}
	mk("due-old", ct.T0.Add(-time.Hour))
	mk("due-now", ct.T0)
	mk("later", ct.T0.Add(time.Second))
	mk("never", time.Time{})
	mk("due-recent", ct.T0.Add(-time.Minute))

	n, err := r.eng.Sweep(r.ctx, 2)
	if err != nil || n != 2 {
		t.Fatalf("Sweep(limit 2) = %d, %v", n, err)
	}
	if got := strings.Join(r.visible(), ","); got != "Namespace/due-old,Namespace/due-recent" {
		t.Fatalf("limit 2 enqueued %s, want the two oldest", got)
	}
	r.clearQueue()
	n, err = r.eng.Sweep(r.ctx, 100)
	if err != nil || n != 3 {
		t.Fatalf("Sweep = %d, %v; want 3", n, err)
	}
	got := r.visible()
	if strings.Contains(strings.Join(got, ","), "later") || strings.Contains(strings.Join(got, ","), "never") || len(got) != 3 {
		t.Fatalf("enqueued %v; want only due keys", got)
	}
	if r.m.Get("certfn_sweeps_total") != 2 {
		t.Error("sweeps not counted")
	}
}

func TestApply(t *testing.T) {
	r := newRig(t)
	res := r.apply(strings.Replace(selfSignedYAML, "spec:", `status: {conditions: [{type: Ready, status: "True"}]}
spec:`, 1))
	k := api.Key{Kind: api.KindClusterIssuer, Name: "selfsigned"}
	if !res.Created || !res.Changed || res.Key != k {
		t.Fatalf("create result %+v", res)
	}
	iss := r.get(k).(*api.ClusterIssuer)
	if iss.UID == "" || iss.Generation != 1 || iss.CreationTimestamp == nil || !iss.CreationTimestamp.Equal(ct.T0) {
		t.Fatalf("metadata not set on create: %+v", iss.ObjectMeta)
	}
	if len(iss.Status.Conditions) != 0 {
		t.Fatalf("status from the manifest was stored: %+v", iss.Status)
	}
	if got := r.visible(); strings.Join(got, ",") != "ClusterIssuer/selfsigned" {
		t.Fatalf("create enqueued %v", got)
	}
	r.clearQueue()
	r.reconcile(k) // status written: Ready
	v := r.rec(k).Version

	// Unchanged re-apply: no write.
	res = r.apply(selfSignedYAML)
	if res.Created || res.Changed || r.rec(k).Version != v {
		t.Fatalf("unchanged re-apply: %+v version %d → %d", res, v, r.rec(k).Version)
	}
	// Labels change: written, generation kept.
	res = r.apply(strings.Replace(selfSignedYAML, "{name: selfsigned}", "{name: selfsigned, labels: {team: a}}", 1))
	iss = r.get(k).(*api.ClusterIssuer)
	if !res.Changed || iss.Generation != 1 || iss.Labels["team"] != "a" || r.rec(k).Version != v+1 {
		t.Fatalf("label change: %+v generation %d labels %v", res, iss.Generation, iss.Labels)
	}
	// Spec change: generation +1, status and identity kept.
	uid := iss.UID
	res = r.apply(strings.Replace(strings.Replace(selfSignedYAML, "{selfSigned: {}}", "{selfSigned: {crlDistributionPoints: [\"http://crl\"]}}", 1),
		"{name: selfsigned}", "{name: selfsigned, labels: {team: a}}", 1))
	iss = r.get(k).(*api.ClusterIssuer)
	if !res.Changed || iss.Generation != 2 || iss.UID != uid || !api.IsTrue(iss.Status.Conditions, "Ready") {
		t.Fatalf("spec change: %+v generation %d uid %s status %+v", res, iss.Generation, iss.UID, iss.Status)
	}

	// Invalid input: a permanent error naming the field, nothing stored.
	objs, err := api.Decode([]byte(strings.Replace(certYAML, "[web.example.com]", "[web.example.com, a..b]", 1)))
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.eng.Apply(r.ctx, objs[0], caller)
	if !errs.IsPermanent(err) || !strings.Contains(err.Error(), "spec.dnsNames[1]") {
		t.Fatalf("invalid certificate: %v", err)
	}
	if _, err := r.store.Store.Get(r.ctx, certKey); !errors.Is(err, ports.ErrNotFound) {
		t.Fatalf("invalid certificate stored: %v", err)
	}
}

func TestApplyCertificateRecordsIgnoredFields(t *testing.T) {
	r := newRig(t)
	res := r.apply(strings.Replace(certYAML, "{name: web, namespace: default}", "{name: web, namespace: default, finalizers: [x]}", 1))
	c := r.get(certKey).(*api.Certificate)
	if strings.Join(res.Ignored, ",") != "metadata.finalizers" || strings.Join(c.Status.IgnoredFields, ",") != "metadata.finalizers" {
		t.Fatalf("ignored fields: result %v, status %v; want [metadata.finalizers]", res.Ignored, c.Status.IgnoredFields)
	}
	// Dropping the field is a change of status.ignoredFields only.
	v := r.rec(certKey).Version
	res = r.apply(certYAML)
	c = r.get(certKey).(*api.Certificate)
	if !res.Changed || len(c.Status.IgnoredFields) != 0 || c.Generation != 1 || r.rec(certKey).Version != v+1 {
		t.Fatalf("after dropping the field: %+v ignored %v generation %d", res, c.Status.IgnoredFields, c.Generation)
	}
}

// csrRequestYAML is a CertificateRequest manifest whose body claims an identity.
func csrRequestYAML(t *testing.T, duration string) string {
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
`, b64(csr), duration)
}

func TestApplyCertificateRequest(t *testing.T) {
	r := newRig(t)
	manifest := csrRequestYAML(t, "720h")
	r.apply(manifest)
	k := api.Key{Kind: api.KindCertificateRequest, Namespace: "default", Name: "req"}
	cr := r.get(k).(*api.CertificateRequest)
	if cr.Spec.Username != caller.Username || cr.Spec.UID != caller.UID || strings.Join(cr.Spec.Groups, ",") != strings.Join(caller.Groups, ",") || cr.Spec.Extra != nil {
		t.Fatalf("identity taken from the body: %q %q %v %v", cr.Spec.Username, cr.Spec.UID, cr.Spec.Groups, cr.Spec.Extra)
	}
	v := r.rec(k).Version

	// Re-applied by someone else, unchanged: the creator's identity stays.
	objs, _ := api.Decode([]byte(manifest))
	res, err := r.eng.Apply(r.ctx, objs[0], engine.Caller{Username: "bob"})
	if err != nil || res.Changed || r.rec(k).Version != v {
		t.Fatalf("re-apply: %+v %v", res, err)
	}
	if got := r.get(k).(*api.CertificateRequest).Spec.Username; got != caller.Username {
		t.Fatalf("identity changed to %q", got)
	}

	// The spec is immutable: refused with the field path, nothing written.
	objs, _ = api.Decode([]byte(csrRequestYAML(t, "720h")))
	for _, tc := range []struct {
		name string
		obj  api.Object
		path string
	}{
		{"duration", mustDecode(t, strings.Replace(manifest, "duration: 720h", "duration: 1440h", 1)), "spec.duration: field is immutable"},
		{"request", objs[0], "spec.request: field is immutable"},
		{"issuerRef", mustDecode(t, strings.Replace(manifest, "{name: ca}", "{name: other}", 1)), "spec.issuerRef.name: field is immutable"},
	} {
		_, err := r.eng.Apply(r.ctx, tc.obj, caller)
		if !errs.IsPermanent(err) || !strings.Contains(err.Error(), tc.path) {
			t.Errorf("%s change: err = %v, want %q", tc.name, err, tc.path)
		}
	}
	if r.rec(k).Version != v {
		t.Fatal("a refused change was written")
	}
}

func TestRenew(t *testing.T) {
	r := newRig(t)
	r.apply(certYAML)
	v := r.rec(certKey).Version
	if err := r.eng.Renew(r.ctx, certKey); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	c := r.get(certKey).(*api.Certificate)
	ic := api.FindCondition(c.Status.Conditions, api.CertificateConditionIssuing)
	if ic == nil || ic.Status != api.ConditionTrue || ic.Reason != "ManuallyTriggered" || r.rec(certKey).Version != v+1 {
		t.Fatalf("Issuing = %+v, version %d", ic, r.rec(certKey).Version)
	}
	if err := r.eng.Renew(r.ctx, certKey); !errs.IsPermanent(err) || !strings.Contains(err.Error(), "already being issued") {
		t.Fatalf("second Renew: %v", err)
	}
	if err := r.eng.Renew(r.ctx, api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "nope"}); !errors.Is(err, ports.ErrNotFound) {
		t.Fatalf("Renew of a missing certificate: %v", err)
	}
}

func TestSetApprovalIsPermanent(t *testing.T) {
	for _, tc := range []struct {
		name   string
		first  bool
		second bool
		want   string
	}{
		{"approve then deny", true, false, "already Approved"},
		{"deny then approve", false, true, "already Denied"},
		{"approve twice", true, true, "already Approved"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			r.apply(csrRequestYAML(t, "720h"))
			k := api.Key{Kind: api.KindCertificateRequest, Namespace: "default", Name: "req"}
			if err := r.eng.SetApproval(r.ctx, k, tc.first, "", "by a test"); err != nil {
				t.Fatalf("first: %v", err)
			}
			v := r.rec(k).Version
			err := r.eng.SetApproval(r.ctx, k, tc.second, "", "again")
			if !errs.IsPermanent(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("second: %v, want %q", err, tc.want)
			}
			cr := r.get(k).(*api.CertificateRequest)
			a, d := api.FindCondition(cr.Status.Conditions, "Approved"), api.FindCondition(cr.Status.Conditions, "Denied")
			if (a != nil) == (d != nil) || r.rec(k).Version != v {
				t.Fatalf("conditions %+v after a refused change (version %d → %d)", cr.Status.Conditions, v, r.rec(k).Version)
			}
			c := a
			if c == nil {
				c = d
			}
			if c.Status != api.ConditionTrue || c.Reason != "certfn" || c.Message != "by a test" {
				t.Fatalf("decision recorded as %+v", c)
			}
		})
	}
}

func TestDeleteCascades(t *testing.T) {
	r := newRig(t)
	r.apply(selfSignedYAML)
	r.apply(certYAML)
	r.drain() // issues web-1
	c := r.get(certKey).(*api.Certificate)
	if c.Status.Revision == nil || *c.Status.Revision != 1 {
		t.Fatalf("not issued: %+v", c.Status)
	}
	r.apply(csrRequestYAML(t, "720h")) // a request nobody owns
	// A leftover next-private-key secret.
	if err := r.secrets.Put(r.ctx, ports.Secret{Namespace: "default", Name: "web-next-private-key", Data: map[string][]byte{"tls.key": []byte("k")}}); err != nil {
		t.Fatal(err)
	}
	if err := r.eng.Delete(r.ctx, certKey); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	for _, k := range []api.Key{certKey, {Kind: api.KindCertificateRequest, Namespace: "default", Name: "web-1"}} {
		if _, err := r.store.Store.Get(r.ctx, k); !errors.Is(err, ports.ErrNotFound) {
			t.Errorf("%s survived the delete: %v", k, err)
		}
	}
	if _, err := r.store.Store.Get(r.ctx, api.Key{Kind: api.KindCertificateRequest, Namespace: "default", Name: "req"}); err != nil {
		t.Errorf("an unrelated request was deleted: %v", err)
	}
	if _, err := r.secrets.Get(r.ctx, "default", "web-next-private-key"); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("next private key survived: %v", err)
	}
	if _, err := r.secrets.Get(r.ctx, "default", "web-tls"); err != nil {
		t.Errorf("the issued secret must be kept: %v", err)
	}
	// Deleting again is not an error.
	if err := r.eng.Delete(r.ctx, certKey); err != nil {
		t.Fatalf("second Delete: %v", err)
	}
}

// A denied request is recorded as such and replaced after the backoff
// (seed 001: "a denial is a permanent failure that the Certificate retries
// with backoff").
func TestDeniedRequestIsReplacedAfterTheBackoff(t *testing.T) {
	r := newRig(t)
	r.approver.set(requests.Unmatched)
	r.apply(selfSignedYAML)
	r.apply(certYAML)
	r.drain()
	reqKey := api.Key{Kind: api.KindCertificateRequest, Namespace: "default", Name: "web-1"}
	cr := r.get(reqKey).(*api.CertificateRequest)
	if c := api.FindCondition(cr.Status.Conditions, "Ready"); c == nil || c.Reason != "Pending" {
		t.Fatalf("request not pending: %+v", cr.Status.Conditions)
	}
	if err := r.eng.SetApproval(r.ctx, reqKey, false, "Policy", "not allowed"); err != nil {
		t.Fatal(err)
	}
	r.drain()
	cr = r.get(reqKey).(*api.CertificateRequest)
	if c := api.FindCondition(cr.Status.Conditions, "Ready"); c == nil || c.Reason != "Denied" || cr.Status.FailureTime == nil {
		t.Fatalf("denial not recorded on the request: %+v failureTime %v", cr.Status.Conditions, cr.Status.FailureTime)
	}
	c := r.get(certKey).(*api.Certificate)
	if c.Status.FailedIssuanceAttempts == nil || *c.Status.FailedIssuanceAttempts != 1 {
		t.Fatalf("failure not recorded on the certificate: %+v", c.Status)
	}
	oldUID := cr.UID

	r.approver.set(requests.Approved)
	r.clk.Advance(time.Hour + time.Minute)
	if _, err := r.eng.Sweep(r.ctx, 100); err != nil {
		t.Fatal(err)
	}
	r.drain()
	c = r.get(certKey).(*api.Certificate)
	if !api.IsTrue(c.Status.Conditions, "Ready") || c.Status.Revision == nil || *c.Status.Revision != 1 {
		t.Fatalf("not issued after the backoff: %+v", c.Status)
	}
	if cr := r.get(reqKey).(*api.CertificateRequest); cr.UID == oldUID || !cr.IsIssued() {
		t.Fatalf("the denied request was not replaced (uid %s, issued %v)", cr.UID, cr.IsIssued())
	}
}

func mustDecode(t *testing.T, manifest string) api.Object {
	t.Helper()
	objs, err := api.Decode([]byte(manifest))
	if err != nil || len(objs) != 1 {
		t.Fatalf("decode: %v", err)
	}
	return objs[0]
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func TestNewRequiresItsPorts(t *testing.T) {
	r := newRig(t)
	full := engine.Config{Store: r.store, Secrets: r.secrets, Queue: r.q, Clock: r.clk}
	for _, tc := range []struct {
		name string
		drop func(*engine.Config)
		want string
	}{
		{"store", func(c *engine.Config) { c.Store = nil }, "Store is required"},
		{"secrets", func(c *engine.Config) { c.Secrets = nil }, "Secrets is required"},
		{"queue", func(c *engine.Config) { c.Queue = nil }, "Queue is required"},
		{"clock", func(c *engine.Config) { c.Clock = nil }, "Clock is required"},
	} {
		cfg := full
		tc.drop(&cfg)
		if _, err := engine.New(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s missing: err = %v", tc.name, err)
		}
	}
	e, err := engine.New(full)
	if err != nil {
		t.Fatal(err)
	}
	c := e.Config()
	if c.WaitPoll != 10*time.Minute || c.ResyncInterval != 24*time.Hour || c.MaxQueueDelay != 15*time.Minute ||
		c.ClusterResourceNamespace != "cert-manager" || c.Identity.Username == "" || c.Approver == nil || c.Metrics == nil {
		t.Fatalf("defaults not applied: %+v", c)
	}
}

func TestValidateAllReportsEveryInvalidObject(t *testing.T) {
	r := newRig(t)
	objs, err := api.Decode([]byte(strings.Replace(certYAML, "[web.example.com]", "[a..b]", 1) + "---\n" +
		selfSignedYAML + "---\n" + strings.Replace(strings.Replace(certYAML, "name: web,", "name: two,", 1), "size: 256", "size: 100", 1)))
	if err != nil {
		t.Fatal(err)
	}
	err = r.eng.ValidateAll(objs)
	if !errs.IsPermanent(err) {
		t.Fatalf("ValidateAll = %v, want a permanent error", err)
	}
	for _, want := range []string{"Certificate/default/web", "spec.dnsNames[0]", "Certificate/default/two", "spec.privateKey.size"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "selfsigned") {
		t.Errorf("the valid object is reported: %v", err)
	}
	if err := r.eng.ValidateAll(objs[1:2]); err != nil {
		t.Fatalf("valid object refused: %v", err)
	}
}

// A request waiting for a CA issuer is woken when the issuer becomes
// Ready (the CA secret appears), not only by its own poll.
func TestIssuerReadyWakesWaitingRequests(t *testing.T) {
	r := newRig(t)
	r.apply(caIssuerYAML)
	crt := ct.Cert() // issuerRef: Issuer "ca"
	csr := ct.CSR(t, crt, ct.Key(t, nil))
	r.apply(fmt.Sprintf("apiVersion: cert-manager.io/v1\nkind: CertificateRequest\nmetadata: {name: req, namespace: default}\nspec: {issuerRef: {name: ca}, request: %s}\n", b64(csr)))
	r.drain()
	reqKey := api.Key{Kind: api.KindCertificateRequest, Namespace: "default", Name: "req"}
	cr := r.get(reqKey).(*api.CertificateRequest)
	if c := api.FindCondition(cr.Status.Conditions, "Ready"); c == nil || c.Reason != "Pending" || !strings.Contains(c.Message, `issuer "ca" does not have a Ready status condition`) {
		t.Fatalf("request not waiting for the issuer: %+v", cr.Status.Conditions)
	}
	// The CA secret appears; only the issuer is reconciled.
	ca := ct.NewCA(t)
	if err := r.secrets.Put(r.ctx, ca.Secret(t, "default", "ca-key-pair")); err != nil {
		t.Fatal(err)
	}
	r.clearQueue()
	r.reconcile(caKey)
	if got := r.visible(); !strings.Contains(strings.Join(got, ","), reqKey.String()) {
		t.Fatalf("the waiting request was not woken: queue %v", got)
	}
	r.drain()
	if cr := r.get(reqKey).(*api.CertificateRequest); !cr.IsIssued() {
		t.Fatalf("request not issued after the issuer became ready: %+v", cr.Status.Conditions)
	}
}
