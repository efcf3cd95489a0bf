package main

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/letsencrypt/challtestsrv"
	"github.com/libdns/libdns"

	ctsprovider "github.com/certfn/certfn/adapters/dns/challtestsrv"
)

// newChallSrv returns a challtestsrv that is not running: the handler
// only touches its record maps.
func newChallSrv(t *testing.T) *challtestsrv.ChallSrv {
	t.Helper()
	srv, err := challtestsrv.New(challtestsrv.Config{DNSAddrs: []string{"127.0.0.1:0"}, Log: log.New(io.Discard, "", 0)})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// post sends one request to h and returns the status code.
func post(t *testing.T, h http.Handler, method, path, body string) int {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
	return rec.Code
}

func TestManagementHandler(t *testing.T) {
	const host = "_acme-challenge.wild.example.test."
	tests := []struct {
		name   string
		before []string // values of host before the request
		method string
		path   string
		body   string
		code   int
		after  []string
	}{
		{name: "set adds a value", method: "POST", path: "/set-txt",
			body: `{"host":"` + host + `","value":"v1"}`, code: 200, after: []string{"v1"}},
		{name: "set appends a second value", before: []string{"v1"}, method: "POST", path: "/set-txt",
			body: `{"host":"` + host + `","value":"v2"}`, code: 200, after: []string{"v1", "v2"}},
		{name: "field names as pebble-challtestsrv's clients send them", method: "POST", path: "/set-txt",
			body: `{"Host":"_acme-challenge.wild.example.test","Value":"v1"}`, code: 200, after: []string{"v1"}},
		{name: "clear removes every value", before: []string{"v1", "v2"}, method: "POST", path: "/clear-txt",
			body: `{"host":"` + host + `"}`, code: 200, after: nil},
		{name: "set without value", method: "POST", path: "/set-txt",
			body: `{"host":"` + host + `"}`, code: 400, after: nil},
		{name: "clear without host", before: []string{"v1"}, method: "POST", path: "/clear-txt",
			body: `{}`, code: 400, after: []string{"v1"}},
		{name: "body is not JSON", method: "POST", path: "/set-txt", body: `host=x`, code: 400, after: nil},
		{name: "empty body", method: "POST", path: "/set-txt", body: ``, code: 400, after: nil},
		{name: "GET is refused", before: []string{"v1"}, method: "GET", path: "/clear-txt",
			body: `{"host":"` + host + `"}`, code: 405, after: []string{"v1"}},
		{name: "unknown path", method: "POST", path: "/add-a",
			body: `{"host":"` + host + `","addresses":["10.0.0.1"]}`, code: 404, after: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newChallSrv(t)
			for _, v := range tc.before {
				srv.AddDNSTXTRecord(host, v)
			}
			h := managementHandler(srv, log.New(io.Discard, "", 0))
			if code := post(t, h, tc.method, tc.path, tc.body); code != tc.code {
				t.Fatalf("%s %s %s: status %d, want %d", tc.method, tc.path, tc.body, code, tc.code)
			}
			if got := srv.GetDNSTXTRecords(host); !slices.Equal(got, tc.after) {
				t.Fatalf("TXT %s = %q, want %q", host, got, tc.after)
			}
		})
	}
}

func TestListenLoopback(t *testing.T) {
	tests := []struct {
		addr    string
		wantErr string
	}{
		{addr: "127.0.0.1:0"},
		{addr: "localhost:0"},
		{addr: "0.0.0.0:0", wantErr: "loopback"},
		{addr: ":0", wantErr: "loopback"},
		{addr: "192.0.2.1:8055", wantErr: "loopback"},
		{addr: "127.0.0.1", wantErr: "missing port"},
	}
	for _, tc := range tests {
		t.Run(tc.addr, func(t *testing.T) {
			l, err := listenLoopback(tc.addr)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("listenLoopback(%q): %v", tc.addr, err)
				}
				l.Close()
				return
			}
			if err == nil {
				l.Close()
				t.Fatalf("listenLoopback(%q): no error, want one containing %q", tc.addr, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("listenLoopback(%q) = %v, want an error containing %q", tc.addr, err, tc.wantErr)
			}
		})
	}
}

// freeAddr returns a loopback address with a free UDP and TCP port.
func freeAddr(t *testing.T) string {
	t.Helper()
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		if pc, err := net.ListenPacket("udp", addr); err == nil {
			pc.Close()
			return addr
		}
	}
	t.Fatal("no free port")
	return ""
}

// The challtestsrv DNS-01 provider (what `certfn serve --dns01-challtestsrv`
// registers) works through this program's management API: the values it
// adds are served over DNS, and deleting one keeps the other.
func TestProviderThroughManagementAPI(t *testing.T) {
	dnsAddr := freeAddr(t)
	srv, err := challtestsrv.New(challtestsrv.Config{DNSAddrs: []string{dnsAddr}, Log: log.New(io.Discard, "", 0)})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Run()
	t.Cleanup(srv.Shutdown)
	for deadline := time.Now().Add(5 * time.Second); ; {
		c, err := net.DialTimeout("tcp", dnsAddr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("DNS server on %s never started: %v", dnsAddr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	mgmt := httptest.NewServer(managementHandler(srv, log.New(io.Discard, "", 0)))
	t.Cleanup(mgmt.Close)

	p := &ctsprovider.Provider{ManagementURL: mgmt.URL, DNSAddr: dnsAddr}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const zone, host = "wild.example.test.", "_acme-challenge.wild.example.test."
	rec := func(v string) []libdns.Record { return []libdns.Record{libdns.TXT{Name: "_acme-challenge", Text: v}} }
	for _, v := range []string{"wildcard-value", "base-value", "base-value"} {
		if _, err := p.AppendRecords(ctx, zone, rec(v)); err != nil {
			t.Fatalf("AppendRecords %s: %v", v, err)
		}
	}
	if got := srv.GetDNSTXTRecords(host); !slices.Equal(got, []string{"wildcard-value", "base-value"}) {
		t.Fatalf("after appending: TXT %s = %q, want both values once", host, got)
	}
	if _, err := p.DeleteRecords(ctx, zone, rec("wildcard-value")); err != nil {
		t.Fatalf("DeleteRecords: %v", err)
	}
	if got := srv.GetDNSTXTRecords(host); !slices.Equal(got, []string{"base-value"}) {
		t.Fatalf("after deleting one: TXT %s = %q, want [base-value]", host, got)
	}
}
