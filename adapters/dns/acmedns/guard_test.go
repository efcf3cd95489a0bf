package acmedns

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/libdns/libdns"

	"github.com/certfn/certfn/adapters/netguard"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/api"
)

// A namespaced Issuer's acmeDNS host may not be a loopback, link-local or
// private address (checked on the address dialled) unless the operator
// allows it; a ClusterIssuer's may. The refused host is never reached,
// and what a reached host answers (here a metadata-like JSON body with a
// long "error") is not echoed.
func TestNamespacedHostRefusesPrivateAddresses(t *testing.T) {
	var hits int
	metadata := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"error":"SecretAccessKey=wJalrXUtnFEMI"}`))
	}))
	t.Cleanup(metadata.Close)
	localhost := strings.Replace(metadata.URL, "127.0.0.1", "localhost", 1)
	none, _ := netguard.Parse("--acme-allow-private-networks", nil)
	loopback, _ := netguard.Parse("--acme-allow-private-networks", []string{"127.0.0.0/8", "::1"})
	for _, tc := range []struct {
		name    string
		host    string
		kind    string
		policy  netguard.Policy
		refused bool
	}{
		{"Issuer, loopback", metadata.URL, api.KindIssuer, none, true},
		{"Issuer, loopback by name", localhost, api.KindIssuer, none, true},
		{"Issuer kind unset, loopback", metadata.URL, "", none, true},
		{"Issuer, loopback allowed", metadata.URL, api.KindIssuer, loopback, false},
		{"ClusterIssuer, loopback", metadata.URL, api.KindClusterIssuer, none, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hits = 0
			req := request(tc.host, registrations{"example.com": {Username: "u", Password: "p", FullDomain: "x.auth.example", SubDomain: "x"}},
				func(_ *api.ACMEIssuerDNS01ProviderAcmeDNS, r *dns01.ProviderRequest) { r.IssuerKind = tc.kind })
			p, err := NewFactory(Options{Network: tc.policy}).Build(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.AppendRecords(context.Background(), "example.com.", []libdns.Record{libdns.TXT{Name: "_acme-challenge", Text: value(tc.name)}})
			if err == nil {
				t.Fatal("no error")
			}
			if refused := errors.Is(err, netguard.ErrDenied); refused != tc.refused || (hits == 0) != tc.refused {
				t.Fatalf("refused %t with %d requests, want refused %t: %v", refused, hits, tc.refused, err)
			}
			if strings.Contains(err.Error(), "SecretAccessKey") {
				t.Fatalf("the answer's body is in the error: %v", err)
			}
		})
	}
}
