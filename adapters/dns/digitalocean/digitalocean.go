// Package digitalocean is a libdns provider over DigitalOcean's DNS API
// (github.com/digitalocean/godo) for certfn's DNS-01 solver. It implements
// cert-manager's digitalocean solver (tokenSecretRef;
// spec.solver.dns01.digitalocean):
//
//   - the credentials are the API token in tokenSecretRef (surrounding
//     white space trimmed, as cert-manager does), sent as a bearer token;
//   - the domain is the account's domain whose name is the longest suffix
//     of the record's name (GET /v2/domains, every page, once per step);
//     cert-manager asks DNS for the zone (SOA) instead, which finds the same
//     domain when DigitalOcean serves it;
//   - a TXT value is one DigitalOcean record: present lists the name's TXT
//     records (type and name filters, every page) and creates ours when it
//     is missing; clean-up deletes exactly the records holding our value, so
//     other values of the same name (the wildcard's and the apex's) are
//     kept. The data is the text itself (DigitalOcean quotes and splits it
//     when it serves it).
//
// The client makes no retries of its own: a 429 is returned at once as a
// transient error carrying the time until ratelimit-reset
// (errs.RetryAfter), so that no challenge step sleeps.
//
// NewFactory(Options{...}).Build plugs it into core/acme/dns01 under
// dns01.KeyDigitalOcean. See docs/reference/dns01.md ("DigitalOcean").
package digitalocean

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/digitalocean/godo"
	"github.com/libdns/libdns"
	"github.com/miekg/dns"
	"golang.org/x/oauth2"

	"github.com/certfn/certfn/adapters/dns/txtrr"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/errs"
)

// DefaultBaseURL is DigitalOcean's API.
const DefaultBaseURL = "https://api.digitalocean.com/"

// DefaultTimeout bounds one API call when Options.HTTPClient is nil.
const DefaultTimeout = 30 * time.Second

// defaultTTL is the TTL of the records we create (cert-manager's).
const defaultTTL = 60 * time.Second

// minTTL is DigitalOcean's smallest TTL.
const minTTL = 30 * time.Second

// perPage is the page size asked for (DigitalOcean's largest).
const perPage = 200

// maxPages bounds one listing (perPage × maxPages items).
const maxPages = 50

// Options configure a Factory. The zero value talks to DigitalOcean.
type Options struct {
	// BaseURL is the API's base URL, without "/v2" ("": DefaultBaseURL).
	// Tests set the double's (digitaloceantest.Double.URL).
	BaseURL string
	// HTTPClient makes the calls (nil: a client with DefaultTimeout); the
	// bearer token is added by a transport wrapped around its own.
	HTTPClient *http.Client
}

// Factory builds DigitalOcean providers. It holds no credentials: each
// Build reads them from the solver's secret. Safe for concurrent use.
type Factory struct {
	opts Options
}

// NewFactory returns a Factory with opts; its Build method is the
// dns01.ProviderFactory.
func NewFactory(opts Options) *Factory {
	if opts.BaseURL == "" {
		opts.BaseURL = DefaultBaseURL
	}
	if !strings.HasSuffix(opts.BaseURL, "/") {
		opts.BaseURL += "/"
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: DefaultTimeout}
	}
	return &Factory{opts: opts}
}

var _ dns01.ProviderFactory = (*Factory)(nil).Build

// Config is a validated spec.solver.dns01.digitalocean with its secret.
// Its String method never shows the token.
type Config struct {
	// Token is the API token from tokenSecretRef.
	Token string
	// Path is the field path of the settings ("spec.solver.dns01.digitalocean").
	Path string
}

// String describes c without its secret.
func (c Config) String() string { return "digitalocean API token" }

// GoString is String, so that %#v cannot print the secret either.
func (c Config) GoString() string { return c.String() }

// Parse validates req.DNS01.DigitalOcean and reads its secret:
// tokenSecretRef's name and key are required and the key must hold a
// token (white space around it is trimmed, as cert-manager does; what is
// left must be a valid HTTP header value). Every violation is a permanent
// error naming the field; a failing secret store is transient. Errors
// never contain the token.
func Parse(ctx context.Context, req dns01.ProviderRequest) (Config, error) {
	p := req.Path + ".digitalocean"
	if req.DNS01 == nil || req.DNS01.DigitalOcean == nil {
		return Config{}, errs.Permanentf("%s: required", p)
	}
	ref := req.DNS01.DigitalOcean.Token
	field := p + ".tokenSecretRef"
	raw, err := req.SecretValue(ctx, ref, field)
	if err != nil {
		return Config{}, err
	}
	tok := strings.TrimSpace(string(raw))
	switch {
	case tok == "":
		return Config{}, errs.Permanentf("%s: secret %s/%s key %q holds only white space, not a DigitalOcean API token", field, req.SecretNamespace, ref.Name, ref.Key)
	case !validHeaderValue(tok):
		return Config{}, errs.Permanentf("%s: the DigitalOcean API token in secret %s/%s key %q is invalid (it contains a control character)", field, req.SecretNamespace, ref.Name, ref.Key)
	}
	return Config{Token: tok, Path: p}, nil
}

// validHeaderValue reports whether v may be sent as an HTTP header value:
// no control character other than a space or tab.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if b := v[i]; (b < ' ' && b != '\t') || b == 0x7f {
			return false
		}
	}
	return true
}

// Build is the dns01.ProviderFactory for spec.solver.dns01.digitalocean:
// it validates the settings (Parse) and returns a provider with a client
// for them. It makes no DigitalOcean call.
func (f *Factory) Build(ctx context.Context, req dns01.ProviderRequest) (dns01.Provider, error) {
	c, err := Parse(ctx, req)
	if err != nil {
		return nil, err
	}
	base := f.opts.HTTPClient.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc := *f.opts.HTTPClient
	hc.Transport = &oauth2.Transport{Source: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: c.Token}), Base: base}
	// godo.New without WithRetryAndBackoffs makes no retries.
	cl, err := godo.New(&hc, godo.SetBaseURL(f.opts.BaseURL), godo.SetUserAgent("certfn"))
	if err != nil {
		return nil, errs.Permanent(fmt.Errorf("%s: DigitalOcean client for %s: %w", c.Path, f.opts.BaseURL, err))
	}
	return &Provider{Domains: cl.Domains, Config: c}, nil
}

// Provider changes TXT records in DigitalOcean. A value is built per
// challenge step (Factory.Build).
type Provider struct {
	Domains godo.DomainsService
	Config  Config

	mu      sync.Mutex
	domains []string // the account's domains, listed once per value
}

var (
	_ libdns.RecordAppender = (*Provider)(nil)
	_ libdns.RecordDeleter  = (*Provider)(nil)
)

// AppendRecords adds the TXT values of recs under zone: per name it lists
// the name's TXT records and creates one record per value that is missing
// (TTL: the record's, at least 30 s; 60 s by default). A value already
// there is not written again. It returns the records as libdns.TXT. Only
// TXT records are supported.
func (p *Provider) AppendRecords(ctx context.Context, zone string, recs []libdns.Record) ([]libdns.Record, error) {
	groups, err := txtrr.GroupByName(zone, recs, p.Config.Path, 0)
	if err != nil {
		return nil, err
	}
	var out []libdns.Record
	for _, g := range groups {
		domain, err := p.domainOf(ctx, g.FQDN)
		if err != nil {
			return nil, err
		}
		have, err := p.listTXT(ctx, domain, g.FQDN)
		if err != nil {
			return nil, err
		}
		for _, r := range g.Recs {
			if !slices.ContainsFunc(have, func(h godo.DomainRecord) bool { return h.Data == r.Text }) {
				rec, err := p.create(ctx, domain, g.FQDN, r)
				if err != nil {
					return nil, err
				}
				have = append(have, rec)
			}
			out = append(out, libdns.TXT{Name: r.Name, TTL: r.TTL, Text: r.Text})
		}
	}
	return out, nil
}

// DeleteRecords removes exactly the TXT records of recs' values: per name
// it lists the TXT records and deletes those whose data is one of the
// values (every TXT record of the name for a record with an empty value,
// libdns's rule). A value that is not there, or a record deleted by
// someone else in between (404), is not an error. It returns the records
// it removed.
func (p *Provider) DeleteRecords(ctx context.Context, zone string, recs []libdns.Record) ([]libdns.Record, error) {
	groups, err := txtrr.GroupByName(zone, recs, p.Config.Path, 0)
	if err != nil {
		return nil, err
	}
	var out []libdns.Record
	for _, g := range groups {
		domain, err := p.domainOf(ctx, g.FQDN)
		if err != nil {
			return nil, err
		}
		have, err := p.listTXT(ctx, domain, g.FQDN)
		if err != nil {
			return nil, err
		}
		all := slices.ContainsFunc(g.Recs, func(r libdns.TXT) bool { return r.Text == "" })
		for _, h := range have {
			if !all && !slices.ContainsFunc(g.Recs, func(r libdns.TXT) bool { return r.Text == h.Data }) {
				continue
			}
			_, err := p.Domains.DeleteRecord(ctx, domain, h.ID)
			if err != nil && status(err) != http.StatusNotFound {
				return nil, p.classify(fmt.Errorf("delete TXT record %d of %s in domain %s: %w", h.ID, g.FQDN, domain, err), opChange)
			}
			out = append(out, libdns.TXT{Name: g.Rel, TTL: time.Duration(h.TTL) * time.Second, Text: h.Data})
		}
	}
	return out, nil
}

// group is the TXT records of one name.

// domainOf returns the account's domain whose name is the longest suffix
// of fqdn. None is a permanent error naming the solver.
func (p *Provider) domainOf(ctx context.Context, fqdn string) (string, error) {
	domains, err := p.listDomains(ctx)
	if err != nil {
		return "", err
	}
	best := ""
	for _, d := range domains {
		if dns.IsSubDomain(dns.CanonicalName(d), fqdn) && len(d) > len(best) {
			best = d
		}
	}
	if best == "" {
		return "", errs.Permanentf("%s: no domain of the DigitalOcean account holds %s (none is named by a suffix of it): add the domain to the account", p.Config.Path, fqdn)
	}
	return best, nil
}

// listDomains lists the account's domains (every page) once per provider
// value.
func (p *Provider) listDomains(ctx context.Context) ([]string, error) {
	p.mu.Lock()
	domains := p.domains
	p.mu.Unlock()
	if domains != nil {
		return domains, nil
	}
	domains = []string{}
	opt := &godo.ListOptions{Page: 1, PerPage: perPage}
	for ; opt.Page <= maxPages; opt.Page++ {
		page, res, err := p.Domains.List(ctx, opt)
		if err != nil {
			return nil, p.classify(fmt.Errorf("find the domain: list domains: %w", err), opList)
		}
		for _, d := range page {
			domains = append(domains, strings.ToLower(strings.TrimSuffix(d.Name, ".")))
		}
		if res == nil || res.Links == nil || res.Links.IsLastPage() {
			break
		}
	}
	p.mu.Lock()
	p.domains = domains
	p.mu.Unlock()
	return domains, nil
}

// listTXT returns the TXT records of fqdn in domain (every page).
func (p *Provider) listTXT(ctx context.Context, domain, fqdn string) ([]godo.DomainRecord, error) {
	name := strings.TrimSuffix(fqdn, ".")
	rel := relative(fqdn, domain)
	var out []godo.DomainRecord
	opt := &godo.ListOptions{Page: 1, PerPage: perPage}
	for ; opt.Page <= maxPages; opt.Page++ {
		page, res, err := p.Domains.RecordsByTypeAndName(ctx, domain, "TXT", name, opt)
		if err != nil {
			return nil, p.classify(fmt.Errorf("read TXT %s: list records of domain %s: %w", fqdn, domain, err), opRead)
		}
		for _, r := range page {
			if strings.EqualFold(r.Type, "TXT") && strings.EqualFold(r.Name, rel) {
				out = append(out, r)
			}
		}
		if res == nil || res.Links == nil || res.Links.IsLastPage() {
			break
		}
	}
	return out, nil
}

// create creates one TXT record of fqdn in domain.
func (p *Provider) create(ctx context.Context, domain, fqdn string, r libdns.TXT) (godo.DomainRecord, error) {
	ttl := r.TTL
	switch {
	case ttl <= 0:
		ttl = defaultTTL
	case ttl < minTTL:
		ttl = minTTL
	}
	rec, _, err := p.Domains.CreateRecord(ctx, domain, &godo.DomainRecordEditRequest{
		Type: "TXT", Name: relative(fqdn, domain), Data: r.Text, TTL: int(ttl / time.Second),
	})
	if err != nil {
		return godo.DomainRecord{}, p.classify(fmt.Errorf("create TXT %s in domain %s: %w", fqdn, domain, err), opChange)
	}
	return *rec, nil
}

// relative is fqdn relative to domain, "@" for the apex (DigitalOcean's
// record names).
func relative(fqdn, domain string) string {
	name := strings.ToLower(strings.TrimSuffix(fqdn, "."))
	if name == domain {
		return "@"
	}
	return strings.TrimSuffix(name, "."+domain)
}
