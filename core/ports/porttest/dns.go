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

	// The two fields below exist for providers whose API has fixed
	// semantics (acme-dns: it takes only 43-character values, keeps the
	// two latest values of a name and has no delete). Every other
	// provider leaves them empty and runs the whole suite as it is.

	// Value, when set, maps each value the suite writes to the one the
	// provider is given and env.Lookup is expected to return (e.g. the
	// base64url SHA-256 of the suite's value, the form of every DNS-01
	// value). It must map distinct values to distinct values; the empty
	// value (libdns's "every value of the name") is never mapped.
	Value func(string) string
	// Unsupported names the cases the provider cannot satisfy by design,
	// each with the reason. Such a case is skipped with "unsupported by
	// this provider: <reason>" (go test -v shows it), never run; a key that
	// names no case of the suite fails the suite, so a skip cannot outlive
	// its case. Never use it to hide a bug: a provider that could do what
	// a case asks must pass it.
	Unsupported map[DNSCase]string
}

// dnsCase is one case of DNSProviderSuite.
type dnsCase struct {
	name DNSCase
	run  func(t *testing.T, rel string)
}

// DNSCase names one case of DNSProviderSuite (its subtest name), for
// DNSEnv.Unsupported.
type DNSCase string

// The cases of DNSProviderSuite.
const (
	DNSAppendVisible     DNSCase = "append makes the value visible and returns a TXT record"
	DNSAppendIdempotent  DNSCase = "appending the same value twice keeps one record"
	DNSAppendKeepsOthers DNSCase = "append keeps the other values of the name"
	DNSDeleteExact       DNSCase = "delete removes exactly the given value"
	DNSDeleteAbsent      DNSCase = "deleting a value that is not there is fine"
	DNSDeleteAll         DNSCase = "delete with an empty value removes the whole TXT set"
	DNSLongValues        DNSCase = "values longer than 255 octets survive"
)

// DNSProviderSuite is the contract every DNS-01 provider of certfn fulfils
// (the Solver in core/acme/dns01 relies on it): append makes the value
// visible, keeps other values of the name and is idempotent, delete
// removes exactly the given value, deleting what is not there is fine, an
// empty value deletes the name's TXT set, values longer than 255 octets
// survive. Each case uses its own name under env.Zone; the DNS server is
// read back through env.Lookup, never through the provider. Cases listed
// in env.Unsupported are skipped with their reason.
func DNSProviderSuite(t *testing.T, env DNSEnv) {
	ctx := context.Background()
	value := func(v string) string {
		if env.Value == nil || v == "" {
			return v
		}
		return env.Value(v)
	}
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
			recs = append(recs, libdns.TXT{Name: rel, Text: value(v)})
		}
		out, err := env.Provider.AppendRecords(ctx, env.Zone, recs)
		if err != nil {
			t.Fatalf("AppendRecords(%s %v): %v", rel, values, err)
		}
		return out
	}
	del := func(t *testing.T, rel, v string) {
		t.Helper()
		if _, err := env.Provider.DeleteRecords(ctx, env.Zone, []libdns.Record{libdns.TXT{Name: rel, Text: value(v)}}); err != nil {
			t.Fatalf("DeleteRecords(%s %q): %v", rel, value(v), err)
		}
	}
	expect := func(t *testing.T, rel string, want ...string) {
		t.Helper()
		for i, w := range want {
			want[i] = value(w)
		}
		slices.Sort(want)
		got := env.Lookup(t, fqdn(rel))
		if !slices.Equal(got, want) {
			t.Fatalf("TXT %s = %q, want %q", fqdn(rel), got, want)
		}
	}
	long := strings.Repeat("L", 300)

	cases := []dnsCase{
		{DNSAppendVisible, func(t *testing.T, rel string) {
			out := add(t, rel, "v1")
			if len(out) != 1 {
				t.Fatalf("AppendRecords returned %d records, want 1", len(out))
			}
			if txt, ok := out[0].(libdns.TXT); !ok || txt.Text != value("v1") || txt.Name != rel {
				t.Fatalf("AppendRecords returned %#v, want libdns.TXT{Name: %q, Text: %q}", out[0], rel, value("v1"))
			}
			expect(t, rel, "v1")
		}},
		{DNSAppendIdempotent, func(t *testing.T, rel string) {
			add(t, rel, "same")
			add(t, rel, "same")
			expect(t, rel, "same")
		}},
		{DNSAppendKeepsOthers, func(t *testing.T, rel string) {
			add(t, rel, "first")
			add(t, rel, "second")
			expect(t, rel, "first", "second")
		}},
		{DNSDeleteExact, func(t *testing.T, rel string) {
			add(t, rel, "ours", "theirs")
			del(t, rel, "ours")
			expect(t, rel, "theirs")
		}},
		{DNSDeleteAbsent, func(t *testing.T, rel string) {
			add(t, rel, "kept")
			del(t, rel, "never-added")
			expect(t, rel, "kept")
			del(t, "_acme-challenge.no-such-name", "x")
		}},
		{DNSDeleteAll, func(t *testing.T, rel string) {
			add(t, rel, "a", "b")
			del(t, rel, "")
			expect(t, rel)
		}},
		{DNSLongValues, func(t *testing.T, rel string) {
			add(t, rel, long)
			expect(t, rel, long)
			del(t, rel, long)
			expect(t, rel)
		}},
	}
	for c := range env.Unsupported {
		if !slices.ContainsFunc(cases, func(tc dnsCase) bool { return tc.name == c }) {
			t.Fatalf("DNSEnv.Unsupported names %q, which is not a case of DNSProviderSuite", c)
		}
	}
	for _, tc := range cases {
		t.Run(string(tc.name), func(t *testing.T) {
			rel := name()
			if why, ok := env.Unsupported[tc.name]; ok {
				t.Skipf("unsupported by this provider: %s", why)
			}
			tc.run(t, rel)
		})
	}
}
