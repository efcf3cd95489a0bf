package certificatesigningrequests_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app/apptest"
	"github.com/certfn/certfn/core/certificaterequests"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/kernel"
	"github.com/certfn/certfn/core/ports"
)

// csrRig is a rig whose approver decides result, with the manifests
// applied and a CertificateSigningRequest "web" for signer applied and
// drained.
func csrRig(t *testing.T, result certificaterequests.Result, signer string, manifests ...string) (*apptest.Rig, api.Key) {
	t.Helper()
	r := apptest.NewRig(t)
	r.Approver.Set(result)
	for _, m := range manifests {
		r.Apply(m)
	}
	r.Apply(fmt.Sprintf("apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata: {name: web}\nspec: {signerName: %q, request: %s, usages: [digital signature, key encipherment, server auth]}\n",
		signer, apptest.B64(ct.BareCSR(t, "web.example.com"))))
	r.Drain()
	return r, api.Key{Kind: api.KindCertificateSigningRequest, Name: "web"}
}

// csrEvent returns the latest Event about key (the last written) and
// its stored version (nil, 0: none).
func csrEvent(t *testing.T, r *apptest.Rig, key api.Key) (*api.Event, int64) {
	t.Helper()
	recs, err := r.Store.Store.List(r.Ctx, ports.ListOptions{Kind: api.KindEvent, Namespace: api.EventNamespaceFor(key), Owner: key})
	if errors.Is(err, ports.ErrNotFound) || len(recs) == 0 {
		return nil, 0
	}
	if err != nil {
		t.Fatal(err)
	}
	var latest *api.Event
	var version int64
	for _, rec := range recs {
		ev := &api.Event{}
		if err := json.Unmarshal(rec.Data, ev); err != nil {
			t.Fatal(err)
		}
		if latest == nil || !api.EventTime(ev).Before(api.EventTime(latest)) {
			latest, version = ev, rec.Version
		}
	}
	return latest, version
}

// A CertificateSigningRequest that waits says why in its Event (it has no
// Ready condition): the reason after cert-manager's CSR controllers and
// the step's message, rewritten while unchanged at most every
// EventMinInterval (one write, count + 1), so that a CSR polled every
// WaitPoll costs at most one Event write per poll.
func TestWaitingCSRRecordsWhyInItsEvent(t *testing.T) {
	notReady := "apiVersion: cert-manager.io/v1\nkind: ClusterIssuer\nmetadata: {name: ca}\nspec: {ca: {secretName: nowhere}}\n"
	for _, tc := range []struct {
		name      string
		result    certificaterequests.Result
		signer    string
		manifests []string
		typ       string
		reason    string
		message   string // the whole message
	}{
		{"nobody decided", certificaterequests.Unmatched, "clusterissuers.cert-manager.io/ca", nil,
			api.EventTypeNormal, "WaitingApproval", fmt.Sprintf("decided %d by a test", certificaterequests.Unmatched)},
		{"approved, the issuer is missing", certificaterequests.Approved, "clusterissuers.cert-manager.io/missing", nil,
			api.EventTypeWarning, "IssuerNotFound", `ClusterIssuer "missing" not found`},
		{"approved, the issuer is not Ready", certificaterequests.Approved, "clusterissuers.cert-manager.io/ca", []string{notReady},
			api.EventTypeWarning, "IssuerNotReady", `issuer "ca" is not Ready`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, key := csrRig(t, tc.result, tc.signer, tc.manifests...)
			ev, v := csrEvent(t, r, key)
			if ev == nil {
				t.Fatal("no Event")
			}
			if ev.Type != tc.typ || ev.Reason != tc.reason || ev.Message != tc.message || ev.Count != 1 ||
				ev.InvolvedObject.Kind != api.KindCertificateSigningRequest || ev.InvolvedObject.Name != "web" {
				t.Fatalf("event %+v", ev)
			}
			// Reconciled again within EventMinInterval: not rewritten.
			r.Clock.Advance(kernel.EventMinInterval / 2)
			r.Reconcile(key)
			if _, v2 := csrEvent(t, r, key); v2 != v {
				t.Fatalf("rewritten within EventMinInterval (version %d → %d)", v, v2)
			}
			// The next poll: one write, count 2.
			r.Clock.Advance(apptest.WaitPoll)
			r.Reconcile(key)
			ev, v3 := csrEvent(t, r, key)
			if v3 != v+1 || ev.Count != 2 || ev.Reason != tc.reason || !ev.LastTimestamp.Time.Equal(r.Clock.Now()) {
				t.Fatalf("after a poll: version %d → %d, %+v", v, v3, ev)
			}
			if c := r.Get(key).(*api.CertificateSigningRequest); c.IsFinal() || c.Status.Condition("Ready") != nil {
				t.Fatalf("conditions changed: %+v", c.Status.Conditions)
			}
		})
	}
}

// When why a CSR waits changes, its latest Event says the new reason at
// once (count 1); when the CSR ends (issued, Denied), how it ended is
// recorded once, last (the waiting Events stay as its history), and a
// CSR that never waited gets that one Event only.
func TestCSREventFollowsTheCSR(t *testing.T) {
	t.Run("waiting for approval, then for the issuer, then issued", func(t *testing.T) {
		r, key := csrRig(t, certificaterequests.Unmatched, "issuers.cert-manager.io/default.ca")
		if ev, _ := csrEvent(t, r, key); ev == nil || ev.Reason != "WaitingApproval" {
			t.Fatalf("event %+v", ev)
		}
		r.Approver.Set(certificaterequests.Approved)
		r.Clock.Advance(time.Second)
		r.Reconcile(key) // the approval write: no Event write
		r.Drain()        // the signing step: no issuer
		ev, _ := csrEvent(t, r, key)
		if ev == nil || ev.Reason != "IssuerNotFound" || ev.Count != 1 || ev.Message != `Issuer "ca" not found` {
			t.Fatalf("after approval: %+v", ev)
		}
		r.Clock.Advance(time.Second)
		r.Apply(apptest.CAIssuerYAML) // no secret: not Ready
		r.Drain()
		r.Reconcile(key)
		if ev, _ := csrEvent(t, r, key); ev == nil || ev.Reason != "IssuerNotReady" || ev.Count != 1 {
			t.Fatalf("after the issuer appeared: %+v", ev)
		}
		if err := r.Secrets.Put(r.Ctx, ct.NewCA(t).Secret(t, "default", "ca-key-pair")); err != nil {
			t.Fatal(err)
		}
		r.Clock.Advance(time.Second)
		r.Reconcile(apptest.CAKey)
		r.Drain()
		if c := r.Get(key).(*api.CertificateSigningRequest); !c.IsIssued() {
			t.Fatalf("not issued: %+v", c.Status.Conditions)
		}
		ev, v := csrEvent(t, r, key)
		if ev == nil || ev.Type != api.EventTypeNormal || ev.Reason != "CertificateIssued" || ev.Count != 1 {
			t.Fatalf("the waiting Event outlived the issuance: %+v", ev)
		}
		// Final: reconciled again, even after EventMinInterval, nothing is written.
		r.Clock.Advance(2 * kernel.EventMinInterval)
		r.Reconcile(key)
		if _, v2 := csrEvent(t, r, key); v2 != v {
			t.Fatalf("the final Event was rewritten (version %d → %d)", v, v2)
		}
	})
	t.Run("waiting for approval, then denied", func(t *testing.T) {
		r, key := csrRig(t, certificaterequests.Unmatched, "clusterissuers.cert-manager.io/ca")
		r.Approver.Set(certificaterequests.Denied)
		r.Clock.Advance(time.Second)
		r.Reconcile(key)
		r.Drain()
		ev, _ := csrEvent(t, r, key)
		if ev == nil || ev.Type != api.EventTypeWarning || ev.Reason != "Denied" || !strings.Contains(ev.Message, fmt.Sprintf("decided %d by a test", certificaterequests.Denied)) {
			t.Fatalf("event %+v", ev)
		}
	})
	t.Run("issued without waiting: CertificateIssued only", func(t *testing.T) {
		r := apptest.NewRig(t)
		if err := r.Secrets.Put(r.Ctx, ct.NewCA(t).Secret(t, "default", "ca-key-pair")); err != nil {
			t.Fatal(err)
		}
		r.Apply(apptest.CAIssuerYAML)
		r.Drain()
		r.Apply(fmt.Sprintf("apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata: {name: web}\nspec: {signerName: issuers.cert-manager.io/default.ca, request: %s, usages: [digital signature, key encipherment, server auth]}\n",
			apptest.B64(ct.BareCSR(t, "web.example.com"))))
		r.Drain()
		key := api.Key{Kind: api.KindCertificateSigningRequest, Name: "web"}
		if c := r.Get(key).(*api.CertificateSigningRequest); !c.IsIssued() {
			t.Fatalf("not issued: %+v", c.Status.Conditions)
		}
		r.Reconcile(key)
		evs, err := r.Repo.EventsOf(r.Ctx, key)
		if err != nil || len(evs) != 1 || evs[0].Reason != "CertificateIssued" || evs[0].Count != 1 {
			t.Fatalf("Events of a CSR that never waited: %+v %v, want CertificateIssued once", evs, err)
		}
	})
}

// A CertificateRequest keeps its Ready condition as the place that says
// why it waits; its Events say what happened once each (Approved, then
// IssuerNotFound when it starts to wait), and a reconcile that finds it
// still waiting writes none.
func TestWaitingCertificateRequestRecordsEventsOnce(t *testing.T) {
	r := apptest.NewRig(t)
	r.Apply(fmt.Sprintf("apiVersion: cert-manager.io/v1\nkind: CertificateRequest\nmetadata: {name: req, namespace: default}\nspec: {issuerRef: {name: missing}, request: %s}\n",
		apptest.B64(ct.CSR(t, ct.Cert(), ct.Key(t, nil)))))
	r.Drain()
	key := api.Key{Kind: api.KindCertificateRequest, Namespace: "default", Name: "req"}
	r.Clock.Advance(time.Hour)
	r.Reconcile(key)
	if c := api.FindCondition(r.Get(key).(*api.CertificateRequest).Status.Conditions, "Ready"); c == nil || c.Reason != "Pending" {
		t.Fatalf("request: %+v", c)
	}
	evs, err := r.Repo.EventsOf(r.Ctx, key)
	if err != nil || len(evs) != 2 {
		t.Fatalf("Events of the waiting request: %+v %v", evs, err)
	}
	reasons := map[string]int{}
	for _, e := range evs {
		reasons[e.Type+"/"+e.Reason] = e.Count
	}
	if reasons["Normal/Approved"] != 1 || reasons["Warning/IssuerNotFound"] != 1 {
		t.Fatalf("Events of the waiting request: %v", reasons)
	}
}
