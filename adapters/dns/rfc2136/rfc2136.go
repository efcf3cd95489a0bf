// Package rfc2136 is a libdns provider that changes records with RFC 2136
// dynamic updates, signed with TSIG (RFC 8945), through github.com/miekg/dns.
// It implements cert-manager's rfc2136 DNS-01 solver (nameserver,
// tsigKeyName, tsigAlgorithm, tsigSecretSecretRef, protocol); Factory
// plugs it into core/acme/dns01. See docs/reference/dns01.md for a BIND setup.
package rfc2136

import (
	"context"
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/libdns/libdns"
	"github.com/miekg/dns"

	"github.com/certfn/certfn/adapters/netguard"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/errs"
)

// Provider sends dynamic updates to one server. It is safe for concurrent
// use. Its zero Timeout is DefaultTimeout.
type Provider struct {
	dns01.RFC2136Config
	// Timeout bounds one update exchange.
	Timeout time.Duration
	// Path is the field path of the solver settings, used in errors
	// (default "rfc2136").
	Path string
	// Restricted refuses loopback, link-local, private and reserved
	// nameserver addresses (those Network does not allow), checked at dial
	// time on the address dialled: set for namespaced Issuers.
	Restricted bool
	// Network is the operator's allowance for a Restricted provider.
	Network netguard.Policy
}

// DefaultTimeout bounds one update when Provider.Timeout is 0.
const DefaultTimeout = 5 * time.Second

// defaultTTL is used for records appended with a zero TTL.
const defaultTTL = 60 * time.Second

var (
	_ libdns.RecordAppender = (*Provider)(nil)
	_ libdns.RecordDeleter  = (*Provider)(nil)
	_ dns01.ProviderFactory = Factory
)

// Factory is the dns01.ProviderFactory for spec.solver.dns01.rfc2136 with
// no private-network allowance (NewFactory).
func Factory(ctx context.Context, req dns01.ProviderRequest) (dns01.Provider, error) {
	return NewFactory(netguard.Policy{})(ctx, req)
}

// NewFactory returns the dns01.ProviderFactory for
// spec.solver.dns01.rfc2136: it validates the settings and reads the TSIG
// secret (dns01.ParseRFC2136); the providers of namespaced Issuers are
// Restricted, with network as the operator's allowance.
func NewFactory(network netguard.Policy) dns01.ProviderFactory {
	return func(ctx context.Context, req dns01.ProviderRequest) (dns01.Provider, error) {
		cfg, err := dns01.ParseRFC2136(ctx, req)
		if err != nil {
			return nil, err
		}
		return &Provider{RFC2136Config: cfg, Path: req.Path + ".rfc2136", Restricted: netguard.Restricted(req.IssuerKind), Network: network}, nil
	}
}

// AppendRecords adds recs to zone in one update. Adding a record that
// already exists changes nothing (RFC 2136 §3.4.2.2), so appending is
// idempotent; other values of the same name are kept. A zero TTL becomes
// 60 s. It returns the records as libdns types (libdns.TXT for TXT).
func (p *Provider) AppendRecords(ctx context.Context, zone string, recs []libdns.Record) ([]libdns.Record, error) {
	rrs, out, err := toRRs(zone, recs, true)
	if err != nil {
		return nil, err
	}
	m := new(dns.Msg)
	m.SetUpdate(dns.CanonicalName(zone))
	m.Insert(rrs)
	if err := p.send(ctx, m); err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteRecords deletes exactly recs from zone in one update: a record
// with a value removes that value only; one with an empty value removes
// every record of its name and type (libdns's special case). Deleting a
// record that is not there is not an error. TTLs are ignored. It returns
// the records it asked to delete (RFC 2136 does not say which existed).
func (p *Provider) DeleteRecords(ctx context.Context, zone string, recs []libdns.Record) ([]libdns.Record, error) {
	m := new(dns.Msg)
	m.SetUpdate(dns.CanonicalName(zone))
	var out []libdns.Record
	for _, r := range recs {
		rr := r.RR()
		if rr.Data == "" {
			if rr.Type == "" {
				return nil, errs.Permanentf("%s: delete %s: a type is required", p.path(), rr.Name)
			}
			t, ok := dns.StringToType[strings.ToUpper(rr.Type)]
			if !ok {
				return nil, errs.Permanentf("%s: delete %s: unknown type %q", p.path(), rr.Name, rr.Type)
			}
			m.RemoveRRset([]dns.RR{&dns.ANY{Hdr: dns.RR_Header{
				Name: dns.CanonicalName(libdns.AbsoluteName(rr.Name, dns.CanonicalName(zone))), Rrtype: t, Class: dns.ClassINET}}})
			out = append(out, r)
			continue
		}
		rrs, o, err := toRRs(zone, []libdns.Record{r}, false)
		if err != nil {
			return nil, err
		}
		m.Remove(rrs)
		out = append(out, o...)
	}
	if len(m.Ns) == 0 {
		return nil, nil
	}
	if err := p.send(ctx, m); err != nil {
		return nil, err
	}
	return out, nil
}

// toRRs converts libdns records to DNS RRs in zone.
func toRRs(zone string, recs []libdns.Record, defaultTTL0 bool) ([]dns.RR, []libdns.Record, error) {
	zone = dns.CanonicalName(zone)
	var rrs []dns.RR
	var out []libdns.Record
	for _, r := range recs {
		rr := r.RR()
		if rr.Name == "" {
			return nil, nil, errs.Permanentf("record name is empty")
		}
		name := dns.CanonicalName(libdns.AbsoluteName(rr.Name, zone))
		if !dns.IsSubDomain(zone, name) {
			return nil, nil, errs.Permanentf("record %s is not in zone %s", name, zone)
		}
		ttl := rr.TTL
		if ttl <= 0 && defaultTTL0 {
			ttl = defaultTTL
		}
		if strings.EqualFold(rr.Type, "TXT") {
			rrs = append(rrs, &dns.TXT{
				Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: uint32(ttl / time.Second)},
				Txt: splitTXT(rr.Data),
			})
			out = append(out, libdns.TXT{Name: libdns.RelativeName(name, zone), TTL: ttl, Text: rr.Data})
			continue
		}
		parsed, err := dns.NewRR(fmt.Sprintf("%s %d IN %s %s", name, int(ttl/time.Second), strings.ToUpper(rr.Type), rr.Data))
		if err != nil || parsed == nil {
			return nil, nil, errs.Permanentf("record %s %s %q: %v", name, rr.Type, rr.Data, err)
		}
		rrs = append(rrs, parsed)
		if lr, err := (libdns.RR{Name: libdns.RelativeName(name, zone), TTL: ttl, Type: strings.ToUpper(rr.Type), Data: rr.Data}).Parse(); err == nil {
			out = append(out, lr)
		} else {
			out = append(out, r)
		}
	}
	return rrs, out, nil
}

// splitTXT cuts a TXT value into character-strings of at most 255 octets.
func splitTXT(v string) []string {
	if len(v) <= 255 {
		return []string{v}
	}
	var out []string
	for len(v) > 255 {
		out = append(out, v[:255])
		v = v[255:]
	}
	return append(out, v)
}

func (p *Provider) path() string {
	if p.Path == "" {
		return "rfc2136"
	}
	return p.Path
}

func (p *Provider) timeout() time.Duration {
	if p.Timeout > 0 {
		return p.Timeout
	}
	return DefaultTimeout
}

// send signs m (when a key is configured), sends it once and classifies
// the outcome: TSIG rejected (NOTAUTH, BADKEY, BADSIG), REFUSED and
// NOTZONE are permanent; timeouts, network errors and SERVFAIL transient.
func (p *Provider) send(ctx context.Context, m *dns.Msg) error {
	ctx, cancel := context.WithTimeout(ctx, p.timeout())
	defer cancel()
	c := &dns.Client{Net: p.Net, Timeout: p.timeout()}
	if c.Net == "" {
		c.Net = "udp"
	}
	server := p.Nameserver
	if p.Restricted {
		var err error
		if server, err = p.checkNameserver(ctx); err != nil {
			return err
		}
	}
	if p.KeyName != "" {
		m.SetTsig(p.KeyName, p.Algorithm, 300, time.Now().Unix())
		c.TsigProvider = tsigKey{secret: p.Secret}
	}
	resp, _, err := c.ExchangeContext(ctx, m, server)
	// miekg/dns returns the reply with ErrAuth for a NOTAUTH reply that
	// carries a TSIG record: classify by the reply, not by that error.
	if resp != nil && (resp.Rcode != dns.RcodeSuccess || tsigError(resp) != 0) {
		return p.classify(m, resp)
	}
	if err != nil {
		return fmt.Errorf("%s: update %s via %s/%s: %w", p.path(), zoneOf(m), p.Nameserver, c.Net, err)
	}
	return nil
}

// checkNameserver refuses a nameserver address the policy denies. The
// address is resolved once and the exchange then goes to the checked IP,
// so a name that resolves differently later (DNS rebinding) cannot change
// where the update goes.
func (p *Provider) checkNameserver(ctx context.Context) (string, error) {
	host, port, err := net.SplitHostPort(p.Nameserver)
	if err != nil {
		return "", errs.Permanentf("%s.nameserver: %q: %v", p.path(), p.Nameserver, err)
	}
	if p.Network.HostAllowed(host) {
		return p.Nameserver, nil
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else if addrs, err = net.DefaultResolver.LookupNetIP(ctx, "ip", host); err != nil {
		return "", fmt.Errorf("%s.nameserver: resolve %s: %w", p.path(), host, err)
	}
	for _, a := range addrs {
		if !p.Network.Denied(a) {
			return net.JoinHostPort(a.Unmap().String(), port), nil
		}
	}
	source := p.Network.Source
	if source == "" {
		source = netguard.DefaultSource
	}
	return "", errs.Permanent(fmt.Errorf("%s.nameserver: %w: %s resolves to loopback, link-local, private or reserved addresses only; the operator may allow them in %s", p.path(), netguard.ErrDenied, p.Nameserver, source))
}

// tsigError is the TSIG error of a reply (BADSIG, BADKEY, BADTIME), or 0.
func tsigError(resp *dns.Msg) int {
	if t := resp.IsTsig(); t != nil {
		return int(t.Error)
	}
	return 0
}

// classify turns a non-NOERROR reply into an error.
func (p *Provider) classify(m *dns.Msg, resp *dns.Msg) error {
	if tsigError(resp) != 0 {
		return p.tsigRejected(resp, nil)
	}
	switch resp.Rcode {
	case dns.RcodeSuccess:
		return nil
	case dns.RcodeNotAuth:
		// RFC 2136 §2.2/RFC 8945 §5.3: NOTAUTH without a TSIG error means the
		// server is not authoritative for the zone.
		return errs.Permanentf("%s: the server %s rejected the update of zone %s: NOTAUTH (it is not authoritative for the zone)",
			p.path(), p.Nameserver, zoneOf(m))
	case dns.RcodeRefused:
		return errs.Permanentf("%s: the server %s refused the update of zone %s (REFUSED): check that its allow-update/update-policy admits the key %s",
			p.path(), p.Nameserver, zoneOf(m), p.keyLabel())
	case dns.RcodeNotZone, dns.RcodeNameError, dns.RcodeYXDomain, dns.RcodeYXRrset, dns.RcodeNXRrset:
		return errs.Permanentf("%s: the server %s rejected the update of zone %s: %s", p.path(), p.Nameserver, zoneOf(m), dns.RcodeToString[resp.Rcode])
	case dns.RcodeNotImplemented, dns.RcodeFormatError:
		return errs.Permanentf("%s: the server %s does not accept dynamic updates for zone %s: %s", p.path(), p.Nameserver, zoneOf(m), dns.RcodeToString[resp.Rcode])
	default:
		return fmt.Errorf("%s: update of zone %s via %s: %s", p.path(), zoneOf(m), p.Nameserver, dns.RcodeToString[resp.Rcode])
	}
}

// tsigRejected is the permanent error for a refused TSIG key.
func (p *Provider) tsigRejected(resp *dns.Msg, err error) error {
	detail := ""
	if resp != nil {
		detail = dns.RcodeToString[resp.Rcode]
		if t := resp.IsTsig(); t != nil && t.Error != dns.RcodeSuccess {
			detail += "/" + dns.RcodeToString[int(t.Error)]
		}
	}
	if err != nil {
		if detail != "" {
			detail += ": "
		}
		detail += err.Error()
	}
	return errs.Permanentf("%s.tsigSecretSecretRef: the server %s rejected the TSIG signature of key %s (%s)",
		p.path(), p.Nameserver, p.keyLabel(), detail)
}

func (p *Provider) keyLabel() string {
	if p.KeyName == "" {
		return "(none)"
	}
	return p.KeyName
}

func zoneOf(m *dns.Msg) string {
	if len(m.Question) == 0 {
		return ""
	}
	return m.Question[0].Name
}

// tsigKey is a dns.TsigProvider for one secret. miekg/dns dropped
// HMAC-MD5, cert-manager's default tsigAlgorithm, so the HMACs are
// computed here (crypto/hmac).
type tsigKey struct{ secret string }

func tsigHash(alg string) func() hash.Hash {
	switch dns.CanonicalName(alg) {
	case dns.HmacMD5:
		return md5.New
	case dns.HmacSHA1:
		return sha1.New
	case dns.HmacSHA224:
		return sha256.New224
	case dns.HmacSHA256:
		return sha256.New
	case dns.HmacSHA384:
		return sha512.New384
	case dns.HmacSHA512:
		return sha512.New
	}
	return nil
}

// Generate implements dns.TsigProvider.
func (k tsigKey) Generate(msg []byte, t *dns.TSIG) ([]byte, error) {
	h := tsigHash(t.Algorithm)
	if h == nil {
		return nil, dns.ErrKeyAlg
	}
	raw, err := base64.StdEncoding.DecodeString(k.secret)
	if err != nil {
		return nil, dns.ErrSecret
	}
	mac := hmac.New(h, raw)
	mac.Write(msg)
	return mac.Sum(nil), nil
}

// Verify implements dns.TsigProvider.
func (k tsigKey) Verify(msg []byte, t *dns.TSIG) error {
	want, err := k.Generate(msg, t)
	if err != nil {
		return err
	}
	got, err := hex.DecodeString(t.MAC)
	if err != nil {
		return err
	}
	if !hmac.Equal(want, got) {
		return dns.ErrSig
	}
	return nil
}
