package acme

import (
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
)

func TestHTTP01SingleName(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.apply(e.issuerYAML(http01Solvers))
	e.run()
	iss, err := e.rt.Engine.Get(e.ctx, api.Key{Kind: api.KindClusterIssuer, Name: "pebble"})
	if err != nil {
		t.Fatal(err)
	}
	gi := iss.(api.GenericIssuer)
	if !api.IsTrue(gi.GetStatus().Conditions, "Ready") || gi.GetStatus().ACME == nil || gi.GetStatus().ACME.URI == "" {
		t.Fatalf("issuer not Ready with an account: %+v %+v", gi.GetStatus().Conditions, gi.GetStatus().ACME)
	}
	before, counted := e.rec.count(), e.cnt.Count()
	e.apply(certYAML("web", []string{"www.example.test"}, ""))
	e.issue("web")
	leaf := e.verify("web-tls", "www.example.test")
	if leaf.DNSNames[0] != "www.example.test" {
		t.Errorf("leaf names %v", leaf.DNSNames)
	}
	reqs := e.rec.since(before)
	var lines []string
	for _, r := range reqs {
		lines = append(lines, r.line)
	}
	t.Logf("%d ACME requests for one certificate with a registered account: %s", len(reqs), strings.Join(lines, " | "))
	// newOrder, authorization, accept, authorization poll, finalize, order
	// poll, certificate, plus the renewal information fetched with it.
	if n := e.cnt.Count() - counted; n != int64(len(reqs)) || n > 8 {
		t.Errorf("%d ACME HTTP requests (recorded %d), want at most 8", n, len(reqs))
	}
	orders := e.orders()
	if len(orders) != 1 || orders[0].Status.State != api.StateValid || len(orders[0].Status.Certificate) == 0 {
		t.Fatalf("want one valid Order with its certificate, got %s", e.describe(api.KindOrder))
	}
	if chs := e.challenges(); len(chs) != 0 {
		t.Errorf("Challenges left after success: %s", e.describe(api.KindChallenge))
	}
	if ri := orders[0].Status.RenewalInfo; ri == nil || ri.SelectedTime == nil {
		t.Errorf("no renewal information on the Order: %+v", ri)
	}
}
