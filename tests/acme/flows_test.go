package acme

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/letsencrypt/pebble/v2/ca"

	"github.com/certfn/certfn/adapters/dns/challtestsrv"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/internal/localmode"
)

func TestSeveralNames(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.apply(e.issuerYAML(http01Solvers))
	names := []string{"a.example.test", "b.example.test", "c.example.test"}
	e.apply(certYAML("multi", names, ""))
	e.issue("multi")
	e.verify("multi-tls", names...)
	o := e.orders()
	if len(o) != 1 || len(o[0].Status.Authorizations) != 3 {
		t.Fatalf("want one Order with 3 authorizations: %s", e.describe(api.KindOrder))
	}
}

// Solvers are chosen per identifier: dnsNames beat matchLabels, which beat
// a solver without selector.
func TestSolverSelection(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.apply(e.issuerYAML(`    solvers:
    - http01: {ingress: {class: default}}
    - selector: {dnsNames: [special.example.test]}
      http01: {ingress: {class: special}}
    - selector: {matchLabels: {team: blue}}
      http01: {ingress: {class: blue}}
    - selector: {dnsZones: [example.test]}
      http01: {ingress: {class: zone}}
`))
	e.apply(`apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: sel, namespace: default, labels: {team: blue}}
spec:
  secretName: sel-tls
  dnsNames: [special.example.test, other.example.test]
  privateKey: {algorithm: ECDSA, size: 256}
  issuerRef: {name: pebble, kind: ClusterIssuer}
`)
	got := map[string]string{}
	e.until(100, time.Second, func() bool {
		for _, c := range e.challenges() {
			if in := c.Spec.Solver.HTTP01.Ingress; in != nil && in.Class != nil {
				got[c.Spec.DNSName] = fmt.Sprintf(`{"class":%q}`, *in.Class)
			}
		}
		return len(got) == 2
	})
	want := map[string]string{"special.example.test": `{"class":"special"}`, "other.example.test": `{"class":"zone"}`}
	for k, v := range want {
		if strings.ReplaceAll(got[k], " ", "") != v {
			t.Errorf("solver for %s = %s, want %s", k, got[k], v)
		}
	}
	e.issue("sel")
}

func TestExternalAccountBinding(t *testing.T) {
	mac := make([]byte, 32)
	_, _ = rand.Read(mac)
	key := base64.RawURLEncoding.EncodeToString(mac)
	e := newEnv(t, envOpts{pebble: pebbleOpts{requireEAB: true, eab: map[string]string{"kid-1": key}}})

	// Without a binding the server refuses the account: not Ready, with the problem.
	e.apply(e.issuerYAML(http01Solvers))
	e.run()
	if c := e.issuerReady(); c.Status == api.ConditionTrue || !strings.Contains(c.Message, "externalAccountRequired") {
		t.Fatalf("issuer without EAB: %+v", c)
	}
	if err := e.rt.Secrets.Put(e.ctx, ports.Secret{Namespace: "cert-manager", Name: "eab", Data: map[string][]byte{"secret": []byte(key)}}); err != nil {
		t.Fatal(err)
	}
	e.apply(e.issuerYAML(`    externalAccountBinding:
      keyID: kid-1
      keySecretRef: {name: eab, key: secret}
` + http01Solvers))
	e.run()
	if c := e.issuerReady(); c.Status != api.ConditionTrue {
		t.Fatalf("issuer with EAB not Ready: %+v", c)
	}
	e.apply(certYAML("eab", []string{"eab.example.test"}, ""))
	e.issue("eab")
	e.verify("eab-tls", "eab.example.test")
}

func (e *env) issuerReady() api.Condition {
	e.t.Helper()
	o, err := e.rt.Repo.Get(e.ctx, api.Key{Kind: api.KindClusterIssuer, Name: "pebble"})
	if err != nil {
		e.t.Fatal(err)
	}
	c := api.FindCondition(o.(api.GenericIssuer).GetStatus().Conditions, "Ready")
	if c == nil {
		return api.Condition{}
	}
	return *c
}

func TestProfile(t *testing.T) {
	e := newEnv(t, envOpts{pebble: pebbleOpts{profiles: map[string]ca.Profile{
		"default":    {Description: "default"},
		"shortlived": {Description: "7 days", ValidityPeriod: 7 * 24 * 3600},
	}}})
	e.apply(e.issuerYAML("    profile: shortlived\n" + http01Solvers))
	e.apply(certYAML("short", []string{"short.example.test"}, ""))
	e.issue("short")
	leaf := e.verify("short-tls", "short.example.test")
	if d := leaf.NotAfter.Sub(leaf.NotBefore); d > 7*24*time.Hour || d < 6*24*time.Hour {
		t.Fatalf("lifetime %s, want the profile's 7 days", d)
	}
	if o := e.orders(); o[0].Spec.Profile != "shortlived" {
		t.Errorf("order profile %q", o[0].Spec.Profile)
	}

	// A profile the server does not offer: the issuer is not Ready, for
	// good (its configuration must change), naming the server's profiles;
	// no order is tried with it.
	orders := len(e.orders())
	e.apply(e.issuerYAML("    profile: nope\n" + http01Solvers))
	notOffered := func() bool {
		c := e.issuerReady()
		return c.Status == api.ConditionFalse && c.Reason == "ProfileNotSupported"
	}
	if !e.until(100, time.Second, notOffered) {
		t.Fatalf("issuer with an unknown profile: %+v", e.issuerReady())
	}
	if c := e.issuerReady(); c.Message != `spec.acme.profile "nope": the ACME server offers only the profiles default, shortlived` {
		t.Errorf("message %q", c.Message)
	}
	e.apply(certYAML("other", []string{"other.example.test"}, ""))
	e.run()
	if n := len(e.orders()); n != orders {
		t.Errorf("%d orders after the unknown profile, want %d", n, orders)
	}
}

func TestPreferredChain(t *testing.T) {
	e := newEnv(t, envOpts{pebble: pebbleOpts{alternateRoots: 1}})
	alt := e.peb.ca.GetRootCert(1).Cert.Subject.CommonName
	def := e.peb.ca.GetRootCert(0).Cert.Subject.CommonName
	e.apply(e.issuerYAML(fmt.Sprintf("    preferredChain: %q\n", alt) + http01Solvers))
	e.apply(certYAML("pref", []string{"pref.example.test"}, ""))
	e.issue("pref")
	sec, _ := e.rt.Secrets.Get(e.ctx, "default", "pref-tls")
	chain := parseChain(t, sec.Data["tls.crt"])
	if top := chain[len(chain)-1].Issuer.CommonName; top != alt {
		t.Fatalf("chain ends at %q, want the preferred %q (default %q)", top, alt, def)
	}
	e.verify("pref-tls", "pref.example.test")
}

// A wrong key authorization makes the authorization invalid: the Order is
// invalid with the reason, the Certificate records the failure and backs
// off, and no further ACME request is made for that Order.
func TestFailedValidation(t *testing.T) {
	e := newEnv(t, envOpts{wrongResponder: true})
	e.apply(e.issuerYAML(http01Solvers))
	e.apply(certYAML("bad", []string{"bad.example.test"}, ""))
	failed := func() bool {
		c := api.FindCondition(e.cert("bad").Status.Conditions, "Issuing")
		return c != nil && c.Status == api.ConditionFalse && c.Reason == "Failed"
	}
	if !e.until(200, 2*time.Second, failed) {
		t.Fatalf("issuance did not fail: %+v %s %s", e.cert("bad").Status.Conditions, e.describe(api.KindOrder), e.describe(api.KindChallenge))
	}
	orders := e.orders()
	if len(orders) != 1 || orders[0].Status.State != api.StateInvalid {
		t.Fatalf("want one invalid Order: %s", e.describe(api.KindOrder))
	}
	first := orders[0]
	if !strings.Contains(first.Status.Reason, "incorrectResponse") && !strings.Contains(first.Status.Reason, "unauthorized") {
		t.Errorf("order reason %q does not say why validation failed", first.Status.Reason)
	}
	c := e.cert("bad")
	issuing := api.FindCondition(c.Status.Conditions, "Issuing")
	if !strings.Contains(issuing.Message, first.Name) || !strings.Contains(issuing.Message, "failed") {
		t.Errorf("Certificate's Issuing message does not carry the Order's reason: %q", issuing.Message)
	}
	if c.Status.LastFailureTime == nil {
		t.Error("no lastFailureTime")
	}
	// `certfn status`'s one-line summary names the Order and why it failed.
	rep, err := app.Explain(e.ctx, e.rt.Repo.Get, e.rt.Repo.EventsOf, nil, api.KeyOf(c))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rep.Summary, "Not ready: ") || !strings.Contains(rep.Summary, first.Name) || !strings.Contains(rep.Summary, first.Status.Reason) {
		t.Errorf("status summary %q does not carry the Order's reason %q", rep.Summary, first.Status.Reason)
	}
	t.Logf("certfn status: %s", rep.Summary)
	if chs := e.challenges(); len(chs) != 1 || chs[0].Status.State != api.StateInvalid || chs[0].Status.Presented {
		t.Errorf("the failed Challenge must be kept (cleaned up) for debugging: %s", e.describe(api.KindChallenge))
	}
	// Within the backoff: nothing, not one ACME request.
	n := e.rec.count()
	e.until(25, 2*time.Minute, func() bool { return false })
	if extra := e.rec.since(n); len(extra) != 0 {
		t.Fatalf("%d ACME requests after the Order failed: %v", len(extra), extra)
	}
	// After the backoff (1 h) a new request gets a new Order.
	e.until(40, 2*time.Minute, func() bool { return len(e.orders()) == 1 && e.orders()[0].Name != first.Name })
	orders = e.orders()
	if len(orders) != 1 || orders[0].Name == first.Name {
		t.Fatalf("after the backoff want exactly one new Order (the old one deleted with its request): %s", e.describe(api.KindOrder))
	}
}

// 30% of nonces rejected: acmez retries badNonce and every certificate is issued.
func TestBadNonces(t *testing.T) {
	e := newEnv(t, envOpts{pebble: pebbleOpts{nonceReject: "30"}})
	e.apply(e.issuerYAML(http01Solvers))
	for i := 0; i < 5; i++ {
		e.apply(certYAML(fmt.Sprintf("n%d", i), []string{fmt.Sprintf("n%d.example.test", i)}, ""))
	}
	for i := 0; i < 5; i++ {
		e.issue(fmt.Sprintf("n%d", i))
		e.verify(fmt.Sprintf("n%d-tls", i), fmt.Sprintf("n%d.example.test", i))
	}
}

// The VA with random sleeps (up to 2 s) and Retry-After on polls: issued,
// and no authorization or order is polled before its Retry-After.
func TestRetryAfterHonoured(t *testing.T) {
	e := newEnv(t, envOpts{pebble: pebbleOpts{vaSleep: true, retryAfterAuthz: 3, retryAfterOrder: 3}})
	e.apply(e.issuerYAML(http01Solvers))
	e.apply(certYAML("slow", []string{"slow.example.test"}, ""))
	start := e.rec.count()
	if !e.until(600, time.Second, func() bool { time.Sleep(10 * time.Millisecond); return e.ready("slow") }) {
		t.Fatalf("not issued: %s %s", e.describe(api.KindOrder), e.describe(api.KindChallenge))
	}
	e.verify("slow-tls", "slow.example.test")
	// Every poll after the first one follows a response that carried
	// Retry-After: 3 (the first authorization poll follows the accept,
	// which carries none). Requests at the same fake instant are one step
	// retried after a lost race (the clock stands still during a run), not
	// polls: they count once.
	last := map[string]time.Time{}
	seen := map[string]int{}
	polls := 0
	for _, r := range e.rec.since(start) {
		if !strings.Contains(r.line, "/authZ/") && !strings.Contains(r.line, "/my-order/") {
			continue
		}
		prev, ok := last[r.line]
		if ok && r.at.Equal(prev) {
			continue
		}
		seen[r.line]++
		if ok {
			polls++
			if d := r.at.Sub(prev); d < 3*time.Second && seen[r.line] > 2 {
				t.Errorf("%s polled %s after the previous request, before Retry-After (3 s)", r.line, d)
			}
		}
		last[r.line] = r.at
	}
	if polls == 0 {
		t.Fatal("no polls recorded")
	}
	t.Logf("%d polls", polls)
}

// A wildcard over DNS-01 through challtestsrv (the DNS-01 engineer's provider).
func TestDNS01Wildcard(t *testing.T) {
	var p *challtestsrv.Provider
	e := newEnv(t, envOpts{local: func(o *localmode.Options) {
		p = &challtestsrv.Provider{}
		o.ACME.DNS01Providers = map[string]dns01.ProviderFactory{dns01.WebhookKey(challtestsrv.SolverName): p.Factory()}
		o.ACME.DNS01AllowInternalNames = true
	}})
	p.Server, p.DNSAddr = e.peb.dns, e.peb.dnsAddr
	e.apply(e.issuerYAML(`    solvers:
    - dns01:
        webhook: {groupName: acme.certfn.io, solverName: challtestsrv}
`))
	e.apply(certYAML("wild", []string{`"*.wild.example.test"`, "wild.example.test"}, ""))
	e.issue("wild")
	e.verify("wild-tls", "x.wild.example.test", "wild.example.test")
}
