package acmedns

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/certfn/certfn/adapters/dns/acmedns/acmednstest"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/ports"
)

// The real acme-dns variant of the tests runs when these are set (see
// docs/reference/dns01.md, "ACME-DNS"): the API's base URL of an acme-dns server
// whose /register is open to this machine, and the address (host:port) of
// its DNS server, where the tests read the values back.
const (
	envURL = "CERTFN_ACMEDNS_TEST_URL"
	envDNS = "CERTFN_ACMEDNS_TEST_DNS"
)

const (
	secretNS   = "cert-manager"
	secretName = "acme-dns"
	secretKey  = "acmedns.json"
)

// backend is the acme-dns the tests write to: the TEST DOUBLE (double !=
// nil; see acmednstest) or a real acme-dns (envURL, envDNS).
type backend struct {
	double *acmednstest.Double
	url    string
	dns    string // the real server's DNS address
}

// eachBackend runs f on the double and, as subtest "acme-dns", on the real
// server when envURL and envDNS are set (skipped with the reason
// otherwise).
func eachBackend(t *testing.T, f func(t *testing.T, b *backend)) {
	t.Run("double", func(t *testing.T) { f(t, newDoubleBackend(t)) })
	t.Run("acme-dns", func(t *testing.T) {
		u, addr := os.Getenv(envURL), os.Getenv(envDNS)
		if u == "" || addr == "" {
			t.Skipf("real acme-dns variant: set %s (an acme-dns API whose /register this machine may use) and %s (its DNS server, host:port) to run it; the double variant ran", envURL, envDNS)
		}
		f(t, &backend{url: strings.TrimRight(u, "/"), dns: addr})
	})
}

func newDoubleBackend(t *testing.T) *backend {
	d := acmednstest.New(t)
	return &backend{double: d, url: d.URL}
}

// register registers a new acme-dns account through POST /register.
func (b *backend) register(t *testing.T) Account {
	t.Helper()
	resp, err := http.Post(b.url+"/register", "application/json", bytes.NewReader(nil))
	if err != nil {
		t.Fatalf("register: %v", err)
	}
	defer resp.Body.Close()
	var a Account
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("register: status %d, decode: %v", resp.StatusCode, err)
	}
	if a.Username == "" || a.Password == "" || a.SubDomain == "" || a.FullDomain == "" {
		t.Fatalf("register answered an incomplete registration for %s", a)
	}
	return a
}

// txt returns the sorted values acme-dns serves for a registration: the
// double's own view, or a TXT query to the real server's DNS.
func (b *backend) txt(t *testing.T, a Account) []string {
	t.Helper()
	if b.double != nil {
		return b.double.TXT(a.FullDomain)
	}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(a.FullDomain), dns.TypeTXT)
	c := &dns.Client{Timeout: 3 * time.Second}
	in, _, err := c.Exchange(m, b.dns)
	if err != nil {
		t.Fatalf("TXT %s at %s: %v", a.FullDomain, b.dns, err)
	}
	var out []string
	for _, rr := range in.Answer {
		if v, ok := rr.(*dns.TXT); ok {
			out = append(out, strings.Join(v.Txt, ""))
		}
	}
	slices.Sort(out)
	return out
}

// registrations is the accountSecretRef JSON: domain → registration.
type registrations map[string]Account

// mod adjusts a request's spec and the request.
type mod = func(*api.ACMEIssuerDNS01ProviderAcmeDNS, *dns01.ProviderRequest)

// request builds the ProviderRequest of a ClusterIssuer's acmeDNS solver
// for host, with regs as JSON in cert-manager/acme-dns "acmedns.json".
func request(host string, regs registrations, mods ...mod) dns01.ProviderRequest {
	raw, err := json.Marshal(regs)
	if err != nil {
		panic(err)
	}
	return requestRaw(host, raw, mods...)
}

// requestRaw is request with the secret's bytes as given.
func requestRaw(host string, raw []byte, mods ...mod) dns01.ProviderRequest {
	spec := &api.ACMEIssuerDNS01ProviderAcmeDNS{Host: host, AccountSecret: ref(secretName, secretKey)}
	req := dns01.ProviderRequest{
		DNS01: &api.ACMEChallengeSolverDNS01{AcmeDNS: spec}, Key: dns01.KeyAcmeDNS, Path: "spec.solver.dns01",
		SecretNamespace: secretNS, IssuerKind: api.KindClusterIssuer,
		Secrets: certtest.NewMemSecrets(ports.Secret{Namespace: secretNS, Name: secretName, Data: map[string][]byte{
			secretKey: raw, "empty": {},
		}}),
	}
	for _, m := range mods {
		m(spec, &req)
	}
	return req
}

func ref(name, key string) api.SecretKeySelector {
	return api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: name}, Key: key}
}

// build returns the provider for req from a default factory.
func build(t *testing.T, req dns01.ProviderRequest) *Provider {
	t.Helper()
	p, err := NewFactory(Options{}).Build(context.Background(), req)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return p.(*Provider)
}
