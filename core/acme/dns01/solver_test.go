package dns01

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// challenge builds a DNS-01 Challenge for dnsName in namespace team-a,
// solved by the webhook solver "mem"; mods adjust it.
func challenge(dnsName string, mods ...func(*api.Challenge)) *api.Challenge {
	ch := &api.Challenge{
		TypeMeta:   api.TypeMeta{Kind: api.KindChallenge},
		ObjectMeta: api.ObjectMeta{Name: "c1", Namespace: "team-a"},
		Spec: api.ChallengeSpec{
			DNSName:   dnsName,
			Type:      api.ACMEChallengeTypeDNS01,
			Token:     "tok",
			Key:       "tok.thumb-" + dnsName,
			IssuerRef: api.IssuerReference{Name: "le", Kind: api.KindIssuer},
			Solver: api.ACMEChallengeSolver{DNS01: &api.ACMEChallengeSolverDNS01{
				Webhook: json.RawMessage(`{"groupName":"acme.certfn.test","solverName":"mem"}`),
			}},
		},
	}
	for _, m := range mods {
		m(ch)
	}
	return ch
}

func wildcard(ch *api.Challenge) { ch.Spec.Wildcard = true }

func follow(ch *api.Challenge) { ch.Spec.Solver.DNS01.CNAMEStrategy = "Follow" }

// env is a solver over the fake DNS with an in-memory provider.
type env struct {
	dns    *fakeDNS
	prov   *memProvider
	solver Solver
	clk    *clock.Fake
}

// newEnv wires a Solver to the fake DNS. The provider writes to both
// servers unless lagging (then only ns1).
func newEnv(t *testing.T, lagging bool, tweak ...func(*Deps)) *env {
	f := startFakeDNS(t)
	p := &memProvider{targets: []*zoneData{f.ns1.data, f.ns2.data}}
	if lagging {
		p.targets = p.targets[:1]
	}
	clk := clock.NewFake(t0)
	deps := Deps{
		Clock:     clk,
		Providers: map[string]ProviderFactory{WebhookKey("mem"): func(context.Context, ProviderRequest) (Provider, error) { return p, nil }},
		Resolver:  f.resolver(),
	}
	for _, tw := range tweak {
		tw(&deps)
	}
	return &env{dns: f, prov: p, solver: NewSolver(deps), clk: clk}
}

func TestTXTValueAndRecordName(t *testing.T) {
	sum := sha256.Sum256([]byte("tok.thumb"))
	if got, want := TXTValue("tok.thumb"), base64.RawURLEncoding.EncodeToString(sum[:]); got != want {
		t.Errorf("TXTValue = %q, want %q", got, want)
	}
	for in, want := range map[string]string{
		"Example.COM":  "_acme-challenge.example.com.",
		"example.com.": "_acme-challenge.example.com.",
	} {
		if got := RecordName(in); got != want {
			t.Errorf("RecordName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestPresentCheckCleanUp: Check is not ok before Present, ok after (on
// both authoritative servers), Present is idempotent for a provider with
// GetRecords, and CleanUp removes the value.
func TestPresentCheckCleanUp(t *testing.T) {
	e := newEnv(t, false)
	ctx := context.Background()
	ch := challenge("www.example.test")
	fqdn := "_acme-challenge.www.example.test."

	ok, why, err := e.solver.Check(ctx, ch)
	if err != nil || ok {
		t.Fatalf("Check before Present = %v, %q, %v; want not ok, no error", ok, why, err)
	}
	if !strings.Contains(why, "NXDOMAIN") || !strings.Contains(why, "2 of 2 servers") {
		t.Errorf("why = %q, want NXDOMAIN on 2 of 2 servers", why)
	}

	res, err := e.solver.Present(ctx, ch)
	if err != nil {
		t.Fatal(err)
	}
	want := PresentResult{Zone: "example.test.", FQDN: fqdn, Value: TXTValue(ch.Spec.Key)}
	if res != want {
		t.Fatalf("Present = %+v, want %+v", res, want)
	}
	ch.Status.DNS01 = res.Status()
	ch.Status.Presented = true

	ok, why, err = e.solver.Check(ctx, ch)
	if err != nil || !ok {
		t.Fatalf("Check after Present = %v, %q, %v; want ok", ok, why, err)
	}
	for _, ns := range []*fakeNS{e.dns.ns1, e.dns.ns2} {
		if !hasQuery(ns.Queries(), "TXT "+fqdn) {
			t.Errorf("%s was not asked for TXT %s: %v", ns.name, fqdn, ns.Queries())
		}
	}

	if err := e.solver.CleanUp(ctx, ch); err != nil {
		t.Fatal(err)
	}
	if got := txtAt(e.dns.ns1.data, fqdn); len(got) != 0 {
		t.Fatalf("after CleanUp TXT = %q, want none", got)
	}
	if ok, _, err := e.solver.Check(ctx, ch); ok || err != nil {
		t.Fatalf("Check after CleanUp = %v, %v; want not ok", ok, err)
	}
}

func TestPresentIsIdempotentWithAGetter(t *testing.T) {
	f := startFakeDNS(t)
	p := &memProvider{targets: []*zoneData{f.ns1.data, f.ns2.data}}
	s := NewSolver(Deps{
		Providers: map[string]ProviderFactory{WebhookKey("mem"): func(context.Context, ProviderRequest) (Provider, error) { return memGetter{p}, nil }},
		Resolver:  f.resolver(),
	})
	ch := challenge("idem.example.test")
	for i := 0; i < 3; i++ {
		if _, err := s.Present(context.Background(), ch); err != nil {
			t.Fatal(err)
		}
	}
	if got := txtAt(f.ns1.data, "_acme-challenge.idem.example.test."); len(got) != 1 || p.appends != 1 {
		t.Fatalf("after three Presents: values %q, %d appends; want one of each", got, p.appends)
	}
}

// TestCheckOneRound: Check's verdicts when the servers disagree or fail;
// each server is asked once and nothing waits beyond one query timeout.
func TestCheckOneRound(t *testing.T) {
	cases := []struct {
		name    string
		lagging bool   // the provider writes to ns1 only
		ns2Mode string // ns2's behaviour
		noGlue  bool   // NS answers without glue: addresses looked up
		wantOK  bool
		wantErr bool
		why     string
	}{
		{name: "both servers have the value", wantOK: true, why: "on all 2 servers"},
		{name: "addresses without glue", noGlue: true, wantOK: true, why: "on all 2 servers"},
		{name: "ns2 lags", lagging: true, why: "1 of 2 servers: ns2.example.test. (127.0.0.2:"},
		{name: "ns2 SERVFAIL", ns2Mode: serveSERVFAIL, wantErr: true, why: "ns2.example.test. (127.0.0.2:"},
		{name: "ns2 silent", ns2Mode: serveSilent, wantErr: true, why: "timeout"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.lagging)
			e.dns.ns1.glue = !tc.noGlue
			ctx := context.Background()
			ch := challenge("round.example.test")
			res, err := e.solver.Present(ctx, ch)
			if err != nil {
				t.Fatal(err)
			}
			ch.Status.DNS01 = res.Status()
			ch.Status.PresentedAt = api.NewTime(t0)
			e.clk.Advance(42 * time.Second)
			if tc.ns2Mode != "" {
				e.dns.ns2.setMode(tc.ns2Mode)
			}
			start := time.Now()
			ok, why, err := e.solver.Check(ctx, ch)
			elapsed := time.Since(start)
			if ok != tc.wantOK || (err != nil) != tc.wantErr {
				t.Fatalf("Check = %v, %q, %v; want ok=%v err=%v", ok, why, err, tc.wantOK, tc.wantErr)
			}
			if err != nil && errs.IsPermanent(err) {
				t.Errorf("error is permanent, want transient: %v", err)
			}
			if !strings.Contains(why, tc.why) {
				t.Errorf("why = %q, want it to contain %q", why, tc.why)
			}
			if !ok && !strings.Contains(why, "presented 42s ago") {
				t.Errorf("why = %q, want the time since presentation", why)
			}
			if n := countPrefix(e.dns.ns2.Queries(), "TXT "); n != 1 {
				t.Errorf("ns2 got %d TXT queries, want exactly 1", n)
			}
			if elapsed > 2*time.Second {
				t.Errorf("Check took %s; one round with 300ms timeouts should not", elapsed)
			}
		})
	}
}

func countPrefix(qs []string, prefix string) int {
	n := 0
	for _, q := range qs {
		if strings.HasPrefix(q, prefix) {
			n++
		}
	}
	return n
}

// TestCheckRecursiveOnly asks only the resolvers, recursively.
func TestCheckRecursiveOnly(t *testing.T) {
	e := newEnv(t, true, func(d *Deps) { d.Resolver.RecursiveOnly = true })
	ctx := context.Background()
	ch := challenge("rec.example.test")
	res, err := e.solver.Present(ctx, ch)
	if err != nil {
		t.Fatal(err)
	}
	ch.Status.DNS01 = res.Status()
	ok, why, err := e.solver.Check(ctx, ch)
	if !ok || err != nil {
		t.Fatalf("Check = %v, %q, %v; want ok from the resolver", ok, why, err)
	}
	if qs := e.dns.ns2.Queries(); len(qs) != 0 {
		t.Errorf("ns2 was asked %v; want no query with RecursiveOnly", qs)
	}
}

// TestCNAMEFollow: with cnameStrategy Follow the record goes to the CNAME
// target's zone; without it, to the _acme-challenge name.
func TestCNAMEFollow(t *testing.T) {
	e := newEnv(t, false)
	for _, d := range []*zoneData{e.dns.ns1.data, e.dns.ns2.data} {
		d.setCNAME("_acme-challenge.alias.example.test.", "hop.example.test.")
		d.setCNAME("hop.example.test.", "alias.delegate.test.")
	}
	ctx := context.Background()
	ch := challenge("alias.example.test", follow)
	res, err := e.solver.Present(ctx, ch)
	if err != nil {
		t.Fatal(err)
	}
	if res.Zone != "delegate.test." || res.FQDN != "alias.delegate.test." {
		t.Fatalf("Present = %+v, want zone delegate.test., fqdn alias.delegate.test.", res)
	}
	if got := txtAt(e.dns.ns2.data, "alias.delegate.test."); !slices.Equal(got, []string{res.Value}) {
		t.Fatalf("TXT at the CNAME target = %q", got)
	}
	ok, why, err := e.solver.Check(ctx, ch) // no status: Check follows too
	if !ok || err != nil {
		t.Fatalf("Check = %v, %q, %v; want ok", ok, why, err)
	}
	none, err := e.solver.Present(ctx, challenge("alias.example.test"))
	if err != nil {
		t.Fatal(err)
	}
	if none.FQDN != "_acme-challenge.alias.example.test." || none.Zone != "example.test." {
		t.Errorf("Present without Follow = %+v, want the _acme-challenge name in example.test.", none)
	}
}

// TestCheckFollowsCNAMEs: with cnameStrategy None a provider that writes
// where the CNAME points (acme-dns: its fulldomain) is checked there, as
// cert-manager's propagation check follows CNAMEs whatever the strategy.
func TestCheckFollowsCNAMEs(t *testing.T) {
	e := newEnv(t, false)
	for _, d := range []*zoneData{e.dns.ns1.data, e.dns.ns2.data} {
		d.setCNAME("_acme-challenge.alias.example.test.", "a1b2.delegate.test.")
	}
	ctx := context.Background()
	ch := challenge("alias.example.test")
	res, err := e.solver.Present(ctx, ch)
	if err != nil {
		t.Fatal(err)
	}
	if ok, _, err := e.solver.Check(ctx, ch); ok || err != nil {
		t.Fatalf("Check before the value is at the CNAME target = %v, %v; want not yet", ok, err)
	}
	// What acme-dns does: the value appears at the registration's fulldomain.
	for _, d := range []*zoneData{e.dns.ns1.data, e.dns.ns2.data} {
		d.mu.Lock()
		d.txt["a1b2.delegate.test."] = append(d.txt["a1b2.delegate.test."], res.Value)
		d.mu.Unlock()
	}
	if ok, why, err := e.solver.Check(ctx, ch); !ok || err != nil {
		t.Fatalf("Check = %v, %q, %v; want ok at the CNAME target", ok, why, err)
	}
}

func TestCNAMELoopIsPermanent(t *testing.T) {
	e := newEnv(t, false)
	e.dns.ns1.data.setCNAME("_acme-challenge.loop.example.test.", "a.example.test.")
	e.dns.ns1.data.setCNAME("a.example.test.", "_acme-challenge.loop.example.test.")
	_, err := e.solver.Present(context.Background(), challenge("loop.example.test", follow))
	if !errs.IsPermanent(err) || !strings.Contains(err.Error(), "spec.solver.dns01.cnameStrategy: follow CNAME: loop") {
		t.Fatalf("err = %v, want a permanent CNAME loop error", err)
	}
}

// TestCleanUp deletes the value recorded on the status (even when the
// spec would now lead elsewhere), keeps other values, and is fine when
// there is nothing to delete or no zone.
func TestCleanUp(t *testing.T) {
	e := newEnv(t, false)
	ctx := context.Background()
	a := challenge("shared.example.test")
	b := challenge("shared.example.test", wildcard, func(c *api.Challenge) { c.Spec.Key = "other.thumb" })
	ra, err := e.solver.Present(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := e.solver.Present(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	a.Status.DNS01, b.Status.DNS01 = ra.Status(), rb.Status()
	fqdn := "_acme-challenge.shared.example.test."
	if got := txtAt(e.dns.ns1.data, fqdn); len(got) != 2 {
		t.Fatalf("two challenges for one name: values %q, want 2", got)
	}
	if err := e.solver.CleanUp(ctx, a); err != nil {
		t.Fatal(err)
	}
	if got := txtAt(e.dns.ns1.data, fqdn); !slices.Equal(got, []string{rb.Value}) {
		t.Fatalf("after CleanUp of one: %q, want only the other's value", got)
	}
	if ok, _, err := e.solver.Check(ctx, b); !ok || err != nil {
		t.Fatalf("the other challenge's Check = %v, %v; want ok", ok, err)
	}
	if err := e.solver.CleanUp(ctx, a); err != nil {
		t.Fatalf("second CleanUp: %v", err)
	}
	// Recorded status wins over the spec.
	moved := challenge("elsewhere.example.test")
	moved.Status.DNS01 = &api.ChallengeDNS01Status{Zone: "example.test.", FQDN: fqdn, Value: rb.Value}
	if err := e.solver.CleanUp(ctx, moved); err != nil {
		t.Fatal(err)
	}
	if got := txtAt(e.dns.ns1.data, fqdn); len(got) != 0 {
		t.Fatalf("CleanUp from the status left %q", got)
	}
	// No zone: nothing can have been presented.
	if err := e.solver.CleanUp(ctx, challenge("www.nozone-cleanup.test")); err != nil {
		t.Fatalf("CleanUp without a zone: %v", err)
	}
}

func TestZoneNotFoundIsPermanent(t *testing.T) {
	e := newEnv(t, false)
	_, err := e.solver.Present(context.Background(), challenge("www.nozone.test"))
	if !errs.IsPermanent(err) || !strings.Contains(err.Error(), "zone not found for _acme-challenge.www.nozone.test.") {
		t.Fatalf("err = %v, want a permanent zone-not-found error", err)
	}
	if e.prov.appends != 0 {
		t.Errorf("%d appends, want none", e.prov.appends)
	}
}

// TestResolverFailuresAreTransient: an unreachable or failing resolver is
// retried, not recorded as a failure.
func TestResolverFailuresAreTransient(t *testing.T) {
	for _, mode := range []string{serveSERVFAIL, serveSilent} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, false)
			e.dns.ns1.setMode(mode)
			_, err := e.solver.Present(context.Background(), challenge("www.transient-"+mode+".example.test"))
			if err == nil || errs.IsPermanent(err) {
				t.Fatalf("err = %v, want transient", err)
			}
		})
	}
}

func TestProviderErrorsKeepTheirClass(t *testing.T) {
	for _, perm := range []bool{true, false} {
		e := newEnv(t, false)
		e.prov.appendErr = errors.New("provider says no")
		if perm {
			e.prov.appendErr = errs.Permanent(e.prov.appendErr)
		}
		_, err := e.solver.Present(context.Background(), challenge("perr.example.test"))
		if err == nil || errs.IsPermanent(err) != perm || !strings.Contains(err.Error(), "spec.solver.dns01.webhook/mem: add TXT _acme-challenge.perr.example.test. in zone example.test.: provider says no") {
			t.Fatalf("permanent=%v: err = %v", perm, err)
		}
	}
}

// TestValidation: bad challenges fail permanently, naming the field,
// before any DNS traffic.
func TestValidation(t *testing.T) {
	mem := func(context.Context, ProviderRequest) (Provider, error) { return &memProvider{}, nil }
	s := NewSolver(Deps{Providers: map[string]ProviderFactory{WebhookKey("mem"): mem}, Resolver: Resolver{Nameservers: []string{"127.0.0.1:1"}}})
	internal := NewSolver(Deps{Providers: map[string]ProviderFactory{WebhookKey("mem"): mem}, AllowInternalNames: true,
		Resolver: Resolver{Nameservers: []string{"127.0.0.1:1"}, Timeout: 50 * time.Millisecond}})
	cases := []struct {
		name   string
		solver Solver
		ch     *api.Challenge
		want   string // "" = passes validation (then fails on DNS, transiently)
	}{
		{"nil challenge", s, nil, "dns01: no challenge"},
		{"HTTP-01", s, challenge("a.example.test", func(c *api.Challenge) { c.Spec.Type = api.ACMEChallengeTypeHTTP01 }), `spec.type: "HTTP-01" is not DNS-01`},
		{"no dnsName", s, challenge(""), "spec.dnsName: required"},
		{"wildcard in dnsName", s, challenge("*.example.test"), `spec.dnsName: "*.example.test" must not carry the wildcard label`},
		{"IP address", s, challenge("192.0.2.1"), "is an IP address"},
		{"bad name", s, challenge("a..example.test"), `spec.dnsName: "a..example.test" is not a valid DNS name`},
		{"bad characters", s, challenge("a b.example.test"), "is not a valid DNS name"},
		{"internal name", s, challenge("host.internal"), `spec.dnsName: "host.internal" is an internal name`},
		{"wildcard on a TLD", s, challenge("test", wildcard), `"*.test" is an internal name or an invalid wildcard`},
		{"internal name allowed", internal, challenge("host.internal"), ""},
		{"no key", s, challenge("a.example.test", func(c *api.Challenge) { c.Spec.Key = "" }), "spec.key: required"},
		{"no dns01", s, challenge("a.example.test", func(c *api.Challenge) { c.Spec.Solver.DNS01 = nil }), "spec.solver.dns01: required for a DNS-01 challenge"},
		{"bad cnameStrategy", s, challenge("a.example.test", func(c *api.Challenge) { c.Spec.Solver.DNS01.CNAMEStrategy = "Chase" }), `spec.solver.dns01.cnameStrategy: "Chase" is not None or Follow`},
		{"no provider", s, challenge("a.example.test", func(c *api.Challenge) { c.Spec.Solver.DNS01.Webhook = nil }), "spec.solver.dns01: no DNS provider is set"},
		{"two providers", s, challenge("a.example.test", func(c *api.Challenge) {
			c.Spec.Solver.DNS01.RFC2136 = &api.ACMEIssuerDNS01ProviderRFC2136{Nameserver: "127.0.0.1"}
		}), "spec.solver.dns01: exactly one DNS provider must be set, found rfc2136, webhook"},
		{"provider not registered", s, challenge("a.example.test", func(c *api.Challenge) {
			c.Spec.Solver.DNS01.Webhook = nil
			c.Spec.Solver.DNS01.Route53 = &api.ACMEIssuerDNS01ProviderRoute53{Region: "eu-west-1"}
		}), "spec.solver.dns01.route53: the route53 DNS provider is not available"},
		{"webhook not registered", s, challenge("a.example.test", func(c *api.Challenge) {
			c.Spec.Solver.DNS01.Webhook = json.RawMessage(`{"solverName":"nope"}`)
		}), "spec.solver.dns01.webhook.solverName: the webhook/nope DNS provider is not available"},
		{"webhook without solverName", s, challenge("a.example.test", func(c *api.Challenge) {
			c.Spec.Solver.DNS01.Webhook = json.RawMessage(`{"groupName":"x"}`)
		}), "spec.solver.dns01.webhook.solverName: required"},
		{"webhook not an object", s, challenge("a.example.test", func(c *api.Challenge) {
			c.Spec.Solver.DNS01.Webhook = json.RawMessage(`[1]`)
		}), "spec.solver.dns01.webhook: json"},
		{"selector rules the name out", s, challenge("a.example.test", func(c *api.Challenge) {
			c.Spec.Solver.Selector = &api.CertificateDNSNameSelector{DNSNames: []string{"b.example.test"}, DNSZones: []string{"other.test"}}
		}), `spec.solver.selector: the solver does not select "a.example.test"`},
		{"selector by wildcard name", s, challenge("a.example.test", func(c *api.Challenge) {
			c.Spec.Solver.Selector = &api.CertificateDNSNameSelector{DNSNames: []string{"*.example.test"}}
		}), ""},
		{"selector by zone", s, challenge("a.example.test", wildcard, func(c *api.Challenge) {
			c.Spec.Solver.Selector = &api.CertificateDNSNameSelector{DNSZones: []string{"example.test"}}
		}), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.solver.Present(context.Background(), tc.ch)
			if tc.want == "" {
				if errs.IsPermanent(err) {
					t.Fatalf("err = %v, want it to pass validation", err)
				}
				return
			}
			if err == nil || !errs.IsPermanent(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a permanent error containing %q", err, tc.want)
			}
		})
	}
}

// TestSecretNamespace: an Issuer's solver secrets are read in the
// Challenge's namespace, a ClusterIssuer's in the cluster resource
// namespace.
func TestSecretNamespace(t *testing.T) {
	cases := []struct {
		kind, clusterNS, want string
	}{
		{api.KindIssuer, "", "team-a"},
		{api.KindClusterIssuer, "", "cert-manager"},
		{api.KindClusterIssuer, "certfn", "certfn"},
	}
	for _, tc := range cases {
		var got string
		s := NewSolver(Deps{
			Issuers: api.IssuerScope{ClusterResourceNamespace: tc.clusterNS},
			Providers: map[string]ProviderFactory{WebhookKey("mem"): func(_ context.Context, r ProviderRequest) (Provider, error) {
				got = r.SecretNamespace
				return nil, errs.Permanentf("stop here")
			}},
		})
		_, _ = s.Present(context.Background(), challenge("a.example.test", func(c *api.Challenge) { c.Spec.IssuerRef.Kind = tc.kind }))
		if got != tc.want {
			t.Errorf("%s (cluster ns %q): secrets read in %q, want %q", tc.kind, tc.clusterNS, got, tc.want)
		}
	}
}

func TestSecretValue(t *testing.T) {
	store := certtest.NewMemSecrets(ports.Secret{Namespace: "team-a", Name: "tsig", Data: map[string][]byte{"secret": []byte("c2VjcmV0")}})
	failing := certtest.NewMemSecrets()
	failing.GetErr = errors.New("store down")
	ref := func(name, key string) api.SecretKeySelector {
		return api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: name}, Key: key}
	}
	cases := []struct {
		name      string
		store     ports.SecretStore
		ref       api.SecretKeySelector
		want      string
		permanent bool
	}{
		{"found", store, ref("tsig", "secret"), "", false},
		{"no name", store, ref("", "secret"), "f.name: required", true},
		{"no key", store, ref("tsig", ""), "f.key: required", true},
		{"missing secret", store, ref("nope", "secret"), `f: secret team-a/nope has no usable key "secret" (missing, unreadable or empty)`, true},
		{"missing key: the same answer as a missing secret", store, ref("tsig", "other"), `f: secret team-a/tsig has no usable key "other" (missing, unreadable or empty)`, true},
		{"store failure", failing, ref("tsig", "secret"), "f: read secret team-a/tsig: store down", false},
		{"no store", nil, ref("tsig", "secret"), "f: no secret store configured", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := ProviderRequest{SecretNamespace: "team-a", Secrets: tc.store}.SecretValue(context.Background(), tc.ref, "f")
			if tc.want == "" {
				if err != nil || string(v) != "c2VjcmV0" {
					t.Fatalf("SecretValue = %q, %v", v, err)
				}
				return
			}
			if err == nil || errs.IsPermanent(err) != tc.permanent || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want permanent=%v containing %q", err, tc.permanent, tc.want)
			}
		})
	}
}
