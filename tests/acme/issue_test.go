package acme

import (
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
)

func TestHTTP01SingleName(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.apply(e.issuerYAML(http01Solvers))
	e.run()
	iss, err := e.rt.Repo.Get(e.ctx, api.Key{Kind: api.KindClusterIssuer, Name: "pebble"})
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
	// poll, certificate; no renewal information until the certificate is
	// stored.
	if n := e.cnt.Count() - counted; n != int64(len(reqs)) || n > 7 {
		t.Errorf("%d ACME HTTP requests (recorded %d), want at most 7", n, len(reqs))
	}
	for _, r := range reqs {
		if strings.Contains(r.line, "renewal-info") || strings.Contains(r.line, "renewalInfo") {
			t.Errorf("renewal information fetched before the certificate was stored: %s", r.line)
		}
	}
	orders := e.orders()
	if len(orders) != 1 || orders[0].Status.State != api.StateValid || len(orders[0].Status.Certificate) == 0 {
		t.Fatalf("want one valid Order with its certificate, got %s", e.describe(api.KindOrder))
	}
	if chs := e.challenges(); len(chs) != 0 {
		t.Errorf("Challenges left after success: %s", e.describe(api.KindChallenge))
	}
	// Once the Certificate stores it, the Order fetches the renewal
	// information: one request, copied to the Certificate.
	before = e.rec.count()
	if !e.until(5, time.Minute, func() bool {
		ri := e.cert("web").Status.RenewalInfo
		return ri != nil && ri.SelectedTime != nil
	}) {
		t.Fatalf("no renewal information on the Certificate: %s", e.describe(api.KindOrder))
	}
	if reqs := e.rec.since(before); len(reqs) != 1 {
		t.Errorf("%d ACME requests to fetch the renewal information, want 1: %+v", len(reqs), reqs)
	}
	if ri := e.orders()[0].Status.RenewalInfo; ri == nil || ri.SelectedTime == nil || ri.NextCheck == nil {
		t.Errorf("no renewal information on the Order: %+v", ri)
	}
}
