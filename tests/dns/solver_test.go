// Package dns_test runs the DNS-01 Solver end to end: against a real BIND 9
// (RFC 2136 updates signed with TSIG, NS discovery, CNAME follow) and
// against challtestsrv, the DNS server of Pebble's test setup.
package dns_test

import (
	"context"
	"encoding/json"
	"github.com/certfn/certfn/adapters/netguard"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/adapters/dns/challtestsrv"
	"github.com/certfn/certfn/adapters/dns/rfc2136"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/tests/dns/dnstest"
)

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// bindEnv is a Solver wired to a running BIND.
type bindEnv struct {
	bind    *dnstest.BIND
	secrets *certtest.MemSecrets
	solver  dns01.Solver
}

// newBindEnv starts BIND and a Solver that resolves through it. The TSIG
// secret of the hmac-sha256 key is stored as team-a/tsig (Issuer) and
// cert-manager/tsig-cluster (ClusterIssuer); team-a/tsig-wrong holds
// another key's secret.
func newBindEnv(t *testing.T) *bindEnv {
	b := dnstest.StartBIND(t)
	good := b.Keys["hmac-sha256"].Secret
	secrets := certtest.NewMemSecrets(
		ports.Secret{Namespace: "team-a", Name: "tsig", Data: map[string][]byte{"secret": []byte(good)}},
		ports.Secret{Namespace: "cert-manager", Name: "tsig-cluster", Data: map[string][]byte{"secret": []byte(good)}},
		ports.Secret{Namespace: "team-a", Name: "tsig-wrong", Data: map[string][]byte{"secret": []byte(b.Keys["hmac-sha512"].Secret)}},
	)
	s := dns01.NewSolver(dns01.Deps{
		Secrets:   secrets,
		Clock:     clock.NewFake(t0),
		Providers: map[string]dns01.ProviderFactory{dns01.KeyRFC2136: rfc2136.NewFactory(loopbackAllowed(t))},
		Resolver: dns01.Resolver{
			Nameservers:       []string{b.Addr},
			AuthoritativePort: b.Port,
			Timeout:           time.Second,
		},
	})
	return &bindEnv{bind: b, secrets: secrets, solver: s}
}

// rfcChallenge is a DNS-01 Challenge in team-a for dnsName solved by the
// rfc2136 solver of an Issuer, with key authorization "tok.<dnsName>".
func (e *bindEnv) rfcChallenge(dnsName string, mods ...func(*api.Challenge)) *api.Challenge {
	ch := &api.Challenge{
		TypeMeta:   api.TypeMeta{Kind: api.KindChallenge},
		ObjectMeta: api.ObjectMeta{Name: "c", Namespace: "team-a"},
		Spec: api.ChallengeSpec{
			DNSName: dnsName, Type: api.ACMEChallengeTypeDNS01, Token: "tok", Key: "tok." + dnsName,
			IssuerRef: api.IssuerReference{Name: "le", Kind: api.KindIssuer},
			Solver: api.ACMEChallengeSolver{DNS01: &api.ACMEChallengeSolverDNS01{RFC2136: &api.ACMEIssuerDNS01ProviderRFC2136{
				Nameserver:    e.bind.Addr,
				TSIGKeyName:   e.bind.Keys["hmac-sha256"].Name,
				TSIGAlgorithm: "HMACSHA256",
				TSIGSecret:    api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: "tsig"}, Key: "secret"},
			}}},
		},
	}
	for _, m := range mods {
		m(ch)
	}
	return ch
}

func check(t *testing.T, s dns01.Solver, ch *api.Challenge) (bool, string) {
	t.Helper()
	ok, why, err := s.Check(context.Background(), ch)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	return ok, why
}

// TestBINDPresentCheckCleanUp: the whole life of one challenge against
// BIND: not ok before Present, the record on the authoritative server and
// ok after, idempotent Present, gone after CleanUp.
func TestBINDPresentCheckCleanUp(t *testing.T) {
	e := newBindEnv(t)
	ctx := context.Background()
	for _, tcp := range []bool{false, true} {
		name := map[bool]string{false: "udp.example.test", true: "tcp.example.test"}[tcp]
		t.Run(name, func(t *testing.T) {
			ch := e.rfcChallenge(name, func(c *api.Challenge) {
				if tcp {
					c.Spec.Solver.DNS01.RFC2136.Protocol = "TCP"
				}
			})
			fqdn := "_acme-challenge." + name + "."
			if ok, why := check(t, e.solver, ch); ok || !strings.Contains(why, "ns1.example.test. (127.0.0.1:") {
				t.Fatalf("Check before Present = %v, %q; want not ok naming ns1", ok, why)
			}
			res, err := e.solver.Present(ctx, ch)
			if err != nil {
				t.Fatalf("Present: %v\n%s", err, e.bind.Log())
			}
			want := dns01.PresentResult{Zone: dnstest.ZoneExample, FQDN: fqdn, Value: dns01.TXTValue(ch.Spec.Key)}
			if res != want {
				t.Fatalf("Present = %+v, want %+v", res, want)
			}
			if got := e.bind.TXT(t, fqdn); !slices.Equal(got, []string{res.Value}) {
				t.Fatalf("BIND serves %q, want [%s]", got, res.Value)
			}
			ch.Status.Presented, ch.Status.DNS01 = true, res.Status()
			if ok, why := check(t, e.solver, ch); !ok {
				t.Fatalf("Check after Present not ok: %s", why)
			}
			if _, err := e.solver.Present(ctx, ch); err != nil {
				t.Fatalf("second Present: %v", err)
			}
			if got := e.bind.TXT(t, fqdn); len(got) != 1 {
				t.Fatalf("after presenting twice BIND serves %q, want one record", got)
			}
			if err := e.solver.CleanUp(ctx, ch); err != nil {
				t.Fatalf("CleanUp: %v", err)
			}
			if got := e.bind.TXT(t, fqdn); len(got) != 0 {
				t.Fatalf("after CleanUp BIND serves %q", got)
			}
			if ok, _ := check(t, e.solver, ch); ok {
				t.Fatal("Check after CleanUp is ok")
			}
			if err := e.solver.CleanUp(ctx, ch); err != nil {
				t.Fatalf("CleanUp of a missing record: %v", err)
			}
		})
	}
}

// TestBINDCleanUpKeepsTheOtherValue: example.test and *.example.test
// share one TXT name; cleaning up one challenge leaves the other's value.
func TestBINDCleanUpKeepsTheOtherValue(t *testing.T) {
	e := newBindEnv(t)
	ctx := context.Background()
	plain := e.rfcChallenge("both.example.test")
	wild := e.rfcChallenge("both.example.test", func(c *api.Challenge) { c.Spec.Wildcard, c.Spec.Key = true, "tok.wildcard" })
	for _, ch := range []*api.Challenge{plain, wild} {
		res, err := e.solver.Present(ctx, ch)
		if err != nil {
			t.Fatal(err)
		}
		ch.Status.DNS01 = res.Status()
	}
	fqdn := "_acme-challenge.both.example.test."
	if got := e.bind.TXT(t, fqdn); len(got) != 2 {
		t.Fatalf("BIND serves %q, want both values", got)
	}
	if err := e.solver.CleanUp(ctx, plain); err != nil {
		t.Fatal(err)
	}
	if got := e.bind.TXT(t, fqdn); !slices.Equal(got, []string{wild.Status.DNS01.Value}) {
		t.Fatalf("after CleanUp of one BIND serves %q, want only the wildcard's value", got)
	}
	if ok, why := check(t, e.solver, wild); !ok {
		t.Fatalf("the other challenge's Check: %s", why)
	}
	if ok, _ := check(t, e.solver, plain); ok {
		t.Fatal("the cleaned-up challenge's Check is ok")
	}
}

// TestBINDRejections: a wrong TSIG secret, a missing secret, a zone that
// does not exist: permanent errors naming the field, no secret in them.
func TestBINDRejections(t *testing.T) {
	e := newBindEnv(t)
	cases := []struct {
		name string
		ch   *api.Challenge
		want string
	}{
		{"wrong TSIG secret", e.rfcChallenge("wrongkey.example.test", func(c *api.Challenge) {
			c.Spec.Solver.DNS01.RFC2136.TSIGSecret.Name = "tsig-wrong"
		}), "spec.solver.dns01.rfc2136.tsigSecretSecretRef: the server " + e.bind.Addr + " rejected the TSIG signature of key certfn-hmac-sha256."},
		{"wrong algorithm", e.rfcChallenge("wrongalg.example.test", func(c *api.Challenge) {
			c.Spec.Solver.DNS01.RFC2136.TSIGAlgorithm = "HMACSHA512"
		}), "spec.solver.dns01.rfc2136.tsigSecretSecretRef: the server " + e.bind.Addr + " rejected the TSIG signature"},
		{"ClusterIssuer secret looked up in the cluster resource namespace", e.rfcChallenge("cluster.example.test", func(c *api.Challenge) {
			c.Spec.IssuerRef.Kind = api.KindClusterIssuer
		}), `spec.solver.dns01.rfc2136.tsigSecretSecretRef: secret cert-manager/tsig has no usable key "secret" (missing, unreadable or empty)`},
		{"zone not found", e.rfcChallenge("www.nowhere.test"), "zone not found for _acme-challenge.www.nowhere.test."},
		{"nameserver unusable", e.rfcChallenge("badns.example.test", func(c *api.Challenge) {
			c.Spec.Solver.DNS01.RFC2136.Nameserver = "[::1"
		}), "spec.solver.dns01.rfc2136.nameserver:"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.solver.Present(context.Background(), tc.ch)
			if err == nil || !errs.IsPermanent(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Present: err = %v\nwant a permanent error containing %q", err, tc.want)
			}
			for _, k := range e.bind.Keys {
				if strings.Contains(err.Error(), k.Secret) {
					t.Fatalf("error contains a TSIG secret: %v", err)
				}
			}
		})
	}
	// The ClusterIssuer's own secret name works.
	ch := e.rfcChallenge("cluster.example.test", func(c *api.Challenge) {
		c.Spec.IssuerRef.Kind = api.KindClusterIssuer
		c.Spec.Solver.DNS01.RFC2136.TSIGSecret.Name = "tsig-cluster"
	})
	if _, err := e.solver.Present(context.Background(), ch); err != nil {
		t.Fatalf("ClusterIssuer with its secret in cert-manager: %v", err)
	}
}

// TestBINDCNAMEFollow: with cnameStrategy Follow the record is written to
// the CNAME's target in another zone, and checked there.
func TestBINDCNAMEFollow(t *testing.T) {
	e := newBindEnv(t)
	ctx := context.Background()
	ch := e.rfcChallenge("cname.example.test", func(c *api.Challenge) { c.Spec.Solver.DNS01.CNAMEStrategy = "Follow" })
	if ok, _ := check(t, e.solver, ch); ok {
		t.Fatal("Check before Present is ok")
	}
	res, err := e.solver.Present(ctx, ch)
	if err != nil {
		t.Fatal(err)
	}
	if res.Zone != dnstest.ZoneDelegate || res.FQDN != dnstest.CNAMETarget {
		t.Fatalf("Present = %+v, want zone %s fqdn %s", res, dnstest.ZoneDelegate, dnstest.CNAMETarget)
	}
	if got := e.bind.TXT(t, dnstest.CNAMETarget); !slices.Equal(got, []string{res.Value}) {
		t.Fatalf("BIND serves %q at the target", got)
	}
	if ok, why := check(t, e.solver, ch); !ok { // no status: Check follows the CNAME itself
		t.Fatalf("Check: %s", why)
	}
	ch.Status.DNS01 = res.Status()
	if err := e.solver.CleanUp(ctx, ch); err != nil {
		t.Fatal(err)
	}
	if got := e.bind.TXT(t, dnstest.CNAMETarget); len(got) != 0 {
		t.Fatalf("after CleanUp BIND serves %q", got)
	}
}

// challtestsrvSolver is a Solver whose webhook solver "challtestsrv" is
// the challtestsrv provider over srv, resolving through it.
func challtestsrvSolver(p *challtestsrv.Provider) dns01.Solver {
	return dns01.NewSolver(dns01.Deps{
		Clock:     clock.NewFake(t0),
		Providers: map[string]dns01.ProviderFactory{dns01.WebhookKey(challtestsrv.SolverName): p.Factory()},
		Resolver:  dns01.Resolver{Nameservers: []string{p.DNSAddr}, Timeout: time.Second},
	})
}

func webhookChallenge(dnsName string, mods ...func(*api.Challenge)) *api.Challenge {
	ch := &api.Challenge{
		TypeMeta:   api.TypeMeta{Kind: api.KindChallenge},
		ObjectMeta: api.ObjectMeta{Name: "c", Namespace: "team-a"},
		Spec: api.ChallengeSpec{
			DNSName: dnsName, Type: api.ACMEChallengeTypeDNS01, Token: "tok", Key: "tok." + dnsName,
			IssuerRef: api.IssuerReference{Name: "pebble", Kind: api.KindClusterIssuer},
			Solver: api.ACMEChallengeSolver{DNS01: &api.ACMEChallengeSolverDNS01{
				Webhook: json.RawMessage(`{"groupName":"acme.certfn.test","solverName":"challtestsrv"}`),
			}},
		},
	}
	for _, m := range mods {
		m(ch)
	}
	return ch
}

// TestChallTestSrv: the same life of a challenge against challtestsrv
// (in-process handle and the pebble-challtestsrv command), with a second
// value kept on clean-up and a followed CNAME.
func TestChallTestSrv(t *testing.T) {
	in := dnstest.StartChallTestSrv(t)
	cmd := dnstest.StartPebbleChallTestSrv(t)
	for _, tc := range []struct {
		name string
		p    *challtestsrv.Provider
	}{
		{"in-process", &challtestsrv.Provider{Server: in.Srv, DNSAddr: in.DNSAddr}},
		{"management API", &challtestsrv.Provider{ManagementURL: cmd.ManagementURL, DNSAddr: cmd.DNSAddr}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := challtestsrvSolver(tc.p)
			lookup := func(fqdn string) []string {
				vs, err := dnstest.QueryTXT(ctx, tc.p.DNSAddr, fqdn)
				if err != nil {
					t.Fatal(err)
				}
				return vs
			}
			a := webhookChallenge("www.example.test")
			b := webhookChallenge("www.example.test", func(c *api.Challenge) { c.Spec.Wildcard, c.Spec.Key = true, "tok.other" })
			fqdn := "_acme-challenge.www.example.test."
			if ok, _ := check(t, s, a); ok {
				t.Fatal("Check before Present is ok")
			}
			for _, ch := range []*api.Challenge{a, b, a} {
				res, err := s.Present(ctx, ch)
				if err != nil {
					t.Fatal(err)
				}
				if res.Zone != "www.example.test." || res.FQDN != fqdn {
					t.Fatalf("Present = %+v", res)
				}
				ch.Status.DNS01 = res.Status()
			}
			if got := lookup(fqdn); len(got) != 2 {
				t.Fatalf("challtestsrv serves %q, want two values (presenting twice keeps one)", got)
			}
			if ok, why := check(t, s, a); !ok {
				t.Fatalf("Check after Present: %s", why)
			}
			if err := s.CleanUp(ctx, a); err != nil {
				t.Fatal(err)
			}
			if got := lookup(fqdn); !slices.Equal(got, []string{b.Status.DNS01.Value}) {
				t.Fatalf("after CleanUp challtestsrv serves %q, want only the other value", got)
			}
			if ok, _ := check(t, s, a); ok {
				t.Fatal("Check after CleanUp is ok")
			}
			if err := s.CleanUp(ctx, b); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("CNAME follow", func(t *testing.T) {
		in.Srv.AddDNSCNAMERecord("_acme-challenge.alias.example.test.", "alias.delegated.test.")
		p := &challtestsrv.Provider{Server: in.Srv, DNSAddr: in.DNSAddr}
		s := challtestsrvSolver(p)
		ch := webhookChallenge("alias.example.test", func(c *api.Challenge) { c.Spec.Solver.DNS01.CNAMEStrategy = "Follow" })
		res, err := s.Present(context.Background(), ch)
		if err != nil {
			t.Fatal(err)
		}
		if res.FQDN != "alias.delegated.test." || res.Zone != "delegated.test." {
			t.Fatalf("Present = %+v, want the CNAME target", res)
		}
		if got := in.Srv.GetDNSTXTRecords("alias.delegated.test."); !slices.Equal(got, []string{res.Value}) {
			t.Fatalf("challtestsrv has %q at the target", got)
		}
		if ok, why := check(t, s, ch); !ok {
			t.Fatalf("Check: %s", why)
		}
	})
}

// loopbackAllowed is the private-network allowance an operator sets for
// namespaced Issuers whose nameserver (here BIND on 127.0.0.1) is on a
// private network.
func loopbackAllowed(t *testing.T) netguard.Policy {
	t.Helper()
	p, err := netguard.Parse("--acme-allow-private-networks", []string{"127.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
