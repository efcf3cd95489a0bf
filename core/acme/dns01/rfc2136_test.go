package dns01

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

const testSecret = "c2VjcmV0LXNlY3JldC1zZWNyZXQ=" // base64("secret-secret-secret")

// rfcReq builds a ProviderRequest for an rfc2136 solver; mods adjust it.
func rfcReq(store ports.SecretStore, mods ...func(*api.ACMEIssuerDNS01ProviderRFC2136)) ProviderRequest {
	spec := &api.ACMEIssuerDNS01ProviderRFC2136{
		Nameserver:    "192.0.2.53",
		TSIGKeyName:   "Certfn-Key",
		TSIGAlgorithm: "HMACSHA256",
		TSIGSecret:    api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: "tsig"}, Key: "secret"},
	}
	for _, m := range mods {
		m(spec)
	}
	return ProviderRequest{
		DNS01: &api.ACMEChallengeSolverDNS01{RFC2136: spec}, Key: KeyRFC2136, Path: "spec.solver.dns01",
		SecretNamespace: "team-a", Secrets: store,
	}
}

func TestParseRFC2136(t *testing.T) {
	store := certtest.NewMemSecrets(
		ports.Secret{Namespace: "team-a", Name: "tsig", Data: map[string][]byte{"secret": []byte(testSecret + "\n"), "junk": []byte("not base64!")}},
	)
	down := certtest.NewMemSecrets()
	down.GetErr = errors.New("store down")
	const p = "spec.solver.dns01.rfc2136"
	cases := []struct {
		name      string
		store     ports.SecretStore
		mod       func(*api.ACMEIssuerDNS01ProviderRFC2136)
		want      RFC2136Config
		wantErr   string
		permanent bool
	}{
		{name: "defaults: port 53, UDP", mod: func(*api.ACMEIssuerDNS01ProviderRFC2136) {},
			want: RFC2136Config{Nameserver: "192.0.2.53:53", Net: "udp", KeyName: "certfn-key.", Algorithm: dns.HmacSHA256, Secret: testSecret}},
		{name: "TCP, host:port, lower-case algorithm", mod: func(s *api.ACMEIssuerDNS01ProviderRFC2136) {
			s.Nameserver, s.Protocol, s.TSIGAlgorithm = "ns1.example.test:5353", "tcp", "hmacsha512"
		}, want: RFC2136Config{Nameserver: "ns1.example.test:5353", Net: "tcp", KeyName: "certfn-key.", Algorithm: dns.HmacSHA512, Secret: testSecret}},
		{name: "default algorithm is HMACMD5 (cert-manager)", mod: func(s *api.ACMEIssuerDNS01ProviderRFC2136) { s.TSIGAlgorithm = "" },
			want: RFC2136Config{Nameserver: "192.0.2.53:53", Net: "udp", KeyName: "certfn-key.", Algorithm: dns.HmacMD5, Secret: testSecret}},
		{name: "BIND spelling", mod: func(s *api.ACMEIssuerDNS01ProviderRFC2136) { s.TSIGAlgorithm = "hmac-sha384" },
			want: RFC2136Config{Nameserver: "192.0.2.53:53", Net: "udp", KeyName: "certfn-key.", Algorithm: dns.HmacSHA384, Secret: testSecret}},
		{name: "IPv6 with port", mod: func(s *api.ACMEIssuerDNS01ProviderRFC2136) { s.Nameserver = "[2001:db8::1]:5353" },
			want: RFC2136Config{Nameserver: "[2001:db8::1]:5353", Net: "udp", KeyName: "certfn-key.", Algorithm: dns.HmacSHA256, Secret: testSecret}},
		{name: "no TSIG", mod: func(s *api.ACMEIssuerDNS01ProviderRFC2136) {
			s.TSIGKeyName, s.TSIGSecret = "", api.SecretKeySelector{}
		}, want: RFC2136Config{Nameserver: "192.0.2.53:53", Net: "udp"}},
		{name: "no nameserver", mod: func(s *api.ACMEIssuerDNS01ProviderRFC2136) { s.Nameserver = "" },
			wantErr: p + ".nameserver: required", permanent: true},
		{name: "unbracketed IPv6 with port", mod: func(s *api.ACMEIssuerDNS01ProviderRFC2136) { s.Nameserver = "2001:db8::1:53:x" },
			wantErr: p + ".nameserver: \"2001:db8::1:53:x\" is not host[:port]", permanent: true},
		{name: "bad port", mod: func(s *api.ACMEIssuerDNS01ProviderRFC2136) { s.Nameserver = "192.0.2.53:99999" },
			wantErr: p + `.nameserver: "192.0.2.53:99999": port "99999" is not in 1-65535`, permanent: true},
		{name: "bad host", mod: func(s *api.ACMEIssuerDNS01ProviderRFC2136) { s.Nameserver = "http://ns/" },
			wantErr: p + ".nameserver:", permanent: true},
		{name: "bad protocol", mod: func(s *api.ACMEIssuerDNS01ProviderRFC2136) { s.Protocol = "QUIC" },
			wantErr: p + `.protocol: "QUIC" is not supported (want TCP or UDP)`, permanent: true},
		{name: "key name without secret", mod: func(s *api.ACMEIssuerDNS01ProviderRFC2136) { s.TSIGSecret = api.SecretKeySelector{} },
			wantErr: p + ".tsigSecretSecretRef: required when tsigKeyName is set", permanent: true},
		{name: "secret without key name", mod: func(s *api.ACMEIssuerDNS01ProviderRFC2136) { s.TSIGKeyName = "" },
			wantErr: p + ".tsigKeyName: required when tsigSecretSecretRef is set", permanent: true},
		{name: "bad key name", mod: func(s *api.ACMEIssuerDNS01ProviderRFC2136) { s.TSIGKeyName = "a..b" },
			wantErr: p + `.tsigKeyName: "a..b" is not a valid key name`, permanent: true},
		{name: "unsupported algorithm", mod: func(s *api.ACMEIssuerDNS01ProviderRFC2136) { s.TSIGAlgorithm = "HMACSHA224" },
			wantErr: p + `.tsigAlgorithm: "HMACSHA224" is not supported`, permanent: true},
		{name: "secret missing", mod: func(s *api.ACMEIssuerDNS01ProviderRFC2136) { s.TSIGSecret.Name = "nope" },
			wantErr: p + `.tsigSecretSecretRef: secret team-a/nope has no usable key "secret" (missing, unreadable or empty)`, permanent: true},
		{name: "secret not base64", mod: func(s *api.ACMEIssuerDNS01ProviderRFC2136) { s.TSIGSecret.Key = "junk" },
			wantErr: p + `.tsigSecretSecretRef: secret team-a/tsig key "junk" is not a base64 TSIG secret`, permanent: true},
		{name: "secret store down", store: down, mod: func(*api.ACMEIssuerDNS01ProviderRFC2136) {},
			wantErr: p + ".tsigSecretSecretRef: read secret team-a/tsig: store down", permanent: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.store
			if st == nil {
				st = store
			}
			got, err := ParseRFC2136(context.Background(), rfcReq(st, tc.mod))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got != tc.want {
					t.Fatalf("ParseRFC2136 = %#v\nwant %#v\n(secrets equal: %v)", got, tc.want, got.Secret == tc.want.Secret)
				}
				return
			}
			if err == nil || errs.IsPermanent(err) != tc.permanent || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want permanent=%v containing %q", err, tc.permanent, tc.wantErr)
			}
			if strings.Contains(err.Error(), "not base64!") {
				t.Errorf("error shows the secret value: %v", err)
			}
		})
	}
}

// TestRFC2136ConfigHidesTheSecret: printing a config in any verb never
// shows the secret.
func TestRFC2136ConfigHidesTheSecret(t *testing.T) {
	c := RFC2136Config{Nameserver: "192.0.2.53:53", Net: "udp", KeyName: "k.", Algorithm: dns.HmacSHA256, Secret: testSecret}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		if out := fmt.Sprintf(verb, c); strings.Contains(out, testSecret) || !strings.Contains(out, "k.") {
			t.Errorf("%s: %q shows the secret or hides the key name", verb, out)
		}
	}
	if out := fmt.Sprintf("%v", RFC2136Config{Nameserver: "n:53", Net: "tcp"}); !strings.Contains(out, "no TSIG") {
		t.Errorf("unsigned config prints %q", out)
	}
}
