package dns01

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/libdns/libdns"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// Provider is what a DNS-01 provider implements: libdns's RecordAppender
// and RecordDeleter, so any libdns provider can be plugged in. Providers
// that also implement libdns.RecordGetter let Present skip appending a
// value that is already there (for APIs that would store it twice).
type Provider interface {
	libdns.RecordAppender
	libdns.RecordDeleter
}

// Authority is implemented by providers that know the zone of a name and
// its authoritative servers themselves, so the Solver skips discovery
// through the resolvers. It exists for test DNS servers (challtestsrv
// answers no SOA or NS query); a real provider does not implement it.
type Authority interface {
	// Authority returns the zone (fully qualified, with a trailing dot)
	// that holds fqdn and the addresses ("host:port") of the servers that
	// answer for it authoritatively.
	Authority(ctx context.Context, fqdn string) (zone string, servers []string, err error)
}

// ProviderFactory builds the provider for one challenge's solver. It reads
// what it needs from req (the solver's settings, secrets through
// req.SecretValue). An invalid setting is a permanent error naming the
// field (req.Path + ".<provider>.<field>"); a failure to read a secret
// store is transient.
type ProviderFactory func(ctx context.Context, req ProviderRequest) (Provider, error)

// Provider keys in Deps.Providers: the name of the field set under
// spec.solver.dns01, or WebhookKey(solverName) for a webhook solver.
const (
	KeyRFC2136      = "rfc2136"
	KeyRoute53      = "route53"
	KeyCloudDNS     = "cloudDNS"
	KeyAkamai       = "akamai"
	KeyAzureDNS     = "azureDNS"
	KeyCloudflare   = "cloudflare"
	KeyDigitalOcean = "digitalocean"
	KeyAcmeDNS      = "acmeDNS"
	KeyWebhook      = "webhook"
)

// WebhookKey is the Deps.Providers key of the webhook solver named
// solverName: "webhook/" + solverName. certfn has no webhook servers; a
// webhook solver selects a provider registered under this key (the tests
// and the demo use solverName "challtestsrv").
func WebhookKey(solverName string) string { return KeyWebhook + "/" + solverName }

// WebhookSolver is cert-manager's ACMEIssuerDNS01ProviderWebhook, decoded
// from spec.solver.dns01.webhook.
type WebhookSolver struct {
	GroupName  string          `json:"groupName"`
	SolverName string          `json:"solverName"`
	Config     json.RawMessage `json:"config,omitempty"`
}

// ProviderRequest is what a ProviderFactory receives.
type ProviderRequest struct {
	// DNS01 is the challenge's spec.solver.dns01 (never nil).
	DNS01 *api.ACMEChallengeSolverDNS01
	// Webhook is the decoded webhook solver when Key is a webhook key.
	Webhook *WebhookSolver
	// Key is the provider key that selected the factory.
	Key string
	// Path is the field path of DNS01 ("spec.solver.dns01"), for errors.
	Path string
	// SecretNamespace is where the solver's secrets live: the Challenge's
	// namespace for an Issuer, the cluster resource namespace for a
	// ClusterIssuer.
	SecretNamespace string
	// Secrets is the secret store.
	Secrets ports.SecretStore
	// IssuerKind is the kind of the challenge's issuer (Issuer or
	// ClusterIssuer), for providers whose rules differ (cert-manager lets
	// only ClusterIssuers use ambient cloud credentials by default).
	IssuerKind string
}

// SecretValue returns the value of key ref.Key of secret ref.Name in
// r.SecretNamespace. field is the field path of ref, used in errors. An
// empty name or key, or a secret that is missing, undecodable or without
// the key (one message for all three) is a permanent error naming field;
// a store failure that may pass is transient. The error
// never contains the value.
func (r ProviderRequest) SecretValue(ctx context.Context, ref api.SecretKeySelector, field string) ([]byte, error) {
	if ref.Name == "" {
		return nil, errs.Permanentf("%s.name: required", field)
	}
	if ref.Key == "" {
		return nil, errs.Permanentf("%s.key: required", field)
	}
	if r.Secrets == nil {
		return nil, errs.Permanentf("%s: no secret store configured", field)
	}
	// A secret that is missing, that the store cannot decode, or that lacks
	// the key is one answer: whoever reads the Challenge learns nothing
	// about secrets beyond "not usable". Only a store failure that may
	// pass (throttling, network) is reported as such, and retried.
	unusable := errs.Permanentf("%s: secret %s/%s has no usable key %q (missing, unreadable or empty)", field, r.SecretNamespace, ref.Name, ref.Key)
	sec, err := r.Secrets.Get(ctx, r.SecretNamespace, ref.Name)
	switch {
	case errors.Is(err, ports.ErrNotFound) || errs.IsPermanent(err):
		return nil, unusable
	case err != nil:
		return nil, fmt.Errorf("%s: read secret %s/%s: %w", field, r.SecretNamespace, ref.Name, err)
	}
	if v := sec.Data[ref.Key]; len(v) > 0 {
		return v, nil
	}
	return nil, unusable
}

// providerKey returns the key of the one provider set in d (and the
// decoded webhook for a webhook solver). None or several set is a
// permanent error naming path.
func providerKey(d *api.ACMEChallengeSolverDNS01, path string) (string, *WebhookSolver, error) {
	var set []string
	add := func(on bool, key string) {
		if on {
			set = append(set, key)
		}
	}
	add(d.RFC2136 != nil, KeyRFC2136)
	add(d.Route53 != nil, KeyRoute53)
	add(d.CloudDNS != nil, KeyCloudDNS)
	add(d.Akamai != nil, KeyAkamai)
	add(d.AzureDNS != nil, KeyAzureDNS)
	add(d.Cloudflare != nil, KeyCloudflare)
	add(d.DigitalOcean != nil, KeyDigitalOcean)
	add(d.AcmeDNS != nil, KeyAcmeDNS)
	add(present(d.Webhook), KeyWebhook)
	switch len(set) {
	case 0:
		return "", nil, errs.Permanentf("%s: no DNS provider is set (want exactly one of rfc2136, route53, cloudDNS, webhook, ...)", path)
	case 1:
	default:
		sort.Strings(set)
		return "", nil, errs.Permanentf("%s: exactly one DNS provider must be set, found %s", path, strings.Join(set, ", "))
	}
	if set[0] != KeyWebhook {
		return set[0], nil, nil
	}
	var w WebhookSolver
	if err := json.Unmarshal(d.Webhook, &w); err != nil {
		return "", nil, errs.Permanentf("%s.webhook: %v", path, err)
	}
	if w.SolverName == "" {
		return "", nil, errs.Permanentf("%s.webhook.solverName: required", path)
	}
	return WebhookKey(w.SolverName), &w, nil
}

// present reports whether a raw JSON field holds a value.
func present(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s != "" && s != "null"
}
