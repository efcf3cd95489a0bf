// Package dns01 solves ACME DNS-01 challenges for the Challenge steps
// (cert-manager's ACME design,
// https://cert-manager.io/docs/concepts/acme-orders-challenges/: "presenting
// challenges using a configured solver", "performing the 'self-check' to
// ensure the challenge record has propagated", cleaning up).
//
// Unlike certmagic's DNS01Solver, which keeps presented records in process
// memory and waits in a loop, every method here is one short step that
// survives across invocations: Present returns what it wrote and the
// caller keeps it on the Challenge's status (status.dns01), Check asks
// each authoritative server once and returns, and CleanUp deletes exactly
// the value recorded on the status. Nothing sleeps; the caller schedules
// the next Check.
//
// DNS providers are libdns providers (Provider), built per challenge by a
// ProviderFactory registered in Deps.Providers under the name of the
// solver's field (KeyRFC2136, ...) or WebhookKey(solverName) for
// spec.solver.dns01.webhook. Zones are found with certmagic.FindZoneByFQDN
// and names checked with certmagic's helpers. See docs/reference/dns01.md.
package dns01

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/caddyserver/certmagic"
	"github.com/libdns/libdns"
	"github.com/mholt/acmez/v3/acme"
	"github.com/miekg/dns"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// Solver presents, checks and cleans up DNS-01 challenge records. Each
// method is one bounded step: it never waits for propagation.
type Solver interface {
	// Present writes the challenge's TXT record (appended next to any
	// other value of the same name) and returns what it wrote, for the
	// caller to store on status.dns01. Presenting twice keeps one record.
	Present(ctx context.Context, ch *api.Challenge) (PresentResult, error)
	// Check asks each authoritative server of the zone once (one round,
	// short timeouts) whether it serves the value: ok only when all do.
	// why explains a not-ok result (and describes an ok one). A failed
	// query (timeout, SERVFAIL) is a transient error; it never waits.
	Check(ctx context.Context, ch *api.Challenge) (ok bool, why string, err error)
	// CleanUp deletes exactly the presented value (status.dns01, or what
	// Present would have written); a missing record is not an error.
	CleanUp(ctx context.Context, ch *api.Challenge) error
}

// PresentResult is what Present wrote; the caller stores it on the
// Challenge as status.dns01 (api.ChallengeDNS01Status).
type PresentResult struct {
	// Zone is the zone the record was written to ("example.com.").
	Zone string
	// FQDN is the record's name ("_acme-challenge.example.com.", or the
	// CNAME target with cnameStrategy Follow).
	FQDN string
	// Value is the TXT value: base64url(SHA-256(spec.key)).
	Value string
	// Change is the provider's ID of the change that wrote the value, for
	// providers that implement ChangeTracker ("" otherwise, or when the
	// value was already there).
	Change string
}

// Status returns r as the Challenge's status.dns01.
func (r PresentResult) Status() *api.ChallengeDNS01Status {
	return &api.ChallengeDNS01Status{Zone: r.Zone, FQDN: r.FQDN, Value: r.Value, Change: r.Change}
}

// Deps are the Solver's dependencies.
type Deps struct {
	// Secrets holds the providers' credentials (TSIG secrets).
	Secrets ports.SecretStore
	// Clock dates the "presented ... ago" part of Check's explanation.
	Clock ports.Clock
	// Issuers says where a solver's secrets live: the Challenge's
	// namespace for an Issuer, the cluster resource namespace for a
	// ClusterIssuer.
	Issuers api.IssuerScope
	// Providers maps a provider key (KeyRFC2136, WebhookKey("challtestsrv"),
	// ...) to its factory. A solver whose provider has no factory fails
	// permanently.
	Providers map[string]ProviderFactory
	// Resolver says which DNS servers are asked.
	Resolver Resolver
	// TTL of presented records (0: DefaultTTL).
	TTL time.Duration
	// AllowInternalNames accepts names certmagic.SubjectIsInternal reports
	// (localhost, *.local, *.internal, *.home.arpa, private IPs), which
	// only a private ACME server can validate. Off: such names are refused
	// with a permanent error, as certmagic.SubjectQualifiesForPublicCert.
	AllowInternalNames bool
}

// DefaultTTL is the TTL of presented records (cert-manager's 60 s).
const DefaultTTL = 60 * time.Second

// NewSolver returns the Solver over deps.
func NewSolver(deps Deps) Solver {
	if deps.TTL <= 0 {
		deps.TTL = DefaultTTL
	}
	return &solver{deps: deps}
}

type solver struct{ deps Deps }

// TXTValue is the DNS-01 TXT value for a key authorization:
// base64url(SHA-256(keyAuthorization)) (RFC 8555 §8.4, acmez's helper).
func TXTValue(keyAuthorization string) string {
	return acme.Challenge{KeyAuthorization: keyAuthorization}.DNS01KeyAuthorization()
}

// RecordName is the name DNS-01 validates for dnsName (without "*."):
// "_acme-challenge.<dnsName>." in canonical form.
func RecordName(dnsName string) string {
	return dns.CanonicalName("_acme-challenge." + strings.TrimSuffix(dnsName, "."))
}

const solverPath = "spec.solver.dns01"

// prepared is a validated challenge with its provider.
type prepared struct {
	ch       *api.Challenge
	key      string // provider key
	provider Provider
	value    string
}

// prepare validates ch and builds its provider.
func (s *solver) prepare(ctx context.Context, ch *api.Challenge) (*prepared, error) {
	if err := s.validate(ch); err != nil {
		return nil, err
	}
	d := ch.Spec.Solver.DNS01
	key, webhook, err := providerKey(d, solverPath)
	if err != nil {
		return nil, err
	}
	factory := s.deps.Providers[key]
	if factory == nil {
		field := solverPath + "." + key
		if webhook != nil {
			field = solverPath + ".webhook.solverName"
		}
		return nil, errs.Permanentf("%s: the %s DNS provider is not available in this deployment", field, key)
	}
	_, ns, ok := s.deps.Issuers.Resolve(ch.Namespace, ch.Spec.IssuerRef)
	if !ok {
		return nil, errs.Permanentf("spec.issuerRef: %s/%s is not a cert-manager issuer", ch.Spec.IssuerRef.Group, ch.Spec.IssuerRef.Kind)
	}
	prov, err := factory(ctx, ProviderRequest{
		DNS01: d, Webhook: webhook, Key: key, Path: solverPath,
		SecretNamespace: ns, Secrets: s.deps.Secrets, IssuerKind: ch.Spec.IssuerRef.Kind,
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return &prepared{ch: ch, key: key, provider: prov, value: TXTValue(ch.Spec.Key)}, nil
}

// validate checks the fields of ch the solver uses.
func (s *solver) validate(ch *api.Challenge) error {
	if ch == nil {
		return errs.Permanentf("dns01: no challenge")
	}
	if t := ch.Spec.Type; t != "" && !strings.EqualFold(string(t), string(api.ACMEChallengeTypeDNS01)) {
		return errs.Permanentf("spec.type: %q is not %s", t, api.ACMEChallengeTypeDNS01)
	}
	if err := s.checkName(ch); err != nil {
		return err
	}
	if ch.Spec.Key == "" {
		return errs.Permanentf("spec.key: required for a DNS-01 challenge")
	}
	d := ch.Spec.Solver.DNS01
	if d == nil {
		return errs.Permanentf("%s: required for a DNS-01 challenge", solverPath)
	}
	switch d.CNAMEStrategy {
	case "", "None", "Follow":
	default:
		return errs.Permanentf("%s.cnameStrategy: %q is not None or Follow", solverPath, d.CNAMEStrategy)
	}
	return checkSelector(ch)
}

// identifier is the ACME identifier: dnsName, or "*."+dnsName.
func identifier(ch *api.Challenge) string {
	name := strings.ToLower(strings.TrimSuffix(ch.Spec.DNSName, "."))
	if ch.Spec.Wildcard {
		return "*." + name
	}
	return name
}

// checkName checks spec.dnsName with certmagic's helpers.
func (s *solver) checkName(ch *api.Challenge) error {
	name := ch.Spec.DNSName
	switch {
	case name == "":
		return errs.Permanentf("spec.dnsName: required")
	case strings.HasPrefix(name, "*."):
		return errs.Permanentf("spec.dnsName: %q must not carry the wildcard label (spec.wildcard says it)", name)
	case certmagic.SubjectIsIP(name):
		return errs.Permanentf("spec.dnsName: %q is an IP address, which DNS-01 cannot validate", name)
	}
	id := identifier(ch)
	if _, ok := dns.IsDomainName(id); !ok || !certmagic.SubjectQualifiesForCert(id) {
		return errs.Permanentf("spec.dnsName: %q is not a valid DNS name", name)
	}
	if !s.deps.AllowInternalNames && !certmagic.SubjectQualifiesForPublicCert(id) {
		return errs.Permanentf("spec.dnsName: %q is an internal name or an invalid wildcard, not eligible for a public certificate", id)
	}
	return nil
}

// checkSelector refuses a challenge whose solver's selector rules its
// identifier out: dnsNames are matched with certmagic.MatchWildcard,
// dnsZones as the zone or a subdomain of it. A selector with only labels
// (or none) selects everything.
func checkSelector(ch *api.Challenge) error {
	sel := ch.Spec.Solver.Selector
	if sel == nil || (len(sel.DNSNames) == 0 && len(sel.DNSZones) == 0) {
		return nil
	}
	id := identifier(ch)
	base := strings.TrimPrefix(id, "*.")
	for _, n := range sel.DNSNames {
		if certmagic.MatchWildcard(id, strings.ToLower(n)) {
			return nil
		}
	}
	for _, z := range sel.DNSZones {
		z = strings.ToLower(strings.TrimSuffix(z, "."))
		if base == z || strings.HasSuffix(base, "."+z) {
			return nil
		}
	}
	return errs.Permanentf("spec.solver.selector: the solver does not select %q", id)
}

// target is where a challenge's record lives.
type target struct {
	zone, fqdn, value string
	servers           []server // from an Authority provider; nil: discover
}

// locate finds the record's name (following CNAMEs with cnameStrategy
// Follow) and its zone.
func (s *solver) locate(ctx context.Context, p *prepared) (target, error) {
	t := target{fqdn: RecordName(p.ch.Spec.DNSName), value: p.value}
	if p.ch.Spec.Solver.DNS01.CNAMEStrategy == "Follow" {
		f, err := s.resolver(p.ch).followCNAME(ctx, t.fqdn)
		if err != nil {
			return target{}, fmt.Errorf("%s.cnameStrategy: %w", solverPath, err)
		}
		t.fqdn = f
	}
	return s.zoneOf(ctx, p, t)
}

// zoneOf fills t.zone (and t.servers for an Authority provider).
func (s *solver) zoneOf(ctx context.Context, p *prepared, t target) (target, error) {
	if a, ok := p.provider.(Authority); ok {
		zone, addrs, err := a.Authority(ctx, t.fqdn)
		if err != nil {
			return target{}, fmt.Errorf("%s: zone of %s: %w", p.key, t.fqdn, err)
		}
		if t.zone == "" {
			t.zone = dns.CanonicalName(zone)
		}
		t.servers = nil
		for _, a := range addrs {
			t.servers = append(t.servers, server{name: a, addr: a})
		}
		return t, nil
	}
	if t.zone != "" {
		return t, nil
	}
	zone, err := s.resolver(p.ch).findZone(ctx, t.fqdn)
	if err != nil {
		return target{}, err
	}
	t.zone = zone
	return t, nil
}

// recorded returns the target stored on status.dns01, if complete.
func (s *solver) recorded(ctx context.Context, p *prepared) (target, bool, error) {
	st := p.ch.Status.DNS01
	if st == nil || st.Zone == "" || st.FQDN == "" || st.Value == "" {
		return target{}, false, nil
	}
	t := target{zone: dns.CanonicalName(st.Zone), fqdn: dns.CanonicalName(st.FQDN), value: st.Value}
	t, err := s.zoneOf(ctx, p, t)
	return t, err == nil, err
}

// Present implements Solver.
func (s *solver) Present(ctx context.Context, ch *api.Challenge) (PresentResult, error) {
	p, err := s.prepare(ctx, ch)
	if err != nil {
		return PresentResult{}, err
	}
	t, err := s.locate(ctx, p)
	if err != nil {
		return PresentResult{}, err
	}
	res := PresentResult{Zone: t.zone, FQDN: t.fqdn, Value: t.value}
	rel := libdns.RelativeName(t.fqdn, t.zone)
	if g, ok := p.provider.(libdns.RecordGetter); ok {
		recs, err := g.GetRecords(ctx, t.zone)
		if err != nil {
			return PresentResult{}, fmt.Errorf("%s.%s: read zone %s: %w", solverPath, p.key, t.zone, err)
		}
		if hasTXT(recs, rel, t.value) {
			return res, nil
		}
	}
	rec := libdns.TXT{Name: rel, TTL: s.deps.TTL, Text: t.value}
	if _, err := p.provider.AppendRecords(ctx, t.zone, []libdns.Record{rec}); err != nil {
		return PresentResult{}, fmt.Errorf("%s.%s: add TXT %s in zone %s: %w", solverPath, p.key, t.fqdn, t.zone, err)
	}
	if ct, ok := p.provider.(ChangeTracker); ok {
		res.Change = ct.LastChange()
	}
	return res, nil
}

// hasTXT reports whether recs hold a TXT record rel with value.
func hasTXT(recs []libdns.Record, rel, value string) bool {
	for _, r := range recs {
		rr := r.RR()
		if rr.Type == "TXT" && strings.EqualFold(rr.Name, rel) && strings.Trim(rr.Data, `"`) == value {
			return true
		}
	}
	return false
}

// Check implements Solver.
func (s *solver) Check(ctx context.Context, ch *api.Challenge) (bool, string, error) {
	p, err := s.prepare(ctx, ch)
	if err != nil {
		return false, "", err
	}
	t, ok, err := s.recorded(ctx, p)
	if err != nil {
		return false, "", err
	}
	if !ok {
		if t, err = s.locate(ctx, p); err != nil {
			return false, "", err
		}
	}
	if ct, isCT := p.provider.(ChangeTracker); isCT && ch.Status.DNS01 != nil && ch.Status.DNS01.Change != "" {
		change := ch.Status.DNS01.Change
		synced, err := ct.Synced(ctx, t.zone, change)
		if err != nil {
			return false, "", fmt.Errorf("%s.%s: state of change %s: %w", solverPath, p.key, change, err)
		}
		if !synced {
			why := fmt.Sprintf("waiting for the %s provider to apply change %s to zone %s", p.key, change, t.zone)
			if s.deps.Clock != nil && ch.Status.PresentedAt != nil {
				why += fmt.Sprintf(" (presented %s ago)", s.deps.Clock.Now().Sub(ch.Status.PresentedAt.Time).Round(time.Second))
			}
			return false, why, nil
		}
	}
	r := s.resolver(ch)
	if _, isAuthority := p.provider.(Authority); !isAuthority && !r.RecursiveOnly {
		// As cert-manager's propagation check: the name checked is where
		// its CNAME chain ends (acme-dns, or a delegation through a CNAME
		// with cnameStrategy None), in that name's zone.
		end, err := r.followCNAME(ctx, t.fqdn)
		if err != nil {
			return false, err.Error(), err
		}
		if !strings.EqualFold(dns.CanonicalName(end), t.fqdn) {
			zone, err := r.findZone(ctx, end)
			if err != nil {
				return false, err.Error(), err
			}
			t.fqdn, t.zone = dns.CanonicalName(end), zone
		}
	}
	servers, recursive := t.servers, false
	switch {
	case servers != nil:
	case r.RecursiveOnly:
		recursive = true
		for _, ns := range r.resolvers() {
			servers = append(servers, server{name: ns, addr: ns})
		}
	default:
		if servers, err = r.authoritative(ctx, t.zone); err != nil {
			why := err.Error()
			return false, why, err
		}
	}
	okAll, why, err := r.checkServers(ctx, servers, t.fqdn, t.value, recursive)
	if !okAll && s.deps.Clock != nil && ch.Status.PresentedAt != nil {
		why += fmt.Sprintf(" (presented %s ago)", s.deps.Clock.Now().Sub(ch.Status.PresentedAt.Time).Round(time.Second))
	}
	return okAll, why, err
}

// CleanUp implements Solver.
func (s *solver) CleanUp(ctx context.Context, ch *api.Challenge) error {
	p, err := s.prepare(ctx, ch)
	if err != nil {
		return err
	}
	t, ok, err := s.recorded(ctx, p)
	if err != nil {
		return err
	}
	if !ok {
		t, err = s.locate(ctx, p)
		if errs.IsPermanent(err) {
			// No zone: nothing can have been presented.
			return nil
		}
		if err != nil {
			return err
		}
	}
	rec := libdns.TXT{Name: libdns.RelativeName(t.fqdn, t.zone), Text: t.value}
	if _, err := p.provider.DeleteRecords(ctx, t.zone, []libdns.Record{rec}); err != nil {
		return fmt.Errorf("%s.%s: delete TXT %s in zone %s: %w", solverPath, p.key, t.fqdn, t.zone, err)
	}
	return nil
}

// resolver is the Resolver for ch: the deployment's, unless the
// challenge's solver names nameservers (spec.solver.dns01.nameservers,
// cert-manager's field): then its host:port entries are the resolvers and
// the propagation check asks them only, as cert-manager does. Its
// DNS-over-HTTPS entries (https://...) are not used (certfn speaks plain
// DNS; they are reported as ignored fields); with none left the
// deployment's resolvers are used.
func (s *solver) resolver(ch *api.Challenge) Resolver {
	r := s.deps.Resolver
	d := ch.Spec.Solver.DNS01
	if d == nil {
		return r
	}
	var plain []string
	for _, ns := range d.Nameservers {
		if !strings.HasPrefix(ns, "https://") {
			plain = append(plain, ns)
		}
	}
	if len(plain) > 0 {
		r.Nameservers, r.RecursiveOnly = plain, true
	}
	return r
}
