package acmedns

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libdns/libdns"
	"github.com/miekg/dns"

	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports/porttest"
)

// value returns a DNS-01-shaped value (43 base64url characters) for s:
// acme-dns takes no other.
func value(s string) string {
	sum := sha256.Sum256([]byte(s))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// TestProviderSuite runs certfn's provider contract
// (porttest.DNSProviderSuite) with one registration per name the suite
// uses, reading the values back from acme-dns. acme-dns's API fixes three
// things the suite cannot change: it takes only 43-character values (the
// suite's values are mapped to their SHA-256 in base64url, the form of
// every DNS-01 value), it has no delete, and it keeps the two latest
// values of a registration whatever they are. The cases that need a
// delete, an idempotent append or a long value are skipped with that
// reason; the others run.
func TestProviderSuite(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		const zone = "acmedns-suite.test."
		regs := registrations{}
		for i := 1; i <= 7; i++ {
			regs[fmt.Sprintf("suite-%d.acmedns-suite.test", i)] = b.register(t)
		}
		p := build(t, request(b.url, regs))
		porttest.DNSProviderSuite(t, porttest.DNSEnv{
			Provider: p,
			Zone:     zone,
			Lookup: func(t *testing.T, fqdn string) []string {
				domain := strings.TrimSuffix(strings.TrimPrefix(fqdn, "_acme-challenge."), ".")
				a, ok := regs[domain]
				if !ok {
					return nil
				}
				return b.txt(t, a)
			},
			Value: value,
			Unsupported: map[porttest.DNSCase]string{
				porttest.DNSAppendIdempotent: "acme-dns has no read API and stores a value sent again in its other slot (the Solver presents a value once per Challenge step and keeps it on status.dns01)",
				porttest.DNSDeleteExact:      "acme-dns has no delete: the next update replaces the older of its two values",
				porttest.DNSDeleteAll:        "acme-dns has no delete",
				porttest.DNSLongValues:       "acme-dns takes only values of 43 base64url characters (a DNS-01 value's form)",
			},
		})
	})
}

// TestRecordNames: the record's name maps back to the registration of the
// challenge's domain, whatever name the Solver hands over:
// _acme-challenge.<domain> (cnameStrategy None; a wildcard's challenge has
// its base name), or the registration's fulldomain (cnameStrategy Follow,
// the CNAME's target). A name no registration matches is a permanent
// error naming accountSecretRef.
func TestRecordNames(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		a, w := b.register(t), b.register(t)
		acmeZone := dns.Fqdn(a.FullDomain[strings.Index(a.FullDomain, ".")+1:])
		cases := []struct {
			name       string
			regs       registrations
			zone, rec  string
			want       *Account // whose values get ours
			wantErr    string
			notInError []string
		}{
			{name: "the domain's challenge name", regs: registrations{"example.com": a},
				zone: "example.com.", rec: "_acme-challenge", want: &a},
			{name: "a subdomain's challenge name", regs: registrations{"example.com": w, "www.example.com": a},
				zone: "example.com.", rec: "_acme-challenge.www", want: &a},
			{name: "an entry keyed by the wildcard is used for its base name", regs: registrations{"*.example.com": a},
				zone: "example.com.", rec: "_acme-challenge", want: &a},
			{name: "the domain's own entry wins over the wildcard's", regs: registrations{"example.com": a, "*.example.com": w},
				zone: "example.com.", rec: "_acme-challenge", want: &a},
			{name: "keys in any case and with a trailing dot", regs: registrations{"Example.COM.": a},
				zone: "example.com.", rec: "_ACME-Challenge", want: &a},
			{name: "the fulldomain (cnameStrategy Follow)", regs: registrations{"example.com": w, "example.org": a},
				zone: acmeZone, rec: a.SubDomain, want: &a},
			{name: "no registration for the domain", regs: registrations{"example.com": a, "example.net": w},
				zone: "example.org.", rec: "_acme-challenge",
				wantErr:    "spec.solver.dns01.acmeDNS.accountSecretRef: secret cert-manager/acme-dns key \"acmedns.json\" has no acme-dns registration for _acme-challenge.example.org. (registered: example.com, example.net)",
				notInError: []string{a.Password, w.Password}},
			{name: "another subdomain's name is not its parent's", regs: registrations{"example.com": a},
				zone: "example.com.", rec: "_acme-challenge.www",
				wantErr: "has no acme-dns registration for _acme-challenge.www.example.com. (registered: example.com)"},
		}
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				v := value(fmt.Sprint(tc.name, i))
				p := build(t, request(b.url, tc.regs))
				out, err := p.AppendRecords(context.Background(), tc.zone, []libdns.Record{libdns.TXT{Name: tc.rec, Text: v}})
				if tc.wantErr != "" {
					if !errs.IsPermanent(err) || !strings.Contains(err.Error(), tc.wantErr) {
						t.Fatalf("err = %v, want a permanent error containing %q", err, tc.wantErr)
					}
					for _, s := range tc.notInError {
						if strings.Contains(err.Error(), s) {
							t.Fatalf("error shows a password: %v", err)
						}
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if len(out) != 1 || out[0].(libdns.TXT).Text != v || out[0].(libdns.TXT).Name != tc.rec {
					t.Fatalf("AppendRecords returned %#v", out)
				}
				for _, acct := range []Account{a, w} {
					has := slices.Contains(b.txt(t, acct), v)
					if want := acct.SubDomain == tc.want.SubDomain; has != want {
						t.Fatalf("%s holds our value: %v, want %v", acct, has, want)
					}
				}
			})
		}
	})
}

// TestTwoValuesNoDelete: a wildcard and its base name share the domain's
// registration and both values are served (acme-dns's two slots); a value
// given twice in one call is sent once; a third value replaces the oldest;
// DeleteRecords changes nothing and calls nothing.
func TestTwoValuesNoDelete(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		a := b.register(t)
		p := build(t, request(b.url, registrations{"example.com": a}))
		apex, wild, third := value("apex"), value("wildcard"), value("third")
		updates := func() int {
			if b.double == nil {
				return 0
			}
			return b.double.Count("update")
		}
		n := updates()
		if _, err := p.AppendRecords(ctx, "example.com.", []libdns.Record{
			libdns.TXT{Name: "_acme-challenge", Text: apex}, libdns.TXT{Name: "_acme-challenge", Text: apex},
		}); err != nil {
			t.Fatal(err)
		}
		if b.double != nil && updates()-n != 1 {
			t.Fatalf("%d updates for one value given twice, want 1", updates()-n)
		}
		if _, err := p.AppendRecords(ctx, "example.com.", []libdns.Record{libdns.TXT{Name: "_acme-challenge", Text: wild}}); err != nil {
			t.Fatal(err)
		}
		want := []string{apex, wild}
		slices.Sort(want)
		if got := b.txt(t, a); !slices.Equal(got, want) {
			t.Fatalf("TXT = %q, want both values %q", got, want)
		}
		n = updates()
		out, err := p.DeleteRecords(ctx, "example.com.", []libdns.Record{libdns.TXT{Name: "_acme-challenge", Text: apex}, libdns.TXT{Name: "_acme-challenge"}})
		if err != nil || len(out) != 0 {
			t.Fatalf("DeleteRecords = %v, %v; want nothing deleted and no error", out, err)
		}
		if got := b.txt(t, a); !slices.Equal(got, want) || updates() != n {
			t.Fatalf("after DeleteRecords TXT = %q (%d calls); want %q unchanged, no call", got, updates()-n, want)
		}
		if _, err := p.AppendRecords(ctx, "example.com.", []libdns.Record{libdns.TXT{Name: "_acme-challenge", Text: third}}); err != nil {
			t.Fatal(err)
		}
		want = []string{wild, third}
		slices.Sort(want)
		if got := b.txt(t, a); !slices.Equal(got, want) {
			t.Fatalf("TXT = %q, want the oldest value replaced: %q", got, want)
		}
	})
}

// TestParse: the factory's validation, one permanent error per rule naming
// the field; a failing secret store is transient; no error and no
// rendering of the configuration shows a password or the secret's bytes.
func TestParse(t *testing.T) {
	const pw = "s3cretPASSWORDs3cretPASSWORDs3cretPASSWO"
	good := registrations{"example.com": {Username: "c36f50e8-4632-44f0-83fe-e070fef28a10", Password: pw, SubDomain: "8e5700ea-a4bf-41c7-8a77-e990661dcc6a", FullDomain: "8e5700ea-a4bf-41c7-8a77-e990661dcc6a.auth.example.org"}}
	raw := func(s string) func(*api.ACMEIssuerDNS01ProviderAcmeDNS, *dns01.ProviderRequest) {
		return func(_ *api.ACMEIssuerDNS01ProviderAcmeDNS, r *dns01.ProviderRequest) {
			*r = requestRaw("https://acme-dns.example.org", []byte(s))
		}
	}
	cases := []struct {
		name      string
		host      string
		mods      []mod
		wantErr   string
		transient bool
		wantHost  string
	}{
		{name: "valid", host: "https://acme-dns.example.org/", wantHost: "https://acme-dns.example.org"},
		{name: "a path is kept", host: "http://10.0.0.5:8080/acme-dns/", wantHost: "http://10.0.0.5:8080/acme-dns"},
		{name: "no host", host: " ", wantErr: "spec.solver.dns01.acmeDNS.host: required"},
		{name: "not http", host: "ftp://acme-dns.example.org", wantErr: "spec.solver.dns01.acmeDNS.host: \"ftp://acme-dns.example.org\" is not an http or https URL"},
		{name: "no scheme", host: "acme-dns.example.org", wantErr: "spec.solver.dns01.acmeDNS.host: \"acme-dns.example.org\" is not an http or https URL"},
		{name: "user information", host: "https://u:" + pw + "@acme-dns.example.org", wantErr: "spec.solver.dns01.acmeDNS.host: must not carry user information"},
		{name: "query", host: "https://acme-dns.example.org/?x=1", wantErr: "spec.solver.dns01.acmeDNS.host: \"https://acme-dns.example.org/?x=1\" must not have a query or fragment"},
		{name: "no secret name", host: "https://a.example", mods: []mod{func(s *api.ACMEIssuerDNS01ProviderAcmeDNS, _ *dns01.ProviderRequest) {
			s.AccountSecret = ref("", secretKey)
		}}, wantErr: "spec.solver.dns01.acmeDNS.accountSecretRef.name: required"},
		{name: "missing secret", host: "https://a.example", mods: []mod{func(s *api.ACMEIssuerDNS01ProviderAcmeDNS, _ *dns01.ProviderRequest) {
			s.AccountSecret = ref("other", secretKey)
		}}, wantErr: "spec.solver.dns01.acmeDNS.accountSecretRef: secret cert-manager/other has no usable key \"acmedns.json\""},
		{name: "empty key", host: "https://a.example", mods: []mod{func(s *api.ACMEIssuerDNS01ProviderAcmeDNS, _ *dns01.ProviderRequest) {
			s.AccountSecret = ref(secretName, "empty")
		}}, wantErr: "spec.solver.dns01.acmeDNS.accountSecretRef: secret cert-manager/acme-dns has no usable key \"empty\""},
		{name: "secret store failing", host: "https://a.example", mods: []mod{func(_ *api.ACMEIssuerDNS01ProviderAcmeDNS, r *dns01.ProviderRequest) {
			r.Secrets.(*certtest.MemSecrets).GetErr = errors.New("throttled")
		}}, wantErr: "spec.solver.dns01.acmeDNS.accountSecretRef: read secret cert-manager/acme-dns: throttled", transient: true},
		{name: "not JSON", mods: []mod{raw(`{"example.com": {"password": "` + pw + `"`)},
			wantErr: "spec.solver.dns01.acmeDNS.accountSecretRef: secret cert-manager/acme-dns key \"acmedns.json\": not valid JSON"},
		{name: "a registration that is not an object", mods: []mod{raw(`{"example.com": "` + pw + `"}`)},
			wantErr: "spec.solver.dns01.acmeDNS.accountSecretRef: secret cert-manager/acme-dns key \"acmedns.json\": the registration of example.com is not a JSON object"},
		{name: "a field of the wrong type", mods: []mod{raw(`{"example.com": {"username": "u", "password": ["` + pw + `"], "subdomain": "s"}}`)},
			wantErr: "spec.solver.dns01.acmeDNS.accountSecretRef: secret cert-manager/acme-dns key \"acmedns.json\": the registration of example.com: password is a JSON array, want a string"},
		{name: "a list", mods: []mod{raw(`[{"password": "` + pw + `"}]`)},
			wantErr: "spec.solver.dns01.acmeDNS.accountSecretRef: secret cert-manager/acme-dns key \"acmedns.json\": not a JSON object of registrations"},
		{name: "no registration", mods: []mod{raw(`{}`)},
			wantErr: "spec.solver.dns01.acmeDNS.accountSecretRef: secret cert-manager/acme-dns key \"acmedns.json\": holds no registration"},
		{name: "a registration without password", mods: []mod{raw(`{"example.com": {"username": "u", "subdomain": "s", "fulldomain": "s.example.org"}}`)},
			wantErr: "spec.solver.dns01.acmeDNS.accountSecretRef: secret cert-manager/acme-dns key \"acmedns.json\": the registration of example.com lacks password"},
		{name: "a registration without anything", mods: []mod{raw(`{"example.com": {}}`)},
			wantErr: "the registration of example.com lacks username, password, subdomain"},
		{name: "a domain twice", mods: []mod{raw(`{"example.com": {"username": "u", "password": "p", "subdomain": "s"}, "EXAMPLE.com.": {"username": "u", "password": "p", "subdomain": "s"}}`)},
			wantErr: "example.com is registered twice"},
		{name: "no domain", mods: []mod{raw(`{"*": {"username": "u", "password": "p", "subdomain": "s"}}`)},
			wantErr: "\"*\" is not a domain name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := request(tc.host, good, tc.mods...)
			c, err := Parse(context.Background(), req)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if c.Host != tc.wantHost || c.Accounts["example.com"].Password != pw {
					t.Fatalf("Parse = %+v", c)
				}
				if s := fmt.Sprintf("%v %+v %#v %v %#v", c, c, c, c.Accounts["example.com"], c.Accounts); strings.Contains(s, pw) {
					t.Fatalf("the configuration renders the password: %s", s)
				}
				return
			}
			if err == nil || errs.IsPermanent(err) == tc.transient || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v (permanent %v), want containing %q, permanent %v", err, errs.IsPermanent(err), tc.wantErr, !tc.transient)
			}
			if strings.Contains(err.Error(), pw) {
				t.Fatalf("error shows the password: %v", err)
			}
		})
	}
}

// TestErrors (double: it injects failures): each refusal of acme-dns or
// of what stands at host is classified, with the field to fix for
// permanent ones; the password is never in an error, and is never sent
// anywhere but host.
func TestErrors(t *testing.T) {
	d := newDoubleBackend(t)
	ok := d.register(t)
	wrongPW := ok
	wrongPW.Password = strings.Repeat("x", 40)
	f := d.double.Register(t, "192.0.2.0/24")
	fenced := Account{Username: f.Username, Password: f.Password, FullDomain: f.FullDomain, SubDomain: f.SubDomain, AllowFrom: f.AllowFrom}
	otherSub := ok
	otherSub.SubDomain = d.register(t).SubDomain
	var redirected int
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != "" {
			redirected++
		}
	}))
	t.Cleanup(elsewhere.Close)
	redirect := httptest.NewServer(http.RedirectHandler(elsewhere.URL+"/update", http.StatusTemporaryRedirect))
	t.Cleanup(redirect.Close)

	cases := []struct {
		name      string
		host      string
		acct      Account
		value     string
		fail      func()
		wantErr   string
		transient bool
		delay     time.Duration
	}{
		{name: "wrong password", acct: wrongPW,
			wantErr: "spec.solver.dns01.acmeDNS.accountSecretRef: update TXT _acme-challenge.example.com. with acme-dns registration " + ok.FullDomain + " (user " + ok.Username + "): acme-dns answered 401 forbidden"},
		{name: "outside allowfrom", acct: fenced, wantErr: "spec.solver.dns01.acmeDNS.accountSecretRef: update TXT _acme-challenge.example.com. with acme-dns registration " + fenced.FullDomain},
		{name: "another registration's subdomain", acct: otherSub, wantErr: "acme-dns answered 401 forbidden"},
		{name: "forbidden by a proxy", acct: ok, fail: func() { d.double.Fail(1, http.StatusForbidden, "") },
			wantErr: "spec.solver.dns01.acmeDNS.accountSecretRef: update TXT _acme-challenge.example.com. with acme-dns registration " + ok.FullDomain + " (user " + ok.Username + "): acme-dns answered 403"},
		{name: "a value acme-dns does not take", acct: ok, value: "too-short",
			wantErr: "spec.solver.dns01.acmeDNS: update TXT _acme-challenge.example.com. with acme-dns registration " + ok.FullDomain + " (user " + ok.Username + "): acme-dns answered 400 bad_txt (acme-dns takes only values of 43 base64url characters)"},
		{name: "throttled", acct: ok, fail: func() { d.double.Fail(1, http.StatusTooManyRequests, "7") },
			wantErr: "acme-dns answered 429", transient: true, delay: 7 * time.Second},
		{name: "unavailable", acct: ok, fail: func() { d.double.Fail(1, http.StatusServiceUnavailable, "") },
			wantErr: "acme-dns answered 503", transient: true},
		{name: "no API at that path", host: d.url + "/nothing-here", acct: ok,
			wantErr: "spec.solver.dns01.acmeDNS.host: update TXT _acme-challenge.example.com. with acme-dns registration " + ok.FullDomain + " (user " + ok.Username + "): acme-dns answered 404  (is " + d.url + "/nothing-here the acme-dns API?)"},
		{name: "redirect", host: redirect.URL, acct: ok,
			wantErr: "spec.solver.dns01.acmeDNS.host: " + redirect.URL + " redirects to \"" + elsewhere.URL + "/update\""},
		{name: "nothing listening", host: "http://127.0.0.1:1", acct: ok, wantErr: "spec.solver.dns01.acmeDNS: update TXT _acme-challenge.example.com.", transient: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			host := d.url
			if tc.host != "" {
				host = tc.host
			}
			if tc.fail != nil {
				tc.fail()
			}
			v := tc.value
			if v == "" {
				v = value(tc.name)
			}
			p := build(t, request(host, registrations{"example.com": tc.acct}))
			_, err := p.AppendRecords(context.Background(), "example.com.", []libdns.Record{libdns.TXT{Name: "_acme-challenge", Text: v}})
			if err == nil || errs.IsPermanent(err) == tc.transient || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v (permanent %v), want containing %q, permanent %v", err, errs.IsPermanent(err), tc.wantErr, !tc.transient)
			}
			if got, ok := errs.SuggestedDelay(err); tc.delay != 0 && (!ok || got != tc.delay) {
				t.Fatalf("suggested delay = %v, %v; want %v", got, ok, tc.delay)
			}
			if strings.Contains(err.Error(), tc.acct.Password) {
				t.Fatalf("error shows the password: %v", err)
			}
		})
	}
	if redirected != 0 {
		t.Fatalf("the API key was sent to the redirect's target %d times", redirected)
	}
	if got := d.double.TXT(ok.FullDomain); len(got) != 0 {
		t.Fatalf("a refused update was stored: %q", got)
	}
}
