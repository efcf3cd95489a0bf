package txtrr

import (
	"strings"
	"testing"
	"time"

	"github.com/libdns/libdns"

	"github.com/certfn/certfn/core/errs"
)

func TestGroupByName(t *testing.T) {
	recs := []libdns.Record{
		libdns.TXT{Name: "_acme-challenge.www", Text: "a"},
		libdns.TXT{Name: "_acme-challenge", Text: `"b"`, TTL: 120 * time.Second},
		libdns.TXT{Name: "_acme-challenge.WWW", Text: "c", TTL: 30 * time.Second},
	}
	gs, err := GroupByName("Example.COM", recs, "spec.solver.dns01.x", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 2 {
		t.Fatalf("%d groups, want 2", len(gs))
	}
	www, apex := gs[0], gs[1]
	if www.FQDN != "_acme-challenge.www.example.com." || www.Rel != "_acme-challenge.www" || www.TTL != 30*time.Second ||
		len(www.Recs) != 2 || www.Recs[0].Text != "a" || www.Recs[1].Text != "c" {
		t.Errorf("first group %+v", *www)
	}
	if apex.FQDN != "_acme-challenge.example.com." || apex.TTL != 120*time.Second || apex.Recs[0].Text != "b" {
		t.Errorf("second group %+v (values are unquoted)", *apex)
	}
	if gs, _ := GroupByName("example.com", recs[:1], "p", time.Minute); gs[0].TTL != time.Minute {
		t.Errorf("default TTL: %s", gs[0].TTL)
	}
	for _, tc := range []struct {
		rec  libdns.Record
		want string
	}{
		{libdns.Address{Name: "www"}, "spec.solver.dns01.x: A record www: only TXT records are supported"},
		{libdns.TXT{Name: strings.Repeat("a", 64), Text: "v"}, "is not a valid record name"},
	} {
		_, err := GroupByName("example.com", []libdns.Record{tc.rec}, "spec.solver.dns01.x", 0)
		if err == nil || !errs.IsPermanent(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want a permanent %q", tc.rec, err, tc.want)
		}
	}
}
