package netguard

import (
	"net/netip"
	"strings"
	"testing"
)

func TestDenied(t *testing.T) {
	none, err := Parse("--acme-allow-private-networks", nil)
	if err != nil {
		t.Fatal(err)
	}
	some, err := Parse("--acme-allow-private-networks", []string{"10.1.0.0/16", "fd00:ec2::254", " ca.internal.example. "})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		addr       string
		none, some bool // denied by each policy
	}{
		{"8.8.8.8", false, false},
		{"2606:4700:4700::1111", false, false},
		{"127.0.0.1", true, true},
		{"127.8.9.10", true, true},
		{"::1", true, true},
		{"::ffff:127.0.0.1", true, true},
		{"0.0.0.0", true, true},
		{"::", true, true},
		{"169.254.169.254", true, true},
		{"fe80::1", true, true},
		{"fd00:ec2::254", true, false},
		{"fc00::1", true, true},
		{"10.1.2.3", true, false},
		{"10.2.0.1", true, true},
		{"172.16.0.1", true, true},
		{"172.31.255.255", true, true},
		{"172.32.0.1", false, false},
		{"192.168.1.1", true, true},
		{"100.64.0.1", true, true},
		{"224.0.0.1", true, true},
		{"ff02::1", true, true},
		{"255.255.255.255", true, true},
		{"64:ff9b::a9fe:a9fe", true, true}, // NAT64 of 169.254.169.254
		{"64:ff9b::808:808", false, false},
	} {
		a := netip.MustParseAddr(tc.addr)
		if got := none.Denied(a); got != tc.none {
			t.Errorf("no allowance: Denied(%s) = %t, want %t", tc.addr, got, tc.none)
		}
		if got := some.Denied(a); got != tc.some {
			t.Errorf("allowance: Denied(%s) = %t, want %t", tc.addr, got, tc.some)
		}
	}
	if !some.HostAllowed("CA.internal.example") || some.HostAllowed("other.example") {
		t.Error("HostAllowed")
	}
	if _, err := Parse("CERTFN_ACME_ALLOW_PRIVATE_NETWORKS", []string{"10.0.0.0/8", "10.0.0.0/33", "not a host!"}); err == nil ||
		!strings.Contains(err.Error(), `CERTFN_ACME_ALLOW_PRIVATE_NETWORKS[1]: "10.0.0.0/33" is not a CIDR prefix`) ||
		!strings.Contains(err.Error(), `CERTFN_ACME_ALLOW_PRIVATE_NETWORKS[2]`) {
		t.Fatalf("Parse: %v", err)
	}
}
