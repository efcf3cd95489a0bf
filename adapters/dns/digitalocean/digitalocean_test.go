package digitalocean

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/libdns/libdns"

	"github.com/certfn/certfn/adapters/dns/digitalocean/digitaloceantest"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/ports/porttest"
)

// TestProviderSuite runs certfn's provider contract
// (porttest.DNSProviderSuite), reading the values back outside the
// provider.
func TestProviderSuite(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		porttest.DNSProviderSuite(t, porttest.DNSEnv{
			Provider: build(t, b.factory(), b.request()),
			Zone:     b.base(t),
			Lookup:   b.txt,
		})
	})
}

// TestKeepsOtherValues: our value is added next to values written by
// someone else, written only when missing, and removed alone; every write
// is one create or one delete of our record, with TTL 60 s and a name
// relative to the domain.
func TestKeepsOtherValues(t *testing.T) {
	b := newDoubleBackend(t)
	d := b.double
	const fqdn = "_acme-challenge.keep.example.com"
	d.SetRecord(fqdn, "TXT", "theirs with spaces", 300)
	steps := []struct {
		op, value        string
		want             []string
		creates, deletes int
	}{
		{"append", "ours", []string{"ours", "theirs with spaces"}, 1, 0},
		{"append", "ours", []string{"ours", "theirs with spaces"}, 0, 0},
		{"delete", "never-added", []string{"ours", "theirs with spaces"}, 0, 0},
		{"delete", "ours", []string{"theirs with spaces"}, 0, 1},
		{"delete", "ours", []string{"theirs with spaces"}, 0, 0},
	}
	for i, s := range steps {
		p := build(t, b.factory(), b.request()) // a new value per step, as the Solver builds
		creates, deletes := d.Count("records.create"), d.Count("records.delete")
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
		if c, dl := d.Count("records.create")-creates, d.Count("records.delete")-deletes; c != s.creates || dl != s.deletes {
			t.Fatalf("step %d %s %q: %d creates and %d deletes, want %d and %d", i, s.op, s.value, c, dl, s.creates, s.deletes)
		}
		if i == 0 {
			recs := d.Records(doubleDomain)
			j := slices.IndexFunc(recs, func(r digitaloceantest.Record) bool { return r.Data == "ours" })
			if j < 0 || recs[j].Name != "_acme-challenge.keep" || recs[j].TTL != 60 {
				t.Fatalf("our record %+v, want name _acme-challenge.keep and TTL 60", recs)
			}
		}
	}
}

// TestPagination (double, pages of 2): the domains and the name's TXT
// records are listed over every page (links.pages.next), so a domain and a
// value on the last page are found.
func TestPagination(t *testing.T) {
	b := newDoubleBackend(t)
	d := b.double
	for i := range 4 {
		d.AddDomain(fmt.Sprintf("other-%d.example.net", i))
	}
	d.AddDomain("sub.example.com") // the 6th domain: page 3
	const fqdn = "_acme-challenge.www.sub.example.com"
	for i := range 5 {
		d.SetRecord(fqdn, "TXT", fmt.Sprintf("other-%d", i), 60)
	}
	d.SetRecord(fqdn, "TXT", "ours", 60) // the 6th record: page 3
	p := build(t, b.factory(), b.request())
	rec := []libdns.Record{libdns.TXT{Name: "_acme-challenge.www.sub", Text: "ours"}}
	if _, err := p.AppendRecords(context.Background(), "example.com.", rec); err != nil {
		t.Fatal(err)
	}
	if n := d.Count("domains.list"); n != 3 {
		t.Errorf("domains.list calls = %d, want 3 (6 domains, 2 per page)", n)
	}
	if n := d.Count("records.list"); n != 3 {
		t.Errorf("records.list calls = %d, want 3 (6 records, 2 per page)", n)
	}
	if n := d.Count("records.create"); n != 0 {
		t.Fatalf("%d creates: the value on the last page was not found", n)
	}
	if _, err := p.DeleteRecords(context.Background(), "example.com.", rec); err != nil {
		t.Fatal(err)
	}
	if got := d.TXT(fqdn); len(got) != 5 || slices.Contains(got, "ours") {
		t.Fatalf("TXT now %q, want the 5 others", got)
	}
	for _, r := range d.Records("sub.example.com") {
		if r.Name != "_acme-challenge.www" {
			t.Fatalf("record %+v in sub.example.com, want the name relative to it", r)
		}
	}
}

// TestDomainDiscovery (double): the domain is the longest one that is a
// suffix of the name; none is a permanent error naming the solver.
func TestDomainDiscovery(t *testing.T) {
	for _, tc := range []struct {
		name, record, want, wantErr string
	}{
		{"longest suffix", "_acme-challenge.www.sub.example.com.", "sub.example.com", ""},
		{"parent", "_acme-challenge.www.example.com.", "example.com", ""},
		{"apex of a domain", "sub.example.com.", "sub.example.com", ""},
		{"no domain", "_acme-challenge.example.org.", "", "spec.solver.dns01.digitalocean: no domain of the DigitalOcean account holds _acme-challenge.example.org."},
		{"label suffix only", "_acme-challenge.notexample.com.", "", "no domain of the DigitalOcean account holds _acme-challenge.notexample.com."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newDoubleBackend(t)
			b.double.AddDomain("sub.example.com")
			p := build(t, b.factory(), b.request())
			_, err := p.AppendRecords(context.Background(), ".", []libdns.Record{libdns.TXT{Name: tc.record, Text: "v"}})
			if tc.wantErr != "" {
				if !errs.IsPermanent(err) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want a permanent error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if recs := b.double.Records(tc.want); len(recs) != 1 {
				t.Fatalf("domain %s holds %+v, want our record", tc.want, recs)
			}
		})
	}
}

// TestCredentials (double): calls are made with the secret's token,
// trimmed; an unknown token, or one without the scopes, is a permanent
// error naming tokenSecretRef.
func TestCredentials(t *testing.T) {
	rec := []libdns.Record{libdns.TXT{Name: "_acme-challenge.creds", Text: "v"}}
	for _, tc := range []struct {
		name, key, deny, wantErr string
	}{
		{name: "token", key: "access-token"},
		{name: "padded token is trimmed", key: "padded"},
		{name: "unknown token", key: "wrong", wantErr: "spec.solver.dns01.digitalocean.tokenSecretRef: DigitalOcean refused the API token"},
		{name: "token without the scopes", key: "access-token", deny: "test",
			wantErr: "spec.solver.dns01.digitalocean.tokenSecretRef: the API token may not do this (it needs domain:read, domain:create and domain:delete, or full access)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newDoubleBackend(t)
			if tc.deny != "" {
				b.double.Deny(tc.deny)
			}
			p := build(t, b.factory(), b.request(withToken(tc.key)))
			_, err := p.AppendRecords(context.Background(), "example.com.", rec)
			if tc.wantErr != "" {
				if !errs.IsPermanent(err) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want a permanent error containing %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), testToken) || strings.Contains(err.Error(), "dop_v1_wrong") {
					t.Fatalf("error shows the token: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range b.double.Calls() {
				if c.Token != "test" {
					t.Errorf("%s made with token %q, want test", c.Op, c.Token)
				}
			}
		})
	}
}

// TestRateLimit (double): a 429 is one call and a transient error carrying
// the time until ratelimit-reset; the client does not retry or wait; the
// next step succeeds.
func TestRateLimit(t *testing.T) {
	for _, op := range []string{"domains.list", "records.list", "records.create", "records.delete"} {
		t.Run(op, func(t *testing.T) {
			b := newDoubleBackend(t)
			d := b.double
			rec := []libdns.Record{libdns.TXT{Name: "_acme-challenge.limited", Text: "v"}}
			run := func() error {
				p := build(t, b.factory(), b.request())
				if op == "records.delete" {
					_, err := p.DeleteRecords(context.Background(), "example.com.", rec)
					return err
				}
				_, err := p.AppendRecords(context.Background(), "example.com.", rec)
				return err
			}
			if op == "records.delete" {
				d.SetRecord("_acme-challenge.limited.example.com", "TXT", "v", 60)
			}
			d.RateLimit(op, 1, 2*time.Minute)
			before := d.Count(op)
			err := run()
			if err == nil || errs.IsPermanent(err) || !strings.Contains(err.Error(), "DigitalOcean rate limit") {
				t.Fatalf("err = %v, want a transient rate-limit error", err)
			}
			delay, ok := errs.SuggestedDelay(err)
			if !ok || delay <= 0 || delay > 2*time.Minute+time.Second {
				t.Fatalf("suggested delay = %s, %v; want about 2m (ratelimit-reset)", delay, ok)
			}
			if n := d.Count(op) - before; n != 1 {
				t.Fatalf("%s calls = %d, want 1 (the client must not retry)", op, n)
			}
			if err := run(); err != nil {
				t.Fatalf("next step: %v", err)
			}
		})
	}
}

// TestRetryAfter: Retry-After wins over ratelimit-reset; both are capped.
func TestRetryAfter(t *testing.T) {
	now := time.Unix(1_900_000_000, 0)
	for _, tc := range []struct {
		retryAfter, reset string
		want              time.Duration
		ok                bool
	}{
		{"", strconv.FormatInt(now.Unix()+90, 10), 90 * time.Second, true},
		{"7", strconv.FormatInt(now.Unix()+90, 10), 7 * time.Second, true},
		{"", strconv.FormatInt(now.Unix()-5, 10), 0, true},
		{"", strconv.FormatInt(now.Unix()+7200, 10), maxRetryAfter, true},
		{"", "", 0, false},
	} {
		res := &http.Response{Header: http.Header{}}
		if tc.retryAfter != "" {
			res.Header.Set("Retry-After", tc.retryAfter)
		}
		if tc.reset != "" {
			res.Header.Set("ratelimit-reset", tc.reset)
		}
		if got, ok := retryAfter(res, now); got != tc.want || ok != tc.ok {
			t.Errorf("Retry-After %q reset %q = %s, %v; want %s, %v", tc.retryAfter, tc.reset, got, ok, tc.want, tc.ok)
		}
	}
}

// TestErrorsAreClassified (double: it injects failures): failures retrying
// cannot fix are permanent and name the field to fix; the rest stay
// transient.
func TestErrorsAreClassified(t *testing.T) {
	cases := []struct {
		name, op  string
		status    int
		id        string
		permanent bool
		want      string
	}{
		{name: "server error", status: 500, id: "server_error", want: "500"},
		{name: "unavailable", status: 503, id: "service_unavailable", want: "503"},
		{name: "unauthorized", status: 401, id: "Unauthorized", permanent: true, want: "spec.solver.dns01.digitalocean.tokenSecretRef: DigitalOcean refused the API token"},
		{name: "forbidden", status: 403, id: "Forbidden", permanent: true, want: "spec.solver.dns01.digitalocean.tokenSecretRef: the API token may not do this"},
		{name: "record refused", op: "records.create", status: 422, id: "unprocessable_entity", permanent: true, want: "spec.solver.dns01.digitalocean: DigitalOcean refused the request"},
		{name: "domain went away", op: "records.list", status: 404, id: "not_found", want: "404"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newDoubleBackend(t)
			b.double.Fail(tc.op, 1, tc.status, tc.id)
			p := build(t, b.factory(), b.request())
			_, err := p.AppendRecords(context.Background(), "example.com.", []libdns.Record{libdns.TXT{Name: fmt.Sprintf("_acme-challenge.err%d", i), Text: "v"}})
			if err == nil || errs.IsPermanent(err) != tc.permanent || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want permanent=%v containing %q", err, tc.permanent, tc.want)
			}
		})
	}
	t.Run("data too long is refused", func(t *testing.T) {
		b := newDoubleBackend(t)
		p := build(t, b.factory(), b.request())
		_, err := p.AppendRecords(context.Background(), "example.com.", []libdns.Record{libdns.TXT{Name: "_acme-challenge.long", Text: strings.Repeat("L", 600)}})
		if !errs.IsPermanent(err) || !strings.Contains(err.Error(), "DigitalOcean refused the request") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("a record deleted in between is fine", func(t *testing.T) {
		b := newDoubleBackend(t)
		b.double.SetRecord("_acme-challenge.gone.example.com", "TXT", "v", 60)
		b.double.Fail("records.delete", 1, 404, "not_found")
		p := build(t, b.factory(), b.request())
		if _, err := p.DeleteRecords(context.Background(), "example.com.", []libdns.Record{libdns.TXT{Name: "_acme-challenge.gone", Text: "v"}}); err != nil {
			t.Fatalf("err = %v, want none", err)
		}
	})
	t.Run("network errors are transient", func(t *testing.T) {
		b := newDoubleBackend(t)
		b.opts.BaseURL = "http://127.0.0.1:1/"
		p := build(t, b.factory(), b.request())
		_, err := p.AppendRecords(context.Background(), "example.com.", []libdns.Record{libdns.TXT{Name: "_acme-challenge.down", Text: "v"}})
		if err == nil || errs.IsPermanent(err) {
			t.Fatalf("err = %v, want transient", err)
		}
	})
}

// TestParse: cert-manager's rules for the digitalocean solver, each
// violation a permanent error naming the field; the token never shows.
func TestParse(t *testing.T) {
	const p = "spec.solver.dns01.digitalocean"
	b := &backend{token: testToken}
	cases := []struct {
		name    string
		mod     func(*dns01.ProviderRequest)
		want    string
		wantErr string
	}{
		{name: "token", mod: withToken("access-token"), want: testToken},
		{name: "white space trimmed", mod: withToken("padded"), want: testToken},
		{name: "only white space", mod: withToken("blank"), wantErr: p + `.tokenSecretRef: secret cert-manager/digitalocean key "blank" holds only white space`},
		{name: "control character", mod: withToken("control"), wantErr: p + `.tokenSecretRef: the DigitalOcean API token in secret cert-manager/digitalocean key "control" is invalid`},
		{name: "secret key missing", mod: withToken("nope"), wantErr: p + `.tokenSecretRef: secret cert-manager/digitalocean has no usable key "nope"`},
		{name: "secret name missing", mod: func(r *dns01.ProviderRequest) { r.DNS01.DigitalOcean.Token.Name = "" }, wantErr: p + ".tokenSecretRef.name: required"},
		{name: "key missing", mod: func(r *dns01.ProviderRequest) { r.DNS01.DigitalOcean.Token.Key = "" }, wantErr: p + ".tokenSecretRef.key: required"},
		{name: "no solver", mod: func(r *dns01.ProviderRequest) { r.DNS01.DigitalOcean = nil }, wantErr: p + ": required"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(context.Background(), b.request(tc.mod))
			if tc.wantErr != "" {
				if !errs.IsPermanent(err) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want a permanent error containing %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), testToken) {
					t.Fatalf("error shows the token: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Token != tc.want || got.Path != p {
				t.Fatalf("Parse = %v (token read: %v)", got, got.Token == tc.want)
			}
			if s := fmt.Sprintf("%v %+v %#v %s", got, got, got, got); strings.Contains(s, testToken) {
				t.Fatalf("Config prints its token: %s", s)
			}
		})
	}
}

// A secret store that fails is transient, and names the field.
func TestParseSecretStoreFailure(t *testing.T) {
	req := (&backend{token: testToken}).request()
	req.Secrets = failingSecrets{}
	_, err := Parse(context.Background(), req)
	if err == nil || errs.IsPermanent(err) || !strings.Contains(err.Error(), "spec.solver.dns01.digitalocean.tokenSecretRef") {
		t.Fatalf("err = %v, want a transient error naming tokenSecretRef", err)
	}
}

type failingSecrets struct{ ports.SecretStore }

func (failingSecrets) Get(context.Context, string, string) (ports.Secret, error) {
	return ports.Secret{}, errors.New("secret store unavailable")
}

// TestSolverKey: cert-manager's digitalocean YAML decodes into the field
// Parse reads, and core/acme/dns01 selects it under dns01.KeyDigitalOcean.
func TestSolverKey(t *testing.T) {
	var d api.ACMEChallengeSolverDNS01
	if err := json.Unmarshal([]byte(`{"digitalocean":{"tokenSecretRef":{"name":"do","key":"access-token"}}}`), &d); err != nil {
		t.Fatal(err)
	}
	if d.DigitalOcean == nil || d.DigitalOcean.Token.Name != "do" || d.DigitalOcean.Token.Key != "access-token" {
		t.Fatalf("decoded %+v", d.DigitalOcean)
	}
	if dns01.KeyDigitalOcean != "digitalocean" {
		t.Fatalf("dns01.KeyDigitalOcean = %q", dns01.KeyDigitalOcean)
	}
}
