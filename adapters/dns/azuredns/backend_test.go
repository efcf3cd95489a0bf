package azuredns

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/dns/armdns"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"

	"github.com/certfn/certfn/adapters/dns/azuredns/azurednstest"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/ports"
)

// The real Azure variant of the tests runs when these are set (see
// docs/reference/dns01.md, "Azure DNS"): a subscription, a resource group in it
// holding a public DNS zone (and optionally a Private DNS zone), and a
// service principal with the DNS Zone Contributor (and Private DNS Zone
// Contributor) role on them.
const (
	envSubscription = "CERTFN_AZURE_TEST_SUBSCRIPTION"
	envGroup        = "CERTFN_AZURE_TEST_RESOURCE_GROUP"
	envZone         = "CERTFN_AZURE_TEST_ZONE"
	envPrivateZone  = "CERTFN_AZURE_TEST_PRIVATE_ZONE"
	envTenant       = "CERTFN_AZURE_TEST_TENANT"
	envClientID     = "CERTFN_AZURE_TEST_CLIENT_ID"
	envClientSecret = "CERTFN_AZURE_TEST_CLIENT_SECRET"
)

// The double's subscription, group, zones and identities.
const (
	doubleSub     = "00000000-0000-4000-8000-0000000000aa"
	doubleGroup   = "dns-rg"
	doubleZone    = "example.test"
	doublePrivate = "private.example.test"
	doubleTenant  = "11111111-1111-4111-8111-111111111111"
	doubleClient  = "22222222-2222-4222-8222-222222222222"
	doubleSecret  = "sp-secret-value-never-printed"
	miClient      = "33333333-3333-4333-8333-333333333333"
	miResource    = "/subscriptions/" + doubleSub + "/resourceGroups/ids/providers/Microsoft.ManagedIdentity/userAssignedIdentities/certfn"
	systemClient  = "44444444-4444-4444-8444-444444444444"
	secretNS      = "cert-manager"
	secretName    = "azuredns"
	secretKey     = "client-secret"
)

// backend is where a test's zones live: the TEST DOUBLE (double != nil;
// see azurednstest) or real Azure (the CERTFN_AZURE_TEST_* variables).
type backend struct {
	double                        *azurednstest.Double
	sub, group, zone, privateZone string
	tenant, clientID, secret      string
	opts                          Options // how providers reach the backend
	adminPublic                   *armdns.RecordSetsClient
	adminPrivate                  *armprivatedns.RecordSetsClient
}

// eachBackend runs f on the double and, as subtest "azure", on real Azure
// when the CERTFN_AZURE_TEST_* variables are set (skipped with the reason
// otherwise).
func eachBackend(t *testing.T, f func(t *testing.T, b *backend)) {
	t.Run("double", func(t *testing.T) { f(t, newDoubleBackend(t)) })
	t.Run("azure", func(t *testing.T) { f(t, newRealBackend(t)) })
}

// newDoubleBackend starts a double with the group's public zone
// example.test. and Private DNS zone private.example.test., a service
// principal, a user-assigned and a system-assigned managed identity.
func newDoubleBackend(t *testing.T) *backend {
	t.Helper()
	// The ambient credential is the managed identity (through IMDS, which
	// the double's client reaches), whatever this machine's environment.
	for _, k := range []string{"AZURE_FEDERATED_TOKEN_FILE", "IDENTITY_ENDPOINT", "IDENTITY_HEADER", "MSI_ENDPOINT", "MSI_SECRET", "IMDS_ENDPOINT"} {
		t.Setenv(k, "")
	}
	d := azurednstest.New(t)
	d.AddZone(doubleSub, doubleGroup, doubleZone, false)
	d.AddZone(doubleSub, doubleGroup, doublePrivate, true)
	d.AddServicePrincipal(doubleTenant, doubleClient, doubleSecret)
	d.AddManagedIdentity(miClient, miResource)
	d.SetSystemIdentity(systemClient)
	cfg := d.Cloud()
	return &backend{
		double: d, sub: doubleSub, group: doubleGroup, zone: doubleZone, privateZone: doublePrivate,
		tenant: doubleTenant, clientID: doubleClient, secret: doubleSecret,
		opts: Options{Cloud: &cfg, Transport: d.Client(), Retry: policy.RetryOptions{MaxRetries: -1}},
	}
}

// newRealBackend returns real Azure, or skips.
func newRealBackend(t *testing.T) *backend {
	t.Helper()
	b := &backend{
		sub: os.Getenv(envSubscription), group: os.Getenv(envGroup), zone: strings.TrimSuffix(os.Getenv(envZone), "."),
		privateZone: strings.TrimSuffix(os.Getenv(envPrivateZone), "."),
		tenant:      os.Getenv(envTenant), clientID: os.Getenv(envClientID), secret: os.Getenv(envClientSecret),
	}
	if b.sub == "" || b.group == "" || b.zone == "" || b.tenant == "" || b.clientID == "" || b.secret == "" {
		t.Skipf("real Azure variant: set %s, %s, %s (a public DNS zone in that group), %s, %s and %s (a service principal with DNS Zone Contributor on it; %s optionally names a Private DNS zone too) to run it; the double variant ran",
			envSubscription, envGroup, envZone, envTenant, envClientID, envClientSecret, envPrivateZone)
	}
	cred, err := azidentity.NewClientSecretCredential(b.tenant, b.clientID, b.secret, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b.adminPublic, err = armdns.NewRecordSetsClient(b.sub, cred, nil); err != nil {
		t.Fatal(err)
	}
	if b.adminPrivate, err = armprivatedns.NewRecordSetsClient(b.sub, cred, nil); err != nil {
		t.Fatal(err)
	}
	return b
}

var uniq atomic.Int64

// base returns a name under zone that no other test (or earlier run
// against real Azure) uses; on real Azure, TXT sets left under it by the
// suite's names are deleted when the test ends.
func (b *backend) base(t *testing.T, zone string, private bool) string {
	t.Helper()
	name := fmt.Sprintf("r%d-%d.%s.", time.Now().UnixNano()%1_000_000_000, uniq.Add(1), zone)
	if b.double == nil {
		t.Cleanup(func() { b.cleanup(t, zone, private, name) })
	}
	return name
}

// cleanup deletes the TXT sets the tests write under name (real Azure):
// the suite's and the other tests' names.
func (b *backend) cleanup(t *testing.T, zone string, private bool, name string) {
	ctx := context.Background()
	var rels []string
	for i := 1; i <= 10; i++ {
		rels = append(rels, fmt.Sprintf("_acme-challenge.suite-%d", i))
	}
	rels = append(rels, "_acme-challenge", "_acme-challenge.keep0", "_acme-challenge.keep1", "_acme-challenge.keep2", "_acme-challenge.long")
	for _, r := range rels {
		rel := relative(r+"."+name, zone)
		var err error
		if private {
			_, err = b.adminPrivate.Delete(ctx, b.group, zone, armprivatedns.RecordTypeTXT, rel, nil)
		} else {
			_, err = b.adminPublic.Delete(ctx, b.group, zone, rel, armdns.RecordTypeTXT, nil)
		}
		if err != nil {
			t.Logf("cleanup of %s: %v", rel, err)
		}
	}
}

// txt returns the sorted TXT values of fqdn in zone and the set's TTL (0
// when there is none), read from the double or through Azure's API.
func (b *backend) txt(t *testing.T, zone string, private bool, fqdn string) ([]string, int64) {
	t.Helper()
	if b.double != nil {
		return b.double.TXT(zone, private, fqdn)
	}
	ctx := context.Background()
	rel := relative(fqdn, zone)
	var recs [][]*string
	var ttl *int64
	if private {
		r, err := b.adminPrivate.Get(ctx, b.group, zone, armprivatedns.RecordTypeTXT, rel, nil)
		if notFound(err) {
			return nil, 0
		} else if err != nil {
			t.Fatalf("get TXT %s: %v", rel, err)
		}
		ttl = r.Properties.TTL
		for _, x := range r.Properties.TxtRecords {
			recs = append(recs, x.Value)
		}
	} else {
		r, err := b.adminPublic.Get(ctx, b.group, zone, rel, armdns.RecordTypeTXT, nil)
		if notFound(err) {
			return nil, 0
		} else if err != nil {
			t.Fatalf("get TXT %s: %v", rel, err)
		}
		ttl = r.Properties.TTL
		for _, x := range r.Properties.TxtRecords {
			recs = append(recs, x.Value)
		}
	}
	var out []string
	for _, r := range recs {
		out = append(out, strings.Join(strs(r), ""))
	}
	slices.Sort(out)
	return out, *ttl
}

// set writes someone else's TXT set of fqdn in zone.
func (b *backend) set(t *testing.T, zone string, private bool, fqdn string, ttl int64, texts ...string) {
	t.Helper()
	if b.double != nil {
		b.double.SetTXT(zone, private, fqdn, ttl, texts...)
		return
	}
	var recs [][]string
	for _, v := range texts {
		recs = append(recs, []string{v})
	}
	var a recordSets = &publicAPI{rs: b.adminPublic}
	if private {
		a = &privateAPI{rs: b.adminPrivate}
	}
	if err := a.put(context.Background(), b.group, zone, relative(fqdn, zone), txtSet{ttl: ttl, records: recs}, ""); err != nil {
		t.Fatalf("write TXT %s: %v", fqdn, err)
	}
}

// factory returns a Factory whose clients reach the backend.
func (b *backend) factory(opts Options) *Factory {
	if opts.Cloud == nil {
		opts.Cloud = b.opts.Cloud
	}
	if opts.Transport == nil {
		opts.Transport = b.opts.Transport
	}
	if opts.Retry.MaxRetries == 0 {
		opts.Retry = b.opts.Retry
	}
	return NewFactory(opts)
}

// mod adjusts a request's spec and the request.
type mod = func(*api.ACMEIssuerDNS01ProviderAzureDNS, *dns01.ProviderRequest)

// request builds the ProviderRequest of a ClusterIssuer's azureDNS solver
// for the backend's subscription and group with its service principal;
// the secret store holds the client secret.
func (b *backend) request(mods ...mod) dns01.ProviderRequest {
	spec := &api.ACMEIssuerDNS01ProviderAzureDNS{
		SubscriptionID: b.sub, ResourceGroupName: b.group, TenantID: b.tenant, ClientID: b.clientID,
		ClientSecret: &api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: secretName}, Key: secretKey},
	}
	req := dns01.ProviderRequest{
		DNS01: &api.ACMEChallengeSolverDNS01{AzureDNS: spec}, Key: dns01.KeyAzureDNS, Path: "spec.solver.dns01",
		SecretNamespace: secretNS, IssuerKind: api.KindClusterIssuer,
		Secrets: certtest.NewMemSecrets(ports.Secret{Namespace: secretNS, Name: secretName, Data: map[string][]byte{
			secretKey: []byte(b.secret + "\n"), "blank": []byte(" \n"), "wrong": []byte("not-the-secret"),
		}}),
	}
	for _, m := range mods {
		m(spec, &req)
	}
	return req
}

func withZone(name string) mod {
	return func(s *api.ACMEIssuerDNS01ProviderAzureDNS, _ *dns01.ProviderRequest) { s.HostedZoneName = name }
}

func private(s *api.ACMEIssuerDNS01ProviderAzureDNS, _ *dns01.ProviderRequest) {
	s.ZoneType = api.AzurePrivateZone
}

// ambient drops the service principal (the managed identity is used).
func ambient(s *api.ACMEIssuerDNS01ProviderAzureDNS, _ *dns01.ProviderRequest) {
	s.ClientID, s.TenantID, s.ClientSecret = "", "", nil
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
