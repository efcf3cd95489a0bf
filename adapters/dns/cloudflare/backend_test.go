package cloudflare

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	cfgo "github.com/cloudflare/cloudflare-go/v6"
	cfdns "github.com/cloudflare/cloudflare-go/v6/dns"
	"github.com/cloudflare/cloudflare-go/v6/option"

	"github.com/certfn/certfn/adapters/dns/cloudflare/cloudflaretest"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/ports"
)

// The real Cloudflare variant of the tests runs when these are set (see
// docs/reference/dns01.md, "Cloudflare"): an API token with Zone:Read and DNS:Edit on
// a zone, and that zone's name.
const (
	envToken = "CERTFN_CLOUDFLARE_TEST_TOKEN"
	envZone  = "CERTFN_CLOUDFLARE_TEST_ZONE"
)

// The double's zone and credentials.
const (
	doubleZone = "example.com"
	testToken  = "test-token-0123456789"
	testEmail  = "admin@example.com"
	testKey    = "0123456789abcdef0123456789abcdef01234"
	secretNS   = "cert-manager"
	secretName = "cloudflare"
)

// backend is where a test's records live: the TEST DOUBLE (double != nil;
// see cloudflaretest) or a real Cloudflare zone (envToken, envZone).
type backend struct {
	double *cloudflaretest.Double
	zone   string // the zone's name, without a trailing dot
	token  string
	opts   Options
	admin  *cfdns.RecordService // reads back through the API (real zone)
	zoneID string               // (real zone)
}

// eachBackend runs f on the double and, as subtest "cloudflare", on the
// real zone when envToken and envZone are set (skipped with the reason
// otherwise).
func eachBackend(t *testing.T, f func(t *testing.T, b *backend)) {
	t.Run("double", func(t *testing.T) { f(t, newDoubleBackend(t)) })
	t.Run("cloudflare", func(t *testing.T) { f(t, newRealBackend(t)) })
}

// newDoubleBackend starts a double with the zone example.com, a token and
// a global API key, and pages of 2 records.
func newDoubleBackend(t *testing.T) *backend {
	t.Helper()
	d := cloudflaretest.New(t)
	d.PageSize = 2
	d.AddZone(doubleZone)
	d.AddToken(testToken, "test")
	d.AddKey(testEmail, testKey)
	return &backend{double: d, zone: doubleZone, token: testToken, opts: Options{BaseURL: d.URL}}
}

// newRealBackend returns the real zone, or skips.
func newRealBackend(t *testing.T) *backend {
	t.Helper()
	token, zone := os.Getenv(envToken), strings.TrimSuffix(os.Getenv(envZone), ".")
	if token == "" || zone == "" {
		t.Skipf("real Cloudflare variant: set %s (an API token with Zone:Read and DNS:Edit) and %s (its zone) to run it; the double variant ran", envToken, envZone)
	}
	b := &backend{zone: zone, token: token}
	p := build(t, NewFactory(Options{}), b.request())
	z, err := p.zoneOf(context.Background(), zone+".")
	if err != nil {
		t.Fatalf("find zone %s: %v", zone, err)
	}
	b.zoneID = z.id
	b.admin = cfdns.NewRecordService(option.WithAPIToken(token), option.WithMaxRetries(2))
	return b
}

var uniq atomic.Int64

// base returns a name under the backend's zone (with a trailing dot) that
// no other test, or earlier run on the real zone, uses; on the real zone
// the TXT records left under it are deleted when the test ends.
func (b *backend) base(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("r%d-%d.%s.", time.Now().UnixNano()%1_000_000_000, uniq.Add(1), b.zone)
	if b.double == nil {
		t.Cleanup(func() { b.cleanup(t, name) })
	}
	return name
}

// records lists the TXT records under suffix (real zone only).
func (b *backend) records(t *testing.T, suffix string) []cfdns.RecordResponse {
	t.Helper()
	ctx := context.Background()
	var out []cfdns.RecordResponse
	for page := 1; page <= 20; page++ {
		res, err := b.admin.List(ctx, cfdns.RecordListParams{ZoneID: cfgo.F(b.zoneID), Type: cfgo.F(cfdns.RecordListParamsTypeTXT),
			Name: cfgo.F(cfdns.RecordListParamsName{Endswith: cfgo.F(strings.TrimSuffix(suffix, "."))}), Page: cfgo.F(float64(page)), PerPage: cfgo.F(100.0)})
		if err != nil {
			t.Fatalf("list TXT under %s: %v", suffix, err)
		}
		out = append(out, res.Result...)
		if len(res.Result) < 100 {
			break
		}
	}
	return out
}

// cleanup deletes the TXT records under name (real zone only).
func (b *backend) cleanup(t *testing.T, name string) {
	for _, r := range b.records(t, name) {
		if _, err := b.admin.Delete(context.Background(), r.ID, cfdns.RecordDeleteParams{ZoneID: cfgo.F(b.zoneID)}); err != nil {
			t.Logf("cleanup of %s: %v", r.Name, err)
		}
	}
}

// txt returns the sorted, decoded TXT values of fqdn: from the double's
// store, or listed through the API on the real zone.
func (b *backend) txt(t *testing.T, fqdn string) []string {
	t.Helper()
	if b.double != nil {
		return b.double.TXT(fqdn)
	}
	var out []string
	for _, r := range b.records(t, fqdn) {
		if strings.EqualFold(r.Name, strings.TrimSuffix(fqdn, ".")) {
			out = append(out, DecodeTXT(r.Content))
		}
	}
	slices.Sort(out)
	return out
}

// factory returns a Factory that reaches the backend.
func (b *backend) factory() *Factory { return NewFactory(b.opts) }

// mod adjusts a request's spec and the request.
type mod = func(*api.ACMEIssuerDNS01ProviderCloudflare, *dns01.ProviderRequest)

// request builds the ProviderRequest of a ClusterIssuer's cloudflare
// solver with apiTokenSecretRef; the secret store holds the backend's
// token (key "api-token"), the double's global API key (key "api-key") and
// a few bad values.
func (b *backend) request(mods ...mod) dns01.ProviderRequest {
	spec := &api.ACMEIssuerDNS01ProviderCloudflare{APIToken: ref("api-token")}
	req := dns01.ProviderRequest{
		DNS01: &api.ACMEChallengeSolverDNS01{Cloudflare: spec}, Key: dns01.KeyCloudflare, Path: "spec.solver.dns01",
		SecretNamespace: secretNS, IssuerKind: api.KindClusterIssuer,
		Secrets: certtest.NewMemSecrets(ports.Secret{Namespace: secretNS, Name: secretName, Data: map[string][]byte{
			"api-token": []byte(b.token), "api-key": []byte(testKey),
			"wrong-token": []byte("not-a-known-token"), "newline": []byte(b.token + "\n"),
		}}),
	}
	for _, m := range mods {
		m(spec, &req)
	}
	return req
}

// ref selects key of the test secret.
func ref(key string) *api.SecretKeySelector {
	return &api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: secretName}, Key: key}
}

// withKey switches to the global API key with email.
func withKey(email string) mod {
	return func(s *api.ACMEIssuerDNS01ProviderCloudflare, _ *dns01.ProviderRequest) {
		s.APIToken, s.APIKey, s.Email = nil, ref("api-key"), email
	}
}

// withToken uses the token stored under key.
func withToken(key string) mod {
	return func(s *api.ACMEIssuerDNS01ProviderCloudflare, _ *dns01.ProviderRequest) { s.APIToken = ref(key) }
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
