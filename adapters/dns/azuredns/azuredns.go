// Package azuredns is a libdns provider over Azure DNS and Azure Private
// DNS (the Azure SDK for Go: azidentity, armdns, armprivatedns) for
// certfn's DNS-01 solver. It implements cert-manager's azureDNS solver
// fields (clientID, clientSecretSecretRef, tenantID, subscriptionID,
// resourceGroupName, hostedZoneName, environment, managedIdentity,
// zoneType; spec.solver.dns01.azureDNS):
//
//   - the zone is hostedZoneName, or else the zone of resourceGroupName
//     whose name is the longest suffix of the record's name (one listing
//     of the group's zones per step); zoneType AzurePrivateZone uses the
//     group's Private DNS zones instead;
//   - TXT values are read (record set GET), our value added or removed and
//     the set written back with If-Match on the ETag read (or
//     If-None-Match: * for a new set), or deleted with If-Match when it
//     becomes empty, so other values of the name are kept and a set
//     changed in between makes Azure refuse the write (412: a transient
//     error, the retry reads again), as cert-manager does;
//   - credentials are a service principal (clientID, tenantID and the
//     secret in clientSecretSecretRef), else the ambient identity: Azure
//     Workload Identity when AZURE_FEDERATED_TOKEN_FILE is set, else the
//     managed identity (managedIdentity picks a user-assigned one), which
//     only ClusterIssuers may use by default (cert-manager's rule);
//   - environment picks the cloud: AzurePublicCloud (default),
//     AzureChinaCloud, AzureUSGovernmentCloud. AzureGermanCloud is refused
//     with a permanent error: Microsoft Cloud Deutschland was closed in
//     2021 and the SDK has no endpoints for it (cert-manager fails the same
//     way at run time).
//
// Factory.Build plugs it into core/acme/dns01 under dns01.KeyAzureDNS. See
// docs/reference/dns01.md ("Azure DNS").
package azuredns

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/libdns/libdns"
	"github.com/miekg/dns"

	"github.com/certfn/certfn/adapters/dns/txtrr"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
)

// defaultTTL is the TTL of a TXT set created with a zero TTL
// (cert-manager's 60 s).
const defaultTTL = 60 * time.Second

// maxString is the longest string of a TXT record the provider sends:
// Azure's documentation asks callers of the REST API to split longer
// values into strings of at most 254 characters.
const maxString = 254

// DefaultRetry bounds the SDK's retries of one call when Options.Retry is
// zero: two retries of 429/5xx answers a short while apart, none when
// Azure asks to wait longer than MaxRetryDelay (the step then fails
// transiently and the engine retries it later; nothing waits long).
var DefaultRetry = policy.RetryOptions{MaxRetries: 2, RetryDelay: 500 * time.Millisecond, MaxRetryDelay: 4 * time.Second}

// Options configure a Factory.
type Options struct {
	// Cloud, when set, replaces the cloud every environment names: the
	// Entra ID authority host and the Resource Manager endpoint and
	// audience (a private cloud; tests point it at azurednstest.Double).
	// Instance discovery is then off, as a custom authority needs.
	Cloud *cloud.Configuration
	// Transport sends every HTTP request of the clients and credentials
	// (nil: the SDK's default). Tests pass the double's client.
	Transport policy.Transporter
	// Retry bounds the SDK's retries of one call (zero: DefaultRetry;
	// MaxRetries -1: none).
	Retry policy.RetryOptions
	// Ambient builds the ambient credential for a solver without clientID
	// (nil: Workload Identity when AZURE_FEDERATED_TOKEN_FILE is set, else
	// the managed identity, as cert-manager does). mi is the solver's
	// managedIdentity (nil when absent); o are the client options to
	// build it with; customCloud is true with Options.Cloud (an authority
	// of its own: instance discovery must be off).
	Ambient func(mi *api.AzureManagedIdentity, o azcore.ClientOptions, customCloud bool) (azcore.TokenCredential, error)
	// IssuerAmbientCredentials lets solvers of namespaced Issuers use the
	// ambient identity. Off by default, as cert-manager's
	// --issuer-ambient-credentials: an Issuer must then give clientID,
	// clientSecretSecretRef and tenantID. Solvers of ClusterIssuers may
	// always use it (--cluster-issuer-ambient-credentials, on by default).
	IssuerAmbientCredentials bool
}

// Factory builds Azure DNS providers. It caches one client (and so one
// credential with its token) per cloud, subscription, zone type and set
// of credentials, so a warm function does not ask Entra ID for a token at
// every challenge step. Safe for concurrent use.
type Factory struct {
	opts    Options
	mu      sync.Mutex
	clients map[string]recordSets
}

// NewFactory returns a Factory with opts; its Build method is the
// dns01.ProviderFactory to register under dns01.KeyAzureDNS.
func NewFactory(opts Options) *Factory {
	if r := opts.Retry; r.MaxRetries == 0 && r.RetryDelay == 0 && r.MaxRetryDelay == 0 && r.TryTimeout == 0 && r.StatusCodes == nil && r.ShouldRetry == nil {
		opts.Retry = DefaultRetry
	}
	if opts.Ambient == nil {
		opts.Ambient = ambientCredential
	}
	return &Factory{opts: opts, clients: map[string]recordSets{}}
}

var _ dns01.ProviderFactory = (*Factory)(nil).Build

// Config is a validated spec.solver.dns01.azureDNS with its secret. Its
// String method never shows the client secret.
type Config struct {
	SubscriptionID    string
	ResourceGroupName string
	// HostedZoneName is the zone's name ("example.com", lower case, no
	// trailing dot); empty: found by name in the resource group.
	HostedZoneName string
	// Environment is the cloud's name as cert-manager spells it
	// (AzurePublicCloud, AzureChinaCloud, AzureUSGovernmentCloud).
	Environment string
	// Private is true for zoneType AzurePrivateZone.
	Private bool
	// TenantID, ClientID and ClientSecret are the service principal; empty
	// ClientID: the ambient identity.
	TenantID, ClientID, ClientSecret string
	// ManagedIdentity selects the ambient identity (nil: the default one).
	ManagedIdentity *api.AzureManagedIdentity
	// Path is the field path of the settings ("spec.solver.dns01.azureDNS").
	Path string
}

// String describes c without the client secret.
func (c Config) String() string {
	creds := "ambient identity"
	switch {
	case c.ClientID != "":
		creds = fmt.Sprintf("service principal %s of tenant %s", c.ClientID, c.TenantID)
	case c.ManagedIdentity != nil && c.ManagedIdentity.ClientID != "":
		creds = "managed identity " + c.ManagedIdentity.ClientID
	case c.ManagedIdentity != nil && c.ManagedIdentity.ResourceID != "":
		creds = "managed identity " + c.ManagedIdentity.ResourceID
	}
	kind := "public"
	if c.Private {
		kind = "private"
	}
	return fmt.Sprintf("azureDNS %s subscription=%s resourceGroup=%s zone=%q %s, %s", c.Environment, c.SubscriptionID, c.ResourceGroupName, c.HostedZoneName, kind, creds)
}

// GoString is String, so that %#v cannot print the secret either.
func (c Config) GoString() string { return c.String() }

var (
	guidRe   = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	tenantRe = regexp.MustCompile(`^[0-9A-Za-z.-]{1,253}$`)
	// rgRe: a resource group name (1-90 letters, digits, '_', '-', '.',
	// '(' or ')', not ending with '.').
	rgRe = regexp.MustCompile(`^[\p{L}\p{N}_.()-]{0,89}[\p{L}\p{N}_()-]$`)
	// resourceIDRe: a user-assigned identity's resource ID.
	resourceIDRe = regexp.MustCompile(`(?i)^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.ManagedIdentity/userAssignedIdentities/[^/]+$`)
)

// Parse validates req.DNS01.AzureDNS and reads its secret:
//   - subscriptionID (a GUID) and resourceGroupName are required;
//   - hostedZoneName, when set, is a DNS name;
//   - environment is empty or a cloud cert-manager knows (AzureGermanCloud
//     is refused: the cloud no longer exists); zoneType is empty,
//     AzurePublicZone or AzurePrivateZone;
//   - clientID, tenantID and clientSecretSecretRef go together (any one
//     of them needs the others), and exclude managedIdentity;
//   - without them the ambient identity is used, which a namespaced
//     Issuer may do only with ambientForIssuers (cert-manager's rule);
//     managedIdentity's clientID and resourceID exclude each other, its
//     tenantID needs its clientID and excludes its resourceID.
//
// Every violation is a permanent error naming the field; a failing secret
// store is transient. Errors never contain the client secret.
func Parse(ctx context.Context, req dns01.ProviderRequest, ambientForIssuers bool) (Config, error) {
	p := req.Path + ".azureDNS"
	if req.DNS01 == nil || req.DNS01.AzureDNS == nil {
		return Config{}, errs.Permanentf("%s: required", p)
	}
	spec := req.DNS01.AzureDNS
	c := Config{
		Path: p, SubscriptionID: strings.TrimSpace(spec.SubscriptionID), ResourceGroupName: strings.TrimSpace(spec.ResourceGroupName),
		HostedZoneName: strings.TrimSuffix(strings.ToLower(strings.TrimSpace(spec.HostedZoneName)), "."),
		TenantID:       strings.TrimSpace(spec.TenantID), ClientID: strings.TrimSpace(spec.ClientID),
	}
	switch {
	case c.SubscriptionID == "":
		return Config{}, errs.Permanentf("%s.subscriptionID: required (the ID of the Azure subscription that holds the zone)", p)
	case !guidRe.MatchString(c.SubscriptionID):
		return Config{}, errs.Permanentf("%s.subscriptionID: %q is not an Azure subscription ID (a GUID, e.g. 00000000-0000-0000-0000-000000000000)", p, spec.SubscriptionID)
	case c.ResourceGroupName == "":
		return Config{}, errs.Permanentf("%s.resourceGroupName: required (the resource group that holds the zone)", p)
	case !rgRe.MatchString(c.ResourceGroupName):
		return Config{}, errs.Permanentf("%s.resourceGroupName: %q is not a resource group name (1 to 90 letters, digits, '_', '-', '.', '(' or ')', not ending with '.')", p, spec.ResourceGroupName)
	}
	if c.HostedZoneName != "" {
		if _, ok := dns.IsDomainName(c.HostedZoneName); !ok || strings.Contains(c.HostedZoneName, "..") {
			return Config{}, errs.Permanentf("%s.hostedZoneName: %q is not a DNS zone name (want e.g. example.com)", p, spec.HostedZoneName)
		}
	}
	env, err := environment(spec.Environment)
	if err != nil {
		return Config{}, errs.Permanentf("%s.environment: %v", p, err)
	}
	c.Environment = env
	switch spec.ZoneType {
	case "", api.AzurePublicZone:
	case api.AzurePrivateZone:
		c.Private = true
	default:
		return Config{}, errs.Permanentf("%s.zoneType: %q is not %s or %s", p, spec.ZoneType, api.AzurePublicZone, api.AzurePrivateZone)
	}
	sp := c.ClientID != "" || c.TenantID != "" || spec.ClientSecret != nil
	if !sp {
		return c, parseAmbient(&c, spec.ManagedIdentity, req.IssuerKind, ambientForIssuers)
	}
	switch {
	case spec.ManagedIdentity != nil:
		return Config{}, errs.Permanentf("%s.managedIdentity: must not be set with clientID, clientSecretSecretRef or tenantID (a service principal)", p)
	case c.ClientID == "":
		return Config{}, errs.Permanentf("%s.clientID: required with tenantID and clientSecretSecretRef (the service principal's application ID)", p)
	case !guidRe.MatchString(c.ClientID):
		return Config{}, errs.Permanentf("%s.clientID: %q is not an application (client) ID (a GUID)", p, spec.ClientID)
	case c.TenantID == "":
		return Config{}, errs.Permanentf("%s.tenantID: required with clientID (the service principal's directory ID)", p)
	case !tenantRe.MatchString(c.TenantID):
		return Config{}, errs.Permanentf("%s.tenantID: %q is not a tenant ID (a GUID or a domain such as contoso.onmicrosoft.com)", p, spec.TenantID)
	case spec.ClientSecret == nil:
		return Config{}, errs.Permanentf("%s.clientSecretSecretRef: required with clientID (the service principal's client secret)", p)
	}
	v, err := req.SecretValue(ctx, *spec.ClientSecret, p+".clientSecretSecretRef")
	if err != nil {
		return Config{}, err
	}
	c.ClientSecret = strings.TrimSpace(string(v))
	if c.ClientSecret == "" {
		return Config{}, errs.Permanentf("%s.clientSecretSecretRef: secret %s/%s key %q holds only blanks", p, req.SecretNamespace, spec.ClientSecret.Name, spec.ClientSecret.Key)
	}
	return c, nil
}

// parseAmbient checks the ambient identity's settings into c.
func parseAmbient(c *Config, mi *api.AzureManagedIdentity, issuerKind string, ambientForIssuers bool) error {
	p := c.Path
	if issuerKind != api.KindClusterIssuer && !ambientForIssuers {
		return errs.Permanentf("%s: an Issuer's azureDNS solver must give clientID, clientSecretSecretRef and tenantID: the ambient identity (managed identity, workload identity) is for ClusterIssuers only in this deployment (cert-manager's --issuer-ambient-credentials is off)", p)
	}
	if mi == nil {
		return nil
	}
	m := api.AzureManagedIdentity{ClientID: strings.TrimSpace(mi.ClientID), ResourceID: strings.TrimSpace(mi.ResourceID), TenantID: strings.TrimSpace(mi.TenantID)}
	switch {
	case m.ClientID != "" && m.ResourceID != "":
		return errs.Permanentf("%s.managedIdentity: clientID and resourceID cannot both be set", p)
	case m.TenantID != "" && m.ResourceID != "":
		return errs.Permanentf("%s.managedIdentity: tenantID and resourceID cannot both be set", p)
	case m.TenantID != "" && m.ClientID == "":
		return errs.Permanentf("%s.managedIdentity.clientID: required with managedIdentity.tenantID", p)
	case m.ClientID != "" && !guidRe.MatchString(m.ClientID):
		return errs.Permanentf("%s.managedIdentity.clientID: %q is not a client ID (a GUID)", p, mi.ClientID)
	case m.TenantID != "" && !tenantRe.MatchString(m.TenantID):
		return errs.Permanentf("%s.managedIdentity.tenantID: %q is not a tenant ID", p, mi.TenantID)
	case m.ResourceID != "" && !resourceIDRe.MatchString(m.ResourceID):
		return errs.Permanentf("%s.managedIdentity.resourceID: %q is not a user-assigned identity's resource ID (/subscriptions/<id>/resourceGroups/<group>/providers/Microsoft.ManagedIdentity/userAssignedIdentities/<name>)", p, mi.ResourceID)
	}
	c.ManagedIdentity = &m
	return nil
}

// environment returns cert-manager's spelling of the cloud env names, as
// cert-manager's run time reads it (case-insensitively, "AzureCloud" and
// "AzureUSGovernment" too).
func environment(env string) (string, error) {
	switch strings.ToUpper(strings.TrimSpace(env)) {
	case "", "AZURECLOUD", "AZUREPUBLICCLOUD":
		return api.AzurePublicCloud, nil
	case "AZURECHINACLOUD":
		return api.AzureChinaCloud, nil
	case "AZUREUSGOVERNMENT", "AZUREUSGOVERNMENTCLOUD":
		return api.AzureUSGovernmentCloud, nil
	case "AZUREGERMANCLOUD":
		return "", fmt.Errorf("%s is no longer served: Microsoft Cloud Deutschland was closed in October 2021 and the Azure SDK has no endpoints for it; move the zone to %s", api.AzureGermanCloud, api.AzurePublicCloud)
	}
	return "", fmt.Errorf("%q is not %s, %s or %s", env, api.AzurePublicCloud, api.AzureChinaCloud, api.AzureUSGovernmentCloud)
}

// CloudFor returns the SDK's cloud configuration for an environment name
// as Parse returns it.
func CloudFor(env string) (cloud.Configuration, error) {
	switch env {
	case api.AzurePublicCloud, "":
		return cloud.AzurePublic, nil
	case api.AzureChinaCloud:
		return cloud.AzureChina, nil
	case api.AzureUSGovernmentCloud:
		return cloud.AzureGovernment, nil
	}
	return cloud.Configuration{}, fmt.Errorf("no Azure cloud is named %q", env)
}

// Build is the dns01.ProviderFactory for spec.solver.dns01.azureDNS: it
// validates the settings (Parse) and returns a provider over a cached
// client for them. It makes no Azure call (a token is fetched on first
// use).
func (f *Factory) Build(ctx context.Context, req dns01.ProviderRequest) (dns01.Provider, error) {
	c, err := Parse(ctx, req, f.opts.IssuerAmbientCredentials)
	if err != nil {
		return nil, err
	}
	cl, err := f.client(c)
	if err != nil {
		return nil, err
	}
	return &Provider{api: cl, Config: c}, nil
}

// client returns the cached client for c's cloud, subscription, zone type
// and credentials.
func (f *Factory) client(c Config) (recordSets, error) {
	sum := sha256.Sum256([]byte(c.ClientSecret))
	mi := api.AzureManagedIdentity{}
	if c.ManagedIdentity != nil {
		mi = *c.ManagedIdentity
	}
	key := strings.Join([]string{c.Environment, c.SubscriptionID, fmt.Sprint(c.Private), c.TenantID, c.ClientID, hex.EncodeToString(sum[:8]),
		mi.ClientID, mi.ResourceID, mi.TenantID}, "|")
	f.mu.Lock()
	defer f.mu.Unlock()
	if cl, ok := f.clients[key]; ok {
		return cl, nil
	}
	cfg, custom := cloud.Configuration{}, f.opts.Cloud != nil
	if custom {
		cfg = *f.opts.Cloud
	} else {
		var err error
		if cfg, err = CloudFor(c.Environment); err != nil {
			return nil, errs.Permanent(fmt.Errorf("%s.environment: %w", c.Path, err))
		}
	}
	o := azcore.ClientOptions{Cloud: cfg, Retry: f.opts.Retry, Transport: f.opts.Transport, Telemetry: policy.TelemetryOptions{ApplicationID: "certfn"}}
	var cred azcore.TokenCredential
	var err error
	if c.ClientID != "" {
		cred, err = azidentity.NewClientSecretCredential(c.TenantID, c.ClientID, c.ClientSecret, &azidentity.ClientSecretCredentialOptions{
			ClientOptions: o, DisableInstanceDiscovery: custom,
		})
		if err != nil {
			// azidentity checks the tenant's characters; the secret is not in its errors.
			return nil, errs.Permanent(fmt.Errorf("%s.tenantID: %w", c.Path, err))
		}
	} else {
		cred, err = f.opts.Ambient(c.ManagedIdentity, o, custom)
		if err != nil {
			return nil, fmt.Errorf("%s (ambient identity): %w", c.Path, err)
		}
	}
	cl, err := newRecordSets(c, cred, o)
	if err != nil {
		return nil, errs.Permanent(fmt.Errorf("%s: Azure DNS client: %w", c.Path, err))
	}
	f.clients[key] = cl
	return cl, nil
}

// ambientCredential is cert-manager's choice of ambient credential: Azure
// Workload Identity when AZURE_FEDERATED_TOKEN_FILE is set (its client and
// tenant IDs from the environment, or managedIdentity's), else the managed
// identity (managedIdentity's clientID or resourceID for a user-assigned
// one).
func ambientCredential(mi *api.AzureManagedIdentity, o azcore.ClientOptions, customCloud bool) (azcore.TokenCredential, error) {
	if os.Getenv("AZURE_FEDERATED_TOKEN_FILE") != "" {
		wo := &azidentity.WorkloadIdentityCredentialOptions{ClientOptions: o, DisableInstanceDiscovery: customCloud}
		if mi != nil {
			wo.ClientID, wo.TenantID = mi.ClientID, mi.TenantID
		}
		return azidentity.NewWorkloadIdentityCredential(wo)
	}
	mo := &azidentity.ManagedIdentityCredentialOptions{ClientOptions: o}
	if mi != nil {
		switch {
		case mi.ClientID != "":
			mo.ID = azidentity.ClientID(mi.ClientID)
		case mi.ResourceID != "":
			mo.ID = azidentity.ResourceID(mi.ResourceID)
		}
	}
	return azidentity.NewManagedIdentityCredential(mo)
}

// Provider changes TXT records in Azure DNS or Azure Private DNS. A value
// is built per challenge step (Factory.Build).
type Provider struct {
	Config Config
	api    recordSets

	mu    sync.Mutex
	zones []string // the resource group's zones, listed once per value
}

var (
	_ libdns.RecordAppender = (*Provider)(nil)
	_ libdns.RecordDeleter  = (*Provider)(nil)
)

// AppendRecords adds the TXT values of recs under zone: per name it reads
// the TXT record set, adds the values that are missing and writes the set
// back with If-Match on the ETag it read (If-None-Match: * for a new set),
// keeping the other values and the set's TTL (a new set gets the record's
// TTL, 60 s by default). A value already there is not written again. It
// returns the records as libdns.TXT. Only TXT records are supported.
func (p *Provider) AppendRecords(ctx context.Context, zone string, recs []libdns.Record) ([]libdns.Record, error) {
	groups, err := txtrr.GroupByName(zone, recs, p.Config.Path, defaultTTL)
	if err != nil {
		return nil, err
	}
	var out []libdns.Record
	for _, g := range groups {
		z, rel, err := p.locate(ctx, g.FQDN)
		if err != nil {
			return nil, err
		}
		set, err := p.read(ctx, z, rel)
		if err != nil {
			return nil, err
		}
		next := txtSet{ttl: int64(g.TTL / time.Second)}
		if set != nil {
			next = txtSet{ttl: set.ttl, records: slices.Clone(set.records)}
		}
		changed := false
		for _, r := range g.Recs {
			if !slices.Contains(next.texts(), r.Text) {
				next.records = append(next.records, split(r.Text))
				changed = true
			}
			out = append(out, libdns.TXT{Name: r.Name, TTL: r.TTL, Text: r.Text})
		}
		if !changed {
			continue
		}
		if err := p.write(ctx, z, rel, set, next); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// DeleteRecords removes exactly the TXT values of recs: per name it reads
// the TXT record set, drops those values and writes back the rest with
// If-Match, or deletes the set with If-Match when nothing is left. A
// record with an empty value removes the whole set (libdns's rule). A
// value or set that is not there is not an error. It returns the records
// it removed.
func (p *Provider) DeleteRecords(ctx context.Context, zone string, recs []libdns.Record) ([]libdns.Record, error) {
	groups, err := txtrr.GroupByName(zone, recs, p.Config.Path, defaultTTL)
	if err != nil {
		return nil, err
	}
	var out []libdns.Record
	for _, g := range groups {
		z, rel, err := p.locate(ctx, g.FQDN)
		if err != nil {
			return nil, err
		}
		set, err := p.read(ctx, z, rel)
		if err != nil {
			return nil, err
		}
		if set == nil {
			continue
		}
		all := slices.ContainsFunc(g.Recs, func(r libdns.TXT) bool { return r.Text == "" })
		next := txtSet{ttl: set.ttl}
		var removed []libdns.Record
		for _, rec := range set.records {
			text := strings.Join(rec, "")
			if all || slices.ContainsFunc(g.Recs, func(r libdns.TXT) bool { return r.Text == text }) {
				removed = append(removed, libdns.TXT{Name: g.Rel, TTL: time.Duration(set.ttl) * time.Second, Text: text})
				continue
			}
			next.records = append(next.records, rec)
		}
		if len(removed) == 0 {
			continue
		}
		if err := p.write(ctx, z, rel, set, next); err != nil {
			return nil, err
		}
		out = append(out, removed...)
	}
	return out, nil
}

// group is the TXT records of one name.

// locate returns the Azure zone that holds fqdn and fqdn's record set name
// relative to it ("@" at the apex): hostedZoneName, or the zone of the
// resource group whose name is the longest suffix of fqdn. A name outside
// hostedZoneName, or no zone holding it, is a permanent error naming
// hostedZoneName.
func (p *Provider) locate(ctx context.Context, fqdn string) (string, string, error) {
	field := p.Config.Path + ".hostedZoneName"
	z := p.Config.HostedZoneName
	if z != "" {
		if !dns.IsSubDomain(dns.Fqdn(z), fqdn) {
			return "", "", errs.Permanentf("%s: %s is not in zone %s", field, fqdn, z)
		}
		return z, relative(fqdn, z), nil
	}
	zones, err := p.listZones(ctx)
	if err != nil {
		return "", "", err
	}
	best := ""
	for _, name := range zones {
		if dns.IsSubDomain(dns.Fqdn(name), fqdn) && dns.CountLabel(dns.Fqdn(name)) > dns.CountLabel(dns.Fqdn(best)) {
			best = name
		}
	}
	if best == "" {
		return "", "", errs.Permanentf("%s: no %s in resource group %s of subscription %s holds %s (none is named by a suffix of it): set hostedZoneName or create the zone",
			field, p.kind(), p.Config.ResourceGroupName, p.Config.SubscriptionID, fqdn)
	}
	return best, relative(fqdn, best), nil
}

// kind names the zones the provider changes.
func (p *Provider) kind() string {
	if p.Config.Private {
		return "Private DNS zone"
	}
	return "DNS zone"
}

// relative returns fqdn's record set name in zone ("@" at the apex).
func relative(fqdn, zone string) string {
	rel := libdns.RelativeName(dns.CanonicalName(fqdn), dns.CanonicalName(dns.Fqdn(zone)))
	if rel == "" || rel == "@" {
		return "@"
	}
	return rel
}

// listZones lists the resource group's zones once per provider value.
func (p *Provider) listZones(ctx context.Context) ([]string, error) {
	p.mu.Lock()
	zones := p.zones
	p.mu.Unlock()
	if zones != nil {
		return zones, nil
	}
	zones, err := p.api.zones(ctx, p.Config.ResourceGroupName)
	if err != nil {
		return nil, p.classify(err, fmt.Sprintf("find the zone: list the %ss of resource group %s", p.kind(), p.Config.ResourceGroupName), opList)
	}
	if zones == nil {
		zones = []string{}
	}
	p.mu.Lock()
	p.zones = zones
	p.mu.Unlock()
	return zones, nil
}

// read returns the TXT set rel of zone, nil when there is none.
func (p *Provider) read(ctx context.Context, zone, rel string) (*txtSet, error) {
	s, err := p.api.get(ctx, p.Config.ResourceGroupName, zone, rel)
	if err != nil {
		return nil, p.classify(err, fmt.Sprintf("read TXT %s in zone %s", rel, zone), opRead)
	}
	return s, nil
}

// write replaces the set read as old (nil: none) by next: a PUT with
// If-Match on old's ETag (If-None-Match: * without old), or a DELETE with
// If-Match when next has no record.
func (p *Provider) write(ctx context.Context, zone, rel string, old *txtSet, next txtSet) error {
	var err error
	switch {
	case len(next.records) == 0 && old == nil:
		return nil
	case len(next.records) == 0:
		err = p.api.delete(ctx, p.Config.ResourceGroupName, zone, rel, old.etag)
	default:
		if next.ttl <= 0 {
			next.ttl = int64(defaultTTL / time.Second)
		}
		etag := ""
		if old != nil {
			etag = old.etag
		}
		err = p.api.put(ctx, p.Config.ResourceGroupName, zone, rel, next, etag)
	}
	if err != nil {
		return p.classify(err, fmt.Sprintf("write TXT %s in zone %s", rel, zone), opWrite)
	}
	return nil
}

// split cuts text into strings of at most maxString characters (one
// string for the empty text).
func split(text string) []string {
	var out []string
	for first := true; first || text != ""; first = false {
		n := min(len(text), maxString)
		out = append(out, text[:n])
		text = text[n:]
	}
	return out
}
