package localmode

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/certfn/certfn/adapters/dns/challtestsrv"
	"github.com/certfn/certfn/core/acme/dns01"
)

// dns01TestProviders applies --dns01-nameservers and --dns01-challtestsrv
// to a. nameservers ("host" or "host:port") become the DNS-01 resolvers.
// A non-empty challtestsrvURL (an http or https URL of a challtestsrv
// management API; for testing against Pebble only) registers the
// challtestsrv provider under dns01.WebhookKey("challtestsrv"), with the
// first nameserver as its DNS address, and accepts internal names. An
// invalid value is an error naming the flag; a has not been changed then.
func dns01TestProviders(a *ACMEOptions, challtestsrvURL string, nameservers []string) error {
	var servers []string
	for i, ns := range nameservers {
		ns = strings.TrimSpace(ns)
		hostPort, err := nameserverAddr(ns)
		if err != nil {
			return fmt.Errorf("--dns01-nameservers[%d]: %q %v", i, ns, err)
		}
		servers = append(servers, hostPort)
	}
	if challtestsrvURL == "" {
		if len(servers) > 0 {
			a.DNS01Resolver.Nameservers = servers
		}
		return nil
	}
	u, err := url.Parse(challtestsrvURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/") {
		return fmt.Errorf("--dns01-challtestsrv: %q is not the http(s) URL of a challtestsrv management API (scheme, host and port only, e.g. http://127.0.0.1:8055)", challtestsrvURL)
	}
	if len(servers) == 0 {
		return fmt.Errorf("--dns01-challtestsrv: needs --dns01-nameservers, the address of challtestsrv's DNS server (e.g. 127.0.0.1:8053)")
	}
	p := &challtestsrv.Provider{ManagementURL: strings.TrimSuffix(u.String(), "/"), DNSAddr: servers[0]}
	providers := map[string]dns01.ProviderFactory{}
	for k, f := range a.DNS01Providers {
		providers[k] = f
	}
	providers[dns01.WebhookKey(challtestsrv.SolverName)] = p.Factory()
	a.DNS01Providers = providers
	a.DNS01Resolver.Nameservers = servers
	a.DNS01AllowInternalNames = true
	return nil
}

// nameserverAddr returns ns as host:port (port 53 when ns has none). The
// host is an IP address or a name; the port a number from 1 to 65535.
func nameserverAddr(ns string) (string, error) {
	if ns == "" {
		return "", fmt.Errorf("is empty")
	}
	host, port, err := net.SplitHostPort(ns)
	if err != nil {
		// No port: a host alone (an IPv6 address may be bare).
		host, port = strings.Trim(ns, "[]"), "53"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("has no valid port (want host:port with a port from 1 to 65535)")
	}
	if host == "" || strings.ContainsAny(host, "/ ") || (strings.Contains(host, ":") && net.ParseIP(host) == nil) {
		return "", fmt.Errorf("is not host:port")
	}
	return net.JoinHostPort(host, port), nil
}
