package clouddns

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/auth"
	gdns "google.golang.org/api/dns/v1"
	"google.golang.org/api/option"

	"github.com/certfn/certfn/adapters/dns/clouddns/clouddnstest"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/ports"
)

// The real Cloud DNS variant of the tests runs when these are set (see
// docs/reference/dns01.md, "Cloud DNS"): a project, a public managed zone in it that
// the Application Default Credentials may change (roles/dns.admin), and
// optionally a service-account key file with the same rights.
const (
	envProject = "CERTFN_GCP_TEST_PROJECT"
	envZone    = "CERTFN_GCP_TEST_ZONE"
	envKeyFile = "CERTFN_GCP_TEST_SA_KEY_FILE"
)

// The double's project, zone and identities.
const (
	doubleProject  = "certfn-test"
	doubleZone     = "example-test"
	doubleDNSName  = "example.test."
	ambientToken   = "ambient-token"
	ambientID      = "worker@certfn-test.iam.gserviceaccount.com"
	adminToken     = "admin-token"
	testSAEmail    = "dns01@certfn-test.iam.gserviceaccount.com"
	secretNS       = "cert-manager"
	secretName     = "gcp"
	secretKeyField = "key.json"
)

// backend is where a test's zones live: the TEST DOUBLE (double != nil;
// see clouddnstest) or a real Cloud DNS project (envProject, envZone).
type backend struct {
	double  *clouddnstest.Double
	project string
	zone    string // managed zone name
	dnsName string // its DNS name
	admin   *gdns.Service
	opts    Options // how providers reach the backend
	saKey   []byte  // a service-account key with rights on the zone, nil if none
}

// eachBackend runs f on the double and, as subtest "gcp", on the real
// project when envProject and envZone are set (skipped with the reason
// otherwise).
func eachBackend(t *testing.T, f func(t *testing.T, b *backend)) {
	t.Run("double", func(t *testing.T) { f(t, newDoubleBackend(t)) })
	t.Run("gcp", func(t *testing.T) { f(t, newRealBackend(t)) })
}

// staticToken is an auth.TokenProvider handing out one bearer token.
type staticToken string

func (s staticToken) Token(context.Context) (*auth.Token, error) {
	return &auth.Token{Value: string(s), Type: "Bearer", Expiry: time.Now().Add(time.Hour)}, nil
}

// withToken are client options that authenticate with a static token.
func withToken(tok string) option.ClientOption {
	return option.WithAuthCredentials(auth.NewCredentials(&auth.CredentialsOptions{TokenProvider: staticToken(tok)}))
}

// newDoubleBackend starts a double with the project's zone example.test.,
// the function's identity (ambient token), an admin and a service
// account.
func newDoubleBackend(t *testing.T) *backend {
	t.Helper()
	d := clouddnstest.New(t)
	d.AddToken(ambientToken, ambientID)
	d.AddToken(adminToken, "admin")
	d.AddZone(doubleProject, doubleZone, doubleDNSName, false)
	admin, err := gdns.NewService(context.Background(), option.WithEndpoint(d.Endpoint()), withToken(adminToken))
	if err != nil {
		t.Fatal(err)
	}
	return &backend{
		double: d, project: doubleProject, zone: doubleZone, dnsName: doubleDNSName, admin: admin,
		opts:  Options{Endpoint: d.Endpoint(), TokenURL: d.TokenURL, Ambient: []option.ClientOption{withToken(ambientToken)}},
		saKey: d.ServiceAccount(t, doubleProject, testSAEmail),
	}
}

// newRealBackend returns the real project, or skips.
func newRealBackend(t *testing.T) *backend {
	t.Helper()
	project, zone := os.Getenv(envProject), os.Getenv(envZone)
	if project == "" || zone == "" {
		t.Skipf("real Cloud DNS variant: set %s and %s (a public managed zone the Application Default Credentials may change) to run it; the double variant ran", envProject, envZone)
	}
	ctx := context.Background()
	admin, err := gdns.NewService(ctx)
	if err != nil {
		t.Fatalf("Cloud DNS client with Application Default Credentials: %v", err)
	}
	mz, err := admin.ManagedZones.Get(project, zone).Context(ctx).Do()
	if err != nil {
		t.Fatalf("managedZones.get %s/%s: %v", project, zone, err)
	}
	b := &backend{project: project, zone: zone, dnsName: strings.ToLower(mz.DnsName), admin: admin}
	if f := os.Getenv(envKeyFile); f != "" {
		if b.saKey, err = os.ReadFile(f); err != nil {
			t.Fatalf("%s: %v", envKeyFile, err)
		}
	}
	return b
}

var uniq atomic.Int64

// base returns a name under the backend's zone that no other test (or
// earlier run against the real project) uses; on the real project, TXT
// sets left under it are deleted when the test ends.
func (b *backend) base(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("r%d-%d.%s", time.Now().UnixNano()%1_000_000_000, uniq.Add(1), b.dnsName)
	if b.double == nil {
		t.Cleanup(func() { b.cleanup(t, name) })
	}
	return name
}

// cleanup deletes the TXT sets under name (real project only).
func (b *backend) cleanup(t *testing.T, name string) {
	ctx := context.Background()
	var dels []*gdns.ResourceRecordSet
	err := b.admin.ResourceRecordSets.List(b.project, b.zone).Context(ctx).Pages(ctx, func(p *gdns.ResourceRecordSetsListResponse) error {
		for _, s := range p.Rrsets {
			if s.Type == "TXT" && strings.HasSuffix(strings.ToLower(s.Name), name) {
				dels = append(dels, s)
			}
		}
		return nil
	})
	if err == nil && len(dels) > 0 {
		_, err = b.admin.Changes.Create(b.project, b.zone, &gdns.Change{Deletions: dels}).Context(ctx).Do()
	}
	if err != nil {
		t.Logf("cleanup of %s: %v", name, err)
	}
}

// txt returns the sorted, decoded TXT values of fqdn in the backend's zone
// and the set's TTL (0 when there is no set), read through the API.
func (b *backend) txt(t *testing.T, fqdn string) ([]string, int64) {
	t.Helper()
	return b.txtIn(t, b.zone, fqdn)
}

func (b *backend) txtIn(t *testing.T, zone, fqdn string) ([]string, int64) {
	t.Helper()
	out, err := b.admin.ResourceRecordSets.List(b.project, zone).Name(fqdn).Type("TXT").Context(context.Background()).Do()
	if err != nil {
		t.Fatalf("resourceRecordSets.list %s: %v", fqdn, err)
	}
	for _, s := range out.Rrsets {
		if s.Type == "TXT" && strings.EqualFold(s.Name, fqdn) {
			vs := decodeAll(s.Rrdatas)
			slices.Sort(vs)
			return vs, s.Ttl
		}
	}
	return nil, 0
}

// set writes the TXT set of fqdn directly (someone else's values).
func (b *backend) set(t *testing.T, fqdn string, ttl int64, texts ...string) {
	t.Helper()
	ctx := context.Background()
	ch := &gdns.Change{}
	cur, err := b.admin.ResourceRecordSets.List(b.project, b.zone).Name(fqdn).Type("TXT").Context(ctx).Do()
	if err != nil {
		t.Fatal(err)
	}
	ch.Deletions = cur.Rrsets
	var rr []string
	for _, v := range texts {
		rr = append(rr, EncodeTXT(v))
	}
	ch.Additions = []*gdns.ResourceRecordSet{{Name: fqdn, Type: "TXT", Ttl: ttl, Rrdatas: rr}}
	if _, err := b.admin.Changes.Create(b.project, b.zone, ch).Context(ctx).Do(); err != nil {
		t.Fatalf("write TXT %s: %v", fqdn, err)
	}
}

// factory returns a Factory whose clients reach the backend.
func (b *backend) factory(opts Options) *Factory {
	opts.Endpoint, opts.TokenURL = b.opts.Endpoint, b.opts.TokenURL
	if opts.Ambient == nil {
		opts.Ambient = b.opts.Ambient
	}
	return NewFactory(opts)
}

// mod adjusts a request's spec and the request.
type mod = func(*api.ACMEIssuerDNS01ProviderCloudDNS, *dns01.ProviderRequest)

// request builds the ProviderRequest of a ClusterIssuer's cloudDNS solver
// for the backend's project; the secret store holds the backend's
// service-account key (if any).
func (b *backend) request(mods ...mod) dns01.ProviderRequest {
	return request(b.project, b.saKey, mods...)
}

// request builds the ProviderRequest of a ClusterIssuer's cloudDNS solver
// for project, with key in the secret store as cert-manager/gcp "key.json".
func request(project string, key []byte, mods ...mod) dns01.ProviderRequest {
	spec := &api.ACMEIssuerDNS01ProviderCloudDNS{Project: project}
	req := dns01.ProviderRequest{
		DNS01: &api.ACMEChallengeSolverDNS01{CloudDNS: spec}, Key: dns01.KeyCloudDNS, Path: "spec.solver.dns01",
		SecretNamespace: secretNS, IssuerKind: api.KindClusterIssuer,
		Secrets: certtest.NewMemSecrets(ports.Secret{Namespace: secretNS, Name: secretName, Data: map[string][]byte{
			secretKeyField: key, "blank": []byte(" "), "not-json": []byte("-----BEGIN PRIVATE KEY-----"),
		}}),
	}
	for _, m := range mods {
		m(spec, &req)
	}
	return req
}

func withZone(name string) mod {
	return func(s *api.ACMEIssuerDNS01ProviderCloudDNS, _ *dns01.ProviderRequest) { s.HostedZoneName = name }
}

func withKey(s *api.ACMEIssuerDNS01ProviderCloudDNS, _ *dns01.ProviderRequest) {
	s.ServiceAccount = &api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: secretName}, Key: secretKeyField}
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
