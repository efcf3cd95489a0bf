package localmode

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/certfn/certfn/adapters/dns/challtestsrv"
	"github.com/certfn/certfn/core/acme/dns01"
)

// dns01Case is one --dns01-challtestsrv / --dns01-nameservers combination.
type dns01Case struct {
	name        string
	url         string
	nameservers []string
	wantErr     string // substring; empty: success
	// On success:
	wantProvider bool     // webhook/challtestsrv registered
	wantMgmt     string   // its ManagementURL
	wantNS       []string // Resolver.Nameservers (= the provider's DNS address first)
}

func TestDNS01TestProviders(t *testing.T) {
	tests := []dns01Case{
		{name: "neither flag"},
		{name: "nameservers only", nameservers: []string{"127.0.0.1:8053", "192.0.2.53"},
			wantNS: []string{"127.0.0.1:8053", "192.0.2.53:53"}},
		{name: "IPv6 nameservers", nameservers: []string{"[::1]:8053", "::1"},
			wantNS: []string{"[::1]:8053", "[::1]:53"}},
		{name: "challtestsrv", url: "http://127.0.0.1:8055", nameservers: []string{"127.0.0.1:8053"},
			wantProvider: true, wantMgmt: "http://127.0.0.1:8055", wantNS: []string{"127.0.0.1:8053"}},
		{name: "challtestsrv with a trailing slash, https", url: "https://localhost:8055/", nameservers: []string{" 127.0.0.1:8053 "},
			wantProvider: true, wantMgmt: "https://localhost:8055", wantNS: []string{"127.0.0.1:8053"}},
		{name: "challtestsrv without nameservers", url: "http://127.0.0.1:8055",
			wantErr: "--dns01-challtestsrv: needs --dns01-nameservers"},
		{name: "not http", url: "ftp://127.0.0.1:8055", nameservers: []string{"127.0.0.1:8053"},
			wantErr: `--dns01-challtestsrv: "ftp://127.0.0.1:8055" is not the http(s) URL`},
		{name: "no scheme", url: "127.0.0.1:8055", nameservers: []string{"127.0.0.1:8053"},
			wantErr: `--dns01-challtestsrv: "127.0.0.1:8055" is not the http(s) URL`},
		{name: "no host", url: "http://", nameservers: []string{"127.0.0.1:8053"},
			wantErr: `--dns01-challtestsrv: "http://" is not the http(s) URL`},
		{name: "a path", url: "http://127.0.0.1:8055/set-txt", nameservers: []string{"127.0.0.1:8053"},
			wantErr: `--dns01-challtestsrv: "http://127.0.0.1:8055/set-txt" is not the http(s) URL`},
		{name: "a query", url: "http://127.0.0.1:8055?x=1", nameservers: []string{"127.0.0.1:8053"},
			wantErr: "is not the http(s) URL"},
		{name: "unparsable", url: "http://[::1", nameservers: []string{"127.0.0.1:8053"},
			wantErr: "is not the http(s) URL"},
		{name: "bad port", url: "http://127.0.0.1:8055", nameservers: []string{"127.0.0.1:8053", "127.0.0.1:dns"},
			wantErr: `--dns01-nameservers[1]: "127.0.0.1:dns" has no valid port`},
		{name: "port out of range", nameservers: []string{"127.0.0.1:70000"},
			wantErr: `--dns01-nameservers[0]: "127.0.0.1:70000" has no valid port`},
		{name: "empty nameserver", nameservers: []string{""},
			wantErr: `--dns01-nameservers[0]: "" is empty`},
		{name: "not host:port", nameservers: []string{"a:b:c"},
			wantErr: `--dns01-nameservers[0]: "a:b:c" is not host:port`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			other := func(context.Context, dns01.ProviderRequest) (dns01.Provider, error) { return nil, nil }
			a := ACMEOptions{DNS01Providers: map[string]dns01.ProviderFactory{"other": other}}
			err := dns01TestProviders(&a, tc.url, tc.nameservers)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				if len(a.DNS01Providers) != 1 || a.DNS01Resolver.Nameservers != nil || a.DNS01AllowInternalNames {
					t.Fatalf("options changed on error: %+v", a)
				}
				return
			}
			if err != nil {
				t.Fatalf("dns01TestProviders: %v", err)
			}
			if !slices.Equal(a.DNS01Resolver.Nameservers, tc.wantNS) {
				t.Errorf("Resolver.Nameservers = %q, want %q", a.DNS01Resolver.Nameservers, tc.wantNS)
			}
			if a.DNS01Providers["other"] == nil {
				t.Error("the providers already registered were dropped")
			}
			f := a.DNS01Providers[dns01.WebhookKey("challtestsrv")]
			if a.DNS01AllowInternalNames != tc.wantProvider {
				t.Errorf("DNS01AllowInternalNames = %v, want %v (only with --dns01-challtestsrv)", a.DNS01AllowInternalNames, tc.wantProvider)
			}
			if !tc.wantProvider {
				if f != nil {
					t.Fatal("webhook/challtestsrv registered without --dns01-challtestsrv")
				}
				return
			}
			if f == nil {
				t.Fatalf("no provider under %q; have %v", dns01.WebhookKey("challtestsrv"), keys(a.DNS01Providers))
			}
			prov, err := f(context.Background(), dns01.ProviderRequest{Key: dns01.WebhookKey("challtestsrv")})
			if err != nil {
				t.Fatalf("factory: %v", err)
			}
			p, ok := prov.(*challtestsrv.Provider)
			if !ok {
				t.Fatalf("factory returned %T, want *challtestsrv.Provider", prov)
			}
			if p.ManagementURL != tc.wantMgmt || p.DNSAddr != tc.wantNS[0] || p.Server != nil {
				t.Errorf("provider = {ManagementURL %q, DNSAddr %q, Server %v}, want {%q, %q, nil}",
					p.ManagementURL, p.DNSAddr, p.Server, tc.wantMgmt, tc.wantNS[0])
			}
		})
	}
}

func keys(m map[string]dns01.ProviderFactory) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
