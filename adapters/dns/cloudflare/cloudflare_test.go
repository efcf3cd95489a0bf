package cloudflare

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libdns/libdns"

	"github.com/certfn/certfn/adapters/dns/cloudflare/cloudflaretest"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/ports/porttest"
)

// TestProviderSuite runs certfn's provider contract
// (porttest.DNSProviderSuite) with an API token, and on the double also
// with a global API key, reading the values back outside the provider.
func TestProviderSuite(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		creds := []struct {
			name string
			mods []mod
		}{{"apiTokenSecretRef", nil}}
		if b.double != nil {
			creds = append(creds, struct {
				name string
				mods []mod
			}{"apiKeySecretRef", []mod{withKey(testEmail)}})
		}
		for _, c := range creds {
			t.Run(c.name, func(t *testing.T) {
				porttest.DNSProviderSuite(t, porttest.DNSEnv{
					Provider: build(t, b.factory(), b.request(c.mods...)),
					Zone:     b.base(t),
					Lookup:   b.txt,
				})
			})
		}
	})
}

// TestKeepsOtherValues: our value is added next to values written by
// someone else (unquoted, as older clients write them), written only when
// missing, and removed alone; every write is one create or one delete of
// our record.
func TestKeepsOtherValues(t *testing.T) {
	b := newDoubleBackend(t)
	d := b.double
	const fqdn = "_acme-challenge.keep.example.com"
	d.SetRecord(fqdn, "TXT", "theirs with spaces", 300)
	d.SetRecord(fqdn, "TXT", `"quoted" "theirs"`, 300)
	type step struct {
		op, value string
		want      []string
		creates   int
		deletes   int
	}
	steps := []step{
		{"append", "ours", []string{"ours", "quotedtheirs", "theirs with spaces"}, 1, 0},
		{"append", "ours", []string{"ours", "quotedtheirs", "theirs with spaces"}, 0, 0},
		{"delete", "never-added", []string{"ours", "quotedtheirs", "theirs with spaces"}, 0, 0},
		{"delete", "ours", []string{"quotedtheirs", "theirs with spaces"}, 0, 1},
		{"delete", "ours", []string{"quotedtheirs", "theirs with spaces"}, 0, 0},
	}
	for i, s := range steps {
		p := build(t, b.factory(), b.request()) // a new value per step, as the Solver builds
		creates, deletes := d.Count("dns_records.create"), d.Count("dns_records.delete")
		rec := []libdns.Record{libdns.TXT{Name: "_acme-challenge.keep", Text: s.value}}
		var err error
		if s.op == "append" {
			_, err = p.AppendRecords(context.Background(), "example.com.", rec)
		} else {
			_, err = p.DeleteRecords(context.Background(), "example.com.", rec)
		}
		if err != nil {
			t.Fatalf("step %d %s %q: %v", i, s.op, s.value, err)
		}
		if got := d.TXT(fqdn); !slices.Equal(got, s.want) {
			t.Fatalf("step %d %s %q: TXT = %q, want %q", i, s.op, s.value, got, s.want)
		}
		if c, dl := d.Count("dns_records.create")-creates, d.Count("dns_records.delete")-deletes; c != s.creates || dl != s.deletes {
			t.Fatalf("step %d %s %q: %d creates and %d deletes, want %d and %d", i, s.op, s.value, c, dl, s.creates, s.deletes)
		}
	}
	for _, r := range d.Records(doubleZone) {
		if r.Content == `"ours"` && r.TTL != 60 {
			t.Errorf("our record's TTL = %d, want 60", r.TTL)
		}
	}
}

// TestContentIsQuoted: the record holds the value quoted, split into
// 255-octet character-strings (Cloudflare's documented TXT form).
func TestContentIsQuoted(t *testing.T) {
	b := newDoubleBackend(t)
	long := strings.Repeat("L", 300)
	p := build(t, b.factory(), b.request())
	if _, err := p.AppendRecords(context.Background(), "example.com.", []libdns.Record{
		libdns.TXT{Name: "_acme-challenge.q", Text: "v1"}, libdns.TXT{Name: "_acme-challenge.q", Text: long},
	}); err != nil {
		t.Fatal(err)
	}
	var contents []string
	for _, r := range b.double.Records(doubleZone) {
		contents = append(contents, r.Content)
	}
	slices.Sort(contents)
	want := []string{`"` + long[:255] + `" "` + long[255:] + `"`, `"v1"`}
	if !slices.Equal(contents, want) {
		t.Fatalf("contents %q, want %q", contents, want)
	}
}

// TestPagination (double, pages of 2): listing the name's TXT records and
// the zones walks every page, so a value on the last page is found (not
// written twice) and deleted.
func TestPagination(t *testing.T) {
	b := newDoubleBackend(t)
	d := b.double
	const fqdn = "_acme-challenge.paged.example.com"
	for i := range 5 {
		d.SetRecord(fqdn, "TXT", fmt.Sprintf(`"other-%d"`, i), 60)
	}
	d.SetRecord(fqdn, "TXT", `"ours"`, 60) // the last of 6 records: page 3
	// Zones of other names, so that the zone list has pages too when a
	// name matches several (it does not here; the per-name list is one page).
	p := build(t, b.factory(), b.request())
	lists := d.Count("dns_records.list")
	rec := []libdns.Record{libdns.TXT{Name: "_acme-challenge.paged", Text: "ours"}}
	if _, err := p.AppendRecords(context.Background(), "example.com.", rec); err != nil {
		t.Fatal(err)
	}
	if n := d.Count("dns_records.list") - lists; n < 3 {
		t.Errorf("dns_records.list calls = %d, want every page (3 of 2 records, and maybe an empty one)", n)
	}
	if n := d.Count("dns_records.create"); n != 0 {
		t.Fatalf("%d creates: the value on the last page was not found", n)
	}
	removed, err := p.DeleteRecords(context.Background(), "example.com.", rec)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || slices.Contains(d.TXT(fqdn), "ours") || len(d.TXT(fqdn)) != 5 {
		t.Fatalf("removed %v; TXT now %q, want the 5 others", removed, d.TXT(fqdn))
	}
}

// TestZoneDiscovery (double: it needs several zones): the zone is the one
// named by the longest suffix of the record's name (wildcard labels
// skipped), an active zone over a pending one of the same name; zones the
// credentials cannot see are not found; none or two active zones of one
// name are permanent errors naming the solver.
func TestZoneDiscovery(t *testing.T) {
	type z struct{ name, status string }
	cases := []struct {
		name    string
		zones   []z
		record  string // fqdn
		want    string // zone that receives the record
		wantErr string
	}{
		{name: "longest suffix wins", zones: []z{{"example.com", "active"}, {"sub.example.com", "active"}},
			record: "_acme-challenge.www.sub.example.com", want: "sub.example.com"},
		{name: "parent zone", zones: []z{{"example.com", "active"}, {"sub.example.com", "active"}},
			record: "_acme-challenge.www.other.example.com", want: "example.com"},
		{name: "wildcard label skipped", zones: []z{{"example.com", "active"}},
			record: "_acme-challenge.*.example.com", want: "example.com"},
		{name: "active over pending", zones: []z{{"example.com", "active"}, {"sub.example.com", "pending"}, {"sub.example.com", "active"}},
			record: "_acme-challenge.sub.example.com", want: "sub.example.com"},
		{name: "no zone", zones: []z{{"example.org", "active"}}, record: "_acme-challenge.example.com",
			wantErr: "spec.solver.dns01.cloudflare: no Cloudflare zone that these credentials can read holds _acme-challenge.example.com."},
		{name: "two active zones of one name", zones: []z{{"example.com", "active"}, {"example.com", "active"}}, record: "_acme-challenge.example.com",
			wantErr: "spec.solver.dns01.cloudflare: the credentials reach several active Cloudflare zones named example.com"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := cloudflaretest.New(t)
			d.PageSize = 1 // two zones of one name take two pages
			d.AddToken(testToken, "test")
			ids := map[string]string{}
			for _, zz := range tc.zones {
				ids[zz.name+"/"+zz.status] = d.AddZoneStatus(zz.name, zz.status)
			}
			b := &backend{double: d, token: testToken, opts: Options{BaseURL: d.URL}}
			p := build(t, b.factory(), b.request())
			_, err := p.AppendRecords(context.Background(), ".", []libdns.Record{libdns.TXT{Name: tc.record + ".", Text: "v"}})
			if tc.wantErr != "" {
				if !errs.IsPermanent(err) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want a permanent error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			recs := d.Records(tc.want)
			if len(recs) != 1 || recs[0].Name != strings.ToLower(tc.record) {
				t.Fatalf("zone %s holds %+v, want the record %s", tc.want, recs, tc.record)
			}
			if p.zones[dnsName(tc.record)].id != ids[tc.want+"/active"] {
				t.Fatalf("zone ID %s, want the active zone's %s", p.zones[dnsName(tc.record)].id, ids[tc.want+"/active"])
			}
		})
	}
}

func dnsName(s string) string { return strings.ToLower(s) + "." }

// TestCredentials (double): a token is sent as a bearer token, a global
// API key with its email; calls are made as that credential; unknown
// credentials are a permanent error naming the secret's field, a denied
// token too (with the permissions it needs).
func TestCredentials(t *testing.T) {
	ctx := context.Background()
	rec := []libdns.Record{libdns.TXT{Name: "_acme-challenge.creds", Text: "v"}}
	cases := []struct {
		name    string
		mods    []mod
		deny    string
		want    string // credential in the double's log
		wantErr string
	}{
		{name: "token", want: "token:test"},
		{name: "global API key", mods: []mod{withKey(testEmail)}, want: "key:" + testEmail},
		{name: "unknown token", mods: []mod{withToken("wrong-token")},
			wantErr: "spec.solver.dns01.cloudflare.apiTokenSecretRef: Cloudflare refused the credentials (cloudflare API token)"},
		{name: "key of another email", mods: []mod{withKey("someone@example.com")},
			wantErr: "spec.solver.dns01.cloudflare.apiKeySecretRef: Cloudflare refused the credentials (cloudflare global API key of someone@example.com)"},
		{name: "denied token", deny: "token:test",
			wantErr: "spec.solver.dns01.cloudflare.apiTokenSecretRef: the cloudflare API token may not do this (it needs Zone:Read and DNS:Edit on the zone)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newDoubleBackend(t)
			if tc.deny != "" {
				b.double.Deny(tc.deny)
			}
			p := build(t, b.factory(), b.request(tc.mods...))
			_, err := p.AppendRecords(ctx, "example.com.", rec)
			if tc.wantErr != "" {
				if !errs.IsPermanent(err) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want a permanent error containing %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), testToken) || strings.Contains(err.Error(), testKey) {
					t.Fatalf("error shows the secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range b.double.Calls() {
				if c.Credential != tc.want {
					t.Errorf("%s made as %q, want %q", c.Op, c.Credential, tc.want)
				}
			}
		})
	}
}

// TestRateLimit (double): a 429 is one call and a transient error carrying
// Retry-After; the client does not retry or wait; the next step succeeds.
func TestRateLimit(t *testing.T) {
	for _, tc := range []struct {
		op, header string
		wantDelay  time.Duration
		hasDelay   bool
	}{
		{"zones.list", "17", 17 * time.Second, true},
		{"dns_records.list", "3", 3 * time.Second, true},
		{"dns_records.create", "", 0, false},
		{"dns_records.delete", "1", time.Second, true},
	} {
		t.Run(tc.op, func(t *testing.T) {
			b := newDoubleBackend(t)
			d := b.double
			rec := []libdns.Record{libdns.TXT{Name: "_acme-challenge.limited", Text: "v"}}
			run := func() error {
				p := build(t, b.factory(), b.request())
				if tc.op == "dns_records.delete" {
					_, err := p.DeleteRecords(context.Background(), "example.com.", rec)
					return err
				}
				_, err := p.AppendRecords(context.Background(), "example.com.", rec)
				return err
			}
			if tc.op == "dns_records.delete" {
				if err := run2(b, rec); err != nil {
					t.Fatal(err)
				}
			}
			d.RateLimit(tc.op, 1, tc.header)
			before := d.Count(tc.op)
			start := time.Now()
			err := run()
			if err == nil || errs.IsPermanent(err) || !strings.Contains(err.Error(), "Cloudflare rate limit") {
				t.Fatalf("err = %v, want a transient rate-limit error", err)
			}
			delay, ok := errs.SuggestedDelay(err)
			if ok != tc.hasDelay || delay != tc.wantDelay {
				t.Fatalf("suggested delay = %s, %v; want %s, %v", delay, ok, tc.wantDelay, tc.hasDelay)
			}
			if n := d.Count(tc.op) - before; n != 1 {
				t.Fatalf("%s calls = %d, want 1 (the client must not retry)", tc.op, n)
			}
			if time.Since(start) > 5*time.Second {
				t.Fatalf("the step took %s: the client waited", time.Since(start))
			}
			if err := run(); err != nil {
				t.Fatalf("next step: %v", err)
			}
		})
	}
}

// run2 appends rec with a fresh provider (setup for a delete).
func run2(b *backend, rec []libdns.Record) error {
	p, err := b.factory().Build(context.Background(), b.request())
	if err != nil {
		return err
	}
	_, err = p.AppendRecords(context.Background(), "example.com.", rec)
	return err
}

// TestErrorsAreClassified (double: it injects failures): failures retrying
// cannot fix are permanent and name the field to fix; the rest stay
// transient.
func TestErrorsAreClassified(t *testing.T) {
	cases := []struct {
		name      string
		op        string
		status    int
		code      int
		permanent bool
		want      string
	}{
		{name: "server error", status: 500, code: 10001, want: "500"},
		{name: "unavailable", status: 503, code: 10000, want: "503"},
		{name: "unauthorized", status: 401, code: 10000, permanent: true, want: "spec.solver.dns01.cloudflare.apiTokenSecretRef: Cloudflare refused the credentials"},
		{name: "invalid token", status: 400, code: 9109, permanent: true, want: "spec.solver.dns01.cloudflare.apiTokenSecretRef: Cloudflare refused the credentials"},
		{name: "forbidden", status: 403, code: 10000, permanent: true, want: "spec.solver.dns01.cloudflare.apiTokenSecretRef: the cloudflare API token may not do this"},
		{name: "record refused", op: "dns_records.create", status: 400, code: 81057, permanent: true, want: "spec.solver.dns01.cloudflare: Cloudflare refused the record"},
		{name: "zone went away", op: "dns_records.list", status: 404, code: 7003, want: "404"},
		{name: "conflict", op: "dns_records.create", status: 409, code: 1000, want: "409"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newDoubleBackend(t)
			b.double.Fail(tc.op, 1, tc.status, tc.code)
			p := build(t, b.factory(), b.request())
			_, err := p.AppendRecords(context.Background(), "example.com.", []libdns.Record{libdns.TXT{Name: fmt.Sprintf("_acme-challenge.err%d", i), Text: "v"}})
			if err == nil || errs.IsPermanent(err) != tc.permanent || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want permanent=%v containing %q", err, tc.permanent, tc.want)
			}
		})
	}
	t.Run("malformed authorization header names the token", func(t *testing.T) {
		b := newDoubleBackend(t)
		b.double.AddToken("x", "x")
		req := b.request()
		req.Secrets = certtest.NewMemSecrets(ports.Secret{Namespace: secretNS, Name: secretName, Data: map[string][]byte{"api-token": []byte("has space")}})
		p := build(t, b.factory(), req)
		_, err := p.AppendRecords(context.Background(), "example.com.", []libdns.Record{libdns.TXT{Name: "_acme-challenge.hdr", Text: "v"}})
		if !errs.IsPermanent(err) || !strings.Contains(err.Error(), "spec.solver.dns01.cloudflare.apiTokenSecretRef: Cloudflare refused the credentials") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("network errors are transient", func(t *testing.T) {
		p := &Provider{Config: Config{Path: "spec.solver.dns01.cloudflare", APIToken: "x"}}
		if err := p.classify(errors.New("network down"), opRead); err == nil || errs.IsPermanent(err) {
			t.Fatalf("a network error = %v, want transient", err)
		}
	})
	t.Run("unreachable API is transient", func(t *testing.T) {
		b := newDoubleBackend(t)
		b.opts.BaseURL = "http://127.0.0.1:1/client/v4/"
		p := build(t, b.factory(), b.request())
		_, err := p.AppendRecords(context.Background(), "example.com.", []libdns.Record{libdns.TXT{Name: "_acme-challenge.down", Text: "v"}})
		if err == nil || errs.IsPermanent(err) {
			t.Fatalf("err = %v, want transient", err)
		}
	})
}

// TestRetryAfter: Retry-After in seconds or as an HTTP date.
func TestRetryAfter(t *testing.T) {
	date := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		header, date string
		want         time.Duration
		ok           bool
	}{
		{"30", "", 30 * time.Second, true},
		{date.Add(90 * time.Second).Format(http.TimeFormat), date.Format(http.TimeFormat), 90 * time.Second, true},
		{date.Add(-time.Minute).Format(http.TimeFormat), date.Format(http.TimeFormat), 0, true},
		{"soon", "", 0, false},
		{"", "", 0, false},
	} {
		res := &http.Response{Header: http.Header{}}
		if tc.header != "" {
			res.Header.Set("Retry-After", tc.header)
		}
		if tc.date != "" {
			res.Header.Set("Date", tc.date)
		}
		if got, ok := retryAfter(res); got != tc.want || ok != tc.ok {
			t.Errorf("Retry-After %q = %s, %v; want %s, %v", tc.header, got, ok, tc.want, tc.ok)
		}
	}
}

// TestParse: cert-manager's rules for the cloudflare solver, each
// violation a permanent error naming the field; the secret never shows.
func TestParse(t *testing.T) {
	spec := func(f func(*api.ACMEIssuerDNS01ProviderCloudflare)) mod {
		return func(s *api.ACMEIssuerDNS01ProviderCloudflare, _ *dns01.ProviderRequest) { f(s) }
	}
	const p = "spec.solver.dns01.cloudflare"
	b := &backend{token: testToken}
	cases := []struct {
		name      string
		mods      []mod
		wantToken bool
		wantEmail string
		wantErr   string
	}{
		{name: "API token", wantToken: true},
		{name: "API token with an email (ignored)", mods: []mod{spec(func(s *api.ACMEIssuerDNS01ProviderCloudflare) { s.Email = testEmail })}, wantToken: true},
		{name: "global API key with email", mods: []mod{withKey(testEmail)}, wantEmail: testEmail},
		{name: "both", mods: []mod{spec(func(s *api.ACMEIssuerDNS01ProviderCloudflare) { s.APIKey = ref("api-key"); s.Email = testEmail })},
			wantErr: p + ": apiKeySecretRef and apiTokenSecretRef cannot both be specified"},
		{name: "neither", mods: []mod{spec(func(s *api.ACMEIssuerDNS01ProviderCloudflare) { s.APIToken = nil })},
			wantErr: p + ": apiKeySecretRef or apiTokenSecretRef is required"},
		{name: "key without email", mods: []mod{withKey("")}, wantErr: p + ".email: required with apiKeySecretRef"},
		{name: "key with a bad email", mods: []mod{withKey("admin\nX-Injected: 1")}, wantErr: p + `.email: "admin\nX-Injected: 1" is not an email address`},
		{name: "secret key missing", mods: []mod{withToken("nope")}, wantErr: p + `.apiTokenSecretRef: secret cert-manager/cloudflare has no usable key "nope"`},
		{name: "secret name missing", mods: []mod{spec(func(s *api.ACMEIssuerDNS01ProviderCloudflare) {
			s.APIToken = &api.SecretKeySelector{Key: "api-token"}
		})}, wantErr: p + ".apiTokenSecretRef.name: required"},
		{name: "secret ref key missing", mods: []mod{spec(func(s *api.ACMEIssuerDNS01ProviderCloudflare) {
			s.APIKey, s.APIToken, s.Email = &api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: secretName}}, nil, testEmail
		})}, wantErr: p + ".apiKeySecretRef.key: required"},
		{name: "token with a newline", mods: []mod{withToken("newline")},
			wantErr: p + `.apiTokenSecretRef: the Cloudflare API token in secret cert-manager/cloudflare key "newline" is invalid (does it contain a newline?)`},
		{name: "no solver", mods: []mod{func(_ *api.ACMEIssuerDNS01ProviderCloudflare, r *dns01.ProviderRequest) { r.DNS01.Cloudflare = nil }}, wantErr: p + ": required"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(context.Background(), b.request(tc.mods...))
			if tc.wantErr != "" {
				if !errs.IsPermanent(err) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want a permanent error containing %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), testToken) || strings.Contains(err.Error(), testKey) {
					t.Fatalf("error shows the secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (got.APIToken == testToken) != tc.wantToken || got.Email != tc.wantEmail || got.Path != p {
				t.Fatalf("Parse = %+v", got)
			}
			if !tc.wantToken && got.APIKey != testKey {
				t.Fatalf("APIKey not read")
			}
			for _, s := range []string{got.String(), fmt.Sprintf("%v %+v %#v", got, got, got)} {
				if strings.Contains(s, testToken) || strings.Contains(s, testKey) {
					t.Fatalf("Config prints its secret: %s", s)
				}
			}
		})
	}
}

// A secret store that fails is transient, and names the field.
func TestParseSecretStoreFailure(t *testing.T) {
	req := (&backend{token: testToken}).request()
	req.Secrets = failingSecrets{}
	_, err := Parse(context.Background(), req)
	if err == nil || errs.IsPermanent(err) || !strings.Contains(err.Error(), "spec.solver.dns01.cloudflare.apiTokenSecretRef") {
		t.Fatalf("err = %v, want a transient error naming apiTokenSecretRef", err)
	}
}

type failingSecrets struct{ ports.SecretStore }

func (failingSecrets) Get(context.Context, string, string) (ports.Secret, error) {
	return ports.Secret{}, errors.New("secret store unavailable")
}

// TestSolverKey: cert-manager's cloudflare YAML decodes into the fields
// Parse reads, and core/acme/dns01 selects it under dns01.KeyCloudflare.
func TestSolverKey(t *testing.T) {
	var d api.ACMEChallengeSolverDNS01
	if err := json.Unmarshal([]byte(`{"cloudflare":{"email":"a@example.com","apiKeySecretRef":{"name":"cf","key":"key"},"apiTokenSecretRef":{"name":"cf","key":"token"}}}`), &d); err != nil {
		t.Fatal(err)
	}
	c := d.Cloudflare
	if c == nil || c.Email != "a@example.com" || c.APIKey.Key != "key" || c.APIToken.Key != "token" {
		t.Fatalf("decoded %+v", c)
	}
	if dns01.KeyCloudflare != "cloudflare" {
		t.Fatalf("dns01.KeyCloudflare = %q", dns01.KeyCloudflare)
	}
}

// TestTXTEncoding: values round-trip quoted; long values are split into
// 255-octet strings; unquoted content written by others is its own text.
func TestTXTEncoding(t *testing.T) {
	long := strings.Repeat("L", 300)
	for _, tc := range []struct{ text, encoded string }{
		{"v", `"v"`},
		{long, `"` + long[:255] + `" "` + long[255:] + `"`},
		{`say "hi" \o/`, `"say \"hi\" \\o/"`},
	} {
		if got := EncodeTXT(tc.text); got != tc.encoded {
			t.Errorf("EncodeTXT(%q) = %s, want %s", tc.text, got, tc.encoded)
		}
		if got := DecodeTXT(tc.encoded); got != tc.text {
			t.Errorf("DecodeTXT(%s) = %q, want %q", tc.encoded, got, tc.text)
		}
	}
	for raw, want := range map[string]string{
		`v=spf1 include:_spf.example.com -all`: "v=spf1 include:_spf.example.com -all",
		`"v=spf1 " "-all"`:                     "v=spf1 -all",
	} {
		if got := DecodeTXT(raw); got != want {
			t.Errorf("DecodeTXT(%s) = %q, want %q", raw, got, want)
		}
	}
}
