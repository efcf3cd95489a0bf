package awsmode

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
	issued := api.Condition{Type: "Ready", Status: api.ConditionTrue, Reason: "Issued"}
	for _, tc := range []struct {
		name string
		rec  ports.Record
		want time.Time
	}{
		{"pending request never expires", rec(cr()), time.Time{}},
		{"issued request expires after RetainFinal", rec(cr(issued)), now.Add(RetainFinal)},
		{"denied request expires", rec(cr(api.Condition{Type: "Denied", Status: api.ConditionTrue})), now.Add(RetainFinal)},
		{"a Certificate never expires", rec(&api.Certificate{TypeMeta: api.TypeMeta{Kind: api.KindCertificate}, ObjectMeta: api.ObjectMeta{Name: "c", Namespace: "d"}}), time.Time{}},
		{"undecodable data never expires", ports.Record{Key: api.Key{Kind: api.KindCertificateRequest, Namespace: "d", Name: "x"}, Data: []byte("{")}, time.Time{}},
	} {
		if got := ExpiresAt(tc.rec, now); !got.Equal(tc.want) {
			t.Errorf("%s: ExpiresAt = %v, want %v", tc.name, got, tc.want)
		}
	}
}
