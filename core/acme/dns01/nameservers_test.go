package dns01

import (
	"context"
	"fmt"
	"testing"

	"github.com/certfn/certfn/core/api"
)

// spec.solver.dns01.nameservers (cert-manager's field): the solver's own
// resolvers replace the deployment's, and the check asks them only.
// DNS-over-HTTPS entries are skipped (reported as ignored fields).
func TestSolverNameservers(t *testing.T) {
	// The deployment's resolver answers nothing: every query must go to
	// the solver's nameservers.
	e := newEnv(t, true, func(d *Deps) { d.Resolver.Nameservers = []string{"127.0.0.1:1"} })
	ctx := context.Background()
	ch := challenge("ns.example.test", func(ch *api.Challenge) {
		ch.Spec.Solver.DNS01.Nameservers = []string{"https://dns.example/dns-query", fmt.Sprintf("127.0.0.1:%d", e.dns.port)}
	})
	res, err := e.solver.Present(ctx, ch)
	if err != nil {
		t.Fatalf("Present: %v", err)
	}
	ch.Status.DNS01 = res.Status()
	ok, why, err := e.solver.Check(ctx, ch)
	if !ok || err != nil {
		t.Fatalf("Check = %v, %q, %v; want ok from the solver's nameserver", ok, why, err)
	}
	if qs := e.dns.ns2.Queries(); len(qs) != 0 {
		t.Errorf("ns2 (authoritative, lagging) was asked %v; want the solver's nameservers only", qs)
	}

	// Without a plain entry the deployment's resolvers are used (here:
	// unreachable, a transient error).
	only := challenge("ns.example.test", func(ch *api.Challenge) {
		ch.Spec.Solver.DNS01.Nameservers = []string{"https://dns.example/dns-query"}
	})
	only.Status.DNS01 = res.Status()
	if ok, _, err := e.solver.Check(ctx, only); ok || err == nil {
		t.Errorf("Check with DoH only = %v, %v; want the deployment's (unreachable) resolvers", ok, err)
	}
}

// An rfc2136 nameserver with an empty port ("host:") means port 53, as
// cert-manager's ValidNameserver reads it; bracketed IPv6 without a port too.
func TestNormalizeNameserverDefaultsThePort(t *testing.T) {
	for in, want := range map[string]string{
		"8.8.8.8:":        "8.8.8.8:53",
		"ns.example.com:": "ns.example.com:53",
		"[2001:db8::1]":   "[2001:db8::1]:53",
		"[2001:db8::1]:":  "[2001:db8::1]:53",
		"ns.example.com":  "ns.example.com:53",
		"10.0.0.1:5353":   "10.0.0.1:5353",
	} {
		got, err := normalizeNameserver(in)
		if err != nil || got != want {
			t.Errorf("normalizeNameserver(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
