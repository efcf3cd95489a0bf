package acme

import (
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
)

func cr(name, uid string) *api.CertificateRequest {
	return &api.CertificateRequest{ObjectMeta: api.ObjectMeta{Name: name, UID: uid}}
}

func TestNames(t *testing.T) {
	long := strings.Repeat("a", 260)
	tests := []struct {
		name string
		a, b *api.CertificateRequest
		same bool
	}{
		{"same request, same Order", cr("web-1", "u1"), cr("web-1", "u1"), true},
		{"recreated request, new Order", cr("web-1", "u1"), cr("web-1", "u2"), false},
		{"other request", cr("web-1", "u1"), cr("web-2", "u1"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := OrderName(tc.a) == OrderName(tc.b); got != tc.same {
				t.Fatalf("OrderName(%s)=%s OrderName(%s)=%s, same=%t want %t", tc.a.Name, OrderName(tc.a), tc.b.Name, OrderName(tc.b), got, tc.same)
			}
		})
	}
	if n := OrderName(cr(long, "u")); len(n) > 253 || !strings.HasPrefix(n, "aaa") {
		t.Errorf("long OrderName %d characters: %s", len(n), n)
	}
	if a, b := ChallengeName("o", "https://x/authz/1"), ChallengeName("o", "https://x/authz/2"); a == b || !strings.HasPrefix(a, "o-") {
		t.Errorf("ChallengeName: %s %s", a, b)
	}
	if n := ChallengeName(long, "u"); len(n) > 253 {
		t.Errorf("long ChallengeName %d characters", len(n))
	}
}

func TestSpecChanged(t *testing.T) {
	spec := api.OrderSpec{DNSNames: []string{"a.example.com"}}
	tests := []struct {
		name   string
		stamp  bool
		change func(*api.OrderSpec)
		want   bool
	}{
		{"unstamped objects are accepted", false, func(s *api.OrderSpec) { s.CommonName = "x" }, false},
		{"unchanged", true, func(*api.OrderSpec) {}, false},
		{"changed", true, func(s *api.OrderSpec) { s.DNSNames = append(s.DNSNames, "b.example.com") }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m api.ObjectMeta
			s := spec
			s.DNSNames = append([]string(nil), spec.DNSNames...)
			if tc.stamp {
				StampSpec(&m, s)
			}
			tc.change(&s)
			if got := SpecChanged(&m, s); got != tc.want {
				t.Fatalf("SpecChanged = %t, want %t", got, tc.want)
			}
		})
	}
}

func TestStateOf(t *testing.T) {
	for in, want := range map[string]api.State{
		"pending": api.StatePending, "ready": api.StateReady, "processing": api.StateProcessing, "valid": api.StateValid,
		"invalid": api.StateInvalid, "expired": api.StateExpired, "deactivated": api.StateInvalid, "revoked": api.StateInvalid,
		"bogus": api.StateUnknown,
	} {
		if got := StateOf(in); got != want {
			t.Errorf("StateOf(%q) = %q, want %q", in, got, want)
		}
	}
	for s, final := range map[api.State]bool{api.StateValid: true, api.StateInvalid: true, api.StateExpired: true, api.StateErrored: true,
		api.StatePending: false, api.StateReady: false, api.StateProcessing: false, api.StateUnknown: false} {
		if s.IsFinal() != final {
			t.Errorf("%q.IsFinal() = %t", s, !final)
		}
	}
}
