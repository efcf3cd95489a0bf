package route53

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	r53 "github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/libdns/libdns"

	"github.com/certfn/certfn/adapters/aws/awscfg"
	"github.com/certfn/certfn/adapters/dns/route53/route53test"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/ports/porttest"
	"github.com/certfn/certfn/tests/emulators"
)

// fastRetry keeps retried failures short in tests.
var fastRetry = awscfg.Retry{MaxAttempts: 3, MaxBackoff: 10 * time.Millisecond}

// route53Service is the AWS_ENDPOINT_URL_ suffix of Route 53.
const route53Service = emulators.Service("ROUTE_53")

// backend is where a test's zones live: the HAND-WRITTEN TEST DOUBLE
// (fake != nil; see route53test), or the endpoint named by
// AWS_ENDPOINT_URL / AWS_ENDPOINT_URL_ROUTE_53 (LocalStack).
type backend struct {
	fake     *route53test.Double
	endpoint string
	admin    *r53.Client // sets up zones and reads records back
}

// newBackend returns the external endpoint if the environment names one,
// else a fresh double.
func newBackend(t *testing.T) *backend {
	t.Helper()
	if ep, ok := emulators.External(route53Service); ok {
		return &backend{endpoint: ep, admin: r53.NewFromConfig(awscfg.ForEndpoint(ep, fastRetry))}
	}
	return newDoubleBackend(t)
}

// newDoubleBackend always uses the double (tests that inject failures or
// read its call log).
func newDoubleBackend(t *testing.T) *backend {
	t.Helper()
	f := route53test.New(t)
	return &backend{fake: f, endpoint: f.URL, admin: r53.NewFromConfig(awscfg.ForEndpoint(f.URL, fastRetry))}
}

var uniq atomic.Int64

// base returns a zone name no other test (or earlier LocalStack run) uses.
func base() string {
	return fmt.Sprintf("r%d-%d.test.", time.Now().UnixNano()%1_000_000_000, uniq.Add(1))
}

// zone creates a hosted zone and returns its ID (without /hostedzone/).
func (b *backend) zone(t *testing.T, name string, private bool) string {
	t.Helper()
	in := &r53.CreateHostedZoneInput{Name: aws.String(name), CallerReference: aws.String(fmt.Sprintf("certfn-test-%d-%d", time.Now().UnixNano(), uniq.Add(1)))}
	if private {
		in.HostedZoneConfig = &types.HostedZoneConfig{PrivateZone: true}
		in.VPC = &types.VPC{VPCId: aws.String("vpc-12345678"), VPCRegion: types.VPCRegionUsEast1}
	}
	out, err := b.admin.CreateHostedZone(context.Background(), in)
	if err != nil {
		t.Fatalf("CreateHostedZone %s: %v", name, err)
	}
	return normalizeZoneID(aws.ToString(out.HostedZone.Id))
}

// set writes a TXT set directly (someone else's values).
func (b *backend) set(t *testing.T, zoneID, fqdn string, ttl int64, texts ...string) {
	t.Helper()
	var rrs []types.ResourceRecord
	for _, v := range texts {
		rrs = append(rrs, types.ResourceRecord{Value: aws.String(EncodeTXT(v))})
	}
	_, err := b.admin.ChangeResourceRecordSets(context.Background(), &r53.ChangeResourceRecordSetsInput{
		HostedZoneId: aws.String(zoneID),
		ChangeBatch: &types.ChangeBatch{Changes: []types.Change{{Action: types.ChangeActionUpsert, ResourceRecordSet: &types.ResourceRecordSet{
			Name: aws.String(fqdn), Type: types.RRTypeTxt, TTL: aws.Int64(ttl), ResourceRecords: rrs}}}},
	})
	if err != nil {
		t.Fatalf("UPSERT %s: %v", fqdn, err)
	}
}

// txt returns the sorted TXT values of fqdn in zoneID and the set's TTL
// (0 when there is no set).
func (b *backend) txt(t *testing.T, zoneID, fqdn string) ([]string, int64) {
	t.Helper()
	out, err := b.admin.ListResourceRecordSets(context.Background(), &r53.ListResourceRecordSetsInput{
		HostedZoneId: aws.String(zoneID), StartRecordName: aws.String(fqdn), StartRecordType: types.RRTypeTxt, MaxItems: aws.Int32(1),
	})
	if err != nil {
		t.Fatalf("ListResourceRecordSets %s: %v", fqdn, err)
	}
	for _, s := range out.ResourceRecordSets {
		if s.Type == types.RRTypeTxt && strings.EqualFold(aws.ToString(s.Name), fqdn) {
			var vs []string
			for _, r := range s.ResourceRecords {
				vs = append(vs, DecodeTXT(aws.ToString(r.Value)))
			}
			slices.Sort(vs)
			return vs, aws.ToInt64(s.TTL)
		}
	}
	return nil, 0
}

// factory returns a Factory whose clients reach the backend.
func (b *backend) factory(opts Options) *Factory {
	ep := b.endpoint
	opts.Config = func(_ context.Context, region string) (aws.Config, error) {
		cfg := awscfg.ForEndpoint(ep, fastRetry)
		if region != "" {
			cfg.Region = region
		}
		return cfg, nil
	}
	return NewFactory(opts)
}

// Static test credentials the secret store holds.
const (
	testKeyID  = "AKIASTATICTESTKEY01"
	testSecret = "static/test+secret"
)

// request builds the ProviderRequest of a ClusterIssuer's route53 solver;
// mods adjust the spec and the request.
func request(mods ...func(*api.ACMEIssuerDNS01ProviderRoute53, *dns01.ProviderRequest)) dns01.ProviderRequest {
	spec := &api.ACMEIssuerDNS01ProviderRoute53{}
	req := dns01.ProviderRequest{
		DNS01: &api.ACMEChallengeSolverDNS01{Route53: spec}, Key: dns01.KeyRoute53, Path: "spec.solver.dns01",
		SecretNamespace: "cert-manager", IssuerKind: api.KindClusterIssuer,
		Secrets: certtest.NewMemSecrets(ports.Secret{Namespace: "cert-manager", Name: "aws", Data: map[string][]byte{
			"key-id": []byte(testKeyID + "\n"), "secret": []byte(testSecret), "blank": []byte(" "),
		}}),
	}
	for _, m := range mods {
		m(spec, &req)
	}
	return req
}

func withZone(id string) func(*api.ACMEIssuerDNS01ProviderRoute53, *dns01.ProviderRequest) {
	return func(s *api.ACMEIssuerDNS01ProviderRoute53, _ *dns01.ProviderRequest) { s.HostedZoneID = id }
}

func withStaticKeys(s *api.ACMEIssuerDNS01ProviderRoute53, _ *dns01.ProviderRequest) {
	s.AccessKeyID = testKeyID
	s.SecretAccessKey = api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: "aws"}, Key: "secret"}
}

func withRole(role string) func(*api.ACMEIssuerDNS01ProviderRoute53, *dns01.ProviderRequest) {
	return func(s *api.ACMEIssuerDNS01ProviderRoute53, _ *dns01.ProviderRequest) { s.Role = role }
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

// TestProviderSuite runs certfn's provider contract (porttest.DNSProviderSuite)
// on a hosted zone given by hostedZoneID, reading the values back through
// the API.
func TestProviderSuite(t *testing.T) {
	b := newBackend(t)
	zone := base()
	id := b.zone(t, zone, false)
	p := build(t, b.factory(Options{}), request(withZone(id)))
	porttest.DNSProviderSuite(t, porttest.DNSEnv{
		Provider: p,
		Zone:     zone,
		Lookup: func(t *testing.T, fqdn string) []string {
			vs, _ := b.txt(t, id, fqdn)
			return vs
		},
	})
}

// TestAppendDeleteKeepOtherValues: our value is added next to values
// written by someone else (their TTL kept), written only when missing,
// removed alone; the set is deleted when our value was the last one.
func TestAppendDeleteKeepOtherValues(t *testing.T) {
	type step struct {
		op         string // "append" or "delete"
		value      string
		want       []string
		wantTTL    int64
		wantChange bool // a ChangeResourceRecordSets call was made
	}
	cases := []struct {
		name   string
		theirs []string // present before, TTL 300
		steps  []step
	}{
		{"new set gets our TTL and goes away with our value", nil, []step{
			{"append", "ours", []string{"ours"}, 60, true},
			{"append", "ours", []string{"ours"}, 60, false},
			{"delete", "ours", nil, 0, true},
			{"delete", "ours", nil, 0, false},
		}},
		{"other values and their TTL are kept", []string{"theirs-1", "theirs-2"}, []step{
			{"append", "ours", []string{"ours", "theirs-1", "theirs-2"}, 300, true},
			{"append", "ours", []string{"ours", "theirs-1", "theirs-2"}, 300, false},
			{"delete", "never-added", []string{"ours", "theirs-1", "theirs-2"}, 300, false},
			{"delete", "ours", []string{"theirs-1", "theirs-2"}, 300, true},
		}},
		{"wildcard and apex values share the name", nil, []step{
			{"append", "apex", []string{"apex"}, 60, true},
			{"append", "wildcard", []string{"apex", "wildcard"}, 60, true},
			{"delete", "apex", []string{"wildcard"}, 60, true},
			{"delete", "wildcard", nil, 0, true},
		}},
	}
	b := newBackend(t)
	zone := base()
	id := b.zone(t, zone, false)
	f := b.factory(Options{})
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			rel := fmt.Sprintf("_acme-challenge.keep%d", i)
			fqdn := rel + "." + zone
			if tc.theirs != nil {
				b.set(t, id, fqdn, 300, tc.theirs...)
			}
			for j, s := range tc.steps {
				p := build(t, f, request()) // a new value per step, as the Solver builds
				changesBefore := 0
				if b.fake != nil {
					changesBefore = b.fake.Count("ChangeResourceRecordSets")
				}
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
				got, ttl := b.txt(t, id, fqdn)
				if !slices.Equal(got, s.want) || ttl != s.wantTTL {
					t.Fatalf("step %d %s %q: TXT = %q (TTL %d), want %q (TTL %d)", j, s.op, s.value, got, ttl, s.want, s.wantTTL)
				}
				if s.op == "append" && (p.LastChange() != "") != s.wantChange {
					t.Errorf("step %d: LastChange = %q, want a change: %v", j, p.LastChange(), s.wantChange)
				}
				if b.fake != nil {
					if made := b.fake.Count("ChangeResourceRecordSets") > changesBefore; made != s.wantChange {
						t.Errorf("step %d %s %q: change submitted = %v, want %v", j, s.op, s.value, made, s.wantChange)
					}
				}
			}
		})
	}
}

// TestZoneDiscovery: without hostedZoneID the zone is the public hosted
// zone named by the longest suffix of the record's name, among the allowed
// zones; private zones are skipped; none or an ambiguous match is a
// permanent error naming hostedZoneID.
func TestZoneDiscovery(t *testing.T) {
	b := newBackend(t)
	root := base()
	rootID := b.zone(t, root, false)
	subID := b.zone(t, "sub."+root, false)
	b.zone(t, "priv.sub."+root, true)
	dupA, dupB := b.zone(t, "dup."+root, false), b.zone(t, "dup."+root, false)

	cases := []struct {
		name     string
		record   string // relative to root
		allowed  []string
		wantZone string // ID holding the record
		wantErr  string // permanent error containing
	}{
		{name: "longest suffix wins", record: "_acme-challenge.www.sub", wantZone: subID},
		{name: "name at a zone's apex", record: "_acme-challenge", wantZone: rootID},
		{name: "parent zone when no child zone", record: "_acme-challenge.www.other", wantZone: rootID},
		{name: "private zone skipped", record: "_acme-challenge.www.priv.sub", wantZone: subID},
		{name: "zones outside the allowed list skipped", record: "_acme-challenge.www.sub", allowed: []string{rootID}, wantZone: rootID},
		{name: "no allowed zone", record: "_acme-challenge.www.sub", allowed: []string{"ZNOTTHISONE"}, wantErr: "spec.solver.dns01.route53.hostedZoneID: no public hosted zone this deployment may change holds _acme-challenge.www.sub." + root},
		{name: "two public zones of one name", record: "_acme-challenge.dup", wantErr: "spec.solver.dns01.route53.hostedZoneID: several public hosted zones are named dup." + root},
		{name: "ambiguity resolved by the allowed list", record: "_acme-challenge.dup", allowed: []string{dupB, rootID}, wantZone: dupB},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := build(t, b.factory(Options{AllowedZoneIDs: tc.allowed}), request())
			_, err := p.AppendRecords(context.Background(), root, []libdns.Record{libdns.TXT{Name: tc.record, Text: "v-" + tc.name}})
			if tc.wantErr != "" {
				if !errs.IsPermanent(err) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want a permanent error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			fqdn := tc.record + "." + root
			if got, _ := b.txt(t, tc.wantZone, fqdn); !slices.Contains(got, "v-"+tc.name) {
				t.Fatalf("zone %s holds %q for %s, want our value there", tc.wantZone, got, fqdn)
			}
			for _, other := range []string{rootID, subID, dupA, dupB} {
				if other == tc.wantZone {
					continue
				}
				if got, _ := b.txt(t, other, fqdn); slices.Contains(got, "v-"+tc.name) {
					t.Fatalf("zone %s also holds our value", other)
				}
			}
		})
	}
}

// TestHostedZoneIDGiven: a configured zone is used without listing zones;
// one outside the allowed list or unknown is a permanent error naming
// hostedZoneID.
func TestHostedZoneIDGiven(t *testing.T) {
	b := newBackend(t)
	zone := base()
	id := b.zone(t, zone, false)
	ctx := context.Background()
	rec := []libdns.Record{libdns.TXT{Name: "_acme-challenge.given", Text: "v"}}

	t.Run("used directly", func(t *testing.T) {
		before := 0
		if b.fake != nil {
			before = b.fake.Count("ListHostedZonesByName")
		}
		p := build(t, b.factory(Options{AllowedZoneIDs: []string{"/hostedzone/" + id}}), request(withZone("/hostedzone/"+id)))
		if _, err := p.AppendRecords(ctx, zone, rec); err != nil {
			t.Fatal(err)
		}
		if got, _ := b.txt(t, id, "_acme-challenge.given."+zone); !slices.Equal(got, []string{"v"}) {
			t.Fatalf("TXT = %q", got)
		}
		if b.fake != nil && b.fake.Count("ListHostedZonesByName") != before {
			t.Errorf("zones were listed although hostedZoneID was given")
		}
	})
	t.Run("not allowed", func(t *testing.T) {
		_, err := b.factory(Options{AllowedZoneIDs: []string{"ZOTHER"}}).Build(ctx, request(withZone(id)))
		if !errs.IsPermanent(err) || !strings.Contains(err.Error(), "spec.solver.dns01.route53.hostedZoneID: "+id+" is not one of the hosted zones this deployment may change") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("unknown zone", func(t *testing.T) {
		p := build(t, b.factory(Options{}), request(withZone("ZNOSUCHZONE0000000000")))
		_, err := p.AppendRecords(ctx, zone, rec)
		if !errs.IsPermanent(err) || !strings.Contains(err.Error(), "spec.solver.dns01.route53.hostedZoneID: hosted zone ZNOSUCHZONE0000000000 does not exist") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("record outside the zone", func(t *testing.T) {
		p := build(t, b.factory(Options{}), request(withZone(id)))
		_, err := p.AppendRecords(ctx, "elsewhere.test.", []libdns.Record{libdns.TXT{Name: "_acme-challenge", Text: "v"}})
		if !errs.IsPermanent(err) || !strings.Contains(err.Error(), "spec.solver.dns01.route53.hostedZoneID: Route53 refused the change") {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestRoleAssumption: with role, the static keys from the secret store (or
// the ambient ones) sign STS AssumeRole with session name "certfn", and
// the Route 53 calls are signed with the role's temporary credentials,
// fetched once per factory; a role STS refuses is a permanent error
// naming role.
func TestRoleAssumption(t *testing.T) {
	b := newBackend(t)
	// The roles live in the caller's account: the double's, or the one
	// the endpoint's STS names (LocalStack's 000000000000, moto's
	// 123456789012, or a real account).
	account := "000000000000"
	if b.fake == nil {
		account = callerAccount(t, b.endpoint)
	}
	role := "arn:aws:iam::" + account + ":role/certfn-dns01"
	denied := "arn:aws:iam::" + account + ":role/not-for-you"
	zone := base()
	id := b.zone(t, zone, false)
	if b.fake != nil {
		b.fake.DenyRole(denied)
	}
	ctx := context.Background()
	cases := []struct {
		name       string
		mods       []func(*api.ACMEIssuerDNS01ProviderRoute53, *dns01.ProviderRequest)
		stsKey     string // key that signed AssumeRole (double)
		wantErr    string
		doubleOnly bool
	}{
		{name: "static keys assume the role", mods: []func(*api.ACMEIssuerDNS01ProviderRoute53, *dns01.ProviderRequest){withStaticKeys, withRole(role)}, stsKey: testKeyID},
		{name: "ambient credentials assume the role", mods: []func(*api.ACMEIssuerDNS01ProviderRoute53, *dns01.ProviderRequest){withRole(role)}, stsKey: "test"},
		{name: "refused role", mods: []func(*api.ACMEIssuerDNS01ProviderRoute53, *dns01.ProviderRequest){withStaticKeys, withRole(denied)},
			wantErr: "spec.solver.dns01.route53.role: cannot assume role " + denied, doubleOnly: true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.doubleOnly && b.fake == nil {
				// LocalStack grants every AssumeRole; the refusal is the double's.
				b := newDoubleBackend(t)
				b.fake.DenyRole(denied)
				zid := b.zone(t, zone, false)
				p := build(t, b.factory(Options{}), request(append(tc.mods, withZone(zid))...))
				_, err := p.AppendRecords(ctx, zone, []libdns.Record{libdns.TXT{Name: "_acme-challenge.role", Text: "v"}})
				if !errs.IsPermanent(err) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want a permanent error containing %q", err, tc.wantErr)
				}
				return
			}
			var log0 int
			if b.fake != nil {
				log0 = len(b.fake.Calls())
			}
			f := b.factory(Options{})
			rel := fmt.Sprintf("_acme-challenge.role%d", i)
			for n := 0; n < 2; n++ { // twice: the role's credentials are fetched once
				p := build(t, f, request(append(tc.mods, withZone(id))...))
				_, err := p.AppendRecords(ctx, zone, []libdns.Record{libdns.TXT{Name: rel, Text: fmt.Sprintf("v%d", n)}})
				if tc.wantErr != "" {
					if !errs.IsPermanent(err) || !strings.Contains(err.Error(), tc.wantErr) {
						t.Fatalf("err = %v, want a permanent error containing %q", err, tc.wantErr)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			var calls []route53test.Call
			if b.fake != nil {
				calls = b.fake.Calls()[log0:] // before the test's own reads
			}
			if got, _ := b.txt(t, id, rel+"."+zone); !slices.Equal(got, []string{"v0", "v1"}) {
				t.Fatalf("TXT = %q, want v0 and v1", got)
			}
			if b.fake == nil {
				return
			}
			var assumes []route53test.Call
			for _, c := range calls {
				if c.Op == "AssumeRole" {
					assumes = append(assumes, c)
				} else if !strings.HasPrefix(c.AccessKey, "ASIAASSUMED") {
					t.Errorf("%s signed with %q, want the assumed role's key", c.Op, c.AccessKey)
				}
			}
			if len(assumes) != 1 || assumes[0].AccessKey != tc.stsKey {
				t.Fatalf("AssumeRole calls = %+v, want one signed with %q", assumes, tc.stsKey)
			}
			if assumed := b.fake.Assumed(); assumed[len(assumed)-1] != role+" certfn" {
				t.Errorf("AssumeRole(%q), want role %s, session certfn", assumed[len(assumed)-1], role)
			}
		})
	}
}

// callerAccount is the account STS GetCallerIdentity names at endpoint.
func callerAccount(t *testing.T, endpoint string) string {
	t.Helper()
	out, err := sts.NewFromConfig(awscfg.ForEndpoint(endpoint, fastRetry)).GetCallerIdentity(context.Background(), &sts.GetCallerIdentityInput{})
	if err != nil || aws.ToString(out.Account) == "" {
		t.Fatalf("STS GetCallerIdentity at %s: %+v, %v", endpoint, out, err)
	}
	return aws.ToString(out.Account)
}

// TestStaticAndAmbientCredentials: without role, the Route 53 calls are
// signed with the spec's keys, else with the default chain's.
func TestStaticAndAmbientCredentials(t *testing.T) {
	b := newDoubleBackend(t) // reads the signing keys from the double's log
	zone := base()
	id := b.zone(t, zone, false)
	for _, tc := range []struct {
		name string
		mods []func(*api.ACMEIssuerDNS01ProviderRoute53, *dns01.ProviderRequest)
		key  string
	}{
		{"static keys", []func(*api.ACMEIssuerDNS01ProviderRoute53, *dns01.ProviderRequest){withStaticKeys}, testKeyID},
		{"key ID from a secret", []func(*api.ACMEIssuerDNS01ProviderRoute53, *dns01.ProviderRequest){withStaticKeys, func(s *api.ACMEIssuerDNS01ProviderRoute53, _ *dns01.ProviderRequest) {
			s.AccessKeyID = ""
			s.SecretAccessKeyID = &api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: "aws"}, Key: "key-id"}
		}}, testKeyID},
		{"ambient", nil, "test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := len(b.fake.Calls())
			p := build(t, b.factory(Options{}), request(append(tc.mods, withZone(id))...))
			if _, err := p.AppendRecords(context.Background(), zone, []libdns.Record{libdns.TXT{Name: "_acme-challenge.creds", Text: tc.name}}); err != nil {
				t.Fatal(err)
			}
			for _, c := range b.fake.Calls()[n:] {
				if c.AccessKey != tc.key {
					t.Errorf("%s signed with %q, want %q", c.Op, c.AccessKey, tc.key)
				}
			}
		})
	}
}

// TestSynced: the change an append submitted is PENDING until Route 53
// has it on every server, then INSYNC; each Synced is one GetChange call
// and never waits. A change Route 53 does not know is reported synced.
func TestSynced(t *testing.T) {
	b := newBackend(t)
	zone := base()
	id := b.zone(t, zone, false)
	ctx := context.Background()
	p := build(t, b.factory(Options{}), request(withZone(id)))
	if _, err := p.AppendRecords(ctx, zone, []libdns.Record{libdns.TXT{Name: "_acme-challenge.sync", Text: "v"}}); err != nil {
		t.Fatal(err)
	}
	change := p.LastChange()
	if !strings.Contains(change, "C") {
		t.Fatalf("LastChange = %q, want a change ID", change)
	}
	// A fresh provider value asks (the ID travels through status.dns01).
	q := build(t, b.factory(Options{}), request(withZone(id)))
	if b.fake != nil {
		before := b.fake.Count("GetChange")
		start := time.Now()
		ok, err := q.Synced(ctx, zone, change)
		if err != nil || ok {
			t.Fatalf("Synced of a PENDING change = %v, %v; want false", ok, err)
		}
		if time.Since(start) > time.Second || b.fake.Count("GetChange") != before+1 {
			t.Fatalf("Synced took %s and %d GetChange calls; want one quick call", time.Since(start), b.fake.Count("GetChange")-before)
		}
		b.fake.SyncAll()
	}
	synced := false
	for i := 0; i < 20 && !synced; i++ { // LocalStack may report PENDING briefly
		ok, err := q.Synced(ctx, zone, change)
		if err != nil {
			t.Fatal(err)
		}
		synced = ok
		if !ok {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if !synced {
		t.Fatalf("change %s never INSYNC", change)
	}
	if ok, err := q.Synced(ctx, zone, "/change/CUNKNOWN000000000000"); err != nil || !ok {
		t.Fatalf("Synced of an unknown change = %v, %v; want true (the DNS round decides)", ok, err)
	}
}

// TestErrorsAreClassified: failures that retrying cannot fix are permanent
// and name the field to fix; the rest stay transient.
func TestErrorsAreClassified(t *testing.T) {
	b := newDoubleBackend(t) // injects failures
	zone := base()
	id := b.zone(t, zone, false)
	cases := []struct {
		name      string
		code      string
		status    int
		n         int
		mods      []func(*api.ACMEIssuerDNS01ProviderRoute53, *dns01.ProviderRequest)
		permanent bool
		want      string
	}{
		{name: "throttling beyond the retries", code: "Throttling", status: 400, n: 10, want: "Throttling"},
		{name: "throttling within the retries succeeds", code: "Throttling", status: 400, n: 1},
		{name: "prior request not complete", code: "PriorRequestNotComplete", status: 400, n: 10, want: "PriorRequestNotComplete"},
		{name: "server error", code: "InternalFailure", status: 500, n: 10, want: "InternalFailure"},
		{name: "access denied, static keys", code: "AccessDenied", status: 403, n: 1, mods: []func(*api.ACMEIssuerDNS01ProviderRoute53, *dns01.ProviderRequest){withStaticKeys},
			permanent: true, want: "spec.solver.dns01.route53.accessKeyID: "},
		{name: "access denied, ambient", code: "AccessDenied", status: 403, n: 1,
			permanent: true, want: "spec.solver.dns01.route53 (ambient credentials): "},
		{name: "unknown key", code: "InvalidClientTokenId", status: 403, n: 1, mods: []func(*api.ACMEIssuerDNS01ProviderRoute53, *dns01.ProviderRequest){withStaticKeys},
			permanent: true, want: "spec.solver.dns01.route53.secretAccessKeySecretRef: credentials refused"},
		{name: "invalid input", code: "InvalidInput", status: 400, n: 1, mods: []func(*api.ACMEIssuerDNS01ProviderRoute53, *dns01.ProviderRequest){withZone(id)},
			permanent: true, want: "spec.solver.dns01.route53.hostedZoneID: "},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := build(t, b.factory(Options{}), request(append([]func(*api.ACMEIssuerDNS01ProviderRoute53, *dns01.ProviderRequest){withZone(id)}, tc.mods...)...))
			b.fake.FailWith(tc.n, tc.code, tc.status)
			defer b.fake.FailWith(0, "", 0)
			_, err := p.AppendRecords(context.Background(), zone, []libdns.Record{libdns.TXT{Name: fmt.Sprintf("_acme-challenge.err%d", i), Text: "v"}})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("err = %v, want success after the SDK's retries", err)
				}
				return
			}
			if err == nil || errs.IsPermanent(err) != tc.permanent || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want permanent=%v containing %q", err, tc.permanent, tc.want)
			}
			if strings.Contains(err.Error(), testSecret) {
				t.Fatalf("error shows the secret access key: %v", err)
			}
		})
	}
}

// TestRaceIsTransient: Route 53's messages for a set that changed between
// read and write are transient (the retry reads again); other refused
// batches are permanent.
func TestRaceIsTransient(t *testing.T) {
	p := &Provider{Config: Config{Path: "spec.solver.dns01.route53"}}
	for _, tc := range []struct {
		msg       string
		permanent bool
	}{
		{"Tried to delete resource record set [name='_acme-challenge.x.example.com.', type='TXT'] but it was not found", false},
		{"Tried to delete resource record set [name='_acme-challenge.x.example.com.', type='TXT'] but the values provided do not match the current values", false},
		{"Tried to create resource record set [name='_acme-challenge.x.example.com.', type='TXT'] but it already exists", false},
		{"RRSet with DNS name _acme-challenge.x.other.com. is not permitted in zone example.com.", true},
	} {
		err := p.classify(&types.InvalidChangeBatch{Message: aws.String("ChangeBatch errors occurred"), Messages: []string{tc.msg}}, "Z1")
		if errs.IsPermanent(err) != tc.permanent || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%q: err = %v, want permanent=%v", tc.msg, err, tc.permanent)
		}
	}
}

// TestParse: every rule of Parse, with the field it names.
func TestParse(t *testing.T) {
	type mod = func(*api.ACMEIssuerDNS01ProviderRoute53, *dns01.ProviderRequest)
	spec := func(f func(*api.ACMEIssuerDNS01ProviderRoute53)) mod {
		return func(s *api.ACMEIssuerDNS01ProviderRoute53, _ *dns01.ProviderRequest) { f(s) }
	}
	issuer := func(_ *api.ACMEIssuerDNS01ProviderRoute53, r *dns01.ProviderRequest) {
		r.IssuerKind, r.SecretNamespace = api.KindIssuer, "team-a"
	}
	cases := []struct {
		name    string
		mods    []mod
		ambient bool
		want    Config
		wantErr string
	}{
		{name: "ambient for a ClusterIssuer", want: Config{}},
		{name: "every field", mods: []mod{withStaticKeys, spec(func(s *api.ACMEIssuerDNS01ProviderRoute53) {
			s.Region, s.HostedZoneID, s.Role = "eu-west-1", "/hostedzone/Z0123456789ABCDEFGHIJ", "arn:aws:iam::123456789012:role/dns"
		})}, want: Config{Region: "eu-west-1", HostedZoneID: "Z0123456789ABCDEFGHIJ", Role: "arn:aws:iam::123456789012:role/dns", AccessKeyID: testKeyID, SecretAccessKey: testSecret}},
		{name: "key ID from a secret", mods: []mod{withStaticKeys, spec(func(s *api.ACMEIssuerDNS01ProviderRoute53) {
			s.AccessKeyID = ""
			s.SecretAccessKeyID = &api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: "aws"}, Key: "key-id"}
		})}, want: Config{AccessKeyID: testKeyID, SecretAccessKey: testSecret}},
		{name: "bad region", mods: []mod{spec(func(s *api.ACMEIssuerDNS01ProviderRoute53) { s.Region = "Mars" })},
			wantErr: `spec.solver.dns01.route53.region: "Mars" is not an AWS region`},
		{name: "bad zone ID", mods: []mod{spec(func(s *api.ACMEIssuerDNS01ProviderRoute53) { s.HostedZoneID = "example.com" })},
			wantErr: `spec.solver.dns01.route53.hostedZoneID: "example.com" is not a Route53 hosted zone ID`},
		{name: "bad role", mods: []mod{spec(func(s *api.ACMEIssuerDNS01ProviderRoute53) { s.Role = "dns-role" })},
			wantErr: `spec.solver.dns01.route53.role: "dns-role" is not an IAM role ARN`},
		{name: "key ID without secret", mods: []mod{spec(func(s *api.ACMEIssuerDNS01ProviderRoute53) { s.AccessKeyID = testKeyID })},
			wantErr: "spec.solver.dns01.route53.secretAccessKeySecretRef: required when accessKeyID"},
		{name: "secret without key ID", mods: []mod{withStaticKeys, spec(func(s *api.ACMEIssuerDNS01ProviderRoute53) { s.AccessKeyID = "" })},
			wantErr: "spec.solver.dns01.route53.accessKeyID: required"},
		{name: "both key ID forms", mods: []mod{withStaticKeys, spec(func(s *api.ACMEIssuerDNS01ProviderRoute53) {
			s.SecretAccessKeyID = &api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: "aws"}, Key: "key-id"}
		})}, wantErr: "spec.solver.dns01.route53: only one of accessKeyID or accessKeyIDSecretRef"},
		{name: "malformed key ID", mods: []mod{withStaticKeys, spec(func(s *api.ACMEIssuerDNS01ProviderRoute53) { s.AccessKeyID = "short" })},
			wantErr: "spec.solver.dns01.route53.accessKeyID: not an AWS access key ID"},
		{name: "missing secret", mods: []mod{withStaticKeys, spec(func(s *api.ACMEIssuerDNS01ProviderRoute53) { s.SecretAccessKey.Name = "nope" })},
			wantErr: `spec.solver.dns01.route53.secretAccessKeySecretRef: secret cert-manager/nope has no usable key "secret" (missing, unreadable or empty)`},
		{name: "blank secret", mods: []mod{withStaticKeys, spec(func(s *api.ACMEIssuerDNS01ProviderRoute53) { s.SecretAccessKey.Key = "blank" })},
			wantErr: "spec.solver.dns01.route53.secretAccessKeySecretRef: secret cert-manager/aws key \"blank\" is not an AWS secret access key"},
		{name: "Issuer without keys", mods: []mod{issuer},
			wantErr: "spec.solver.dns01.route53: an Issuer's route53 solver must give accessKeyID"},
		{name: "Issuer with ambient credentials allowed", mods: []mod{issuer}, ambient: true, want: Config{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(context.Background(), request(tc.mods...), tc.ambient)
			if tc.wantErr != "" {
				if !errs.IsPermanent(err) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want a permanent error containing %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), testSecret) {
					t.Fatalf("error shows the secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.want.Path = "spec.solver.dns01.route53"
			if got != tc.want {
				t.Fatalf("Parse = %#v\nwant %#v", got, tc.want)
			}
			for _, s := range []string{got.String(), fmt.Sprintf("%v %+v %#v", got, got, got)} {
				if got.SecretAccessKey != "" && strings.Contains(s, got.SecretAccessKey) {
					t.Fatalf("Config prints its secret: %s", s)
				}
			}
		})
	}
}

// A secret store that fails is transient, and names the field.
func TestParseSecretStoreFailure(t *testing.T) {
	req := request(withStaticKeys)
	req.Secrets = failingSecrets{}
	_, err := Parse(context.Background(), req, false)
	if err == nil || errs.IsPermanent(err) || !strings.Contains(err.Error(), "spec.solver.dns01.route53.secretAccessKeySecretRef") {
		t.Fatalf("err = %v, want a transient error naming secretAccessKeySecretRef", err)
	}
}

type failingSecrets struct{ ports.SecretStore }

func (failingSecrets) Get(context.Context, string, string) (ports.Secret, error) {
	return ports.Secret{}, errors.New("secret store unavailable")
}

// TestTXTEncoding: values round-trip; long values are split into
// 255-octet strings; quotes, backslashes and other octets are escaped;
// values written by other tools decode.
func TestTXTEncoding(t *testing.T) {
	long := strings.Repeat("L", 300)
	cases := []struct {
		text, encoded string
	}{
		{"v", `"v"`},
		{"", `""`},
		{long, `"` + long[:255] + `" "` + long[255:] + `"`},
		{`say "hi" \o/`, `"say \"hi\" \\o/"`},
		{"tab\there é", `"tab\011here \303\251"`},
	}
	for _, tc := range cases {
		if got := EncodeTXT(tc.text); got != tc.encoded {
			t.Errorf("EncodeTXT(%q) = %s, want %s", tc.text, got, tc.encoded)
		}
		if got := DecodeTXT(tc.encoded); got != tc.text {
			t.Errorf("DecodeTXT(%s) = %q, want %q", tc.encoded, got, tc.text)
		}
	}
	for raw, want := range map[string]string{
		`"v=spf1 " "-all"`: "v=spf1 -all",
		`unquoted`:         "unquoted",
		`"a\"b"`:           `a"b`,
	} {
		if got := DecodeTXT(raw); got != want {
			t.Errorf("DecodeTXT(%s) = %q, want %q", raw, got, want)
		}
	}
}
