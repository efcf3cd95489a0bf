package rfc2136

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libdns/libdns"

	"github.com/certfn/certfn/adapters/netguard"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
)

// A namespaced Issuer's rfc2136 nameserver may not be a loopback,
// link-local or private address (a name is resolved and the checked
// address is the one dialled) unless the operator allows it; a
// ClusterIssuer's may. A refused nameserver receives no packet.
func TestNamespacedNameserverRefusesPrivateAddresses(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	var packets atomic.Int32
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
			packets.Add(1)
		}
	}()
	_, port, _ := net.SplitHostPort(pc.LocalAddr().String())
	none, _ := netguard.Parse("--acme-allow-private-networks", nil)
	loopback, _ := netguard.Parse("--acme-allow-private-networks", []string{"127.0.0.1"})
	for _, tc := range []struct {
		name, server, kind string
		policy             netguard.Policy
		refused            bool
	}{
		{"Issuer, loopback", "127.0.0.1:" + port, api.KindIssuer, none, true},
		{"Issuer, loopback by name", "localhost:" + port, api.KindIssuer, none, true},
		{"Issuer, metadata address", "169.254.169.254:53", api.KindIssuer, none, true},
		{"Issuer, loopback allowed", "127.0.0.1:" + port, api.KindIssuer, loopback, false},
		{"ClusterIssuer, loopback", "127.0.0.1:" + port, api.KindClusterIssuer, none, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := packets.Load()
			req := dns01.ProviderRequest{Path: "spec.solver.dns01", IssuerKind: tc.kind, DNS01: &api.ACMEChallengeSolverDNS01{
				RFC2136: &api.ACMEIssuerDNS01ProviderRFC2136{Nameserver: tc.server}}}
			p, err := NewFactory(tc.policy)(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			p.(*Provider).Timeout = 300 * time.Millisecond
			_, err = p.AppendRecords(context.Background(), "example.test.", []libdns.Record{libdns.TXT{Name: "x", Text: "v"}})
			if err == nil {
				t.Fatal("no error (nothing answers)")
			}
			refused := errors.Is(err, netguard.ErrDenied)
			if refused != tc.refused {
				t.Fatalf("refused %t, want %t: %v", refused, tc.refused, err)
			}
			if refused && (!errs.IsPermanent(err) || !strings.Contains(err.Error(), "spec.solver.dns01.rfc2136.nameserver") ||
				!strings.Contains(err.Error(), "--acme-allow-private-networks")) {
				t.Fatalf("refusal %v: want permanent, naming the field and the setting", err)
			}
			time.Sleep(50 * time.Millisecond)
			if got := packets.Load() - before; (got == 0) != tc.refused {
				t.Fatalf("%d packets reached the nameserver (refused %t)", got, tc.refused)
			}
		})
	}
}
