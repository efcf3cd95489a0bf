package porttest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/libdns/libdns"
)

// DNSProvider is a DNS-01 provider: libdns's RecordAppender and
// RecordDeleter. It is the method set of dns01.Provider, the type the
// Solver takes (a test of this package checks that the two convert both
// ways); it is spelled out here so that the suites of the other ports do
// not link the DNS-01 solver and its DNS libraries.
type DNSProvider interface {
	libdns.RecordAppender
	libdns.RecordDeleter
}

// DNSEnv is what DNSProviderSuite needs from one provider under test.
type DNSEnv struct {
	// Provider is the provider under test.
	Provider DNSProvider
	// Zone is a zone the provider may change ("example.test.").
	Zone string
	// Lookup returns the sorted TXT values the DNS server serves for fqdn.
	Lookup func(t *testing.T, fqdn string) []string
}

// DNSProviderSuite is the contract every DNS-01 provider of certfn fulfils
// (the Solver in core/acme/dns01 relies on it): append makes the value
// visible, keeps other values of the name and is idempotent, delete
// removes exactly the given value, deleting what is not there is fine, an
// empty value deletes the name's TXT set, values longer than 255 octets
// survive. Each case uses its own name under env.Zone; the DNS server is
// read back through env.Lookup, never through the provider.
func DNSProviderSuite(t *testing.T, env DNSEnv) {
	ctx := context.Background()
	n := 0
	name := func() string {
		n++
		return fmt.Sprintf("_acme-challenge.suite-%d", n)
	}
	fqdn := func(rel string) string { return libdns.AbsoluteName(rel, env.Zone) }
	add := func(t *testing.T, rel string, values ...string) []libdns.Record {
		t.Helper()
		var recs []libdns.Record
		for _, v := range values {
			recs = append(recs, libdns.TXT{Name: rel, Text: v})
		}
		out, err := env.Provider.AppendRecords(ctx, env.Zone, recs)
		if err != nil {
			t.Fatalf("AppendRecords(%s %v): %v", rel, values, err)
		}
		return out
	}
	del := func(t *testing.T, rel, value string) {
		t.Helper()
		if _, err := env.Provider.DeleteRecords(ctx, env.Zone, []libdns.Record{libdns.TXT{Name: rel, Text: value}}); err != nil {
			t.Fatalf("DeleteRecords(%s %q): %v", rel, value, err)
		}
	}
	expect := func(t *testing.T, rel string, want ...string) {
		t.Helper()
		slices.Sort(want)
		got := env.Lookup(t, fqdn(rel))
		if !slices.Equal(got, want) {
			t.Fatalf("TXT %s = %q, want %q", fqdn(rel), got, want)
		}
	}
	long := strings.Repeat("L", 300)

	cases := []struct {
		name string
		run  func(t *testing.T, rel string)
	}{
		{"append makes the value visible and returns a TXT record", func(t *testing.T, rel string) {
			out := add(t, rel, "v1")
			if len(out) != 1 {
				t.Fatalf("AppendRecords returned %d records, want 1", len(out))
			}
			if txt, ok := out[0].(libdns.TXT); !ok || txt.Text != "v1" || txt.Name != rel {
				t.Fatalf("AppendRecords returned %#v, want libdns.TXT{Name: %q, Text: \"v1\"}", out[0], rel)
			}
			expect(t, rel, "v1")
		}},
		{"appending the same value twice keeps one record", func(t *testing.T, rel string) {
			add(t, rel, "same")
			add(t, rel, "same")
			expect(t, rel, "same")
		}},
		{"append keeps the other values of the name", func(t *testing.T, rel string) {
			add(t, rel, "first")
			add(t, rel, "second")
			expect(t, rel, "first", "second")
		}},
		{"delete removes exactly the given value", func(t *testing.T, rel string) {
			add(t, rel, "ours", "theirs")
			del(t, rel, "ours")
			expect(t, rel, "theirs")
		}},
		{"deleting a value that is not there is fine", func(t *testing.T, rel string) {
			add(t, rel, "kept")
			del(t, rel, "never-added")
			expect(t, rel, "kept")
			del(t, "_acme-challenge.no-such-name", "x")
		}},
		{"delete with an empty value removes the whole TXT set", func(t *testing.T, rel string) {
			add(t, rel, "a", "b")
			del(t, rel, "")
			expect(t, rel)
		}},
		{"values longer than 255 octets survive", func(t *testing.T, rel string) {
			add(t, rel, long)
			expect(t, rel, long)
			del(t, rel, long)
			expect(t, rel)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, name()) })
	}
}
