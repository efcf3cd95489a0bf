// Package providers is the set of DNS-01 providers every certfn
// deployment offers whatever its cloud: cert-manager's rfc2136,
// cloudflare, digitalocean, acmeDNS and azureDNS solvers, each reached
// with the credentials the Issuer names. A deployment adds its own
// cloud's provider (route53, cloudDNS) with that cloud's ambient identity
// and allowed zones.
package providers

import (
	"github.com/certfn/certfn/adapters/dns/acmedns"
	"github.com/certfn/certfn/adapters/dns/azuredns"
	"github.com/certfn/certfn/adapters/dns/cloudflare"
	"github.com/certfn/certfn/adapters/dns/digitalocean"
	"github.com/certfn/certfn/adapters/dns/rfc2136"
	"github.com/certfn/certfn/adapters/netguard"
	"github.com/certfn/certfn/core/acme/dns01"
)

// Standard returns a new map of the providers every deployment offers, by
// provider key (dns01.KeyRFC2136, …), each talking to the real service.
// The providers whose address a namespaced Issuer chooses (rfc2136's
// nameserver, acmeDNS's host) refuse loopback, link-local, private and
// reserved addresses for it, except those network allows. The caller may
// add to the map.
func Standard(network netguard.Policy) map[string]dns01.ProviderFactory {
	return map[string]dns01.ProviderFactory{
		dns01.KeyRFC2136:      rfc2136.NewFactory(network),
		dns01.KeyCloudflare:   cloudflare.NewFactory(cloudflare.Options{}).Build,
		dns01.KeyDigitalOcean: digitalocean.NewFactory(digitalocean.Options{}).Build,
		dns01.KeyAcmeDNS:      acmedns.NewFactory(acmedns.Options{Network: network}).Build,
		dns01.KeyAzureDNS:     azuredns.NewFactory(azuredns.Options{}).Build,
	}
}
