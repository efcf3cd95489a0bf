package kernel_test

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app/apptest"
	"github.com/certfn/certfn/core/ports"
)

// putObject stores obj as it is, owned by owner, waking nothing.
func putObject(t *testing.T, r *apptest.Rig, obj api.Object, owner api.Key) {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Store.Store.Create(r.Ctx, ports.Record{Key: api.KeyOf(obj), Owner: owner, Data: data}); err != nil {
		t.Fatal(err)
	}
}

func order(name string, state api.State) *api.Order {
	return &api.Order{TypeMeta: api.TypeMeta{APIVersion: api.ACMEV1, Kind: api.KindOrder},
		ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default"}, Status: api.OrderStatus{State: state}}
}

func challenge(name string, state api.State, presented, processing bool) *api.Challenge {
	return &api.Challenge{TypeMeta: api.TypeMeta{APIVersion: api.ACMEV1, Kind: api.KindChallenge},
		ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default"},
		Status:     api.ChallengeStatus{State: state, Presented: presented, Processing: processing}}
}

// reconcileUntil reconciles k until done or 20 steps.
func reconcileUntil(t *testing.T, r *apptest.Rig, k api.Key, done func() bool) {
	t.Helper()
	for i := 0; i < 20 && !done(); i++ {
		r.Reconcile(k)
	}
	if !done() {
		t.Fatalf("%s: never got there", k)
	}
}

// What a restarted serve wakes (kernel.WakeUnfinished): every object
// that is not final, and objects whose clean-up was interrupted, with a
// Certificate whose next revision's request is issued (its secret may be
// ahead of its status) first; nothing final or settled.
func TestWakeUnfinishedWakesWhatIsInFlight(t *testing.T) {
	r := apptest.NewRig(t)
	r.Apply(apptest.SelfSignedYAML)
	r.Apply(apptest.NamedCertYAML("done", "done-tls"))
	r.Apply(apptest.NamedCertYAML("done-cleaning", "done-cleaning-tls"))
	r.Apply(strings.Replace(apptest.NamedCertYAML("done-import", "done-import-tls"), "namespace: default", "namespace: default, annotations: {certfn.io/acm-import: \"true\"}", 1))
	r.Drain()
	// "done-cleaning": Ready, but its next-key secret's deletion was
	// interrupted (status still names it).
	rec := r.Rec(apptest.NamedCertKey("done-cleaning"))
	o, err := r.Objects.Decode(rec)
	if err != nil {
		t.Fatal(err)
	}
	name := "done-cleaning-next-private-key"
	o.(*api.Certificate).Status.NextPrivateKeySecretName = &name
	if rec.Data, err = json.Marshal(o); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Store.Store.Update(r.Ctx, rec); err != nil {
		t.Fatal(err)
	}

	r.Apply(apptest.CAIssuerYAML) // no CA secret: not Ready
	r.Apply(strings.Replace(apptest.NamedCertYAML("waiting", "waiting-tls"), "{name: selfsigned, kind: ClusterIssuer}", "{name: ca}", 1))
	r.Apply(apptest.NamedCertYAML("ahead", "ahead-tls"))
	r.ClearQueue()
	// "waiting": its request exists and waits for the CA issuer.
	waitingReq := api.Key{Kind: api.KindCertificateRequest, Namespace: "default", Name: "waiting-1"}
	reconcileUntil(t, r, apptest.NamedCertKey("waiting"), func() bool { _, err := r.Repo.Get(r.Ctx, waitingReq); return err == nil })
	r.Reconcile(waitingReq)
	// "ahead": its request is issued, the Certificate has not taken it yet.
	aheadReq := api.Key{Kind: api.KindCertificateRequest, Namespace: "default", Name: "ahead-1"}
	reconcileUntil(t, r, apptest.NamedCertKey("ahead"), func() bool { _, err := r.Repo.Get(r.Ctx, aheadReq); return err == nil })
	reconcileUntil(t, r, aheadReq, func() bool { return r.Get(aheadReq).(*api.CertificateRequest).IsIssued() })
	r.ClearQueue()

	owner := api.Key{Kind: api.KindCertificateRequest, Namespace: "default", Name: "ahead-1"}
	for _, o := range []*api.Order{order("pending", api.StatePending), order("failed", api.StateInvalid),
		order("valid-cleaning", api.StateValid), order("valid-clean", api.StateValid)} {
		putObject(t, r, o, owner)
	}
	ord := func(name string) api.Key { return api.Key{Kind: api.KindOrder, Namespace: "default", Name: name} }
	putObject(t, r, challenge("c-processing", api.StatePending, false, true), ord("pending"))
	putObject(t, r, challenge("c-failed", api.StateInvalid, false, false), ord("failed"))
	putObject(t, r, challenge("c-valid-presented", api.StateValid, true, false), ord("valid-cleaning"))

	kinds := []string{api.KindCertificate, api.KindCertificateRequest, api.KindOrder, api.KindChallenge, api.KindIssuer, api.KindClusterIssuer}
	for _, k := range kinds {
		r.Store.Listed(k) // reset the counts
	}
	n, err := r.Kernel.WakeUnfinished(r.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"Certificate/default/ahead", // first: its secret may be ahead of its status
		"Certificate/default/done-cleaning",
		"Certificate/default/done-import", // Ready: its import may be owed (a crash after the completion write)
		"Certificate/default/waiting",
		"CertificateRequest/default/waiting-1",
		"Order/default/pending", "Order/default/valid-cleaning",
		"Challenge/default/c-processing", "Challenge/default/c-valid-presented",
		"Issuer/default/ca",
	}
	// The first goes first; the queue orders the rest by its own rules
	// (a key already waiting keeps its place).
	got := r.Visible()
	if len(got) == 0 || got[0] != want[0] {
		t.Fatalf("first woken: %v, want %s", got, want[0])
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") || n != len(want) {
		t.Fatalf("woke %d:\n%s\nwant:\n%s", n, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, k := range kinds {
		if got := r.Store.Listed(k); got != 1 {
			t.Errorf("%d Lists of %s, want 1", got, k)
		}
	}
}

// issuedRequestRig is a rig whose Certificate's request req is issued and
// settled; issued: the Certificate has taken it.
func issuedRequestRig(t *testing.T, req api.Key, issued bool) *apptest.Rig {
	t.Helper()
	r := apptest.NewRig(t)
	r.Apply(apptest.SelfSignedYAML)
	r.Drain()
	r.Apply(apptest.CertYAML)
	r.ClearQueue()
	reconcileUntil(t, r, apptest.CertKey, func() bool { _, err := r.Repo.Get(r.Ctx, req); return err == nil })
	reconcileUntil(t, r, req, func() bool { return r.Get(req).(*api.CertificateRequest).IsIssued() })
	if issued {
		r.Drain()
	}
	r.Reconcile(req) // settles the request's due time
	return r
}

// A final object reconciled again with nothing to do (a message
// redelivered after the process that wrote it died before its wake-ups
// were sent, as a cloud queue does) wakes its owner while the owner still
// waits for it: the owner's wake-up that the final write queued may be
// what was lost. An owner that is done is not woken.
func TestFinalRequestReconciledAgainWakesItsCertificate(t *testing.T) {
	req := api.Key{Kind: api.KindCertificateRequest, Namespace: "default", Name: "web-1"}
	for _, tc := range []struct {
		name string
		// issued: the Certificate has taken the request (Ready, not issuing).
		issued bool
		want   []string
	}{
		{"the Certificate has not taken the issued request", false, []string{apptest.CertKey.String()}},
		{"the Certificate is done", true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := issuedRequestRig(t, req, tc.issued)
			r.ClearQueue()
			v := r.Rec(req).Version
			r.Reconcile(req)
			if got := r.Rec(req).Version; got != v {
				t.Fatalf("the final request was written again (version %d, was %d)", got, v)
			}
			if got := r.Visible(); strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("woke %v, want %v", got, tc.want)
			}
		})
	}
}

// The wake-up a redelivered final object carries goes up through owners
// that are final themselves: an ACME Order's step writes its request
// final (issued), and that write queued the Certificate's wake-up; a
// process that died before sending it left the Certificate waiting for
// its own recheck (10 minutes), as the redelivered Order (or Challenge)
// found its owner, the request, done. Found by the ACME fault harness on
// the Cloud Run services (crashes after the request's final write).
func TestFinalOrderReconciledAgainWakesTheCertificateOfItsFinalRequest(t *testing.T) {
	req := api.Key{Kind: api.KindCertificateRequest, Namespace: "default", Name: "web-1"}
	for _, tc := range []struct {
		name   string
		issued bool // the Certificate has taken the request
		want   []string
	}{
		{"the Certificate has not taken the issued request", false, []string{apptest.CertKey.String()}},
		{"the Certificate is done", true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := issuedRequestRig(t, req, tc.issued)
			yes := true
			ownedBy := func(o api.Object, k api.Key) api.Object {
				o.GetObjectMeta().OwnerReferences = []api.OwnerReference{{Kind: k.Kind, Name: k.Name, Controller: &yes}}
				return o
			}
			ordKey := api.Key{Kind: api.KindOrder, Namespace: "default", Name: "web-1-1"}
			putObject(t, r, ownedBy(order("web-1-1", api.StateValid), req), req)
			chKey := api.Key{Kind: api.KindChallenge, Namespace: "default", Name: "web-1-1-1"}
			putObject(t, r, ownedBy(challenge("web-1-1-1", api.StateValid, false, false), ordKey), ordKey)
			for _, k := range []api.Key{ordKey, chKey} {
				r.ClearQueue()
				r.Reconcile(k)
				if got := r.Visible(); strings.Join(got, ",") != strings.Join(tc.want, ",") {
					t.Fatalf("%s: woke %v, want %v", k.Kind, got, tc.want)
				}
			}
		})
	}
}
