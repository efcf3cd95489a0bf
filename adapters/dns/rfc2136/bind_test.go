package rfc2136_test

import (
	"context"
	"strings"
	"testing"

	"github.com/libdns/libdns"

	"github.com/certfn/certfn/adapters/dns/rfc2136"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports/porttest"
	"github.com/certfn/certfn/tests/dns/dnstest"
)

// provider builds a Provider for bind with key k over network netw.
func provider(b *dnstest.BIND, k dnstest.Key, netw string) *rfc2136.Provider {
	alg, _ := dns01.TSIGAlgorithm(k.Algorithm)
	return &rfc2136.Provider{RFC2136Config: dns01.RFC2136Config{
		Nameserver: b.Addr, Net: netw, KeyName: k.Name, Algorithm: alg, Secret: k.Secret,
	}}
}

func lookup(b *dnstest.BIND) func(t *testing.T, fqdn string) []string {
	return func(t *testing.T, fqdn string) []string { return b.TXT(t, fqdn) }
}

// TestProviderSuiteBIND runs the provider contract (porttest.DNSProviderSuite)
// against a real BIND 9 over UDP and TCP.
func TestProviderSuiteBIND(t *testing.T) {
	b := dnstest.StartBIND(t)
	for _, netw := range []string{"udp", "tcp"} {
		t.Run(netw, func(t *testing.T) {
			zone := dnstest.ZoneExample
			if netw == "tcp" {
				zone = dnstest.ZoneDelegate // fresh names per network
			}
			porttest.DNSProviderSuite(t, porttest.DNSEnv{
				Provider: provider(b, b.Keys["hmac-sha256"], netw),
				Zone:     zone,
				Lookup:   lookup(b),
			})
		})
	}
}

// TestTSIGAlgorithms updates BIND with a key of every supported algorithm,
// HMAC-MD5 (cert-manager's default) included.
func TestTSIGAlgorithms(t *testing.T) {
	b := dnstest.StartBIND(t)
	ctx := context.Background()
	for _, alg := range []string{"hmac-md5", "hmac-sha1", "hmac-sha256", "hmac-sha384", "hmac-sha512"} {
		t.Run(alg, func(t *testing.T) {
			p := provider(b, b.Keys[alg], "udp")
			rel := "_acme-challenge.alg-" + alg
			if _, err := p.AppendRecords(ctx, dnstest.ZoneExample, []libdns.Record{libdns.TXT{Name: rel, Text: alg}}); err != nil {
				t.Fatalf("AppendRecords with %s: %v", alg, err)
			}
			if got := b.TXT(t, rel+"."+dnstest.ZoneExample); len(got) != 1 || got[0] != alg {
				t.Fatalf("TXT = %q, want [%s]", got, alg)
			}
		})
	}
}

// TestRejectedUpdates: a wrong secret, an unknown key, a key without
// update rights and a zone BIND does not serve are permanent errors that
// say what to fix and never contain the secret.
func TestRejectedUpdates(t *testing.T) {
	b := dnstest.StartBIND(t)
	good := b.Keys["hmac-sha256"]
	wrongSecret := good
	wrongSecret.Secret = b.Keys["hmac-sha512"].Secret
	unknown := dnstest.Key{Name: "nobody.", Algorithm: "hmac-sha256", Secret: good.Secret}
	txt := libdns.TXT{Name: "_acme-challenge.x", Text: "v"}
	cases := []struct {
		name string
		key  dnstest.Key
		zone string
		rec  libdns.Record
		want string
	}{
		{"wrong secret", wrongSecret, dnstest.ZoneExample, txt, "tsigSecretSecretRef: the server " + b.Addr + " rejected the TSIG signature of key certfn-hmac-sha256."},
		{"unknown key name", unknown, dnstest.ZoneExample, txt, "tsigSecretSecretRef: the server " + b.Addr + " rejected the TSIG signature of key nobody."},
		{"key without update rights", b.Outsider, dnstest.ZoneExample, txt, "refused the update of zone example.test. (REFUSED)"},
		{"A record where update-policy grants only TXT", good, dnstest.ZoneDelegate,
			libdns.RR{Name: "www", Type: "A", Data: "127.0.0.1"}, "refused the update of zone acme-delegate.test. (REFUSED)"},
		{"zone not served", good, "elsewhere.test.", txt, "rejected the update of zone elsewhere.test.: NOTAUTH"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := provider(b, tc.key, "tcp")
			p.Path = "spec.solver.dns01.rfc2136"
			_, err := p.AppendRecords(context.Background(), tc.zone, []libdns.Record{tc.rec})
			if err == nil {
				t.Fatal("AppendRecords succeeded, want an error")
			}
			if !errs.IsPermanent(err) {
				t.Errorf("error is not permanent: %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %q, want it to contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), tc.key.Secret) {
				t.Errorf("error contains the TSIG secret")
			}
		})
	}
}
