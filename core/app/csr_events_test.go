package app_test

import (
	"errors"
	"testing"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/app/apptest"
	"github.com/certfn/certfn/core/certificaterequests"
	"github.com/certfn/certfn/core/ports"
)

// Whoever may get a CSR may read its Event (why it waits), without `get`
// on events in "default"; others may not, and the permission does not
// reach the Events of other objects.
func TestCSREventReadableByWhoMayGetTheCSR(t *testing.T) {
	r := apptest.NewRig(t)
	r.Approver.Set(certificaterequests.Unmatched)
	r.Apply(approverRBAC)
	r.Drain()
	bob := app.Caller{Username: "bob", Groups: []string{"system:authenticated"}}
	if _, err := applyAs(r, bob, csrSpec{name: "mine", signer: "clusterissuers.cert-manager.io/ca"}.yaml(t)); err != nil {
		t.Fatal(err)
	}
	r.Drain()
	evs, err := r.Repo.EventsOf(r.Ctx, csrKey("mine"))
	if err != nil || len(evs) != 1 {
		t.Fatalf("Events of the CSR: %+v %v", evs, err)
	}
	ek := api.KeyOf(&evs[0])
	for _, tc := range []struct {
		name   string
		caller app.Caller
		key    api.Key
		want   error // nil: readable
	}{
		{"the requester, who may get the CSR", bob, ek, nil},
		{"a superuser", apptest.Caller, ek, nil},
		{"someone who may not get the CSR", app.Caller{Username: "carol", Groups: []string{"system:authenticated"}}, ek, app.ErrForbidden},
		{"the requester, the Event of a Certificate", bob, api.EventKey(apptest.CertKey, api.EventTypeNormal, "Issuing", "m"), app.ErrForbidden},
		{"the requester, an Event that is not an object's", bob, api.Key{Kind: api.KindEvent, Namespace: "default", Name: "x"}, app.ErrForbidden},
		{"the requester, the Event of a CSR that does not exist", bob, api.EventKey(csrKey("none"), api.EventTypeNormal, "WaitingApproval", "m"), ports.ErrNotFound},
	} {
		o, err := r.Service.Get(r.Ctx, tc.caller, tc.key)
		if tc.want != nil {
			if !errors.Is(err, tc.want) {
				t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
			}
			continue
		}
		if ev, ok := o.(*api.Event); err != nil || !ok || ev.Reason != "WaitingApproval" {
			t.Errorf("%s: %+v %v", tc.name, o, err)
		}
	}
}

// latestEvent is the last Event recorded about key (the test fails when
// there is none).
func latestEvent(t *testing.T, r *apptest.Rig, key api.Key) *api.Event {
	t.Helper()
	evs, err := r.Repo.EventsOf(r.Ctx, key)
	if err != nil || len(evs) == 0 {
		t.Fatalf("no Event about %s: %v", key, err)
	}
	return &evs[len(evs)-1]
}
