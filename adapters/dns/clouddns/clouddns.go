// Package clouddns is a libdns provider over Google Cloud DNS
// (google.golang.org/api/dns/v1) for certfn's DNS-01 solver. It implements
// cert-manager's cloudDNS solver fields (project, hostedZoneName,
// serviceAccountSecretRef; spec.solver.dns01.cloudDNS):
//
//   - the managed zone is hostedZoneName, or else the public managed zone
//     of the project whose DNS name is the longest suffix of the record's
//     name (managedZones.list);
//   - TXT values are read (resourceRecordSets.list), our value added or
//     removed, and the set replaced by one change that deletes the set as
//     read and adds the new one (changes.create), so other values of the
//     same name are kept and a set that changed in between makes Cloud DNS
//     refuse the change (412 conditionNotMet: a transient error, the retry
//     reads again);
//   - every change's name is kept (dns01.ChangeTracker) so the Solver's
//     Check asks changes.get once whether it is done instead of waiting;
//   - credentials are the service-account key in serviceAccountSecretRef,
//     else the function's own identity (Application Default Credentials).
//
// Factory.Build plugs it into core/acme/dns01 under dns01.KeyCloudDNS. See
// docs/reference/dns01.md ("Cloud DNS").
package clouddns

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/libdns/libdns"
	"github.com/miekg/dns"
	gdns "google.golang.org/api/dns/v1"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"

	"github.com/certfn/certfn/adapters/dns/txtrr"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
)

// DefaultTokenURL is Google's OAuth 2.0 token endpoint, the only one a
// service-account key may name by default (Options.TokenURL).
const DefaultTokenURL = "https://oauth2.googleapis.com/token"

// defaultTTL is the TTL of a TXT set created with a zero TTL.
const defaultTTL = 60 * time.Second

// Options configure a Factory.
type Options struct {
	// Endpoint is the base URL of the Cloud DNS API ("": Google's). Tests
	// set a double's (clouddnstest.Double.Endpoint).
	Endpoint string
	// TokenURL is the OAuth 2.0 token endpoint service-account keys are
	// exchanged at ("": DefaultTokenURL). A key whose token_uri names
	// another endpoint is refused: a key comes from a tenant's secret, and
	// the function must not send signed assertions to wherever it points.
	// Tests set a double's (clouddnstest.Double.TokenURL).
	TokenURL string
	// Ambient are the client options that stand for the ambient
	// credentials; nil: Application Default Credentials (the function's
	// own service account; GOOGLE_APPLICATION_CREDENTIALS locally). Tests
	// pass a static token.
	Ambient []option.ClientOption
	// AllowedZones, when not empty, are the only managed zones the
	// provider changes: "zone-name" (in any project) or
	// "project/zone-name". Zone discovery ignores other zones, and a
	// hostedZoneName outside the list is a permanent error.
	AllowedZones []string
	// IssuerAmbientCredentials lets solvers of namespaced Issuers use the
	// ambient credentials. Off by default, as cert-manager's
	// --issuer-ambient-credentials: an Issuer must then give
	// serviceAccountSecretRef. Solvers of ClusterIssuers may always use
	// them (--cluster-issuer-ambient-credentials, on by default).
	IssuerAmbientCredentials bool
}

// Factory builds Cloud DNS providers. It caches one client per set of
// credentials, so a warm function does not exchange a service-account key
// for a token at every challenge step. Safe for concurrent use.
type Factory struct {
	opts    Options
	allowed *allowList
	mu      sync.Mutex
	clients map[string]*gdns.Service
}

// NewFactory returns a Factory with opts; its Build method is the
// dns01.ProviderFactory.
func NewFactory(opts Options) *Factory {
	if opts.TokenURL == "" {
		opts.TokenURL = DefaultTokenURL
	}
	return &Factory{opts: opts, allowed: newAllowList(opts.AllowedZones), clients: map[string]*gdns.Service{}}
}

var _ dns01.ProviderFactory = (*Factory)(nil).Build

// Config is a validated spec.solver.dns01.cloudDNS with its credentials.
// Its String method never shows the private key.
type Config struct {
	// Project is the Google Cloud project that holds the zones.
	Project string
	// HostedZoneName is the managed zone's name ("example-com"); empty:
	// found by longest DNS-name suffix among the project's public zones.
	HostedZoneName string
	// ServiceAccount is the key from serviceAccountSecretRef; nil: the
	// ambient credentials.
	ServiceAccount *ServiceAccountKey
	// Path is the field path of the settings ("spec.solver.dns01.cloudDNS").
	Path string
}

// String describes c without the private key.
func (c Config) String() string {
	creds := "ambient credentials"
	if c.ServiceAccount != nil {
		creds = c.ServiceAccount.String()
	}
	return fmt.Sprintf("cloudDNS project=%q zone=%q %s", c.Project, c.HostedZoneName, creds)
}

// GoString is String, so that %#v cannot print the key either.
func (c Config) GoString() string { return c.String() }

var (
	// projectRe: a project ID, optionally domain-scoped ("example.com:proj").
	projectRe = regexp.MustCompile(`^([a-z0-9][a-z0-9.-]*[a-z0-9]:)?[a-z][a-z0-9-]{4,28}[a-z0-9]$`)
	// zoneNameRe: a managed zone's name, or its numeric ID.
	zoneNameRe = regexp.MustCompile(`^([a-z]([a-z0-9-]{0,61}[a-z0-9])?|[0-9]{1,20})$`)
)

// Parse validates req.DNS01.CloudDNS and reads its secret:
//   - project is required and is a project ID;
//   - hostedZoneName, when set, is a managed zone name (or numeric ID);
//   - serviceAccountSecretRef, when set, names a service-account JSON key
//     (type service_account, client_email, an RSA private_key, token_uri
//     empty or tokenURL); when absent, the ambient credentials are used,
//     which a namespaced Issuer may do only with ambientForIssuers
//     (cert-manager's rule).
//
// Every violation is a permanent error naming the field; a failing secret
// store is transient. Errors never contain the key.
func Parse(ctx context.Context, req dns01.ProviderRequest, tokenURL string, ambientForIssuers bool) (Config, error) {
	p := req.Path + ".cloudDNS"
	if req.DNS01 == nil || req.DNS01.CloudDNS == nil {
		return Config{}, errs.Permanentf("%s: required", p)
	}
	if tokenURL == "" {
		tokenURL = DefaultTokenURL
	}
	spec := req.DNS01.CloudDNS
	c := Config{Path: p, Project: strings.TrimSpace(spec.Project), HostedZoneName: strings.TrimSpace(spec.HostedZoneName)}
	switch {
	case c.Project == "":
		return Config{}, errs.Permanentf("%s.project: required (the Google Cloud project ID that holds the managed zone)", p)
	case !projectRe.MatchString(c.Project):
		return Config{}, errs.Permanentf("%s.project: %q is not a Google Cloud project ID (want 6 to 30 lower-case letters, digits and hyphens, starting with a letter)", p, spec.Project)
	}
	if c.HostedZoneName != "" && !zoneNameRe.MatchString(c.HostedZoneName) {
		return Config{}, errs.Permanentf("%s.hostedZoneName: %q is not a managed zone name (want lower-case letters, digits and hyphens, starting with a letter, at most 63; e.g. example-com)", p, spec.HostedZoneName)
	}
	ref := spec.ServiceAccount
	if ref == nil || (ref.Name == "" && ref.Key == "") {
		if req.IssuerKind != api.KindClusterIssuer && !ambientForIssuers {
			return Config{}, errs.Permanentf("%s: an Issuer's cloudDNS solver must give serviceAccountSecretRef: ambient credentials (the function's own service account) are for ClusterIssuers only in this deployment (cert-manager's --issuer-ambient-credentials is off)", p)
		}
		return c, nil
	}
	field := p + ".serviceAccountSecretRef"
	raw, err := req.SecretValue(ctx, *ref, field)
	if err != nil {
		return Config{}, err
	}
	key, err := parseKey(raw, tokenURL)
	if err != nil {
		return Config{}, errs.Permanentf("%s: secret %s/%s key %q: %v", field, req.SecretNamespace, ref.Name, ref.Key, err)
	}
	c.ServiceAccount = key
	return c, nil
}

// Build is the dns01.ProviderFactory for spec.solver.dns01.cloudDNS: it
// validates the settings (Parse) and returns a provider over a cached
// client for them. It makes no Cloud DNS call (a token is fetched on first
// use).
func (f *Factory) Build(ctx context.Context, req dns01.ProviderRequest) (dns01.Provider, error) {
	c, err := Parse(ctx, req, f.opts.TokenURL, f.opts.IssuerAmbientCredentials)
	if err != nil {
		return nil, err
	}
	if c.HostedZoneName != "" && !f.allowed.allows(c.Project, c.HostedZoneName) {
		return nil, errs.Permanentf("%s.hostedZoneName: %s (project %s) is not one of the managed zones this deployment may change (%s)",
			c.Path, c.HostedZoneName, c.Project, strings.Join(f.opts.AllowedZones, ", "))
	}
	svc, err := f.client(ctx, c)
	if err != nil {
		return nil, err
	}
	return &Provider{Service: svc, Config: c, allowed: f.allowed}, nil
}

// client returns the cached client for c's credentials.
func (f *Factory) client(ctx context.Context, c Config) (*gdns.Service, error) {
	key := "ambient"
	if c.ServiceAccount != nil {
		sum := sha256.Sum256(c.ServiceAccount.json)
		key = "sa|" + hex.EncodeToString(sum[:])
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if svc, ok := f.clients[key]; ok {
		return svc, nil
	}
	var opts []option.ClientOption
	if f.opts.Endpoint != "" {
		opts = append(opts, option.WithEndpoint(f.opts.Endpoint))
	}
	if c.ServiceAccount != nil {
		opts = append(opts, option.WithAuthCredentialsJSON(option.ServiceAccount, c.ServiceAccount.json))
	} else {
		opts = append(opts, f.opts.Ambient...)
	}
	// The client outlives this step: it must not keep the step's
	// cancellation (token refreshes use each call's own context).
	svc, err := gdns.NewService(context.WithoutCancel(ctx), opts...)
	if err != nil {
		if c.ServiceAccount != nil {
			return nil, errs.Permanent(fmt.Errorf("%s.serviceAccountSecretRef: %s: %w", c.Path, c.ServiceAccount, err))
		}
		// No Application Default Credentials here (or the metadata server
		// did not answer): the deployment's configuration, retried with
		// backoff like route53's empty default chain.
		return nil, fmt.Errorf("%s (ambient credentials): Cloud DNS client: %w", c.Path, err)
	}
	f.clients[key] = svc
	return svc, nil
}

// Provider changes TXT records in Cloud DNS. A value is built per
// challenge step (Factory.Build); LastChange reports the change it
// submitted last.
type Provider struct {
	Service *gdns.Service
	Config  Config

	// allowed restricts the managed zones (Options.AllowedZones); nil
	// allows every zone.
	allowed *allowList

	mu    sync.Mutex
	last  string
	zones []*gdns.ManagedZone // the project's zones, listed once per value
}

var (
	_ libdns.RecordAppender = (*Provider)(nil)
	_ libdns.RecordDeleter  = (*Provider)(nil)
	_ dns01.ChangeTracker   = (*Provider)(nil)
)

// AppendRecords adds the TXT values of recs under zone: per name it reads
// the TXT set, adds the values that are missing and submits one change
// that deletes the set as read and adds the merged one (other values and
// the set's TTL kept; a new set gets the record's TTL, 60 s by default). A
// value already there is not written again (no change is submitted). It
// returns the records as libdns.TXT. Only TXT records are supported.
func (p *Provider) AppendRecords(ctx context.Context, zone string, recs []libdns.Record) ([]libdns.Record, error) {
	groups, err := txtrr.GroupByName(zone, recs, p.Config.Path, defaultTTL)
	if err != nil {
		return nil, err
	}
	var out []libdns.Record
	for _, g := range groups {
		mz, err := p.managedZone(ctx, g.FQDN)
		if err != nil {
			return nil, err
		}
		set, err := p.readTXT(ctx, mz, g.FQDN)
		if err != nil {
			return nil, err
		}
		var values []string
		ttl := int64(g.TTL / time.Second)
		if set != nil {
			values, ttl = slices.Clone(set.Rrdatas), set.Ttl
		}
		changed := false
		for _, r := range g.Recs {
			if !slices.Contains(decodeAll(values), r.Text) {
				values = append(values, EncodeTXT(r.Text))
				changed = true
			}
			out = append(out, libdns.TXT{Name: r.Name, TTL: r.TTL, Text: r.Text})
		}
		if !changed {
			continue
		}
		if err := p.replace(ctx, mz, g.FQDN, set, ttl, values); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// DeleteRecords removes exactly the TXT values of recs: per name it reads
// the TXT set, drops those values and submits one change that deletes the
// set as read and adds the rest (nothing when no value is left). A record
// with an empty value removes the whole TXT set of its name (libdns's
// rule). A value or set that is not there is not an error. It returns the
// records it removed.
func (p *Provider) DeleteRecords(ctx context.Context, zone string, recs []libdns.Record) ([]libdns.Record, error) {
	groups, err := txtrr.GroupByName(zone, recs, p.Config.Path, defaultTTL)
	if err != nil {
		return nil, err
	}
	var out []libdns.Record
	for _, g := range groups {
		mz, err := p.managedZone(ctx, g.FQDN)
		if err != nil {
			return nil, err
		}
		set, err := p.readTXT(ctx, mz, g.FQDN)
		if err != nil {
			return nil, err
		}
		if set == nil {
			continue
		}
		all := slices.ContainsFunc(g.Recs, func(r libdns.TXT) bool { return r.Text == "" })
		var keep []string
		var removed []libdns.Record
		for _, v := range set.Rrdatas {
			text := DecodeTXT(v)
			if all || slices.ContainsFunc(g.Recs, func(r libdns.TXT) bool { return r.Text == text }) {
				removed = append(removed, libdns.TXT{Name: g.Rel, TTL: time.Duration(set.Ttl) * time.Second, Text: text})
				continue
			}
			keep = append(keep, v)
		}
		if len(removed) == 0 {
			continue
		}
		if err := p.replace(ctx, mz, g.FQDN, set, set.Ttl, keep); err != nil {
			return nil, err
		}
		out = append(out, removed...)
	}
	return out, nil
}

// LastChange implements dns01.ChangeTracker: the name of the change p
// submitted last ("projects/P/managedZones/Z/changes/ID"; "" if none).
func (p *Provider) LastChange() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

// Synced implements dns01.ChangeTracker with one changes.get call: true
// when the change is done (Cloud DNS serves it from every name server) or
// when Cloud DNS does not know it (404, or not a name LastChange made: the
// DNS round decides).
func (p *Provider) Synced(ctx context.Context, _ string, change string) (bool, error) {
	project, mz, id, ok := parseChange(change)
	if !ok {
		return true, nil
	}
	c, err := p.Service.Changes.Get(project, mz, id).Context(ctx).Do()
	var ge *googleapi.Error
	if errors.As(err, &ge) && ge.Code == http.StatusNotFound {
		return true, nil
	}
	if err != nil {
		return false, p.classify(fmt.Errorf("changes.get %s: %w", change, err), opRead)
	}
	return c.Status == "done", nil
}

// changeName is the name LastChange reports.
func changeName(project, mz, id string) string {
	return "projects/" + project + "/managedZones/" + mz + "/changes/" + id
}

// parseChange splits a changeName.
func parseChange(s string) (project, mz, id string, ok bool) {
	parts := strings.Split(s, "/")
	if len(parts) != 6 || parts[0] != "projects" || parts[2] != "managedZones" || parts[4] != "changes" ||
		parts[1] == "" || parts[3] == "" || parts[5] == "" {
		return "", "", "", false
	}
	return parts[1], parts[3], parts[5], true
}

// group is the TXT records of one name.

// managedZone returns the name of the managed zone for fqdn: the
// configured one, or the public managed zone of the project (among the
// allowed ones) whose DNS name is the longest suffix of fqdn. No zone, or
// two of that DNS name, is a permanent error naming hostedZoneName.
func (p *Provider) managedZone(ctx context.Context, fqdn string) (string, error) {
	if p.Config.HostedZoneName != "" {
		return p.Config.HostedZoneName, nil
	}
	field := p.Config.Path + ".hostedZoneName"
	zones, err := p.listZones(ctx)
	if err != nil {
		return "", err
	}
	best := -1
	var found []string
	for _, z := range zones {
		name := dns.CanonicalName(z.DnsName)
		if z.Visibility == "private" || !dns.IsSubDomain(name, fqdn) || !p.allowed.allows(p.Config.Project, z.Name) {
			continue
		}
		switch n := dns.CountLabel(name); {
		case n > best:
			best, found = n, []string{z.Name}
		case n == best:
			found = append(found, z.Name)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		among := "public managed zone"
		if p.allowed != nil {
			among = "public managed zone this deployment may change"
		}
		return "", errs.Permanentf("%s: no %s of project %s holds %s (none has a DNS name that is a suffix of it): set hostedZoneName or create the zone", field, among, p.Config.Project, fqdn)
	default:
		slices.Sort(found)
		return "", errs.Permanentf("%s: several public managed zones of project %s hold %s with the same DNS name (%s): set hostedZoneName", field, p.Config.Project, fqdn, strings.Join(found, ", "))
	}
}

// listZones lists the project's managed zones once per provider value.
func (p *Provider) listZones(ctx context.Context) ([]*gdns.ManagedZone, error) {
	p.mu.Lock()
	zones := p.zones
	p.mu.Unlock()
	if zones != nil {
		return zones, nil
	}
	zones = []*gdns.ManagedZone{}
	err := p.Service.ManagedZones.List(p.Config.Project).Context(ctx).Pages(ctx, func(page *gdns.ManagedZonesListResponse) error {
		zones = append(zones, page.ManagedZones...)
		return nil
	})
	if err != nil {
		return nil, p.classify(fmt.Errorf("find the managed zone: managedZones.list %s: %w", p.Config.Project, err), opListZones)
	}
	p.mu.Lock()
	p.zones = zones
	p.mu.Unlock()
	return zones, nil
}

// readTXT returns the TXT set of fqdn in managed zone mz, nil when there is
// none. A set with a routing policy is a permanent error: certfn only
// changes plain sets.
func (p *Provider) readTXT(ctx context.Context, mz, fqdn string) (*gdns.ResourceRecordSet, error) {
	out, err := p.Service.ResourceRecordSets.List(p.Config.Project, mz).Name(fqdn).Type("TXT").Context(ctx).Do()
	if err != nil {
		return nil, p.classify(fmt.Errorf("read TXT %s: resourceRecordSets.list %s/%s: %w", fqdn, p.Config.Project, mz, err), opRead)
	}
	for _, s := range out.Rrsets {
		if s.Type != "TXT" || dns.CanonicalName(s.Name) != fqdn {
			continue
		}
		if s.RoutingPolicy != nil {
			return nil, errs.Permanentf("%s: the TXT set %s in managed zone %s has a routing policy; certfn changes only plain record sets", p.Config.Path, fqdn, mz)
		}
		return s, nil
	}
	return nil, nil
}

// replace submits one change that deletes old (exactly as read; nil: no
// set) and adds the TXT set of fqdn with values (none: no addition), and
// records its name.
func (p *Provider) replace(ctx context.Context, mz, fqdn string, old *gdns.ResourceRecordSet, ttl int64, values []string) error {
	if ttl <= 0 {
		ttl = int64(defaultTTL / time.Second)
	}
	ch := &gdns.Change{}
	if old != nil {
		ch.Deletions = []*gdns.ResourceRecordSet{{Name: old.Name, Type: old.Type, Ttl: old.Ttl, Rrdatas: old.Rrdatas, SignatureRrdatas: old.SignatureRrdatas}}
	}
	if len(values) > 0 {
		ch.Additions = []*gdns.ResourceRecordSet{{Name: fqdn, Type: "TXT", Ttl: ttl, Rrdatas: values}}
	}
	out, err := p.Service.Changes.Create(p.Config.Project, mz, ch).Context(ctx).Do()
	if err != nil {
		return p.classify(fmt.Errorf("change TXT %s: changes.create %s/%s: %w", fqdn, p.Config.Project, mz, err), opChange)
	}
	p.mu.Lock()
	p.last = changeName(p.Config.Project, mz, out.Id)
	p.mu.Unlock()
	return nil
}

// decodeAll decodes rrdatas.
func decodeAll(raw []string) []string {
	out := make([]string, len(raw))
	for i, v := range raw {
		out[i] = DecodeTXT(v)
	}
	return out
}

// allowList is Options.AllowedZones; a nil list allows every zone.
type allowList struct {
	any     map[string]bool // zone names allowed in every project
	project map[string]bool // "project/zone"
}

func newAllowList(entries []string) *allowList {
	var a *allowList
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if a == nil {
			a = &allowList{any: map[string]bool{}, project: map[string]bool{}}
		}
		if strings.Contains(e, "/") {
			a.project[e] = true
		} else {
			a.any[e] = true
		}
	}
	return a
}

// allows reports whether zone of project may be changed.
func (a *allowList) allows(project, zone string) bool {
	return a == nil || a.any[zone] || a.project[project+"/"+zone]
}
