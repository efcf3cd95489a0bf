package challtestsrv_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/libdns/libdns"

	"github.com/certfn/certfn/adapters/dns/challtestsrv"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports/porttest"
	"github.com/certfn/certfn/tests/dns/dnstest"
)

func lookupAt(addr string) func(t *testing.T, fqdn string) []string {
	return func(t *testing.T, fqdn string) []string {
		t.Helper()
		vs, err := dnstest.QueryTXT(context.Background(), addr, fqdn)
		if err != nil {
			t.Fatalf("query TXT %s at %s: %v", fqdn, addr, err)
		}
		return vs
	}
}

// TestProviderSuite runs the provider contract (porttest.DNSProviderSuite)
// against an in-process challtestsrv (direct handle) and against the
// pebble-challtestsrv command through its management API.
func TestProviderSuite(t *testing.T) {
	t.Run("in-process handle", func(t *testing.T) {
		s := dnstest.StartChallTestSrv(t)
		porttest.DNSProviderSuite(t, porttest.DNSEnv{
			Provider: &challtestsrv.Provider{Server: s.Srv, DNSAddr: s.DNSAddr},
			Zone:     "example.test.",
			Lookup:   lookupAt(s.DNSAddr),
		})
	})
	t.Run("management API", func(t *testing.T) {
		p := dnstest.StartPebbleChallTestSrv(t)
		porttest.DNSProviderSuite(t, porttest.DNSEnv{
			Provider: &challtestsrv.Provider{ManagementURL: p.ManagementURL, DNSAddr: p.DNSAddr},
			Zone:     "example.test.",
			Lookup:   lookupAt(p.DNSAddr),
		})
	})
}

func TestAuthority(t *testing.T) {
	cases := []struct {
		name     string
		p        *challtestsrv.Provider
		fqdn     string
		wantZone string
		wantErr  string
	}{
		{"parent by default", &challtestsrv.Provider{DNSAddr: "127.0.0.1:1"}, "_acme-challenge.a.example.test.", "a.example.test.", ""},
		{"configured zone", &challtestsrv.Provider{DNSAddr: "127.0.0.1:1", Zone: "Example.Test"}, "_acme-challenge.a.example.test", "example.test.", ""},
		{"outside the configured zone", &challtestsrv.Provider{DNSAddr: "127.0.0.1:1", Zone: "example.test"}, "_acme-challenge.other.test.", "", "is not in zone example.test."},
		{"no DNS address", &challtestsrv.Provider{}, "_acme-challenge.a.example.test.", "", "DNSAddr is not set"},
		{"top-level name", &challtestsrv.Provider{DNSAddr: "127.0.0.1:1"}, "test.", "", "has no parent zone"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			zone, servers, err := tc.p.Authority(context.Background(), tc.fqdn)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errs.IsPermanent(err) {
					t.Fatalf("err = %v, want a permanent error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if zone != tc.wantZone || len(servers) != 1 || servers[0] != tc.p.DNSAddr {
				t.Fatalf("Authority = %q %q, want %q [%s]", zone, servers, tc.wantZone, tc.p.DNSAddr)
			}
		})
	}
}

func TestFactory(t *testing.T) {
	ctx := context.Background()
	if _, err := (&challtestsrv.Provider{}).Factory()(ctx, dns01.ProviderRequest{}); !errs.IsPermanent(err) {
		t.Fatalf("factory of an unconfigured provider: err = %v, want permanent", err)
	}
	p := &challtestsrv.Provider{ManagementURL: "http://127.0.0.1:1"}
	got, err := p.Factory()(ctx, dns01.ProviderRequest{})
	if err != nil || got != dns01.Provider(p) {
		t.Fatalf("factory = %v, %v; want the provider itself", got, err)
	}
}

// TestRefusals: non-TXT records are refused; a management API answering
// 4xx is permanent, 5xx transient.
func TestRefusals(t *testing.T) {
	ctx := context.Background()
	s := dnstest.StartChallTestSrv(t)
	p := &challtestsrv.Provider{Server: s.Srv, DNSAddr: s.DNSAddr}
	if _, err := p.AppendRecords(ctx, "example.test.", []libdns.Record{libdns.RR{Name: "www", Type: "A", Data: "127.0.0.1"}}); !errs.IsPermanent(err) {
		t.Fatalf("A record: err = %v, want permanent", err)
	}
	for _, tc := range []struct {
		status    int
		permanent bool
	}{{http.StatusBadRequest, true}, {http.StatusInternalServerError, false}} {
		api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(tc.status)
		}))
		p := &challtestsrv.Provider{ManagementURL: api.URL, DNSAddr: s.DNSAddr}
		_, err := p.AppendRecords(ctx, "example.test.", []libdns.Record{libdns.TXT{Name: "_acme-challenge.refused", Text: "v"}})
		api.Close()
		if err == nil || errs.IsPermanent(err) != tc.permanent {
			t.Fatalf("status %d: err = %v, want permanent=%v", tc.status, err, tc.permanent)
		}
	}
}
