package app

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
)

func TestExpiresAt(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rec := func(obj api.Object) ports.Record {
		b, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		return ports.Record{Key: api.KeyOf(obj), Data: b}
	}
	cr := func(conds ...api.Condition) *api.CertificateRequest {
		c := &api.CertificateRequest{TypeMeta: api.TypeMeta{Kind: api.KindCertificateRequest}, ObjectMeta: api.ObjectMeta{Name: "r", Namespace: "d"}}
		c.Status.Conditions = conds
		return c
	}
	lease := func(h *api.ChallengeLeaseHolder) *api.ChallengeLease {
		return &api.ChallengeLease{TypeMeta: api.TypeMeta{APIVersion: api.CertfnACMEV1Alpha1, Kind: api.KindChallengeLease},
			ObjectMeta: api.ObjectMeta{Name: api.ChallengeLeaseName(api.ACMEChallengeTypeDNS01, "www.example.com")},
			Spec:       api.ChallengeLeaseSpec{Type: api.ACMEChallengeTypeDNS01, DNSName: "www.example.com", Holder: h}}
	}
	issued := api.Condition{Type: "Ready", Status: api.ConditionTrue, Reason: "Issued"}
	csr := func(conds ...string) *api.CertificateSigningRequest {
		c := &api.CertificateSigningRequest{TypeMeta: api.TypeMeta{Kind: api.KindCertificateSigningRequest}, ObjectMeta: api.ObjectMeta{Name: "c"}}
		for _, t := range conds {
			c.Status.AddCondition(t, "r", "m", now)
		}
		return c
	}
	order := func(state api.State, owner api.Key) ports.Record {
		r := rec(&api.Order{TypeMeta: api.TypeMeta{Kind: api.KindOrder}, ObjectMeta: api.ObjectMeta{Name: "o", Namespace: "d"},
			Status: api.OrderStatus{State: state}})
		r.Owner = owner
		return r
	}
	for _, tc := range []struct {
		name string
		rec  ports.Record
		want time.Time
	}{
		{"a valid Order of a request expires after RetainFinal", order(api.StateValid, api.Key{Kind: api.KindCertificateRequest, Namespace: "d", Name: "r"}), now.Add(RetainFinal)},
		{"a valid Order of a CSR goes with the CSR", order(api.StateValid, api.Key{Kind: api.KindCertificateSigningRequest, Name: "c"}), now.Add(RetainCSR)},
		{"a pending Order of a CSR never expires", order(api.StatePending, api.Key{Kind: api.KindCertificateSigningRequest, Name: "c"}), time.Time{}},
		{"pending request never expires", rec(cr()), time.Time{}},
		{"issued request expires after RetainFinal", rec(cr(issued)), now.Add(RetainFinal)},
		{"denied request expires", rec(cr(api.Condition{Type: "Denied", Status: api.ConditionTrue})), now.Add(RetainFinal)},
		{"a Certificate never expires", rec(&api.Certificate{TypeMeta: api.TypeMeta{Kind: api.KindCertificate}, ObjectMeta: api.ObjectMeta{Name: "c", Namespace: "d"}}), time.Time{}},
		{"held lease never expires", rec(lease(&api.ChallengeLeaseHolder{Namespace: "d", Name: "c", UID: "u"})), time.Time{}},
		{"released lease expires", rec(lease(nil)), now.Add(RetainFinal)},
		{"an event expires after RetainEvents", ports.Record{Key: api.Key{Kind: api.KindEvent, Namespace: "d", Name: "certificate.c"}, Data: []byte("{}")}, now.Add(RetainEvents)},
		{"pending CSR never expires", rec(csr()), time.Time{}},
		{"approved CSR not yet signed never expires", rec(csr("Approved")), time.Time{}},
		{"denied CSR expires after an hour (docs/design/request-duration.md)", rec(csr("Denied")), now.Add(RetainCSR)},
		{"failed CSR expires after an hour", rec(csr("Approved", "Failed")), now.Add(RetainCSR)},
		{"undecodable data never expires", ports.Record{Key: api.Key{Kind: api.KindCertificateRequest, Namespace: "d", Name: "x"}, Data: []byte("{")}, time.Time{}},
	} {
		if got := ExpiresAt(tc.rec, now); !got.Equal(tc.want) {
			t.Errorf("%s: ExpiresAt = %v, want %v", tc.name, got, tc.want)
		}
	}
}
