package providers

import (
	"slices"
	"testing"

	"github.com/certfn/certfn/adapters/netguard"
	"github.com/certfn/certfn/core/acme/dns01"
)

// Every provider of cert-manager's that certfn acts on without a cloud of
// its own is offered; akamai (and webhook servers) are not.
func TestStandard(t *testing.T) {
	var keys []string
	for k, f := range Standard(netguard.Policy{}) {
		if f == nil {
			t.Errorf("%s: nil factory", k)
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{dns01.KeyAcmeDNS, dns01.KeyAzureDNS, dns01.KeyCloudflare, dns01.KeyDigitalOcean, dns01.KeyRFC2136}
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Fatalf("providers %v, want %v", keys, want)
	}
}
