// Package acmedns is a libdns provider over an acme-dns server
// (github.com/joohoi/acme-dns) for certfn's DNS-01 solver. It implements
// cert-manager's acmeDNS solver fields (host, accountSecretRef;
// spec.solver.dns01.acmeDNS):
//
//   - accountSecretRef holds the registrations as cert-manager reads them:
//     a JSON object mapping each domain to the answer of acme-dns's
//     /register ({"username", "password", "fulldomain", "subdomain",
//     "allowfrom"}). The user has CNAMEd _acme-challenge.<domain> to the
//     registration's fulldomain;
//   - a TXT value is written with one POST <host>/update (X-Api-User,
//     X-Api-Key, {"subdomain", "txt"}) with the registration of the
//     challenge's domain. The provider is handed the record's name as the
//     Solver located it: _acme-challenge.<domain> (cnameStrategy None) or
//     the CNAME's target, the fulldomain (cnameStrategy Follow). It maps
//     either back to the registration: by domain (the wildcard's base name
//     is the domain, as cert-manager looks it up; an entry keyed
//     "*.<domain>" is used when there is no "<domain>" entry), else by
//     fulldomain;
//   - acme-dns keeps the two latest values of a registration and has no
//     delete, so DeleteRecords does nothing (cert-manager's CleanUp does
//     nothing either).
//
// acme-dns takes only 43-character values (a DNS-01 value's length). The
// HTTP client does not follow redirects, so the API key is sent only to
// host. Factory.Build plugs it into core/acme/dns01 under dns01.KeyAcmeDNS.
// See docs/reference/dns01.md ("ACME-DNS").
//
// github.com/cpu/goacmedns v0.0.2, the client the module proxy serves, is
// not used: it takes no context, uses a package-level HTTP client (no
// timeout per call, redirects followed with the key) and prints failures
// to standard output. cert-manager's newer client, github.com/nrdcg/goacmedns,
// is not served here. The one call is plain net/http.
package acmedns

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/libdns/libdns"
	"github.com/miekg/dns"

	"github.com/certfn/certfn/adapters/netguard"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/errs"
)

// DefaultTimeout bounds one call to acme-dns when Options.HTTPClient is nil.
const DefaultTimeout = 15 * time.Second

// Options configure a Factory.
type Options struct {
	// HTTPClient makes the calls to acme-dns (nil: a client with
	// DefaultTimeout). Whatever its CheckRedirect, redirects are not
	// followed: the API key goes only to host. Tests may pass one that
	// trusts a test server's certificate.
	HTTPClient *http.Client
	// Network is the operator's allowance for the calls made for
	// namespaced Issuers (dns01.ProviderRequest.IssuerKind other than
	// ClusterIssuer): they may not reach loopback, link-local, private or
	// reserved addresses except those it allows, checked at dial time on
	// the address dialled. The zero Policy allows none.
	Network netguard.Policy
}

// Factory builds acme-dns providers. Safe for concurrent use.
type Factory struct {
	client     *http.Client
	restricted *http.Client
}

// NewFactory returns a Factory with opts; its Build method is the
// dns01.ProviderFactory to register under dns01.KeyAcmeDNS.
func NewFactory(opts Options) *Factory {
	c := &http.Client{Timeout: DefaultTimeout}
	if opts.HTTPClient != nil {
		copied := *opts.HTTPClient
		c = &copied
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	r := *c
	var base *http.Transport
	if t, ok := c.Transport.(*http.Transport); ok {
		base = t.Clone()
	} else {
		base = http.DefaultTransport.(*http.Transport).Clone()
	}
	base.DialContext = opts.Network.Dialer(&net.Dialer{Timeout: DefaultTimeout}, true)
	base.Proxy = nil // a proxy would connect on the tenant's behalf, unchecked
	r.Transport = base
	return &Factory{client: c, restricted: &r}
}

var _ dns01.ProviderFactory = (*Factory)(nil).Build

// Account is one registration of the accountSecretRef JSON: what
// acme-dns's /register answered. Its String method never shows the
// password.
type Account struct {
	Username   string   `json:"username"`
	Password   string   `json:"password"`
	FullDomain string   `json:"fulldomain"`
	SubDomain  string   `json:"subdomain"`
	AllowFrom  []string `json:"allowfrom,omitempty"`
}

// String describes a without its password.
func (a Account) String() string {
	return fmt.Sprintf("acme-dns registration %s (user %s)", a.FullDomain, a.Username)
}

// GoString is String, so that %#v cannot print the password either.
func (a Account) GoString() string { return a.String() }

// Config is a validated spec.solver.dns01.acmeDNS with its registrations.
// Its String method never shows a password.
type Config struct {
	// Host is the acme-dns API's base URL, without a trailing slash.
	Host string
	// Accounts are the registrations by domain: lower case, without a
	// trailing dot ("example.com", or "*.example.com" as given).
	Accounts map[string]Account
	// Secret describes where the registrations came from
	// ("namespace/name key k"), for errors.
	Secret string
	// Path is the field path of the settings ("spec.solver.dns01.acmeDNS").
	Path string
}

// String describes c without its passwords.
func (c Config) String() string {
	return fmt.Sprintf("acmeDNS host=%q domains=%s", c.Host, strings.Join(c.domains(), ","))
}

// GoString is String, so that %#v cannot print a password either.
func (c Config) GoString() string { return c.String() }

// domains returns the registered domains, sorted.
func (c Config) domains() []string {
	out := make([]string, 0, len(c.Accounts))
	for d := range c.Accounts {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

// Parse validates req.DNS01.AcmeDNS and reads its registrations:
//   - host is required: an absolute http or https URL without user
//     information, query or fragment (a path is kept: acme-dns behind a
//     reverse proxy);
//   - accountSecretRef is required and names a secret key holding a JSON
//     object of at least one domain → registration, each with username,
//     password and subdomain (fulldomain is needed only with cnameStrategy
//     Follow, and is checked when used).
//
// Every violation is a permanent error naming the field; a failing secret
// store is transient. Errors never contain a password, nor any part of
// the secret beyond the domains it registers and the fields it lacks.
func Parse(ctx context.Context, req dns01.ProviderRequest) (Config, error) {
	p := req.Path + ".acmeDNS"
	if req.DNS01 == nil || req.DNS01.AcmeDNS == nil {
		return Config{}, errs.Permanentf("%s: required", p)
	}
	spec := req.DNS01.AcmeDNS
	host, err := parseHost(spec.Host)
	if err != nil {
		return Config{}, errs.Permanentf("%s.host: %v", p, err)
	}
	field := p + ".accountSecretRef"
	raw, err := req.SecretValue(ctx, spec.AccountSecret, field)
	if err != nil {
		return Config{}, err
	}
	secret := fmt.Sprintf("secret %s/%s key %q", req.SecretNamespace, spec.AccountSecret.Name, spec.AccountSecret.Key)
	accounts, err := parseAccounts(raw)
	if err != nil {
		return Config{}, errs.Permanentf("%s: %s: %v", field, secret, err)
	}
	return Config{Host: host, Accounts: accounts, Secret: secret, Path: p}, nil
}

// parseHost checks and normalises the host field.
func parseHost(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", errors.New("required (the acme-dns server's API URL, e.g. https://auth.acme-dns.io)")
	}
	u, err := url.Parse(s)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return "", fmt.Errorf("%q is not an http or https URL (want e.g. https://auth.acme-dns.io)", s)
	case u.User != nil:
		return "", errors.New("must not carry user information (the credentials are in accountSecretRef)")
	case u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Errorf("%q must not have a query or fragment", s)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// parseAccounts decodes the registration JSON. Its errors name domains and
// fields only.
func parseAccounts(raw []byte) (map[string]Account, error) {
	const want = `want a JSON object {"<domain>": {"username", "password", "fulldomain", "subdomain"}} as acme-dns's /register answers`
	var in map[string]json.RawMessage
	if err := json.Unmarshal(raw, &in); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return nil, fmt.Errorf("not valid JSON (at byte %d); %s", syn.Offset, want)
		}
		return nil, fmt.Errorf("not a JSON object of registrations; %s", want)
	}
	if len(in) == 0 {
		return nil, fmt.Errorf("holds no registration; %s", want)
	}
	out := make(map[string]Account, len(in))
	for domain, v := range in {
		key := normalizeDomain(domain)
		var a Account
		if err := json.Unmarshal(v, &a); err != nil {
			var typ *json.UnmarshalTypeError
			if errors.As(err, &typ) && typ.Field != "" {
				return nil, fmt.Errorf("the registration of %s: %s is a JSON %s, want a %s; %s", domain, typ.Field, typ.Value, typ.Type, want)
			}
			return nil, fmt.Errorf("the registration of %s is not a JSON object; %s", domain, want)
		}
		var missing []string
		for _, f := range []struct{ name, v string }{{"username", a.Username}, {"password", a.Password}, {"subdomain", a.SubDomain}} {
			if strings.TrimSpace(f.v) == "" {
				missing = append(missing, f.name)
			}
		}
		switch {
		case key == "" || key == "*":
			return nil, fmt.Errorf("%q is not a domain name; %s", domain, want)
		case len(missing) > 0:
			return nil, fmt.Errorf("the registration of %s lacks %s; %s", domain, strings.Join(missing, ", "), want)
		}
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("%s is registered twice (names differ only in case or a trailing dot)", key)
		}
		out[key] = a
	}
	return out, nil
}

// normalizeDomain lowercases a domain and drops its trailing dot.
func normalizeDomain(s string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), ".")
}

// Build is the dns01.ProviderFactory for spec.solver.dns01.acmeDNS: it
// validates the settings (Parse) and returns a provider for them. It makes
// no call to acme-dns.
func (f *Factory) Build(ctx context.Context, req dns01.ProviderRequest) (dns01.Provider, error) {
	c, err := Parse(ctx, req)
	if err != nil {
		return nil, err
	}
	client := f.client
	if netguard.Restricted(req.IssuerKind) {
		client = f.restricted
	}
	return &Provider{Config: c, client: client}, nil
}

// Provider writes TXT values through acme-dns's /update. A value is built
// per challenge step (Factory.Build).
type Provider struct {
	Config Config
	client *http.Client
}

var (
	_ libdns.RecordAppender = (*Provider)(nil)
	_ libdns.RecordDeleter  = (*Provider)(nil)
)

// AppendRecords writes each TXT value of recs with the registration its
// name maps to (see Account): one /update per value (a value given twice
// in recs is sent once). acme-dns replaces the older of its two values,
// so at most two values of one registration are served at a time: enough
// for a wildcard and its base name. It returns the records as libdns.TXT.
// Only TXT records are supported; a name no registration matches is a
// permanent error naming accountSecretRef.
func (p *Provider) AppendRecords(ctx context.Context, zone string, recs []libdns.Record) ([]libdns.Record, error) {
	var out []libdns.Record
	var sent []string // subdomain + " " + value
	for _, r := range recs {
		rr := r.RR()
		if !strings.EqualFold(rr.Type, "TXT") {
			return out, errs.Permanentf("%s: %s record %s: only TXT records are supported", p.Config.Path, rr.Type, rr.Name)
		}
		fqdn := dns.CanonicalName(libdns.AbsoluteName(rr.Name, zone))
		acct, err := p.account(fqdn)
		if err != nil {
			return out, err
		}
		value := strings.Trim(rr.Data, `"`)
		if key := acct.SubDomain + " " + value; !slices.Contains(sent, key) {
			if err := p.update(ctx, fqdn, acct, value); err != nil {
				return out, err
			}
			sent = append(sent, key)
		}
		out = append(out, libdns.TXT{Name: rr.Name, TTL: rr.TTL, Text: value})
	}
	return out, nil
}

// DeleteRecords does nothing and returns no record: acme-dns has no way
// to delete a value. It keeps the two latest values of a registration and
// the next update replaces the older one; a stale value is harmless (a
// DNS-01 value proves nothing beyond its own challenge). cert-manager's
// acmeDNS CleanUp does nothing either.
func (p *Provider) DeleteRecords(context.Context, string, []libdns.Record) ([]libdns.Record, error) {
	return nil, nil
}

// account returns the registration for the record fqdn: by domain when
// fqdn is _acme-challenge.<domain> ("<domain>", else "*.<domain>"), else
// the registration whose fulldomain is fqdn (cnameStrategy Follow hands
// over the CNAME's target). Several registrations with that fulldomain
// are one acme-dns account used for several domains: the first domain's
// (in sorted order) is used.
func (p *Provider) account(fqdn string) (Account, error) {
	name := normalizeDomain(fqdn)
	if domain, ok := strings.CutPrefix(name, "_acme-challenge."); ok {
		for _, key := range []string{domain, "*." + domain} {
			if a, ok := p.Config.Accounts[key]; ok {
				return a, nil
			}
		}
	}
	for _, d := range p.Config.domains() {
		if a := p.Config.Accounts[d]; normalizeDomain(a.FullDomain) == name {
			return a, nil
		}
	}
	return Account{}, errs.Permanentf("%s.accountSecretRef: %s has no acme-dns registration for %s (registered: %s): register the domain at %s/register, CNAME _acme-challenge.<domain> to its fulldomain and add the answer under the domain's name",
		p.Config.Path, p.Config.Secret, fqdn, strings.Join(p.Config.domains(), ", "), p.Config.Host)
}

// updateBody is the JSON body of /update.
type updateBody struct {
	SubDomain string `json:"subdomain"`
	TXT       string `json:"txt"`
}

// maxBody bounds how much of an answer is read.
const maxBody = 1 << 16

// update sends one /update for fqdn.
func (p *Provider) update(ctx context.Context, fqdn string, a Account, value string) error {
	body, err := json.Marshal(updateBody{SubDomain: a.SubDomain, TXT: value})
	if err != nil {
		return errs.Permanent(fmt.Errorf("%s: encode update: %w", p.Config.Path, err))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.Config.Host+"/update", bytes.NewReader(body))
	if err != nil {
		return errs.Permanent(fmt.Errorf("%s.host: %w", p.Config.Path, err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-User", a.Username)
	req.Header.Set("X-Api-Key", a.Password)
	resp, err := p.client.Do(req)
	if err != nil {
		// The URL is host's; the error carries neither key nor body.
		return fmt.Errorf("%s: update TXT %s (%s): %w", p.Config.Path, fqdn, a, err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	return p.classify(resp, answer, fqdn, a)
}
