package acme

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/issuers"
)

// A failed registration is attempted again only when the issuer is due
// (or its spec changed), never when the step is woken early — by its own
// status write, for one: a server whose error differs every time would
// otherwise be asked in a tight loop.
func TestAccountsReadyRetriesFailedRegistrationWhenDue(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	failed := func(gen int64, reason string) func(*api.ClusterIssuer) {
		return func(iss *api.ClusterIssuer) {
			iss.Generation = 2
			api.SetCondition(&iss.Status.Conditions, api.Condition{Type: api.IssuerConditionReady, Status: api.ConditionFalse,
				Reason: reason, Message: "Failed to register ACME account: earlier", ObservedGeneration: gen}, now.Add(-time.Minute))
		}
	}
	tests := []struct {
		name      string
		issuer    func(*api.ClusterIssuer)
		nextRunAt time.Time
		registers int
		msg       string
	}{
		{name: "woken early after a failure: the recorded failure", issuer: failed(2, ReasonRegister), nextRunAt: now.Add(10 * time.Minute),
			registers: 0, msg: "Failed to register ACME account: earlier"},
		{name: "due after a failure: asked again", issuer: failed(2, ReasonRegister), nextRunAt: now,
			registers: 1, msg: "Failed to register ACME account: register: 502 request id 1"},
		{name: "no due time recorded: asked", issuer: failed(2, ReasonRegister),
			registers: 1, msg: "request id 1"},
		{name: "spec changed since the failure: asked at once", issuer: failed(1, ReasonRegister), nextRunAt: now.Add(10 * time.Minute),
			registers: 1, msg: "request id 1"},
		{name: "another kind of failure: asked", issuer: failed(2, ReasonEAB), nextRunAt: now.Add(10 * time.Minute),
			registers: 1, msg: "request id 1"},
		{name: "never checked: asked", nextRunAt: now.Add(10 * time.Minute), registers: 1, msg: "request id 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			iss := acmeIssuer(nil)
			if tc.issuer != nil {
				tc.issuer(iss)
			}
			fc := &fakeClient{err: errors.New("register: 502 request id 1")}
			a := NewAccounts(certtest.NewMemSecrets(keySecret(t, nil)), fakeDialer{fc}, AllowAnyServer(""))
			st := &issuers.State{Issuer: iss, Now: now, NextRunAt: tc.nextRunAt, SecretNamespace: "cert-manager"}
			ok, reason, msg, err := a.Ready(context.Background(), st)
			if err != nil {
				t.Fatal(err)
			}
			if ok || reason != ReasonRegister || !strings.Contains(msg, tc.msg) {
				t.Fatalf("Ready = %t %q %q, want false %q containing %q", ok, reason, msg, ReasonRegister, tc.msg)
			}
			if len(fc.registers) != tc.registers {
				t.Fatalf("%d registrations, want %d", len(fc.registers), tc.registers)
			}
		})
	}
}
