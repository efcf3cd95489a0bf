package dns01

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/certmagic"
	"github.com/miekg/dns"
	"go.uber.org/zap"

	"github.com/certfn/certfn/core/errs"
)

// Resolver says which DNS servers the Solver asks. The zero value uses the
// system's resolvers (/etc/resolv.conf), queries authoritative servers on
// port 53 and waits at most DefaultTimeout for any one answer.
type Resolver struct {
	// Nameservers are the recursive resolvers ("host" or "host:port", port
	// 53 by default) used to follow CNAMEs, find a name's zone
	// (certmagic.FindZoneByFQDN) and look up the zone's NS records. Empty:
	// the system's (certmagic.RecursiveNameservers).
	Nameservers []string
	// AuthoritativePort is the port the zone's authoritative servers are
	// queried on (0: 53). Tests set the port of their bind9.
	AuthoritativePort int
	// Timeout bounds one query (0: DefaultTimeout); zone discovery, which
	// walks up the labels, is bounded by 3×Timeout.
	Timeout time.Duration
	// RecursiveOnly checks propagation against Nameservers instead of the
	// zone's authoritative servers (cert-manager's
	// --dns01-recursive-nameservers-only), for split-horizon setups.
	RecursiveOnly bool
}

// DefaultTimeout bounds one DNS query when Resolver.Timeout is 0.
const DefaultTimeout = 2 * time.Second

// maxCNAMEHops bounds cnameStrategy Follow.
const maxCNAMEHops = 8

func (r Resolver) timeout() time.Duration {
	if r.Timeout > 0 {
		return r.Timeout
	}
	return DefaultTimeout
}

func (r Resolver) resolvers() []string { return certmagic.RecursiveNameservers(r.Nameservers) }

// exchange sends m to server once (UDP, TCP when truncated), bounded by
// the query timeout.
func (r Resolver) exchange(ctx context.Context, server string, m *dns.Msg) (*dns.Msg, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout())
	defer cancel()
	c := &dns.Client{Net: "udp", Timeout: r.timeout()}
	in, _, err := c.ExchangeContext(ctx, m, server)
	if err == nil && in.Truncated {
		c.Net = "tcp"
		in, _, err = c.ExchangeContext(ctx, m, server)
	}
	return in, err
}

func newQuery(name string, qtype uint16, recursive bool) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.RecursionDesired = recursive
	m.SetEdns0(1232, false)
	return m
}

// queryResolvers asks the recursive resolvers in turn until one answers
// with NOERROR or NXDOMAIN. Failures are transient errors.
func (r Resolver) queryResolvers(ctx context.Context, name string, qtype uint16) (*dns.Msg, error) {
	var problems []string
	for _, ns := range r.resolvers() {
		in, err := r.exchange(ctx, ns, newQuery(name, qtype, true))
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s: %v", ns, err))
		case in.Rcode == dns.RcodeSuccess || in.Rcode == dns.RcodeNameError:
			return in, nil
		default:
			problems = append(problems, fmt.Sprintf("%s: %s", ns, dns.RcodeToString[in.Rcode]))
		}
	}
	if len(problems) == 0 {
		return nil, errors.New("no resolvers configured")
	}
	return nil, fmt.Errorf("%s %s: %s", dns.TypeToString[qtype], name, strings.Join(problems, "; "))
}

// followCNAME follows the CNAME chain that starts at fqdn (cnameStrategy
// Follow) and returns the last name. A loop or a chain longer than
// maxCNAMEHops is permanent; resolver failures are transient.
func (r Resolver) followCNAME(ctx context.Context, fqdn string) (string, error) {
	seen := map[string]bool{fqdn: true}
	name := fqdn
	for range maxCNAMEHops {
		in, err := r.queryResolvers(ctx, name, dns.TypeCNAME)
		if err != nil {
			return "", fmt.Errorf("follow CNAME: %w", err)
		}
		next := ""
		for _, rr := range in.Answer {
			if c, ok := rr.(*dns.CNAME); ok && strings.EqualFold(c.Hdr.Name, name) {
				next = dns.CanonicalName(c.Target)
			}
		}
		if next == "" {
			return name, nil
		}
		if seen[next] {
			return "", errs.Permanentf("follow CNAME: loop at %s", next)
		}
		seen[next] = true
		name = next
	}
	return "", errs.Permanentf("follow CNAME: more than %d CNAMEs from %s", maxCNAMEHops, fqdn)
}

// findZone returns the zone of fqdn with certmagic.FindZoneByFQDN against
// the resolvers. No SOA up to the top (NXDOMAIN all the way), REFUSED or
// another refusal is permanent; a timeout, SERVFAIL or an unreachable
// resolver is transient.
func (r Resolver) findZone(ctx context.Context, fqdn string) (string, error) {
	zctx, cancel := context.WithTimeout(ctx, 3*r.timeout())
	defer cancel()
	zone, err := certmagic.FindZoneByFQDN(zctx, zap.NewNop(), fqdn, r.resolvers())
	if err == nil {
		return dns.CanonicalName(zone), nil
	}
	msg := err.Error()
	switch {
	case zctx.Err() != nil, strings.Contains(msg, "timeout"), strings.Contains(msg, "connection refused"),
		strings.Contains(msg, "'SERVFAIL'"), strings.Contains(msg, "network is unreachable"):
		return "", fmt.Errorf("find the zone of %s: %w", fqdn, err)
	case strings.Contains(msg, "unexpected response code"):
		return "", errs.Permanentf("find the zone of %s: the resolvers refuse the query (%v); check the DNS resolver configuration", fqdn, err)
	default:
		return "", errs.Permanentf("zone not found for %s: %v", fqdn, err)
	}
}

// server is one authoritative server to ask.
type server struct {
	name string // NS name, or the address when it has none
	addr string // host:port
}

func (s server) String() string {
	if s.name == s.addr {
		return s.addr
	}
	return s.name + " (" + s.addr + ")"
}

// authoritative returns the zone's authoritative servers: its NS records
// (one query), addressed by glue or an A/AAAA lookup, on AuthoritativePort.
func (r Resolver) authoritative(ctx context.Context, zone string) ([]server, error) {
	in, err := r.queryResolvers(ctx, zone, dns.TypeNS)
	if err != nil {
		return nil, fmt.Errorf("look up the name servers of %s: %w", zone, err)
	}
	glue := map[string][]string{}
	for _, rr := range in.Extra {
		switch a := rr.(type) {
		case *dns.A:
			glue[dns.CanonicalName(a.Hdr.Name)] = append(glue[dns.CanonicalName(a.Hdr.Name)], a.A.String())
		case *dns.AAAA:
			glue[dns.CanonicalName(a.Hdr.Name)] = append(glue[dns.CanonicalName(a.Hdr.Name)], a.AAAA.String())
		}
	}
	port := 53
	if r.AuthoritativePort > 0 {
		port = r.AuthoritativePort
	}
	var out []server
	var problems []string
	for _, rr := range in.Answer {
		ns, ok := rr.(*dns.NS)
		if !ok {
			continue
		}
		name := dns.CanonicalName(ns.Ns)
		addrs := glue[name]
		if len(addrs) == 0 {
			addrs, err = r.addresses(ctx, name)
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
		}
		for _, a := range addrs {
			out = append(out, server{name: name, addr: net.JoinHostPort(a, strconv.Itoa(port))})
		}
	}
	if len(out) == 0 {
		if len(problems) > 0 {
			return nil, fmt.Errorf("no address for the name servers of %s: %s", zone, strings.Join(problems, "; "))
		}
		return nil, fmt.Errorf("no NS records for %s", zone)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

// addresses looks up the IPv4, else IPv6, addresses of host.
func (r Resolver) addresses(ctx context.Context, host string) ([]string, error) {
	var out []string
	for _, qt := range []uint16{dns.TypeA, dns.TypeAAAA} {
		in, err := r.queryResolvers(ctx, host, qt)
		if err != nil {
			return nil, err
		}
		for _, rr := range in.Answer {
			switch a := rr.(type) {
			case *dns.A:
				out = append(out, a.A.String())
			case *dns.AAAA:
				out = append(out, a.AAAA.String())
			}
		}
		if len(out) > 0 {
			return out, nil
		}
	}
	return nil, fmt.Errorf("%s has no address", host)
}

// serverResult is one server's answer to the propagation query.
type serverResult struct {
	srv     server
	found   bool
	problem string // a failed query: timeout, SERVFAIL, ...
	rcode   string // NXDOMAIN / NOERROR when the value is missing
}

// checkServers asks every server once, concurrently, for the TXT records
// of fqdn. ok when every server returns value; a failed query (timeout,
// SERVFAIL, REFUSED, ...) is a transient error naming the servers.
func (r Resolver) checkServers(ctx context.Context, servers []server, fqdn, value string, recursive bool) (bool, string, error) {
	results := make([]serverResult, len(servers))
	var wg sync.WaitGroup
	for i, srv := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = r.checkOne(ctx, srv, fqdn, value, recursive)
		}()
	}
	wg.Wait()
	var failed, missing []string
	for _, res := range results {
		switch {
		case res.problem != "":
			failed = append(failed, res.srv.String()+": "+res.problem)
		case !res.found:
			missing = append(missing, res.srv.String()+": "+res.rcode)
		}
	}
	if len(failed) > 0 {
		why := fmt.Sprintf("propagation check of TXT %s failed on %s", fqdn, strings.Join(failed, "; "))
		return false, why, errors.New(why)
	}
	if len(missing) > 0 {
		return false, fmt.Sprintf("TXT %s does not have the challenge value yet on %d of %d servers: %s",
			fqdn, len(missing), len(servers), strings.Join(missing, "; ")), nil
	}
	return true, fmt.Sprintf("TXT %s has the challenge value on all %d servers", fqdn, len(servers)), nil
}

func (r Resolver) checkOne(ctx context.Context, srv server, fqdn, value string, recursive bool) serverResult {
	res := serverResult{srv: srv}
	in, err := r.exchange(ctx, srv.addr, newQuery(fqdn, dns.TypeTXT, recursive))
	if err != nil {
		res.problem = err.Error()
		return res
	}
	switch in.Rcode {
	case dns.RcodeSuccess, dns.RcodeNameError:
	default:
		res.problem = dns.RcodeToString[in.Rcode]
		return res
	}
	res.rcode = dns.RcodeToString[in.Rcode]
	for _, rr := range in.Answer {
		if t, ok := rr.(*dns.TXT); ok && strings.EqualFold(t.Hdr.Name, fqdn) && strings.Join(t.Txt, "") == value {
			res.found = true
		}
	}
	if !res.found && in.Rcode == dns.RcodeSuccess {
		res.rcode = "value not present"
	}
	return res
}
