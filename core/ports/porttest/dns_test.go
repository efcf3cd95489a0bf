package porttest_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/libdns/libdns"

	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/ports/porttest"
)

// The suite's provider type is the Solver's, both ways round.
var (
	_ dns01.Provider       = porttest.DNSProvider(nil)
	_ porttest.DNSProvider = dns01.Provider(nil)
)

// memDNS is an in-memory provider with full libdns semantics, serving what
// it holds to Lookup. With only43 it refuses values that are not 43
// characters long, as acme-dns does.
type memDNS struct {
	only43 bool
	mu     sync.Mutex
	txt    map[string][]string // fqdn -> values
}

func (m *memDNS) AppendRecords(_ context.Context, zone string, recs []libdns.Record) ([]libdns.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []libdns.Record
	for _, r := range recs {
		rr := r.RR()
		if m.only43 && len(rr.Data) != 43 {
			return out, fmt.Errorf("value %q is not 43 characters long", rr.Data)
		}
		fqdn := libdns.AbsoluteName(rr.Name, zone)
		if !slices.Contains(m.txt[fqdn], rr.Data) {
			m.txt[fqdn] = append(m.txt[fqdn], rr.Data)
		}
		out = append(out, libdns.TXT{Name: rr.Name, Text: rr.Data})
	}
	return out, nil
}

func (m *memDNS) DeleteRecords(_ context.Context, zone string, recs []libdns.Record) ([]libdns.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []libdns.Record
	for _, r := range recs {
		rr := r.RR()
		fqdn := libdns.AbsoluteName(rr.Name, zone)
		m.txt[fqdn] = slices.DeleteFunc(m.txt[fqdn], func(v string) bool {
			if rr.Data == "" || v == rr.Data {
				out = append(out, libdns.TXT{Name: rr.Name, Text: v})
				return true
			}
			return false
		})
	}
	return out, nil
}

func (m *memDNS) lookup(_ *testing.T, fqdn string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := slices.Clone(m.txt[fqdn])
	slices.Sort(out)
	return out
}

// The suite runs whole on a provider with full semantics, and with
// DNSEnv.Value and DNSEnv.Unsupported on one that takes only 43-character
// values: every mapped value reaches the provider and Lookup (the
// provider refuses anything else), the listed case is skipped.
func TestDNSProviderSuiteOptions(t *testing.T) {
	t.Run("full semantics", func(t *testing.T) {
		m := &memDNS{txt: map[string][]string{}}
		porttest.DNSProviderSuite(t, porttest.DNSEnv{Provider: m, Zone: "example.test.", Lookup: m.lookup})
	})
	t.Run("mapped values and an unsupported case", func(t *testing.T) {
		m := &memDNS{only43: true, txt: map[string][]string{}}
		porttest.DNSProviderSuite(t, porttest.DNSEnv{
			Provider: m, Zone: "example.test.", Lookup: m.lookup,
			Value: func(v string) string {
				sum := sha256.Sum256([]byte(v))
				return base64.RawURLEncoding.EncodeToString(sum[:])
			},
			Unsupported: map[porttest.DNSCase]string{porttest.DNSLongValues: "the provider takes only 43-character values"},
		})
		for fqdn := range m.txt {
			if strings.Contains(fqdn, "suite-7") {
				t.Errorf("the unsupported case ran: %s was written", fqdn)
			}
		}
	})
}
