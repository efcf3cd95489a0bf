// Package cloudflare is a libdns provider over Cloudflare's API v4
// (github.com/cloudflare/cloudflare-go/v6) for certfn's DNS-01 solver. It
// implements cert-manager's cloudflare solver fields (email,
// apiKeySecretRef, apiTokenSecretRef; spec.solver.dns01.cloudflare):
//
//   - credentials are an API token (apiTokenSecretRef, sent as "Authorization:
//     Bearer"), or the account's global API key (apiKeySecretRef) with the
//     account's email (X-Auth-Key and X-Auth-Email) — one of the two, as
//     cert-manager requires;
//   - the zone is the one whose name is the longest suffix of the record's
//     name (GET /zones?name=<suffix>, one call per label tried, from the
//     longest; wildcard labels are skipped), as cert-manager's
//     FindNearestZoneForFQDN does; an active zone wins over others of the
//     same name;
//   - a TXT value is one Cloudflare record: present lists the name's TXT
//     records (every page) and creates ours when it is missing; clean-up
//     deletes exactly the records holding our value, so other values of the
//     same name (the wildcard's and the apex's) are kept;
//   - content is sent quoted, in 255-octet character-strings (Cloudflare's
//     documented TXT form); records written unquoted by others are read as
//     their text.
//
// The client makes no retries of its own: a 429 is returned at once as a
// transient error carrying the server's Retry-After (errs.RetryAfter), so
// that no challenge step sleeps.
//
// NewFactory(Options{...}).Build plugs it into core/acme/dns01 under
// dns01.KeyCloudflare. See docs/reference/dns01.md ("Cloudflare").
package cloudflare

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	cfgo "github.com/cloudflare/cloudflare-go/v6"
	cfdns "github.com/cloudflare/cloudflare-go/v6/dns"
	"github.com/cloudflare/cloudflare-go/v6/option"
	cfzones "github.com/cloudflare/cloudflare-go/v6/zones"
	"github.com/libdns/libdns"
	"github.com/miekg/dns"

	"github.com/certfn/certfn/adapters/dns/txtrr"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/errs"
)

// DefaultBaseURL is Cloudflare's API v4.
const DefaultBaseURL = "https://api.cloudflare.com/client/v4/"

// DefaultTimeout bounds one API call when Options.HTTPClient is nil.
const DefaultTimeout = 30 * time.Second

// defaultTTL is the TTL of the records we create (Cloudflare's minimum
// outside Enterprise zones; cert-manager uses the same).
const defaultTTL = 60 * time.Second

// perPage is the page size asked for when listing records.
const perPage = 100

// maxPages bounds one listing (perPage × maxPages records of one name).
const maxPages = 50

// Options configure a Factory. The zero value talks to Cloudflare.
type Options struct {
	// BaseURL is the API's base URL ("": DefaultBaseURL). Tests set the
	// double's (cloudflaretest.Double.URL).
	BaseURL string
	// HTTPClient makes the calls (nil: a client with DefaultTimeout).
	HTTPClient *http.Client
}

// Factory builds Cloudflare providers. It holds no credentials: each
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

// Config is a validated spec.solver.dns01.cloudflare with its secret. Its
// String method never shows the token or key.
type Config struct {
	// Email is the account's email, sent with APIKey.
	Email string
	// APIToken is the API token from apiTokenSecretRef ("" when APIKey is
	// used).
	APIToken string
	// APIKey is the global API key from apiKeySecretRef ("" when APIToken
	// is used).
	APIKey string
	// Path is the field path of the settings ("spec.solver.dns01.cloudflare").
	Path string
}

// String describes c without its secret.
func (c Config) String() string {
	if c.APIToken != "" {
		return "cloudflare API token"
	}
	return fmt.Sprintf("cloudflare global API key of %s", c.Email)
}

// GoString is String, so that %#v cannot print the secret either.
func (c Config) GoString() string { return c.String() }

// credentialField is the field that holds the credential in use.
func (c Config) credentialField() string {
	if c.APIToken != "" {
		return c.Path + ".apiTokenSecretRef"
	}
	return c.Path + ".apiKeySecretRef"
}

// Parse validates req.DNS01.Cloudflare and reads its secret, with
// cert-manager's rules:
//   - exactly one of apiTokenSecretRef and apiKeySecretRef;
//   - apiKeySecretRef needs email (email is ignored with a token);
//   - the referenced secret key must exist and be non-empty
//     (dns01.ProviderRequest.SecretValue);
//   - the token or key, and the email, must be valid HTTP header values (no
//     newline or other control character): cert-manager's check, so that no
//     HTTP library ever echoes them.
//
// Every violation is a permanent error naming the field; a failing secret
// store is transient. Errors never contain the token or key.
func Parse(ctx context.Context, req dns01.ProviderRequest) (Config, error) {
	p := req.Path + ".cloudflare"
	if req.DNS01 == nil || req.DNS01.Cloudflare == nil {
		return Config{}, errs.Permanentf("%s: required", p)
	}
	spec := req.DNS01.Cloudflare
	c := Config{Path: p}
	switch {
	case spec.APIKey != nil && spec.APIToken != nil:
		return Config{}, errs.Permanentf("%s: apiKeySecretRef and apiTokenSecretRef cannot both be specified", p)
	case spec.APIKey == nil && spec.APIToken == nil:
		return Config{}, errs.Permanentf("%s: apiKeySecretRef or apiTokenSecretRef is required", p)
	case spec.APIKey != nil && strings.TrimSpace(spec.Email) == "":
		return Config{}, errs.Permanentf("%s.email: required with apiKeySecretRef (the Cloudflare account's email address)", p)
	}
	ref, field := spec.APIToken, p+".apiTokenSecretRef"
	if spec.APIKey != nil {
		ref, field = spec.APIKey, p+".apiKeySecretRef"
		c.Email = strings.TrimSpace(spec.Email)
		if !validHeaderValue(c.Email) || !strings.Contains(c.Email, "@") {
			return Config{}, errs.Permanentf("%s.email: %q is not an email address", p, c.Email)
		}
	}
	raw, err := req.SecretValue(ctx, *ref, field)
	if err != nil {
		return Config{}, err
	}
	v := string(raw)
	what := "API token"
	if spec.APIKey != nil {
		what = "global API key"
	}
	if !validHeaderValue(v) {
		return Config{}, errs.Permanentf("%s: the Cloudflare %s in secret %s/%s key %q is invalid (does it contain a newline?)", field, what, req.SecretNamespace, ref.Name, ref.Key)
	}
	if spec.APIKey != nil {
		c.APIKey = v
	} else {
		c.APIToken = v
	}
	return c, nil
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

// Build is the dns01.ProviderFactory for spec.solver.dns01.cloudflare: it
// validates the settings (Parse) and returns a provider with a client for
// them. It makes no Cloudflare call.
func (f *Factory) Build(ctx context.Context, req dns01.ProviderRequest) (dns01.Provider, error) {
	c, err := Parse(ctx, req)
	if err != nil {
		return nil, err
	}
	opts := []option.RequestOption{
		option.WithBaseURL(f.opts.BaseURL),
		option.WithHTTPClient(f.opts.HTTPClient),
		option.WithMaxRetries(0),
	}
	if c.APIToken != "" {
		opts = append(opts, option.WithAPIToken(c.APIToken))
	} else {
		opts = append(opts, option.WithAPIKey(c.APIKey), option.WithAPIEmail(c.Email))
	}
	return &Provider{Records: cfdns.NewRecordService(opts...), Zones: cfzones.NewZoneService(opts...), Config: c}, nil
}

// Provider changes TXT records in Cloudflare. A value is built per
// challenge step (Factory.Build).
type Provider struct {
	Records *cfdns.RecordService
	Zones   *cfzones.ZoneService
	Config  Config

	mu    sync.Mutex
	zones map[string]zoneRef // fqdn -> its zone, found once per value
}

// zoneRef is a zone found for a name.
type zoneRef struct{ id, name string }

var (
	_ libdns.RecordAppender = (*Provider)(nil)
	_ libdns.RecordDeleter  = (*Provider)(nil)
)

// AppendRecords adds the TXT values of recs under zone: per name it lists
// the name's TXT records and creates one record per value that is missing
// (TTL: the record's, at least 60 s; 60 s by default). A value already
// there is not written again; one that appears between the listing and
// the create (Cloudflare's "identical record already exists") counts as
// written. It returns the records as libdns.TXT. Only TXT records are
// supported.
func (p *Provider) AppendRecords(ctx context.Context, zone string, recs []libdns.Record) ([]libdns.Record, error) {
	groups, err := txtrr.GroupByName(zone, recs, p.Config.Path, 0)
	if err != nil {
		return nil, err
	}
	var out []libdns.Record
	for _, g := range groups {
		z, err := p.zoneOf(ctx, g.FQDN)
		if err != nil {
			return nil, err
		}
		have, err := p.listTXT(ctx, z, g.FQDN)
		if err != nil {
			return nil, err
		}
		for _, r := range g.Recs {
			if !slices.ContainsFunc(have, func(h txtRecord) bool { return h.text == r.Text }) {
				if err := p.create(ctx, z, g.FQDN, r); err != nil {
					return nil, err
				}
				have = append(have, txtRecord{text: r.Text})
			}
			out = append(out, libdns.TXT{Name: r.Name, TTL: r.TTL, Text: r.Text})
		}
	}
	return out, nil
}

// DeleteRecords removes exactly the TXT records of recs' values: per name
// it lists the TXT records and deletes those whose text is one of the
// values (every record of the name for a record with an empty value,
// libdns's rule). A value that is not there, or a record deleted by
// someone else in between, is not an error. It returns the records it
// removed.
func (p *Provider) DeleteRecords(ctx context.Context, zone string, recs []libdns.Record) ([]libdns.Record, error) {
	groups, err := txtrr.GroupByName(zone, recs, p.Config.Path, 0)
	if err != nil {
		return nil, err
	}
	var out []libdns.Record
	for _, g := range groups {
		z, err := p.zoneOf(ctx, g.FQDN)
		if err != nil {
			return nil, err
		}
		have, err := p.listTXT(ctx, z, g.FQDN)
		if err != nil {
			return nil, err
		}
		all := slices.ContainsFunc(g.Recs, func(r libdns.TXT) bool { return r.Text == "" })
		for _, h := range have {
			if !all && !slices.ContainsFunc(g.Recs, func(r libdns.TXT) bool { return r.Text == h.text }) {
				continue
			}
			if err := p.delete(ctx, z, h); err != nil {
				return nil, err
			}
			out = append(out, libdns.TXT{Name: g.Rel, TTL: h.ttl, Text: h.text})
		}
	}
	return out, nil
}

// group is the TXT records of one name.

// zoneOf returns the zone of fqdn: for each suffix of fqdn, longest first
// (wildcard labels skipped), the zones named exactly so; the first suffix
// with one wins (an active zone over others of that name). None, or two
// active zones of one name, is a permanent error naming the solver.
func (p *Provider) zoneOf(ctx context.Context, fqdn string) (zoneRef, error) {
	p.mu.Lock()
	z, ok := p.zones[fqdn]
	p.mu.Unlock()
	if ok {
		return z, nil
	}
	labels := dns.SplitDomainName(fqdn)
	for i := range labels {
		if labels[i] == "*" {
			continue
		}
		name := strings.Join(labels[i:], ".")
		found, err := p.listZones(ctx, name)
		if err != nil {
			return zoneRef{}, err
		}
		if len(found) == 0 {
			continue
		}
		var active []cfzones.Zone
		for _, z := range found {
			if z.Status == cfzones.ZoneStatusActive {
				active = append(active, z)
			}
		}
		pick := found[0]
		switch {
		case len(active) == 1:
			pick = active[0]
		case len(active) > 1:
			ids := make([]string, len(active))
			for j, z := range active {
				ids[j] = z.ID
			}
			return zoneRef{}, errs.Permanentf("%s: the credentials reach several active Cloudflare zones named %s (%s): use a token scoped to one of them", p.Config.Path, name, strings.Join(ids, ", "))
		}
		z := zoneRef{id: pick.ID, name: strings.ToLower(strings.TrimSuffix(pick.Name, "."))}
		p.mu.Lock()
		if p.zones == nil {
			p.zones = map[string]zoneRef{}
		}
		p.zones[fqdn] = z
		p.mu.Unlock()
		return z, nil
	}
	return zoneRef{}, errs.Permanentf("%s: no Cloudflare zone that these credentials can read holds %s (none is named by a suffix of it): add the zone, or give the token Zone:Read on it", p.Config.Path, fqdn)
}

// listZones returns the zones named name (every page).
func (p *Provider) listZones(ctx context.Context, name string) ([]cfzones.Zone, error) {
	var out []cfzones.Zone
	for page := 1; page <= maxPages; page++ {
		res, err := p.Zones.List(ctx, cfzones.ZoneListParams{Name: cfgo.F(name), Page: cfgo.F(float64(page)), PerPage: cfgo.F(50.0)})
		if err != nil {
			return nil, p.classify(fmt.Errorf("find the zone: list zones named %s: %w", name, err), opListZones)
		}
		for _, z := range res.Result {
			if strings.EqualFold(strings.TrimSuffix(z.Name, "."), name) {
				out = append(out, z)
			}
		}
		if lastPage(len(res.Result), res.ResultInfo.PerPage) {
			break
		}
	}
	return out, nil
}

// lastPage reports whether a page of n results, of at most per, is the
// last one.
func lastPage(n int, per int64) bool { return n == 0 || (per > 0 && int64(n) < per) }

// txtRecord is a TXT record as listed.
type txtRecord struct {
	id, text string
	ttl      time.Duration
}

// listTXT returns the TXT records of fqdn in z (every page).
func (p *Provider) listTXT(ctx context.Context, z zoneRef, fqdn string) ([]txtRecord, error) {
	name := strings.TrimSuffix(fqdn, ".")
	var out []txtRecord
	for page := 1; page <= maxPages; page++ {
		res, err := p.Records.List(ctx, cfdns.RecordListParams{
			ZoneID:  cfgo.F(z.id),
			Type:    cfgo.F(cfdns.RecordListParamsTypeTXT),
			Name:    cfgo.F(cfdns.RecordListParamsName{Exact: cfgo.F(name)}),
			Page:    cfgo.F(float64(page)),
			PerPage: cfgo.F(float64(perPage)),
		})
		if err != nil {
			return nil, p.classify(fmt.Errorf("read TXT %s: list records of zone %s: %w", fqdn, z.name, err), opRead)
		}
		for _, r := range res.Result {
			if string(r.Type) != "TXT" || !strings.EqualFold(strings.TrimSuffix(r.Name, "."), name) {
				continue
			}
			out = append(out, txtRecord{id: r.ID, text: DecodeTXT(r.Content), ttl: time.Duration(r.TTL) * time.Second})
		}
		if lastPage(len(res.Result), res.ResultInfo.PerPage) {
			break
		}
	}
	return out, nil
}

// create creates one TXT record of fqdn in z.
func (p *Provider) create(ctx context.Context, z zoneRef, fqdn string, r libdns.TXT) error {
	ttl := r.TTL
	if ttl < defaultTTL {
		ttl = defaultTTL
	}
	_, err := p.Records.New(ctx, cfdns.RecordNewParams{
		ZoneID: cfgo.F(z.id),
		Body: cfdns.TXTRecordParam{
			Name:    cfgo.F(strings.TrimSuffix(fqdn, ".")),
			Type:    cfgo.F(cfdns.TXTRecordTypeTXT),
			Content: cfgo.F(EncodeTXT(r.Text)),
			TTL:     cfgo.F(cfdns.TTL(ttl / time.Second)),
		},
	})
	if hasCode(err, codeIdenticalRecord) {
		return nil // written in between (by a retry of ours, or a racing step)
	}
	if err != nil {
		return p.classify(fmt.Errorf("create TXT %s in zone %s: %w", fqdn, z.name, err), opChange)
	}
	return nil
}

// delete deletes one record; a record already gone is fine.
func (p *Provider) delete(ctx context.Context, z zoneRef, r txtRecord) error {
	_, err := p.Records.Delete(ctx, r.id, cfdns.RecordDeleteParams{ZoneID: cfgo.F(z.id)})
	if hasCode(err, codeRecordNotFound) {
		return nil
	}
	if err != nil {
		return p.classify(fmt.Errorf("delete TXT record %s in zone %s: %w", r.id, z.name, err), opChange)
	}
	return nil
}
