package digitalocean

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/digitalocean/godo"

	"github.com/certfn/certfn/adapters/dns/digitalocean/digitaloceantest"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/ports"
)

// The real DigitalOcean variant of the tests runs when these are set (see
// docs/reference/dns01.md, "DigitalOcean"): an API token that may read, create and
// delete domain records, and a domain of its account.
const (
	envToken = "CERTFN_DIGITALOCEAN_TEST_TOKEN"
	envZone  = "CERTFN_DIGITALOCEAN_TEST_ZONE"
)

// The double's domain and token.
const (
	doubleDomain = "example.com"
	testToken    = "dop_v1_0123456789abcdef"
	secretNS     = "cert-manager"
	secretName   = "digitalocean"
)

// backend is where a test's records live: the TEST DOUBLE (double != nil;
// see digitaloceantest) or a real DigitalOcean domain (envToken, envZone).
type backend struct {
	double *digitaloceantest.Double
	domain string
	token  string
	opts   Options
	admin  *godo.Client // reads back through the API (real domain)
}

// eachBackend runs f on the double and, as subtest "digitalocean", on the
// real domain when envToken and envZone are set (skipped with the reason
// otherwise).
func eachBackend(t *testing.T, f func(t *testing.T, b *backend)) {
	t.Run("double", func(t *testing.T) { f(t, newDoubleBackend(t)) })
	t.Run("digitalocean", func(t *testing.T) { f(t, newRealBackend(t)) })
}

// newDoubleBackend starts a double with the domain example.com, a token,
// and pages of 2.
func newDoubleBackend(t *testing.T) *backend {
	t.Helper()
	d := digitaloceantest.New(t)
	d.PageSize = 2
	d.AddDomain(doubleDomain)
	d.AddToken(testToken, "test")
	return &backend{double: d, domain: doubleDomain, token: testToken, opts: Options{BaseURL: d.URL}}
}

// newRealBackend returns the real domain, or skips.
func newRealBackend(t *testing.T) *backend {
	t.Helper()
	token, domain := os.Getenv(envToken), strings.TrimSuffix(os.Getenv(envZone), ".")
	if token == "" || domain == "" {
		t.Skipf("real DigitalOcean variant: set %s (an API token with domain:read, domain:create and domain:delete) and %s (a domain of its account) to run it; the double variant ran", envToken, envZone)
	}
	return &backend{domain: domain, token: token, admin: godo.NewFromToken(token)}
}

var uniq atomic.Int64

// base returns a name under the backend's domain (with a trailing dot)
// that no other test, or earlier run on the real domain, uses; on the
// real domain the TXT records left under it are deleted when the test
// ends.
func (b *backend) base(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("r%d-%d.%s.", time.Now().UnixNano()%1_000_000_000, uniq.Add(1), b.domain)
	if b.double == nil {
		t.Cleanup(func() { b.cleanup(t, name) })
	}
	return name
}

// records lists the domain's TXT records (real domain only).
func (b *backend) records(t *testing.T) []godo.DomainRecord {
	t.Helper()
	var out []godo.DomainRecord
	opt := &godo.ListOptions{Page: 1, PerPage: 200}
	for ; opt.Page <= 50; opt.Page++ {
		recs, res, err := b.admin.Domains.RecordsByType(context.Background(), b.domain, "TXT", opt)
		if err != nil {
			t.Fatalf("list TXT records of %s: %v", b.domain, err)
		}
		out = append(out, recs...)
		if res.Links == nil || res.Links.IsLastPage() {
			break
		}
	}
	return out
}

// cleanup deletes the TXT records under name (real domain only).
func (b *backend) cleanup(t *testing.T, name string) {
	suffix := "." + strings.TrimSuffix(relative(name, b.domain), ".")
	for _, r := range b.records(t) {
		if r.Name == strings.TrimPrefix(suffix, ".") || strings.HasSuffix(r.Name, suffix) {
			if _, err := b.admin.Domains.DeleteRecord(context.Background(), b.domain, r.ID); err != nil {
				t.Logf("cleanup of %s: %v", r.Name, err)
			}
		}
	}
}

// txt returns the sorted TXT values of fqdn: from the double's store, or
// listed through the API on the real domain.
func (b *backend) txt(t *testing.T, fqdn string) []string {
	t.Helper()
	if b.double != nil {
		return b.double.TXT(fqdn)
	}
	var out []string
	rel := relative(fqdn, b.domain)
	for _, r := range b.records(t) {
		if r.Name == rel {
			out = append(out, r.Data)
		}
	}
	slices.Sort(out)
	return out
}

// factory returns a Factory that reaches the backend.
func (b *backend) factory() *Factory { return NewFactory(b.opts) }

// request builds the ProviderRequest of a ClusterIssuer's digitalocean
// solver; the secret store holds the backend's token under "access-token"
// and a few other values.
func (b *backend) request(mods ...func(*dns01.ProviderRequest)) dns01.ProviderRequest {
	req := dns01.ProviderRequest{
		DNS01: &api.ACMEChallengeSolverDNS01{DigitalOcean: &api.ACMEIssuerDNS01ProviderDigitalOcean{Token: tokenRef("access-token")}},
		Key:   dns01.KeyDigitalOcean, Path: "spec.solver.dns01",
		SecretNamespace: secretNS, IssuerKind: api.KindClusterIssuer,
		Secrets: certtest.NewMemSecrets(ports.Secret{Namespace: secretNS, Name: secretName, Data: map[string][]byte{
			"access-token": []byte(b.token), "padded": []byte("  " + b.token + "\n"), "blank": []byte(" \n"),
			"wrong": []byte("dop_v1_wrong"), "control": []byte("dop\x00v1"),
		}}),
	}
	for _, m := range mods {
		m(&req)
	}
	return req
}

// tokenRef selects key of the test secret.
func tokenRef(key string) api.SecretKeySelector {
	return api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: secretName}, Key: key}
}

// withToken uses the secret key key.
func withToken(key string) func(*dns01.ProviderRequest) {
	return func(r *dns01.ProviderRequest) { r.DNS01.DigitalOcean.Token = tokenRef(key) }
}

// build returns the provider for req from f.
func build(t *testing.T, f *Factory, req dns01.ProviderRequest) *Provider {
	t.Helper()
	p, err := f.Build(context.Background(), req)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return p.(*Provider)
}
