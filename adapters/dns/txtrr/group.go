package txtrr

import (
	"strings"
	"time"

	"github.com/libdns/libdns"
	"github.com/miekg/dns"

	"github.com/certfn/certfn/core/errs"
)

// Group is the TXT records of one name that a DNS-01 provider appends or
// deletes together.
type Group struct {
	// FQDN is the name, fully qualified with a trailing dot, lower case.
	FQDN string
	// Rel is FQDN relative to the zone the records were given for.
	Rel string
	// TTL is the last positive TTL among the records, else the default
	// GroupByName was given.
	TTL time.Duration
	// Recs are the records, values unquoted.
	Recs []libdns.TXT
}

// GroupByName checks recs (TXT records with valid names only) and groups
// them by name under zone, in first-seen order. An invalid record is a
// permanent error naming path (the solver's field) and the record.
func GroupByName(zone string, recs []libdns.Record, path string, defaultTTL time.Duration) ([]*Group, error) {
	zone = dns.CanonicalName(zone)
	var out []*Group
	by := map[string]*Group{}
	for _, r := range recs {
		rr := r.RR()
		if !strings.EqualFold(rr.Type, "TXT") {
			return nil, errs.Permanentf("%s: %s record %s: only TXT records are supported", path, rr.Type, rr.Name)
		}
		fqdn := dns.CanonicalName(libdns.AbsoluteName(rr.Name, zone))
		if _, ok := dns.IsDomainName(fqdn); !ok {
			return nil, errs.Permanentf("%s: %q is not a valid record name", path, rr.Name)
		}
		g := by[fqdn]
		if g == nil {
			g = &Group{FQDN: fqdn, Rel: libdns.RelativeName(fqdn, zone), TTL: defaultTTL}
			by[fqdn] = g
			out = append(out, g)
		}
		if rr.TTL > 0 {
			g.TTL = rr.TTL
		}
		g.Recs = append(g.Recs, libdns.TXT{Name: g.Rel, TTL: rr.TTL, Text: strings.Trim(rr.Data, `"`)})
	}
	return out, nil
}
