// Package netguard restricts the addresses certfn connects to on behalf
// of tenants. A namespaced Issuer names hosts certfn connects to (its ACME
// server and every URL that server's directory hands out, an acmeDNS host,
// an rfc2136 nameserver); without a guard a team could make certfn reach
// the host's loopback services, the cloud's metadata endpoint or the
// private network. The check runs at dial time on the address actually
// dialled (a net.Dialer Control function), so a name that resolves to a
// public address when checked and to a private one when used (DNS
// rebinding) is refused too. ClusterIssuers, the operator's, are not
// restricted.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
)

// ErrDenied is wrapped by the error of a refused connection.
var ErrDenied = errors.New("address not allowed for namespaced Issuers")

// denied are the ranges a restricted connection may not reach unless the
// operator allows them: unspecified and "this network", loopback,
// link-local (the cloud metadata endpoints 169.254.169.254 and
// fd00:ec2::254 among them), private (RFC 1918, ULA), shared address space
// (CGNAT), IETF protocol assignments, benchmarking, multicast, reserved
// and broadcast, deprecated site-local, and NAT64 local use.
var denied = func() []netip.Prefix {
	var ps []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4",
		"::/128", "::1/128", "fe80::/10", "fec0::/10", "fc00::/7", "ff00::/8", "64:ff9b:1::/48", "100::/64",
	} {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}()

// nat64 is the well-known NAT64 prefix: its addresses embed an IPv4
// address, which is checked instead.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// Policy is the operator's allowance: the prefixes and host names
// restricted connections may reach although they are private. The zero
// Policy allows none of the denied ranges.
type Policy struct {
	// Source names the setting in messages (a flag or variable name).
	Source   string
	prefixes []netip.Prefix
	hosts    map[string]bool
}

// Parse checks entries (CIDR prefixes such as 10.0.0.0/8, single IP
// addresses, or host names such as pebble or ca.internal.example) and
// returns the policy; source names the setting in errors and in refusals.
func Parse(source string, entries []string) (Policy, error) {
	p := Policy{Source: source, hosts: map[string]bool{}}
	var problems []string
	for i, e := range entries {
		e = strings.TrimSpace(e)
		if pre, err := netip.ParsePrefix(e); err == nil {
			p.prefixes = append(p.prefixes, pre.Masked())
			continue
		}
		if a, err := netip.ParseAddr(e); err == nil && a.Zone() == "" {
			p.prefixes = append(p.prefixes, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		if h := canonicalHost(e); validHost(h) {
			p.hosts[h] = true
			continue
		}
		problems = append(problems, fmt.Sprintf("%s[%d]: %q is not a CIDR prefix (10.0.0.0/8), an IP address or a host name", source, i, e))
	}
	if len(problems) > 0 {
		return Policy{}, errors.New(strings.Join(problems, "; "))
	}
	return p, nil
}

// Entries returns the allowed prefixes and hosts, for logs.
func (p Policy) Entries() []string {
	var out []string
	for _, pre := range p.prefixes {
		out = append(out, pre.String())
	}
	for h := range p.hosts {
		out = append(out, h)
	}
	return out
}

func canonicalHost(h string) string { return strings.ToLower(strings.TrimSuffix(h, ".")) }

func validHost(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, c := range h {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return false
		}
	}
	return true
}

// Denied reports whether a restricted connection may not reach a: it is
// in a denied range and no allowed prefix holds it.
func (p Policy) Denied(a netip.Addr) bool {
	a = a.Unmap()
	if nat64.Contains(a) {
		b := a.As16()
		a = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	}
	for _, pre := range p.prefixes {
		if pre.Contains(a) {
			return false
		}
	}
	if !a.IsValid() {
		return true
	}
	for _, pre := range denied {
		if pre.Contains(a) {
			return true
		}
	}
	return false
}

// HostAllowed reports whether the operator allowed host by name (its
// connections are then not checked).
func (p Policy) HostAllowed(host string) bool { return p.hosts[canonicalHost(host)] }

// control is a net.Dialer Control function refusing denied addresses.
// DefaultSource names the allowance in messages when a Policy has no
// Source: every deployment's setting.
const DefaultSource = "the private-network allowance for namespaced Issuers (serve --acme-allow-private-networks, CERTFN_ACME_ALLOW_PRIVATE_NETWORKS)"

func (p Policy) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot parse the dialled address %q", ErrDenied, address)
	}
	if p.Denied(ap.Addr()) {
		source := p.Source
		if source == "" {
			source = DefaultSource
		}
		return fmt.Errorf("%w: %s is a loopback, link-local, private or reserved address; the operator may allow it in %s", ErrDenied, ap.Addr(), source)
	}
	return nil
}

// DialFunc is the signature of net.Dialer.DialContext.
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// Dialer returns base's DialContext, restricted when restricted is true:
// the address actually dialled (after resolution, for every address tried)
// must not be denied, unless the dialled host is one the operator allowed
// by name. base is copied, not changed; nil means a zero net.Dialer.
func (p Policy) Dialer(base *net.Dialer, restricted bool) DialFunc {
	if base == nil {
		base = &net.Dialer{}
	}
	if !restricted {
		return base.DialContext
	}
	guarded := *base
	prev := guarded.Control
	guarded.Control = func(network, address string, c syscall.RawConn) error {
		if err := p.control(network, address, c); err != nil {
			return err
		}
		if prev != nil {
			return prev(network, address, c)
		}
		return nil
	}
	guarded.ControlContext = nil
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		if host, _, err := net.SplitHostPort(address); err == nil && p.HostAllowed(host) {
			return base.DialContext(ctx, network, address)
		}
		return guarded.DialContext(ctx, network, address)
	}
}

// Restricted reports whether connections for an issuer of kind (Issuer or
// ClusterIssuer) are restricted: every kind but ClusterIssuer is.
func Restricted(issuerKind string) bool { return issuerKind != "ClusterIssuer" }
