// Package challtestsrv is a libdns provider for Pebble's challenge test
// server (github.com/letsencrypt/challtestsrv), FOR TESTS AND THE DEMO
// ONLY: it adds and removes TXT records either through a direct handle on
// an in-process challtestsrv (TXTServer), or through the management HTTP API
// of the pebble-challtestsrv command (POST /set-txt, /clear-txt).
//
// challtestsrv answers every name and no SOA or NS query, so the provider
// also implements dns01.Authority: the zone of a name is Zone (default:
// the name's parent) and its only authoritative server is DNSAddr.
//
// Select it in an issuer with
//
//	dns01:
//	  webhook:
//	    groupName: acme.certfn.test
//	    solverName: challtestsrv
//
// and register Provider.Factory under dns01.WebhookKey("challtestsrv").
package challtestsrv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/libdns/libdns"
	"github.com/miekg/dns"

	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/errs"
)

// TXTServer is the part of an in-process challtestsrv the provider uses
// (*challtestsrv.ChallSrv of github.com/letsencrypt/challtestsrv has it).
// An interface, so that the certfn binary, which reaches challtestsrv only
// through its management API (`certfn serve --dns01-challtestsrv`, for the
// demo and for users testing against Pebble), does not link the test
// server itself.
type TXTServer interface {
	GetDNSTXTRecords(host string) []string
	AddDNSTXTRecord(host, value string)
	DeleteDNSTXTRecord(host string)
}

// SolverName is the webhook solverName the tests and the demo use.
const SolverName = "challtestsrv"

// Provider talks to one challtestsrv. Set Server (in-process) or
// ManagementURL (pebble-challtestsrv's -management address, e.g.
// "http://127.0.0.1:8055"); DNSAddr is the server's DNS address
// ("127.0.0.1:8053"), needed for Authority and, with ManagementURL, to read
// the current values (the management API cannot list them).
type Provider struct {
	Server        TXTServer
	ManagementURL string
	DNSAddr       string
	// Zone, when set, is the zone of every name (with or without the
	// trailing dot); otherwise a name's zone is its parent domain.
	Zone string
	// HTTPClient is used with ManagementURL (nil: a client with a 5 s timeout).
	HTTPClient *http.Client

	mu sync.Mutex // serialises read-modify-write of one server's TXT sets
}

var (
	_ libdns.RecordAppender = (*Provider)(nil)
	_ libdns.RecordDeleter  = (*Provider)(nil)
	_ dns01.Authority       = (*Provider)(nil)
)

// Factory returns a dns01.ProviderFactory that hands out p for every
// challenge (register it under dns01.WebhookKey(SolverName)).
func (p *Provider) Factory() dns01.ProviderFactory {
	return func(context.Context, dns01.ProviderRequest) (dns01.Provider, error) {
		if p.Server == nil && p.ManagementURL == "" {
			return nil, errs.Permanentf("challtestsrv: neither Server nor ManagementURL is set")
		}
		return p, nil
	}
}

// Authority implements dns01.Authority: the zone is p.Zone or fqdn's
// parent, and the one server is p.DNSAddr.
func (p *Provider) Authority(_ context.Context, fqdn string) (string, []string, error) {
	if p.DNSAddr == "" {
		return "", nil, errs.Permanentf("challtestsrv: DNSAddr is not set")
	}
	fqdn = dns.CanonicalName(fqdn)
	if p.Zone != "" {
		z := dns.CanonicalName(p.Zone)
		if !dns.IsSubDomain(z, fqdn) {
			return "", nil, errs.Permanentf("challtestsrv: %s is not in zone %s", fqdn, z)
		}
		return z, []string{p.DNSAddr}, nil
	}
	labels := dns.SplitDomainName(fqdn)
	if len(labels) < 2 {
		return "", nil, errs.Permanentf("challtestsrv: %s has no parent zone", fqdn)
	}
	return dns.Fqdn(strings.Join(labels[1:], ".")), []string{p.DNSAddr}, nil
}

// AppendRecords adds the TXT records recs to zone, skipping values the
// name already has (challtestsrv itself would serve a value twice). Only
// TXT records are supported.
func (p *Provider) AppendRecords(ctx context.Context, zone string, recs []libdns.Record) ([]libdns.Record, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []libdns.Record
	for _, r := range recs {
		host, txt, err := p.txt(zone, r)
		if err != nil {
			return out, err
		}
		have, err := p.values(ctx, host)
		if err != nil {
			return out, err
		}
		if !contains(have, txt.Text) {
			if err := p.add(ctx, host, txt.Text); err != nil {
				return out, err
			}
		}
		out = append(out, txt)
	}
	return out, nil
}

// DeleteRecords removes exactly the given TXT values (all values of the
// name when a record's value is empty). challtestsrv can only clear a
// name, so the other values are added back; missing values are ignored.
// It returns the records that were there.
func (p *Provider) DeleteRecords(ctx context.Context, zone string, recs []libdns.Record) ([]libdns.Record, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []libdns.Record
	for _, r := range recs {
		host, txt, err := p.txt(zone, r)
		if err != nil {
			return out, err
		}
		have, err := p.values(ctx, host)
		if err != nil {
			return out, err
		}
		var keep []string
		found := false
		for _, v := range have {
			if txt.Text == "" || v == txt.Text {
				found = true
				continue
			}
			keep = append(keep, v)
		}
		if !found {
			continue
		}
		if err := p.clear(ctx, host); err != nil {
			return out, err
		}
		for _, v := range keep {
			if err := p.add(ctx, host, v); err != nil {
				return out, err
			}
		}
		out = append(out, txt)
	}
	return out, nil
}

// txt checks that r is a TXT record and returns its absolute name.
func (p *Provider) txt(zone string, r libdns.Record) (string, libdns.TXT, error) {
	rr := r.RR()
	if rr.Type != "" && !strings.EqualFold(rr.Type, "TXT") {
		return "", libdns.TXT{}, errs.Permanentf("challtestsrv: only TXT records are supported, not %s", rr.Type)
	}
	if rr.Name == "" {
		return "", libdns.TXT{}, errs.Permanentf("challtestsrv: record name is empty")
	}
	host := dns.CanonicalName(libdns.AbsoluteName(rr.Name, dns.CanonicalName(zone)))
	return host, libdns.TXT{Name: rr.Name, TTL: rr.TTL, Text: rr.Data}, nil
}

func contains(vs []string, v string) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

// values returns host's TXT values: from the handle, or over DNS.
func (p *Provider) values(ctx context.Context, host string) ([]string, error) {
	if p.Server != nil {
		return append([]string(nil), p.Server.GetDNSTXTRecords(host)...), nil
	}
	if p.DNSAddr == "" {
		return nil, errs.Permanentf("challtestsrv: DNSAddr is required with ManagementURL")
	}
	m := new(dns.Msg)
	m.SetQuestion(host, dns.TypeTXT)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	in, _, err := (&dns.Client{Net: "tcp", Timeout: 5 * time.Second}).ExchangeContext(ctx, m, p.DNSAddr)
	if err != nil {
		return nil, fmt.Errorf("challtestsrv: read TXT %s: %w", host, err)
	}
	var out []string
	for _, rr := range in.Answer {
		if t, ok := rr.(*dns.TXT); ok && strings.EqualFold(t.Hdr.Name, host) {
			out = append(out, strings.Join(t.Txt, ""))
		}
	}
	return out, nil
}

func (p *Provider) add(ctx context.Context, host, value string) error {
	if p.Server != nil {
		p.Server.AddDNSTXTRecord(host, value)
		return nil
	}
	return p.post(ctx, "/set-txt", map[string]string{"host": host, "value": value})
}

func (p *Provider) clear(ctx context.Context, host string) error {
	if p.Server != nil {
		p.Server.DeleteDNSTXTRecord(host)
		return nil
	}
	return p.post(ctx, "/clear-txt", map[string]string{"host": host})
}

// post sends one management request; a non-2xx answer is an error
// (permanent for 4xx).
func (p *Provider) post(ctx context.Context, path string, body any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(p.ManagementURL, "/")+path, bytes.NewReader(b))
	if err != nil {
		return errs.Permanentf("challtestsrv: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	c := p.HTTPClient
	if c == nil {
		c = &http.Client{Timeout: 5 * time.Second}
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("challtestsrv: POST %s: %w", path, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 == 2 {
		return nil
	}
	err = fmt.Errorf("challtestsrv: POST %s: %s %s", path, resp.Status, strings.TrimSpace(string(msg)))
	if resp.StatusCode/100 == 4 {
		return errs.Permanent(err)
	}
	return err
}
