package challenges_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/acme/acmetest"
	"github.com/certfn/certfn/core/acme/challenges"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
)

// cleanUpErr is a DNS01Solver TEST DOUBLE whose CleanUp records the call
// and returns err.
type cleanUpErr struct {
	dnsSolver
	err error
}

func (d *cleanUpErr) CleanUp(ctx context.Context, ch *api.Challenge) error {
	_ = d.dnsSolver.CleanUp(ctx, ch)
	return d.err
}

// A Challenge deleted with its Order is cleaned up when it is presented,
// and also when it is a DNS-01 Challenge that is processing but not
// recorded as presented (a crash may have lost the status write after
// the record was added); a permanent clean-up failure of the latter does
// not block the deletion.
func TestBeforeDeleteCleansUpWhatMayHaveBeenPresented(t *testing.T) {
	tests := []struct {
		name       string
		typ        api.ACMEChallengeType
		status     api.ChallengeStatus
		cleanUpErr error
		cleaned    string
		deleteErr  bool
	}{
		{name: "DNS-01 presented", typ: api.ACMEChallengeTypeDNS01, status: api.ChallengeStatus{Processing: true, Presented: true}, cleaned: "[d]"},
		{name: "DNS-01 processing, presentation not recorded", typ: api.ACMEChallengeTypeDNS01, status: api.ChallengeStatus{Processing: true}, cleaned: "[d]"},
		{name: "DNS-01 processing, solver broken for good", typ: api.ACMEChallengeTypeDNS01, status: api.ChallengeStatus{Processing: true},
			cleanUpErr: errs.Permanentf("spec.solver.dns01.rfc2136.tsigSecretSecretRef: secret not found"), cleaned: "[d]"},
		{name: "DNS-01 processing, DNS server down", typ: api.ACMEChallengeTypeDNS01, status: api.ChallengeStatus{Processing: true},
			cleanUpErr: fmt.Errorf("timeout"), cleaned: "[d]", deleteErr: true},
		{name: "DNS-01 not scheduled yet", typ: api.ACMEChallengeTypeDNS01, cleaned: "[]"},
		{name: "DNS-01 final", typ: api.ACMEChallengeTypeDNS01, status: api.ChallengeStatus{State: api.StateValid}, cleaned: "[]"},
		{name: "HTTP-01 processing", typ: api.ACMEChallengeTypeHTTP01, status: api.ChallengeStatus{Processing: true}, cleaned: "[]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := &cleanUpErr{err: tc.cleanUpErr}
			r := acmetest.NewRig(t, nil, challenges.Config{DNS01: d})
			o := &api.Order{TypeMeta: api.TypeMeta{APIVersion: api.ACMEV1, Kind: api.KindOrder},
				ObjectMeta: api.ObjectMeta{Name: "o1", Namespace: "ns", UID: "order-uid"}}
			r.Create(o)
			c := challenge("d", "x.example.com", tc.typ, 0)
			c.OwnerReferences = []api.OwnerReference{acme.ControllerRef(o)}
			c.Status = tc.status
			r.Create(c)
			err := r.Objects.DeleteObject(r.Ctx, api.KeyOf(o), 0, api.Key{})
			if (err != nil) != tc.deleteErr {
				t.Fatalf("Delete = %v, want error %t", err, tc.deleteErr)
			}
			if gone := r.Get(key("d")) == nil; gone == tc.deleteErr {
				t.Fatalf("Challenge deleted = %t, want %t", gone, !tc.deleteErr)
			}
			if got := fmt.Sprint(d.cleaned); got != tc.cleaned {
				t.Fatalf("clean-ups %s, want %s", got, tc.cleaned)
			}
		})
	}
}
