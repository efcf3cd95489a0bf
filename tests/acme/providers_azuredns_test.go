package acme

import (
	"context"
	"slices"
	"testing"

	"github.com/certfn/certfn/adapters/dns/azuredns"
	"github.com/certfn/certfn/adapters/dns/azuredns/azurednstest"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/internal/localmode"
)

// TestDNS01AzureDNS: a wildcard and its base name through cert-manager's
// azureDNS solver on the Azure double (Resource Manager, Entra ID, IMDS),
// with a service principal on a public zone and with the function's
// managed identity on a Private DNS zone. The double mirrors every TXT set
// it writes into challtestsrv (which Pebble's VA asks); the test's public
// DNS delegates example.test to challtestsrv's records for the Solver's
// propagation check. Asserted: Ready, both names in the certificate, which
// chains to Pebble's root; each value written and deleted (one at a time:
// the worker presents the two challenges one after the other), the record
// set gone afterwards, every call made by the expected identity.
func TestDNS01AzureDNS(t *testing.T) {
	const (
		sub      = "00000000-0000-4000-8000-0000000000aa"
		tenant   = "11111111-1111-4111-8111-111111111111"
		clientID = "22222222-2222-4222-8222-222222222222"
		miID     = "44444444-4444-4444-8444-444444444444"
	)
	for _, tc := range []struct {
		name, solver, identity string
		private                bool
	}{
		{"service principal, public zone", `        azureDNS:
          clientID: ` + clientID + `
          clientSecretSecretRef: {name: azuredns, key: client-secret}
          tenantID: ` + tenant + `
          subscriptionID: ` + sub + `
          resourceGroupName: dns-rg
          hostedZoneName: example.test
`, "sp:" + clientID, false},
		{"managed identity, private zone", `        azureDNS:
          subscriptionID: ` + sub + `
          resourceGroupName: dns-rg
          zoneType: AzurePrivateZone
`, "mi:" + miID, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"AZURE_FEDERATED_TOKEN_FILE", "IDENTITY_ENDPOINT", "IDENTITY_HEADER", "MSI_ENDPOINT", "MSI_SECRET", "IMDS_ENDPOINT"} {
				t.Setenv(k, "")
			}
			view := startZoneView(t, "example.test")
			d := azurednstest.New(t)
			d.AddZone(sub, "dns-rg", "example.test", tc.private)
			d.AddServicePrincipal(tenant, clientID, "azure-client-secret")
			d.SetSystemIdentity(miID)
			cfg := d.Cloud()
			e := newEnv(t, envOpts{local: func(o *localmode.Options) {
				o.ACME.DNS01Providers = map[string]dns01.ProviderFactory{
					dns01.KeyAzureDNS: azuredns.NewFactory(azuredns.Options{Cloud: &cfg, Transport: d.Client()}).Build,
				}
				o.ACME.DNS01AllowInternalNames = true
				o.ACME.DNS01Resolver = view.resolver()
			}})
			view.use(e.peb.dns)
			var maxValues int
			d.OnTXT = func(u azurednstest.TXTUpdate) {
				e.peb.dns.DeleteDNSTXTRecord(u.Name)
				for _, v := range u.Texts {
					e.peb.dns.AddDNSTXTRecord(u.Name, v)
				}
				maxValues = max(maxValues, len(u.Texts))
			}
			if err := e.rt.Secrets.Put(context.Background(), ports.Secret{Namespace: "cert-manager", Name: "azuredns",
				Data: map[string][]byte{"client-secret": []byte("azure-client-secret")}}); err != nil {
				t.Fatal(err)
			}
			e.apply(e.issuerYAML("    solvers:\n    - dns01:\n" + tc.solver))
			e.apply(certYAML("az", []string{`"*.az.example.test"`, "az.example.test"}, ""))
			e.issue("az")
			leaf := e.verify("az-tls", "x.az.example.test", "az.example.test")
			for _, n := range []string{"*.az.example.test", "az.example.test"} {
				if !slices.Contains(leaf.DNSNames, n) {
					t.Fatalf("SANs %q lack %s", leaf.DNSNames, n)
				}
			}
			e.until(50, 0, func() bool { return d.RecordSet("example.test", tc.private, "_acme-challenge.az.example.test.") == nil })
			if s := d.RecordSet("example.test", tc.private, "_acme-challenge.az.example.test."); s != nil {
				t.Errorf("TXT %q left in the zone after issuance", s.Texts())
			}
			if v := e.peb.dns.GetDNSTXTRecords("_acme-challenge.az.example.test."); len(v) > 0 {
				t.Errorf("challtestsrv still serves %q", v)
			}
			if maxValues != 1 {
				t.Errorf("at most %d values at once; want 1 (the worker presents the wildcard's and the base name's one after the other)", maxValues)
			}
			writes := 0
			for _, c := range d.Calls() {
				switch c.Op {
				case "token", "openid", "imds":
				case "recordsets.put", "recordsets.delete":
					writes++
					fallthrough
				default:
					if c.Identity != tc.identity || c.Private != tc.private {
						t.Errorf("%s (private %v) by %q, want %s", c.Op, c.Private, c.Identity, tc.identity)
					}
				}
			}
			if writes != 4 {
				t.Errorf("%d record set writes, want 4 (each value added, then removed)", writes)
			}
		})
	}
}
