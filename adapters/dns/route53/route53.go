// Package route53 is a libdns provider over Amazon Route 53 (aws-sdk-go-v2)
// for certfn's DNS-01 solver. It implements cert-manager's route53 solver
// fields (region, hostedZoneID, role, accessKeyID or accessKeyIDSecretRef
// with secretAccessKeySecretRef; spec.solver.dns01.route53):
//
//   - the hosted zone is hostedZoneID, or else the public hosted zone whose
//     name is the longest suffix of the record's name
//     (ListHostedZonesByName, one call per label tried);
//   - TXT values are read (ListResourceRecordSets), our value added or
//     removed, and the whole set written back (UPSERT; DELETE when it
//     becomes empty), so other values of the same name are kept;
//   - every change's ID is kept (dns01.ChangeTracker) so the Solver's Check
//     asks GetChange once whether it is INSYNC instead of waiting;
//   - credentials are the spec's static keys when given, else the default
//     chain (the function's role); with role, they assume it through STS.
//
// Factory plugs it into core/acme/dns01 under dns01.KeyRoute53. See
// docs/reference/dns01.md ("Route53").
package route53

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	r53 "github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/libdns/libdns"
	"github.com/miekg/dns"

	"github.com/certfn/certfn/adapters/aws/awscfg"
	"github.com/certfn/certfn/adapters/dns/txtrr"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
)

// API is the part of the Route 53 client the provider uses
// (*route53.Client implements it).
type API interface {
	ListHostedZonesByName(ctx context.Context, in *r53.ListHostedZonesByNameInput, optFns ...func(*r53.Options)) (*r53.ListHostedZonesByNameOutput, error)
	ListResourceRecordSets(ctx context.Context, in *r53.ListResourceRecordSetsInput, optFns ...func(*r53.Options)) (*r53.ListResourceRecordSetsOutput, error)
	ChangeResourceRecordSets(ctx context.Context, in *r53.ChangeResourceRecordSetsInput, optFns ...func(*r53.Options)) (*r53.ChangeResourceRecordSetsOutput, error)
	GetChange(ctx context.Context, in *r53.GetChangeInput, optFns ...func(*r53.Options)) (*r53.GetChangeOutput, error)
}

// DefaultRegion signs Route 53 calls when neither the spec nor the
// default configuration names a region (Route 53 is a global service
// served from us-east-1).
const DefaultRegion = "us-east-1"

// RoleSessionName is the STS session name of an assumed role.
const RoleSessionName = "certfn"

// defaultTTL is the TTL of a TXT set created with a zero TTL.
const defaultTTL = 60 * time.Second

// Options configure Factory.
type Options struct {
	// Config returns the base AWS configuration for region ("" means the
	// default configuration's region). Default: awscfg.Load with Retry
	// (the default credential chain, AWS_ENDPOINT_URL*). Tests return
	// awscfg.ForEndpoint(...) to reach a double or LocalStack.
	Config func(ctx context.Context, region string) (aws.Config, error)
	// Retry bounds the SDK retryer of the default Config.
	Retry awscfg.Retry
	// AllowedZoneIDs, when not empty, are the only hosted zones the
	// provider changes (AWS mode: CERTFN_ROUTE53_ZONE_IDS, the zones the
	// worker's IAM policy names). Zone discovery ignores other zones and a
	// hostedZoneID outside the list is a permanent error.
	AllowedZoneIDs []string
	// IssuerAmbientCredentials lets solvers of namespaced Issuers use the
	// ambient credentials (the default chain: the function's role). Off by
	// default, as cert-manager's --issuer-ambient-credentials: an Issuer
	// must then give accessKeyID and secretAccessKeySecretRef. Solvers of
	// ClusterIssuers may always use them
	// (--cluster-issuer-ambient-credentials, on by default).
	IssuerAmbientCredentials bool
}

// Factory builds Route 53 providers. It caches one client per set of
// credentials (role sessions included), so a warm function does not call
// STS for every challenge step. Safe for concurrent use.
type Factory struct {
	opts    Options
	allowed map[string]bool
	mu      sync.Mutex
	clients map[string]API
}

// NewFactory returns a Factory with opts; its Build method is the
// dns01.ProviderFactory.
func NewFactory(opts Options) *Factory {
	if opts.Config == nil {
		r := opts.Retry
		opts.Config = func(ctx context.Context, region string) (aws.Config, error) {
			var fns []func(*config.LoadOptions) error
			if region != "" {
				fns = append(fns, config.WithRegion(region))
			}
			return awscfg.Load(ctx, r, fns...)
		}
	}
	f := &Factory{opts: opts, clients: map[string]API{}}
	if len(opts.AllowedZoneIDs) > 0 {
		f.allowed = map[string]bool{}
		for _, z := range opts.AllowedZoneIDs {
			f.allowed[normalizeZoneID(z)] = true
		}
	}
	return f
}

var _ dns01.ProviderFactory = (*Factory)(nil).Build

// Config is a validated spec.solver.dns01.route53 with its secrets. Its
// String method never shows the secret access key.
type Config struct {
	// Region signs the calls ("" : the default configuration's, else us-east-1).
	Region string
	// HostedZoneID is the zone to change, without "/hostedzone/"; empty:
	// found by longest suffix.
	HostedZoneID string
	// Role is an IAM role ARN to assume; empty: none.
	Role string
	// AccessKeyID and SecretAccessKey are static credentials; empty: the
	// default chain (ambient credentials).
	AccessKeyID     string
	SecretAccessKey string
	// Path is the field path of the settings ("spec.solver.dns01.route53").
	Path string
}

// String describes c without its secret.
func (c Config) String() string {
	creds := "ambient credentials"
	if c.AccessKeyID != "" {
		creds = "access key " + c.AccessKeyID
	}
	s := fmt.Sprintf("route53 region=%q zone=%q %s", c.Region, c.HostedZoneID, creds)
	if c.Role != "" {
		s += " assuming " + c.Role
	}
	return s
}

// GoString is String, so that %#v cannot print the secret either.
func (c Config) GoString() string { return c.String() }

var (
	zoneIDRe = regexp.MustCompile(`^[A-Z0-9]{1,32}$`)
	roleRe   = regexp.MustCompile(`^arn:aws[a-z-]*:iam::[0-9]{12}:role/[\w+=,.@/-]{1,512}$`)
	regionRe = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$`)
	keyIDRe  = regexp.MustCompile(`^[A-Z0-9]{16,128}$`)
)

// Parse validates req.DNS01.Route53 and reads its secrets:
//   - region, when set, looks like an AWS region ("eu-west-1");
//   - hostedZoneID, when set, is a Route 53 zone ID (upper-case letters and
//     digits, "/hostedzone/" accepted in front);
//   - role, when set, is an IAM role ARN;
//   - accessKeyID (or accessKeyIDSecretRef) and secretAccessKeySecretRef go
//     together; neither means ambient credentials, which a namespaced
//     Issuer may use only with ambientForIssuers (cert-manager's rule).
//
// Every violation is a permanent error naming the field; a failing secret
// store is transient. Errors never contain the secret access key.
func Parse(ctx context.Context, req dns01.ProviderRequest, ambientForIssuers bool) (Config, error) {
	p := req.Path + ".route53"
	if req.DNS01 == nil || req.DNS01.Route53 == nil {
		return Config{}, errs.Permanentf("%s: required", p)
	}
	spec := req.DNS01.Route53
	c := Config{Path: p, Region: strings.TrimSpace(spec.Region), Role: strings.TrimSpace(spec.Role)}
	if c.Region != "" && !regionRe.MatchString(c.Region) {
		return Config{}, errs.Permanentf("%s.region: %q is not an AWS region (want e.g. us-east-1)", p, spec.Region)
	}
	if z := strings.TrimSpace(spec.HostedZoneID); z != "" {
		c.HostedZoneID = normalizeZoneID(z)
		if !zoneIDRe.MatchString(c.HostedZoneID) {
			return Config{}, errs.Permanentf("%s.hostedZoneID: %q is not a Route53 hosted zone ID (want upper-case letters and digits, e.g. Z0123456789ABCDEFGHIJ)", p, spec.HostedZoneID)
		}
	}
	if c.Role != "" && !roleRe.MatchString(c.Role) {
		return Config{}, errs.Permanentf("%s.role: %q is not an IAM role ARN (want arn:aws:iam::<account>:role/<name>)", p, spec.Role)
	}
	hasID := spec.AccessKeyID != "" || spec.SecretAccessKeyID != nil
	hasSecret := spec.SecretAccessKey.Name != "" || spec.SecretAccessKey.Key != ""
	switch {
	case spec.AccessKeyID != "" && spec.SecretAccessKeyID != nil:
		return Config{}, errs.Permanentf("%s: only one of accessKeyID or accessKeyIDSecretRef may be set", p)
	case hasID && !hasSecret:
		return Config{}, errs.Permanentf("%s.secretAccessKeySecretRef: required when accessKeyID or accessKeyIDSecretRef is set", p)
	case hasSecret && !hasID:
		return Config{}, errs.Permanentf("%s.accessKeyID: required (or accessKeyIDSecretRef) when secretAccessKeySecretRef is set", p)
	case !hasID:
		if req.IssuerKind != api.KindClusterIssuer && !ambientForIssuers {
			return Config{}, errs.Permanentf("%s: an Issuer's route53 solver must give accessKeyID (or accessKeyIDSecretRef) and secretAccessKeySecretRef: ambient credentials are for ClusterIssuers only in this deployment (cert-manager's --issuer-ambient-credentials is off)", p)
		}
		return c, nil
	}
	c.AccessKeyID = strings.TrimSpace(spec.AccessKeyID)
	if ref := spec.SecretAccessKeyID; ref != nil {
		v, err := req.SecretValue(ctx, *ref, p+".accessKeyIDSecretRef")
		if err != nil {
			return Config{}, err
		}
		c.AccessKeyID = strings.TrimSpace(string(v))
	}
	if !keyIDRe.MatchString(c.AccessKeyID) {
		field := p + ".accessKeyID"
		if spec.SecretAccessKeyID != nil {
			field = p + ".accessKeyIDSecretRef"
		}
		return Config{}, errs.Permanentf("%s: not an AWS access key ID (want 16 to 128 upper-case letters and digits)", field)
	}
	v, err := req.SecretValue(ctx, spec.SecretAccessKey, p+".secretAccessKeySecretRef")
	if err != nil {
		return Config{}, err
	}
	c.SecretAccessKey = strings.TrimSpace(string(v))
	if c.SecretAccessKey == "" || strings.ContainsAny(c.SecretAccessKey, " \t\r\n") {
		return Config{}, errs.Permanentf("%s.secretAccessKeySecretRef: secret %s/%s key %q is not an AWS secret access key",
			p, req.SecretNamespace, spec.SecretAccessKey.Name, spec.SecretAccessKey.Key)
	}
	return c, nil
}

// Build is the dns01.ProviderFactory for spec.solver.dns01.route53: it
// validates the settings (Parse) and returns a provider over a cached
// client for them. It makes no AWS call (an assumed role's credentials
// are fetched on first use).
func (f *Factory) Build(ctx context.Context, req dns01.ProviderRequest) (dns01.Provider, error) {
	c, err := Parse(ctx, req, f.opts.IssuerAmbientCredentials)
	if err != nil {
		return nil, err
	}
	if c.HostedZoneID != "" && f.allowed != nil && !f.allowed[c.HostedZoneID] {
		return nil, errs.Permanentf("%s.hostedZoneID: %s is not one of the hosted zones this deployment may change (%s)", c.Path, c.HostedZoneID, strings.Join(f.opts.AllowedZoneIDs, ", "))
	}
	cl, err := f.client(ctx, c)
	if err != nil {
		return nil, err
	}
	return &Provider{API: cl, Config: c, Allowed: f.allowed}, nil
}

// client returns the cached client for c's region and credentials.
func (f *Factory) client(ctx context.Context, c Config) (API, error) {
	sum := sha256.Sum256([]byte(c.SecretAccessKey))
	key := strings.Join([]string{c.Region, c.Role, c.AccessKeyID, hex.EncodeToString(sum[:8])}, "|")
	f.mu.Lock()
	defer f.mu.Unlock()
	if cl, ok := f.clients[key]; ok {
		return cl, nil
	}
	cfg, err := f.opts.Config(ctx, c.Region)
	if err != nil {
		return nil, fmt.Errorf("%s: AWS configuration: %w", c.Path, err)
	}
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	if c.AccessKeyID != "" {
		cfg.Credentials = credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, "")
	}
	if c.Role != "" {
		stsClient := sts.NewFromConfig(cfg)
		cfg.Credentials = aws.NewCredentialsCache(stscreds.NewAssumeRoleProvider(stsClient, c.Role, func(o *stscreds.AssumeRoleOptions) {
			o.RoleSessionName = RoleSessionName
		}))
	}
	cl := r53.NewFromConfig(cfg)
	f.clients[key] = cl
	return cl, nil
}

// Provider changes TXT records in Route 53. A value is built per challenge
// step (Factory.Build); LastChange reports the change its last
// AppendRecords submitted.
type Provider struct {
	API    API
	Config Config
	// Allowed, when not nil, restricts the hosted zones (Options.AllowedZoneIDs).
	Allowed map[string]bool

	mu   sync.Mutex
	last string
}

var (
	_ libdns.RecordAppender = (*Provider)(nil)
	_ libdns.RecordDeleter  = (*Provider)(nil)
	_ dns01.ChangeTracker   = (*Provider)(nil)
)

// AppendRecords adds the TXT values of recs under zone: per name it reads
// the TXT set, adds the values that are missing and writes the whole set
// back with UPSERT (other values kept; the set's TTL kept, or the record's
// TTL, 60 s by default, for a new set). A value already there is not
// written again (no change is submitted). It returns the records as
// libdns.TXT. Only TXT records are supported.
func (p *Provider) AppendRecords(ctx context.Context, zone string, recs []libdns.Record) ([]libdns.Record, error) {
	groups, err := txtrr.GroupByName(zone, recs, p.Config.Path, defaultTTL)
	if err != nil {
		return nil, err
	}
	var out []libdns.Record
	for _, g := range groups {
		zoneID, err := p.hostedZone(ctx, g.FQDN)
		if err != nil {
			return nil, err
		}
		set, err := p.readTXT(ctx, zoneID, g.FQDN)
		if err != nil {
			return nil, err
		}
		values := set.values()
		changed := false
		for _, r := range g.Recs {
			if !slices.Contains(decodeValues(values), r.Text) {
				values = append(values, EncodeTXT(r.Text))
				changed = true
			}
			out = append(out, libdns.TXT{Name: r.Name, TTL: r.TTL, Text: r.Text})
		}
		if !changed {
			continue
		}
		ttl := g.TTL
		if set != nil && set.TTL != nil {
			ttl = time.Duration(*set.TTL) * time.Second
		}
		if err := p.change(ctx, zoneID, g.FQDN, types.ChangeActionUpsert, ttl, values); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// DeleteRecords removes exactly the TXT values of recs: per name it reads
// the TXT set, drops those values and writes back the rest with UPSERT, or
// DELETEs the set when nothing is left. A record with an empty value
// removes the whole TXT set of its name (libdns's rule). A value or set
// that is not there is not an error. It returns the records it removed.
func (p *Provider) DeleteRecords(ctx context.Context, zone string, recs []libdns.Record) ([]libdns.Record, error) {
	groups, err := txtrr.GroupByName(zone, recs, p.Config.Path, defaultTTL)
	if err != nil {
		return nil, err
	}
	var out []libdns.Record
	for _, g := range groups {
		zoneID, err := p.hostedZone(ctx, g.FQDN)
		if err != nil {
			return nil, err
		}
		set, err := p.readTXT(ctx, zoneID, g.FQDN)
		if err != nil {
			return nil, err
		}
		if set == nil {
			continue
		}
		old := set.values()
		var keep []string
		var removed []libdns.Record
		all := slices.ContainsFunc(g.Recs, func(r libdns.TXT) bool { return r.Text == "" })
		for _, v := range old {
			text := DecodeTXT(v)
			i := slices.IndexFunc(g.Recs, func(r libdns.TXT) bool { return r.Text == text })
			if all || i >= 0 {
				removed = append(removed, libdns.TXT{Name: g.Rel, TTL: time.Duration(aws.ToInt64(set.TTL)) * time.Second, Text: text})
				continue
			}
			keep = append(keep, v)
		}
		if len(removed) == 0 {
			continue
		}
		ttl := time.Duration(aws.ToInt64(set.TTL)) * time.Second
		if len(keep) == 0 {
			err = p.change(ctx, zoneID, g.FQDN, types.ChangeActionDelete, ttl, old)
		} else {
			err = p.change(ctx, zoneID, g.FQDN, types.ChangeActionUpsert, ttl, keep)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, removed...)
	}
	return out, nil
}

// LastChange implements dns01.ChangeTracker: the ID of the change the last
// AppendRecords of p submitted ("" if none).
func (p *Provider) LastChange() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

// Synced implements dns01.ChangeTracker with one GetChange call: true when
// the change is INSYNC (every Route 53 name server has it) or when Route 53
// no longer knows it (NoSuchChange: the DNS round decides).
func (p *Provider) Synced(ctx context.Context, _ string, change string) (bool, error) {
	out, err := p.API.GetChange(ctx, &r53.GetChangeInput{Id: aws.String(change)})
	var nsc *types.NoSuchChange
	if errors.As(err, &nsc) {
		return true, nil
	}
	if err != nil {
		return false, p.classify(fmt.Errorf("GetChange %s: %w", change, err), "")
	}
	return out.ChangeInfo != nil && out.ChangeInfo.Status == types.ChangeStatusInsync, nil
}

// group is the TXT records of one name.

// hostedZone returns the ID of the hosted zone for fqdn: the configured
// one, or the public hosted zone named by the longest suffix of fqdn
// (among the allowed zones). No zone, or two public zones of that name, is
// a permanent error naming hostedZoneID.
func (p *Provider) hostedZone(ctx context.Context, fqdn string) (string, error) {
	if p.Config.HostedZoneID != "" {
		return p.Config.HostedZoneID, nil
	}
	field := p.Config.Path + ".hostedZoneID"
	labels := dns.SplitDomainName(fqdn)
	for i := range labels {
		suffix := dns.Fqdn(strings.Join(labels[i:], "."))
		out, err := p.API.ListHostedZonesByName(ctx, &r53.ListHostedZonesByNameInput{DNSName: aws.String(suffix)})
		if err != nil {
			return "", p.classify(fmt.Errorf("find the hosted zone of %s: ListHostedZonesByName %s: %w", fqdn, suffix, err), "")
		}
		var found []string
		for _, z := range out.HostedZones {
			if !strings.EqualFold(dns.Fqdn(aws.ToString(z.Name)), suffix) {
				continue
			}
			if z.Config != nil && z.Config.PrivateZone {
				continue
			}
			id := normalizeZoneID(aws.ToString(z.Id))
			if p.Allowed != nil && !p.Allowed[id] {
				continue
			}
			found = append(found, id)
		}
		switch len(found) {
		case 0:
			continue
		case 1:
			return found[0], nil
		default:
			return "", errs.Permanentf("%s: several public hosted zones are named %s (%s): set hostedZoneID", field, suffix, strings.Join(found, ", "))
		}
	}
	among := "public hosted zone"
	if p.Allowed != nil {
		among = "public hosted zone this deployment may change"
	}
	return "", errs.Permanentf("%s: no %s holds %s (none is named by a suffix of it): set hostedZoneID or create the zone", field, among, fqdn)
}

// txtSet is a TXT record set as read.
type txtSet types.ResourceRecordSet

// values returns the set's raw (quoted) values.
func (s *txtSet) values() []string {
	if s == nil {
		return nil
	}
	out := make([]string, 0, len(s.ResourceRecords))
	for _, r := range s.ResourceRecords {
		out = append(out, aws.ToString(r.Value))
	}
	return out
}

// readTXT returns the TXT set of fqdn in zoneID, nil when there is none.
func (p *Provider) readTXT(ctx context.Context, zoneID, fqdn string) (*txtSet, error) {
	out, err := p.API.ListResourceRecordSets(ctx, &r53.ListResourceRecordSetsInput{
		HostedZoneId:    aws.String(zoneID),
		StartRecordName: aws.String(fqdn),
		StartRecordType: types.RRTypeTxt,
		MaxItems:        aws.Int32(1),
	})
	if err != nil {
		return nil, p.classify(fmt.Errorf("read TXT %s: ListResourceRecordSets %s: %w", fqdn, zoneID, err), zoneID)
	}
	for _, s := range out.ResourceRecordSets {
		if s.Type == types.RRTypeTxt && strings.EqualFold(dns.Fqdn(unescapeName(aws.ToString(s.Name))), fqdn) {
			set := txtSet(s)
			return &set, nil
		}
	}
	return nil, nil
}

// change submits one change of the TXT set of fqdn and records its ID.
func (p *Provider) change(ctx context.Context, zoneID, fqdn string, action types.ChangeAction, ttl time.Duration, values []string) error {
	secs := int64(ttl / time.Second)
	if secs <= 0 {
		secs = int64(defaultTTL / time.Second)
	}
	rrs := make([]types.ResourceRecord, 0, len(values))
	for _, v := range values {
		rrs = append(rrs, types.ResourceRecord{Value: aws.String(v)})
	}
	out, err := p.API.ChangeResourceRecordSets(ctx, &r53.ChangeResourceRecordSetsInput{
		HostedZoneId: aws.String(zoneID),
		ChangeBatch: &types.ChangeBatch{
			Comment: aws.String("certfn DNS-01"),
			Changes: []types.Change{{Action: action, ResourceRecordSet: &types.ResourceRecordSet{
				Name: aws.String(fqdn), Type: types.RRTypeTxt, TTL: aws.Int64(secs), ResourceRecords: rrs,
			}}},
		},
	})
	if err != nil {
		return p.classify(fmt.Errorf("%s TXT %s: ChangeResourceRecordSets %s: %w", action, fqdn, zoneID, err), zoneID)
	}
	if out.ChangeInfo != nil {
		p.mu.Lock()
		p.last = aws.ToString(out.ChangeInfo.Id)
		p.mu.Unlock()
	}
	return nil
}

// normalizeZoneID strips "/hostedzone/" from a zone ID.
func normalizeZoneID(id string) string {
	id = strings.TrimSpace(id)
	id = strings.TrimPrefix(id, "/hostedzone/")
	return strings.TrimPrefix(id, "hostedzone/")
}

// unescapeName undoes Route 53's octal escapes in record names ("\052" for "*").
func unescapeName(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	return DecodeTXT(`"` + s + `"`)
}
