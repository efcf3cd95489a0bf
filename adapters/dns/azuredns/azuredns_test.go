package azuredns

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/libdns/libdns"

	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports/porttest"
)

// TestProviderSuite runs certfn's provider contract
// (porttest.DNSProviderSuite) on a public zone given by hostedZoneName and
// found by name, and on a Private DNS zone, reading the values back
// through the API.
func TestProviderSuite(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		for _, tc := range []struct {
			name    string
			zone    string
			private bool
			mods    []mod
		}{
			{"public zone by hostedZoneName", b.zone, false, []mod{withZone(b.zone)}},
			{"public zone found by name", b.zone, false, nil},
			{"private zone", b.privateZone, true, []mod{private}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if tc.zone == "" {
					t.Skipf("real Azure variant: set %s to a Private DNS zone in %s to run it", envPrivateZone, envGroup)
				}
				porttest.DNSProviderSuite(t, porttest.DNSEnv{
					Provider: build(t, b.factory(Options{}), b.request(tc.mods...)),
					Zone:     b.base(t, tc.zone, tc.private),
					Lookup: func(t *testing.T, fqdn string) []string {
						vs, _ := b.txt(t, tc.zone, tc.private, fqdn)
						return vs
					},
				})
			})
		}
	})
}

// TestMergeKeepsOtherValues: our value is added next to values written by
// someone else (their TTL kept), written only when missing, removed alone;
// the set goes away with our value when it was the last one. A new set is
// created with If-None-Match: *, an existing one replaced with If-Match
// (the double refuses anything else), one write per change.
func TestMergeKeepsOtherValues(t *testing.T) {
	type step struct {
		op      string // "append" or "delete"
		value   string
		want    []string
		wantTTL int64
		writes  int // PUT or DELETE calls made
	}
	cases := []struct {
		name   string
		theirs []string // present before, TTL 300
		steps  []step
	}{
		{"new set gets our TTL and goes away with our value", nil, []step{
			{"append", "ours", []string{"ours"}, 60, 1},
			{"append", "ours", []string{"ours"}, 60, 0},
			{"delete", "ours", nil, 0, 1},
			{"delete", "ours", nil, 0, 0},
		}},
		{"other values and their TTL are kept", []string{"theirs-1", "theirs-2"}, []step{
			{"append", "ours", []string{"ours", "theirs-1", "theirs-2"}, 300, 1},
			{"append", "ours", []string{"ours", "theirs-1", "theirs-2"}, 300, 0},
			{"delete", "never-added", []string{"ours", "theirs-1", "theirs-2"}, 300, 0},
			{"delete", "ours", []string{"theirs-1", "theirs-2"}, 300, 1},
		}},
		{"wildcard and apex values share the name", nil, []step{
			{"append", "apex", []string{"apex"}, 60, 1},
			{"append", "wildcard", []string{"apex", "wildcard"}, 60, 1},
			{"delete", "apex", []string{"wildcard"}, 60, 1},
			{"delete", "wildcard", nil, 0, 1},
		}},
	}
	eachBackend(t, func(t *testing.T, b *backend) {
		zone := b.base(t, b.zone, false)
		f := b.factory(Options{})
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				ctx := context.Background()
				rel := fmt.Sprintf("_acme-challenge.keep%d", i)
				fqdn := rel + "." + zone
				if tc.theirs != nil {
					b.set(t, b.zone, false, fqdn, 300, tc.theirs...)
				}
				for j, s := range tc.steps {
					p := build(t, f, b.request(withZone(b.zone))) // a new value per step, as the Solver builds
					n := b.writes()
					rec := libdns.TXT{Name: rel, Text: s.value}
					var err error
					if s.op == "append" {
						_, err = p.AppendRecords(ctx, zone, []libdns.Record{rec})
					} else {
						_, err = p.DeleteRecords(ctx, zone, []libdns.Record{rec})
					}
					if err != nil {
						t.Fatalf("step %d %s %q: %v", j, s.op, s.value, err)
					}
					got, ttl := b.txt(t, b.zone, false, fqdn)
					if !slices.Equal(got, s.want) || ttl != s.wantTTL {
						t.Fatalf("step %d %s %q: TXT = %q (TTL %d), want %q (TTL %d)", j, s.op, s.value, got, ttl, s.want, s.wantTTL)
					}
					if b.double != nil && b.writes()-n != s.writes {
						t.Fatalf("step %d %s %q: %d writes, want %d", j, s.op, s.value, b.writes()-n, s.writes)
					}
				}
			})
		}
	})
}

// writes counts the double's record set writes (0 on real Azure).
func (b *backend) writes() int {
	if b.double == nil {
		return 0
	}
	return b.double.Count("recordsets.put") + b.double.Count("recordsets.delete")
}

// TestRace (double: it changes the set between the provider's read and
// write): Azure refuses the write (412 on the stale ETag, or on
// If-None-Match: * when a set appeared); that is a transient error, one
// call, and the retry keeps both values.
func TestRace(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before []string // the set before our read
	}{
		{"a set appears", nil},
		{"the set changes", []string{"theirs-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newDoubleBackend(t)
			d := b.double
			const fqdn = "_acme-challenge.race.example.test."
			if tc.before != nil {
				d.SetTXT(doubleZone, false, fqdn, 300, tc.before...)
			}
			raced := false
			d.BeforeWrite = func(zone, name string) {
				if !raced {
					raced = true
					d.SetTXT(doubleZone, false, fqdn, 300, append(slices.Clone(tc.before), "theirs-2")...)
				}
			}
			p := build(t, b.factory(Options{}), b.request())
			rec := []libdns.Record{libdns.TXT{Name: "_acme-challenge.race", Text: "ours"}}
			puts := d.Count("recordsets.put")
			_, err := p.AppendRecords(context.Background(), "example.test.", rec)
			if err == nil || errs.IsPermanent(err) || !strings.Contains(err.Error(), "spec.solver.dns01.azureDNS: write TXT _acme-challenge.race in zone example.test: the record set changed while it was being updated: 412 PreconditionFailed") {
				t.Fatalf("err = %v, want a transient race error", err)
			}
			if n := d.Count("recordsets.put") - puts; n != 1 {
				t.Fatalf("%d PUTs, want 1 (no retry loop)", n)
			}
			if _, err := p.AppendRecords(context.Background(), "example.test.", rec); err != nil {
				t.Fatalf("retry: %v", err)
			}
			want := append(slices.Clone(tc.before), "ours", "theirs-2")
			slices.Sort(want)
			if got, _ := d.TXT(doubleZone, false, fqdn); !slices.Equal(got, want) {
				t.Fatalf("TXT = %q, want %q", got, want)
			}
		})
	}
}

// TestZoneDiscovery (double: it needs several zones): without
// hostedZoneName the zone is the resource group's zone whose name is the
// longest suffix of the record's name, over every page of the group's
// zones; other groups' zones and zones of the other kind are skipped;
// none is a permanent error naming hostedZoneName, as is a name outside a
// given hostedZoneName.
func TestZoneDiscovery(t *testing.T) {
	b := newDoubleBackend(t)
	d := b.double
	d.PageSize = 1
	d.AddZone(doubleSub, doubleGroup, "sub.example.test", false)
	d.AddZone(doubleSub, "other-rg", "deep.sub.example.test", false)
	d.AddZone(doubleSub, doubleGroup, "priv.sub.example.test", true)
	cases := []struct {
		name     string
		mods     []mod
		record   string // relative to example.test.
		wantZone string
		private  bool
		wantErr  string
	}{
		{name: "longest suffix wins", record: "_acme-challenge.www.sub", wantZone: "sub.example.test"},
		{name: "apex of a zone", record: "_acme-challenge", wantZone: doubleZone},
		{name: "other groups' zones skipped", record: "_acme-challenge.deep.sub", wantZone: "sub.example.test"},
		{name: "private zones skipped for a public solver", record: "_acme-challenge.priv.sub", wantZone: "sub.example.test"},
		{name: "private zones only for a private solver", mods: []mod{private}, record: "_acme-challenge.www.priv.sub", wantZone: "priv.sub.example.test", private: true},
		{name: "no zone", mods: []mod{private}, record: "_acme-challenge.www.sub",
			wantErr: "spec.solver.dns01.azureDNS.hostedZoneName: no Private DNS zone in resource group dns-rg of subscription " + doubleSub + " holds _acme-challenge.www.sub.example.test."},
		{name: "outside hostedZoneName", mods: []mod{withZone("sub.example.test")}, record: "_acme-challenge.www",
			wantErr: "spec.solver.dns01.azureDNS.hostedZoneName: _acme-challenge.www.example.test. is not in zone sub.example.test"},
		{name: "hostedZoneName used without listing", mods: []mod{withZone("example.test")}, record: "_acme-challenge.www.sub", wantZone: doubleZone},
	}
	zones := []struct {
		name    string
		private bool
	}{{doubleZone, false}, {"sub.example.test", false}, {"deep.sub.example.test", false}, {"priv.sub.example.test", true}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lists := d.Count("zones.list")
			p := build(t, b.factory(Options{}), b.request(tc.mods...))
			value := "v-" + tc.name
			_, err := p.AppendRecords(context.Background(), "example.test.", []libdns.Record{libdns.TXT{Name: tc.record, Text: value}})
			if tc.wantErr != "" {
				if !errs.IsPermanent(err) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want a permanent error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			listed := d.Count("zones.list") - lists
			switch {
			case p.Config.HostedZoneName != "" && listed != 0:
				t.Errorf("zones listed %d times although hostedZoneName was given", listed)
			case p.Config.HostedZoneName == "" && !tc.private && listed != 2:
				t.Errorf("zones.list calls = %d, want 2 (every page of the group's 2 public zones, 1 per page)", listed)
			}
			fqdn := tc.record + ".example.test."
			for _, z := range zones {
				got, _ := d.TXT(z.name, z.private, fqdn)
				if has := slices.Contains(got, value); has != (z.name == tc.wantZone && z.private == tc.private) {
					t.Fatalf("zone %s (private %v) holds %q; want our value only in %s", z.name, z.private, got, tc.wantZone)
				}
			}
		})
	}
}

// TestLongValue: a value longer than a TXT string is sent as strings of at
// most 254 characters (Azure's documented split for REST callers) and read
// back whole.
func TestLongValue(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		zone := b.base(t, b.zone, false)
		long := strings.Repeat("0123456789", 60)
		p := build(t, b.factory(Options{}), b.request(withZone(b.zone)))
		if _, err := p.AppendRecords(context.Background(), zone, []libdns.Record{libdns.TXT{Name: "_acme-challenge.long", Text: long}}); err != nil {
			t.Fatal(err)
		}
		fqdn := "_acme-challenge.long." + zone
		if got, _ := b.txt(t, b.zone, false, fqdn); !slices.Equal(got, []string{long}) {
			t.Fatalf("TXT = %q", got)
		}
		if b.double == nil {
			return
		}
		s := b.double.RecordSet(b.zone, false, fqdn)
		var lens []int
		for _, str := range s.Records[0] {
			lens = append(lens, len(str))
		}
		if !slices.Equal(lens, []int{254, 254, 92}) {
			t.Fatalf("strings of %v characters, want 254, 254, 92", lens)
		}
	})
}

// TestCredentials (double: it tells who called): a service principal's
// secret is exchanged once for a token (the client is cached across
// steps); without clientID the managed identity is used through IMDS,
// system-assigned or the user-assigned one managedIdentity names, or
// Workload Identity's federated token when AZURE_FEDERATED_TOKEN_FILE is
// set. Refused
// credentials are permanent errors naming the field to fix, never showing
// the secret; a failing token endpoint is transient.
func TestCredentials(t *testing.T) {
	ctx := context.Background()
	rec := func(name string) []libdns.Record {
		return []libdns.Record{libdns.TXT{Name: "_acme-challenge." + name, Text: "v"}}
	}
	t.Run("service principal", func(t *testing.T) {
		b := newDoubleBackend(t)
		f := b.factory(Options{})
		for range 2 {
			p := build(t, f, b.request())
			if _, err := p.AppendRecords(ctx, "example.test.", rec("sp")); err != nil {
				t.Fatal(err)
			}
		}
		tokens := 0
		for _, c := range b.double.Calls() {
			switch {
			case c.Op == "token":
				tokens++
			case c.Op == "openid":
			case c.Identity != "sp:"+doubleClient:
				t.Errorf("%s made as %q, want sp:%s", c.Op, c.Identity, doubleClient)
			}
		}
		if tokens != 1 {
			t.Errorf("token requests = %d, want 1 (the credential is cached)", tokens)
		}
	})
	for _, tc := range []struct {
		name, want string
		mi         *api.AzureManagedIdentity
	}{
		{"system-assigned managed identity", "mi:" + systemClient, nil},
		{"user-assigned by client ID", "mi:" + miClient, &api.AzureManagedIdentity{ClientID: miClient}},
		{"user-assigned by resource ID", "mi:" + miClient, &api.AzureManagedIdentity{ResourceID: miResource}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newDoubleBackend(t)
			p := build(t, b.factory(Options{}), b.request(ambient, func(s *api.ACMEIssuerDNS01ProviderAzureDNS, _ *dns01.ProviderRequest) {
				s.ManagedIdentity = tc.mi
			}))
			if _, err := p.AppendRecords(ctx, "example.test.", rec("mi")); err != nil {
				t.Fatal(err)
			}
			if b.double.Count("imds") != 1 {
				t.Errorf("IMDS asked %d times, want 1", b.double.Count("imds"))
			}
			for _, c := range b.double.Calls() {
				if c.Op != "imds" && c.Identity != tc.want {
					t.Errorf("%s made as %q, want %s", c.Op, c.Identity, tc.want)
				}
			}
		})
	}
	t.Run("workload identity", func(t *testing.T) {
		b := newDoubleBackend(t)
		const wiClient = "66666666-6666-4666-8666-666666666666"
		file := t.TempDir() + "/token"
		if err := os.WriteFile(file, []byte("federated-token"), 0o600); err != nil {
			t.Fatal(err)
		}
		b.double.AddFederatedIdentity(doubleTenant, wiClient, "federated-token")
		t.Setenv("AZURE_FEDERATED_TOKEN_FILE", file)
		t.Setenv("AZURE_CLIENT_ID", "")
		t.Setenv("AZURE_TENANT_ID", "")
		p := build(t, b.factory(Options{}), b.request(ambient, func(s *api.ACMEIssuerDNS01ProviderAzureDNS, _ *dns01.ProviderRequest) {
			s.ManagedIdentity = &api.AzureManagedIdentity{ClientID: wiClient, TenantID: doubleTenant}
		}))
		if _, err := p.AppendRecords(ctx, "example.test.", rec("wi")); err != nil {
			t.Fatal(err)
		}
		if b.double.Count("imds") != 0 {
			t.Error("IMDS was asked although AZURE_FEDERATED_TOKEN_FILE is set")
		}
		for _, c := range b.double.Calls() {
			if c.Op != "openid" && c.Identity != "wi:"+wiClient {
				t.Errorf("%s made as %q, want wi:%s", c.Op, c.Identity, wiClient)
			}
		}
	})
	refused := []struct {
		name      string
		mods      []mod
		setup     func(b *backend)
		want      string
		transient bool
	}{
		{name: "wrong secret", mods: []mod{func(s *api.ACMEIssuerDNS01ProviderAzureDNS, _ *dns01.ProviderRequest) { s.ClientSecret.Key = "wrong" }},
			want: "spec.solver.dns01.azureDNS.clientSecretSecretRef: find the zone: list the DNS zones of resource group dns-rg: Entra ID refused service principal " + doubleClient + ": 401 invalid_client: AADSTS7000215: Invalid client secret provided"},
		{name: "unknown tenant", mods: []mod{func(s *api.ACMEIssuerDNS01ProviderAzureDNS, _ *dns01.ProviderRequest) {
			s.TenantID = "99999999-9999-4999-8999-999999999999"
		}}, want: "spec.solver.dns01.azureDNS.tenantID: "},
		{name: "unknown application", mods: []mod{func(s *api.ACMEIssuerDNS01ProviderAzureDNS, _ *dns01.ProviderRequest) {
			s.ClientID = "88888888-8888-4888-8888-888888888888"
		}}, want: "spec.solver.dns01.azureDNS.clientID: find the zone: list the DNS zones of resource group dns-rg: Entra ID refused service principal 88888888-8888-4888-8888-888888888888: 400 unauthorized_client: AADSTS700016"},
		{name: "unknown managed identity", mods: []mod{ambient, func(s *api.ACMEIssuerDNS01ProviderAzureDNS, _ *dns01.ProviderRequest) {
			s.ManagedIdentity = &api.AzureManagedIdentity{ClientID: "77777777-7777-4777-8777-777777777777"}
		}}, want: "spec.solver.dns01.azureDNS.managedIdentity: find the zone: list the DNS zones of resource group dns-rg: the identity endpoint refused managed identity 77777777-7777-4777-8777-777777777777: 400 invalid_request: Identity not found"},
		{name: "denied", setup: func(b *backend) { b.double.Deny("sp:" + doubleClient) },
			want: "spec.solver.dns01.azureDNS.clientID: find the zone: list the DNS zones of resource group dns-rg: service principal " + doubleClient + " may not change DNS zones in resource group dns-rg (it needs the DNS Zone Contributor role on the zone or the group): 403 AuthorizationFailed"},
		{name: "denied, private", mods: []mod{private}, setup: func(b *backend) { b.double.Deny("sp:" + doubleClient) },
			want: "(it needs the Private DNS Zone Contributor role on the zone or the group): 403 AuthorizationFailed"},
		{name: "token endpoint unavailable", setup: func(b *backend) {
			b.double.Fail("token", 1, http.StatusServiceUnavailable, "TemporarilyUnavailable", "")
		},
			want: "spec.solver.dns01.azureDNS.clientID: find the zone: list the DNS zones of resource group dns-rg: token endpoint: 503", transient: true},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			b := newDoubleBackend(t)
			if tc.setup != nil {
				tc.setup(b)
			}
			p := build(t, b.factory(Options{}), b.request(tc.mods...))
			_, err := p.AppendRecords(ctx, "example.test.", rec("refused"))
			if err == nil || errs.IsPermanent(err) == tc.transient || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v (permanent %v), want containing %q, permanent %v", err, errs.IsPermanent(err), tc.want, !tc.transient)
			}
			if strings.Contains(err.Error(), doubleSecret) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error shows the secret or spans lines: %q", err)
			}
		})
	}
}

// TestErrors (double: it injects failures): Azure's answers are classified
// with the field to fix; a 429 whose Retry-After is longer than the SDK's
// retry cap fails the step at once with that delay (nothing waits).
func TestErrors(t *testing.T) {
	ctx := context.Background()
	rec := []libdns.Record{libdns.TXT{Name: "_acme-challenge.err", Text: "v"}}
	cases := []struct {
		name      string
		opts      Options
		mods      []mod
		setup     func(b *backend)
		want      string
		transient bool
		delay     time.Duration
		calls     int // record set GETs made, when > 0
	}{
		{name: "throttled with a long Retry-After", opts: Options{Retry: DefaultRetry}, mods: []mod{withZone(doubleZone)},
			setup: func(b *backend) {
				b.double.Fail("recordsets.get", 1, http.StatusTooManyRequests, "TooManyRequests", "30")
			},
			want: "spec.solver.dns01.azureDNS: read TXT _acme-challenge.err in zone example.test: 429 TooManyRequests", transient: true, delay: 30 * time.Second, calls: 1},
		{name: "unavailable, retried by the SDK", opts: Options{Retry: policy.RetryOptions{MaxRetries: 2, RetryDelay: time.Millisecond, MaxRetryDelay: 4 * time.Second}}, mods: []mod{withZone(doubleZone)},
			setup: func(b *backend) {
				b.double.Fail("recordsets.get", 3, http.StatusServiceUnavailable, "ServiceUnavailable", "0")
			},
			want: "spec.solver.dns01.azureDNS: read TXT _acme-challenge.err in zone example.test: 503 ServiceUnavailable", transient: true, calls: 3},
		{name: "unknown subscription", mods: []mod{func(s *api.ACMEIssuerDNS01ProviderAzureDNS, _ *dns01.ProviderRequest) {
			s.SubscriptionID = "55555555-5555-4555-8555-555555555555"
		}}, want: "spec.solver.dns01.azureDNS.subscriptionID: find the zone: list the DNS zones of resource group dns-rg: 404 SubscriptionNotFound The subscription '55555555-5555-4555-8555-555555555555' could not be found."},
		{name: "unknown resource group", mods: []mod{func(s *api.ACMEIssuerDNS01ProviderAzureDNS, _ *dns01.ProviderRequest) { s.ResourceGroupName = "nope" }},
			want: "spec.solver.dns01.azureDNS.resourceGroupName: find the zone: list the DNS zones of resource group nope: 404 ResourceGroupNotFound"},
		{name: "unknown zone", mods: []mod{withZone("err.example.test")},
			want: "spec.solver.dns01.azureDNS.hostedZoneName: read TXT _acme-challenge in zone err.example.test: no such DNS zone in resource group dns-rg: 404 ParentResourceNotFound"},
		{name: "unknown private zone", mods: []mod{private, withZone("example.test")},
			want: "spec.solver.dns01.azureDNS.hostedZoneName: read TXT _acme-challenge.err in zone example.test: no such Private DNS zone in resource group dns-rg: 404 ParentResourceNotFound"},
		{name: "token refused by Resource Manager", setup: func(b *backend) {
			b.double.Fail("zones.list", 1, http.StatusUnauthorized, "InvalidAuthenticationTokenTenant", "")
		}, want: "spec.solver.dns01.azureDNS.clientID: find the zone: list the DNS zones of resource group dns-rg: Azure refused the credentials: 401 InvalidAuthenticationTokenTenant"},
		{name: "refused write", mods: []mod{withZone(doubleZone)}, setup: func(b *backend) { b.double.Fail("recordsets.put", 1, http.StatusBadRequest, "BadRequest", "") },
			want: "spec.solver.dns01.azureDNS.hostedZoneName: write TXT _acme-challenge.err in zone example.test: Azure refused the request: 400 BadRequest"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newDoubleBackend(t)
			if tc.setup != nil {
				tc.setup(b)
			}
			p := build(t, b.factory(tc.opts), b.request(tc.mods...))
			start := time.Now()
			_, err := p.AppendRecords(ctx, "example.test.", rec)
			if err == nil || errs.IsPermanent(err) == tc.transient || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v (permanent %v), want containing %q, permanent %v", err, errs.IsPermanent(err), tc.want, !tc.transient)
			}
			if got, ok := errs.SuggestedDelay(err); tc.delay != 0 && (!ok || got != tc.delay) {
				t.Fatalf("suggested delay = %v, %v; want %v", got, ok, tc.delay)
			}
			if tc.calls > 0 && b.double.Count("recordsets.get") != tc.calls {
				t.Fatalf("record set GETs = %d, want %d", b.double.Count("recordsets.get"), tc.calls)
			}
			if tc.delay > 0 && time.Since(start) > tc.delay/2 {
				t.Fatalf("the call waited %v for a Retry-After of %v", time.Since(start), tc.delay)
			}
		})
	}
}

// TestParse: the factory's validation, one permanent error per rule naming
// the field (cert-manager's webhook rules and run-time checks); a failing
// secret store is transient; neither errors nor the configuration's
// rendering show the client secret.
func TestParse(t *testing.T) {
	b := &backend{sub: doubleSub, group: doubleGroup, tenant: doubleTenant, clientID: doubleClient, secret: doubleSecret}
	set := func(f func(s *api.ACMEIssuerDNS01ProviderAzureDNS)) mod {
		return func(s *api.ACMEIssuerDNS01ProviderAzureDNS, _ *dns01.ProviderRequest) { f(s) }
	}
	issuer := func(_ *api.ACMEIssuerDNS01ProviderAzureDNS, r *dns01.ProviderRequest) { r.IssuerKind = api.KindIssuer }
	cases := []struct {
		name      string
		mods      []mod
		ambientOK bool
		want      string // error containing; "" : valid
		transient bool
		check     func(t *testing.T, c Config)
	}{
		{name: "service principal", check: func(t *testing.T, c Config) {
			if c.ClientSecret != doubleSecret || c.Environment != api.AzurePublicCloud || c.Private {
				t.Fatalf("Config = %v (secret trimmed: %v)", c, c.ClientSecret == doubleSecret)
			}
		}},
		{name: "environment and zone type", mods: []mod{private, withZone("Example.TEST."), set(func(s *api.ACMEIssuerDNS01ProviderAzureDNS) { s.Environment = "azurechinacloud" })},
			check: func(t *testing.T, c Config) {
				if c.Environment != api.AzureChinaCloud || !c.Private || c.HostedZoneName != "example.test" {
					t.Fatalf("Config = %v", c)
				}
			}},
		{name: "managed identity for a ClusterIssuer", mods: []mod{ambient, set(func(s *api.ACMEIssuerDNS01ProviderAzureDNS) {
			s.ManagedIdentity = &api.AzureManagedIdentity{ClientID: miClient, TenantID: doubleTenant}
		})}},
		{name: "managed identity for an Issuer when allowed", mods: []mod{ambient, issuer}, ambientOK: true},
		{name: "no subscriptionID", mods: []mod{set(func(s *api.ACMEIssuerDNS01ProviderAzureDNS) { s.SubscriptionID = "" })},
			want: "spec.solver.dns01.azureDNS.subscriptionID: required"},
		{name: "subscriptionID not a GUID", mods: []mod{set(func(s *api.ACMEIssuerDNS01ProviderAzureDNS) { s.SubscriptionID = "my-sub" })},
			want: "spec.solver.dns01.azureDNS.subscriptionID: \"my-sub\" is not an Azure subscription ID"},
		{name: "no resourceGroupName", mods: []mod{set(func(s *api.ACMEIssuerDNS01ProviderAzureDNS) { s.ResourceGroupName = "" })},
			want: "spec.solver.dns01.azureDNS.resourceGroupName: required"},
		{name: "resourceGroupName invalid", mods: []mod{set(func(s *api.ACMEIssuerDNS01ProviderAzureDNS) { s.ResourceGroupName = "rg/../x" })},
			want: "spec.solver.dns01.azureDNS.resourceGroupName: \"rg/../x\" is not a resource group name"},
		{name: "hostedZoneName invalid", mods: []mod{withZone("exa mple..com")},
			want: "spec.solver.dns01.azureDNS.hostedZoneName: \"exa mple..com\" is not a DNS zone name"},
		{name: "German cloud", mods: []mod{set(func(s *api.ACMEIssuerDNS01ProviderAzureDNS) { s.Environment = api.AzureGermanCloud })},
			want: "spec.solver.dns01.azureDNS.environment: AzureGermanCloud is no longer served: Microsoft Cloud Deutschland was closed in October 2021"},
		{name: "unknown cloud", mods: []mod{set(func(s *api.ACMEIssuerDNS01ProviderAzureDNS) { s.Environment = "AzureStack" })},
			want: "spec.solver.dns01.azureDNS.environment: \"AzureStack\" is not AzurePublicCloud, AzureChinaCloud or AzureUSGovernmentCloud"},
		{name: "unknown zone type", mods: []mod{set(func(s *api.ACMEIssuerDNS01ProviderAzureDNS) { s.ZoneType = "Private" })},
			want: "spec.solver.dns01.azureDNS.zoneType: \"Private\" is not AzurePublicZone or AzurePrivateZone"},
		{name: "clientID without secret", mods: []mod{set(func(s *api.ACMEIssuerDNS01ProviderAzureDNS) { s.ClientSecret = nil })},
			want: "spec.solver.dns01.azureDNS.clientSecretSecretRef: required with clientID"},
		{name: "secret without clientID", mods: []mod{set(func(s *api.ACMEIssuerDNS01ProviderAzureDNS) { s.ClientID = "" })},
			want: "spec.solver.dns01.azureDNS.clientID: required with tenantID and clientSecretSecretRef"},
		{name: "clientID without tenantID", mods: []mod{set(func(s *api.ACMEIssuerDNS01ProviderAzureDNS) { s.TenantID = "" })},
			want: "spec.solver.dns01.azureDNS.tenantID: required with clientID"},
		{name: "clientID not a GUID", mods: []mod{set(func(s *api.ACMEIssuerDNS01ProviderAzureDNS) { s.ClientID = "app" })},
			want: "spec.solver.dns01.azureDNS.clientID: \"app\" is not an application (client) ID"},
		{name: "service principal and managed identity", mods: []mod{set(func(s *api.ACMEIssuerDNS01ProviderAzureDNS) {
			s.ManagedIdentity = &api.AzureManagedIdentity{ClientID: miClient}
		})}, want: "spec.solver.dns01.azureDNS.managedIdentity: must not be set with clientID, clientSecretSecretRef or tenantID"},
		{name: "managed identity for an Issuer", mods: []mod{ambient, issuer},
			want: "spec.solver.dns01.azureDNS: an Issuer's azureDNS solver must give clientID, clientSecretSecretRef and tenantID: the ambient identity (managed identity, workload identity) is for ClusterIssuers only"},
		{name: "managed identity clientID and resourceID", mods: []mod{ambient, set(func(s *api.ACMEIssuerDNS01ProviderAzureDNS) {
			s.ManagedIdentity = &api.AzureManagedIdentity{ClientID: miClient, ResourceID: miResource}
		})}, want: "spec.solver.dns01.azureDNS.managedIdentity: clientID and resourceID cannot both be set"},
		{name: "managed identity tenantID without clientID", mods: []mod{ambient, set(func(s *api.ACMEIssuerDNS01ProviderAzureDNS) {
			s.ManagedIdentity = &api.AzureManagedIdentity{TenantID: doubleTenant}
		})}, want: "spec.solver.dns01.azureDNS.managedIdentity.clientID: required with managedIdentity.tenantID"},
		{name: "managed identity resourceID invalid", mods: []mod{ambient, set(func(s *api.ACMEIssuerDNS01ProviderAzureDNS) {
			s.ManagedIdentity = &api.AzureManagedIdentity{ResourceID: "certfn"}
		})}, want: "spec.solver.dns01.azureDNS.managedIdentity.resourceID: \"certfn\" is not a user-assigned identity's resource ID"},
		{name: "missing secret", mods: []mod{set(func(s *api.ACMEIssuerDNS01ProviderAzureDNS) { s.ClientSecret.Name = "other" })},
			want: "spec.solver.dns01.azureDNS.clientSecretSecretRef: secret cert-manager/other has no usable key \"client-secret\""},
		{name: "blank secret", mods: []mod{set(func(s *api.ACMEIssuerDNS01ProviderAzureDNS) { s.ClientSecret.Key = "blank" })},
			want: "spec.solver.dns01.azureDNS.clientSecretSecretRef: secret cert-manager/azuredns key \"blank\" holds only blanks"},
		{name: "secret store failing", mods: []mod{func(_ *api.ACMEIssuerDNS01ProviderAzureDNS, r *dns01.ProviderRequest) {
			r.Secrets.(*certtest.MemSecrets).GetErr = errors.New("throttled")
		}}, want: "spec.solver.dns01.azureDNS.clientSecretSecretRef: read secret cert-manager/azuredns: throttled", transient: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(context.Background(), b.request(tc.mods...), tc.ambientOK)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if tc.check != nil {
					tc.check(t, c)
				}
				if s := fmt.Sprintf("%v %+v %#v", c, c, c); strings.Contains(s, doubleSecret) {
					t.Fatalf("the configuration renders the secret: %s", s)
				}
				return
			}
			if err == nil || errs.IsPermanent(err) == tc.transient || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v (permanent %v), want containing %q, permanent %v", err, errs.IsPermanent(err), tc.want, !tc.transient)
			}
			if strings.Contains(err.Error(), doubleSecret) {
				t.Fatalf("error shows the secret: %v", err)
			}
		})
	}
}

// TestCloudFor: each environment reaches its own cloud's Entra ID and
// Resource Manager.
func TestCloudFor(t *testing.T) {
	for _, tc := range []struct{ env, authority, arm string }{
		{api.AzurePublicCloud, "https://login.microsoftonline.com/", "https://management.azure.com"},
		{api.AzureChinaCloud, "https://login.chinacloudapi.cn/", "https://management.chinacloudapi.cn"},
		{api.AzureUSGovernmentCloud, "https://login.microsoftonline.us/", "https://management.usgovcloudapi.net"},
	} {
		c, err := CloudFor(tc.env)
		if err != nil {
			t.Fatal(err)
		}
		if c.ActiveDirectoryAuthorityHost != tc.authority || !strings.HasPrefix(c.Services["resourceManager"].Endpoint, tc.arm) {
			t.Errorf("%s: authority %s, ARM %s; want %s, %s", tc.env, c.ActiveDirectoryAuthorityHost, c.Services["resourceManager"].Endpoint, tc.authority, tc.arm)
		}
	}
	if _, err := CloudFor(api.AzureGermanCloud); err == nil {
		t.Error("CloudFor(AzureGermanCloud) succeeded; the cloud was closed")
	}
}
