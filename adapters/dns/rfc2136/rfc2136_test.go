package rfc2136

import (
	"context"
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"strings"
	"testing"
	"time"

	"github.com/libdns/libdns"
	"github.com/miekg/dns"

	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
)

func TestToRRs(t *testing.T) {
	long := strings.Repeat("x", 600)
	cases := []struct {
		name    string
		rec     libdns.Record
		want    string // the RR in zone-file form
		wantErr string
	}{
		{"TXT gets the default TTL", libdns.TXT{Name: "_acme-challenge.www", Text: "v"}, "_acme-challenge.www.example.test.\t60\tIN\tTXT\t\"v\"", ""},
		{"TXT at the apex", libdns.TXT{Name: "@", TTL: 2 * time.Minute, Text: "v"}, "example.test.\t120\tIN\tTXT\t\"v\"", ""},
		{"long TXT is split into 255-octet strings", libdns.TXT{Name: "l", Text: long},
			"l.example.test.\t60\tIN\tTXT\t\"" + long[:255] + "\" \"" + long[255:510] + "\" \"" + long[510:] + "\"", ""},
		{"another type through its zone-file form", libdns.RR{Name: "www", Type: "a", Data: "192.0.2.1"}, "www.example.test.\t60\tIN\tA\t192.0.2.1", ""},
		{"absolute name in the zone", libdns.TXT{Name: "x.example.test.", Text: "v"}, "x.example.test.\t60\tIN\tTXT\t\"v\"", ""},
		{"name outside the zone", libdns.TXT{Name: "x.other.test.", Text: "v"}, "", "record x.other.test. is not in zone example.test."},
		{"empty name", libdns.TXT{Text: "v"}, "", "record name is empty"},
		{"bad data", libdns.RR{Name: "www", Type: "A", Data: "not-an-ip"}, "", `record www.example.test. A "not-an-ip"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rrs, out, err := toRRs("example.test", []libdns.Record{tc.rec}, true)
			if tc.wantErr != "" {
				if err == nil || !errs.IsPermanent(err) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want a permanent error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(rrs) != 1 || rrs[0].String() != tc.want {
				t.Fatalf("RR = %v\nwant %s", rrs, tc.want)
			}
			if len(out) != 1 || out[0].RR().Data == "" {
				t.Fatalf("returned records %#v", out)
			}
		})
	}
}

// TestTSIGKey: the HMACs match crypto/hmac for MD5 and SHA-256, Verify
// accepts its own MAC and rejects another.
func TestTSIGKey(t *testing.T) {
	k := tsigKey{secret: "c2VjcmV0"} // "secret"
	msg := []byte("message")
	for alg, want := range map[string][]byte{
		dns.HmacMD5:    mac(md5.New, msg),
		dns.HmacSHA256: mac(sha256.New, msg),
	} {
		got, err := k.Generate(msg, &dns.TSIG{Algorithm: alg})
		if err != nil || !hmac.Equal(got, want) {
			t.Fatalf("%s: Generate = %x, %v; want %x", alg, got, err, want)
		}
		if err := k.Verify(msg, &dns.TSIG{Algorithm: alg, MAC: hex.EncodeToString(want)}); err != nil {
			t.Fatalf("%s: Verify of its own MAC: %v", alg, err)
		}
		if err := k.Verify([]byte("other"), &dns.TSIG{Algorithm: alg, MAC: hex.EncodeToString(want)}); err != dns.ErrSig {
			t.Fatalf("%s: Verify of another message = %v, want ErrSig", alg, err)
		}
	}
	if _, err := k.Generate(msg, &dns.TSIG{Algorithm: "hmac-sha3."}); err != dns.ErrKeyAlg {
		t.Fatalf("unknown algorithm: %v, want ErrKeyAlg", err)
	}
	if _, err := (tsigKey{secret: "%%%"}).Generate(msg, &dns.TSIG{Algorithm: dns.HmacSHA256}); err != dns.ErrSecret {
		t.Fatalf("bad secret: %v, want ErrSecret", err)
	}
}

// mac is HMAC(h, "secret", msg), computed independently of tsigKey.
func mac(h func() hash.Hash, msg []byte) []byte {
	m := hmac.New(h, []byte("secret"))
	m.Write(msg)
	return m.Sum(nil)
}

// TestDeleteRecordsWithoutServer: nothing to delete sends nothing; an
// empty value needs a known type.
func TestDeleteRecordsWithoutServer(t *testing.T) {
	p := &Provider{RFC2136Config: dns01.RFC2136Config{Nameserver: "127.0.0.1:1", Net: "udp"}, Timeout: 50 * time.Millisecond}
	ctx := context.Background()
	if out, err := p.DeleteRecords(ctx, "example.test.", nil); err != nil || out != nil {
		t.Fatalf("DeleteRecords(nil) = %v, %v; want nothing sent", out, err)
	}
	for _, tc := range []struct {
		rec  libdns.Record
		want string
	}{
		{libdns.RR{Name: "x"}, "rfc2136: delete x: a type is required"},
		{libdns.RR{Name: "x", Type: "BOGUS"}, `rfc2136: delete x: unknown type "BOGUS"`},
	} {
		if _, err := p.DeleteRecords(ctx, "example.test.", []libdns.Record{tc.rec}); err == nil || !errs.IsPermanent(err) || err.Error() != tc.want {
			t.Fatalf("err = %v, want permanent %q", err, tc.want)
		}
	}
	// A server that does not answer: transient.
	_, err := p.AppendRecords(ctx, "example.test.", []libdns.Record{libdns.TXT{Name: "x", Text: "v"}})
	if err == nil || errs.IsPermanent(err) || !strings.Contains(err.Error(), "rfc2136: update example.test. via 127.0.0.1:1/udp") {
		t.Fatalf("unreachable server: err = %v, want transient", err)
	}
}

func TestFactory(t *testing.T) {
	req := dns01.ProviderRequest{Path: "spec.solver.dns01", DNS01: &api.ACMEChallengeSolverDNS01{
		RFC2136: &api.ACMEIssuerDNS01ProviderRFC2136{Nameserver: "192.0.2.1", Protocol: "TCP"},
	}}
	p, err := Factory(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	rp := p.(*Provider)
	if rp.Nameserver != "192.0.2.1:53" || rp.Net != "tcp" || rp.Path != "spec.solver.dns01.rfc2136" {
		t.Fatalf("provider = %v (path %q)", rp, rp.Path)
	}
	req.DNS01.RFC2136.Nameserver = ""
	if _, err := Factory(context.Background(), req); !errs.IsPermanent(err) || !strings.Contains(err.Error(), "spec.solver.dns01.rfc2136.nameserver: required") {
		t.Fatalf("err = %v", err)
	}
}
