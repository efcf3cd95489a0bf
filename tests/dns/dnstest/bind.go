// Package dnstest holds the DNS test harnesses: a real authoritative BIND 9
// (Debian's bind9, installed by `make deps`) started on a loopback port for
// one test, and challtestsrv (in process, or Pebble's pebble-challtestsrv
// command). The provider contract suite that every libdns provider of
// certfn runs against them is core/ports/porttest.DNSProviderSuite.
package dnstest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// Zones the BIND harness serves. ZoneExample accepts any update signed by
// a key of Keys (allow-update), ZoneDelegate only TXT updates
// (update-policy zonesub TXT, as docs/reference/dns01.md suggests); "." is served
// too (SOA and NS only),
// so names outside both zones get NXDOMAIN all the way up: "zone not found".
const (
	ZoneExample  = "example.test."
	ZoneDelegate = "acme-delegate.test."
	// CNAMEName is "_acme-challenge.cname.example.test.", a CNAME to
	// CNAMETarget in ZoneDelegate (cnameStrategy: Follow).
	CNAMEName   = "_acme-challenge.cname.example.test."
	CNAMETarget = "cname.acme-delegate.test."
	// NS is the name server of both zones (A 127.0.0.1, glue in the zone).
	NS = "ns1.example.test."
)

// Key is a TSIG key that BIND knows.
type Key struct {
	Name      string // "certfn-hmac-sha256."
	Algorithm string // BIND's spelling: "hmac-sha256"
	Secret    string // base64
}

// BIND is a running named.
type BIND struct {
	// Addr is "127.0.0.1:port" (UDP and TCP).
	Addr string
	Port int
	Dir  string
	// Keys are allowed to update both zones, one per algorithm, by
	// algorithm ("hmac-md5", "hmac-sha1", "hmac-sha256", "hmac-sha384",
	// "hmac-sha512").
	Keys map[string]Key
	// Outsider is a key BIND knows but that may update nothing.
	Outsider Key

	cmd    *exec.Cmd
	stderr *syncBuffer
}

// NamedPath returns the path of named, or "" when it is not installed.
func NamedPath() string {
	if p, err := exec.LookPath("named"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/sbin/named", "/usr/local/sbin/named"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// RequireNamed fails t when named is missing, saying how to install it.
// It never skips: in CI (CI=true) and on a developer machine alike a
// missing named is a failure.
func RequireNamed(t testing.TB) string {
	t.Helper()
	p := NamedPath()
	if p == "" {
		where := "on this machine"
		if os.Getenv("CI") == "true" {
			where = "in CI (.ci/run must run `make deps` before `make test`)"
		}
		t.Fatalf("bind9's named is not installed %s: run `make deps` (installs the Debian packages bind9 and bind9-utils)", where)
	}
	return p
}

// StartBIND starts named in a temporary directory on a free loopback port,
// waits until it answers, and stops it when t ends. It fails t (never
// skips) when named is missing: see RequireNamed.
func StartBIND(t testing.TB) *BIND {
	t.Helper()
	named := RequireNamed(t)
	b := &BIND{Dir: t.TempDir(), Keys: map[string]Key{}, stderr: &syncBuffer{}}
	for _, alg := range []string{"hmac-md5", "hmac-sha1", "hmac-sha256", "hmac-sha384", "hmac-sha512"} {
		b.Keys[alg] = Key{Name: "certfn-" + alg + ".", Algorithm: alg, Secret: randomSecret(t)}
	}
	b.Outsider = Key{Name: "outsider.", Algorithm: "hmac-sha256", Secret: randomSecret(t)}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		b.Port = freePort(t)
		b.Addr = fmt.Sprintf("127.0.0.1:%d", b.Port)
		b.writeConfig(t)
		if lastErr = b.start(named); lastErr == nil {
			t.Cleanup(b.stop)
			return b
		}
	}
	t.Fatalf("start named: %v\n%s", lastErr, b.stderr.String())
	return nil
}

func randomSecret(t testing.TB) string {
	var k [32]byte
	if _, err := rand.Read(k[:]); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(k[:])
}

// freePort returns a port free for both UDP and TCP on 127.0.0.1 a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	for i := 0; i < 20; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		l.Close()
		if err == nil {
			u.Close()
			return port
		}
	}
	t.Fatal("no free loopback port for UDP and TCP")
	return 0
}

func (b *BIND) writeConfig(t testing.TB) {
	t.Helper()
	var keys, allow, grants []string
	algs := make([]string, 0, len(b.Keys))
	for a := range b.Keys {
		algs = append(algs, a)
	}
	sort.Strings(algs)
	for _, a := range algs {
		k := b.Keys[a]
		keys = append(keys, fmt.Sprintf("key %q { algorithm %s; secret %q; };", k.Name, k.Algorithm, k.Secret))
		allow = append(allow, fmt.Sprintf("key %q;", k.Name))
		grants = append(grants, fmt.Sprintf("grant %s zonesub TXT;", k.Name))
	}
	keys = append(keys, fmt.Sprintf("key %q { algorithm %s; secret %q; };", b.Outsider.Name, b.Outsider.Algorithm, b.Outsider.Secret))
	conf := fmt.Sprintf(`options {
	directory %[1]q;
	pid-file %[7]q;
	session-keyfile %[8]q;
	managed-keys-directory %[1]q;
	listen-on port %[2]d { 127.0.0.1; };
	listen-on-v6 { none; };
	recursion no;
	dnssec-validation no;
	notify no;
	allow-transfer { none; };
	minimal-responses no;
};
controls { };
logging {
	channel to_stderr { stderr; severity info; print-time yes; print-category yes; };
	category default { to_stderr; };
	category update { to_stderr; };
	category security { to_stderr; };
	category lame-servers { null; };
};
%[3]s
zone "." { type primary; file "root.db"; };
zone %[4]q { type primary; file "example.db"; allow-update { %[6]s }; };
zone %[5]q { type primary; file "delegate.db"; update-policy { %[9]s }; };
`, b.Dir, b.Port, strings.Join(keys, "\n"), strings.TrimSuffix(ZoneExample, "."), strings.TrimSuffix(ZoneDelegate, "."), strings.Join(allow, " "),
		filepath.Join(b.Dir, "named.pid"), filepath.Join(b.Dir, "session.key"), strings.Join(grants, " "))
	files := map[string]string{
		"named.conf": conf,
		"root.db": `$TTL 60
@ IN SOA ns.root-servers.invalid. hostmaster.root-servers.invalid. 1 3600 600 86400 60
@ IN NS ns.root-servers.invalid.
ns.root-servers.invalid. IN A 127.0.0.1
`,
		"example.db": `$TTL 60
@ IN SOA ns1.example.test. hostmaster.example.test. 1 3600 600 86400 60
@ IN NS ns1.example.test.
ns1 IN A 127.0.0.1
www IN A 127.0.0.1
` + strings.TrimSuffix(CNAMEName, "."+ZoneExample) + ` IN CNAME ` + CNAMETarget + `
`,
		"delegate.db": `$TTL 60
@ IN SOA ns1.example.test. hostmaster.example.test. 1 3600 600 86400 60
@ IN NS ns1.example.test.
`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(b.Dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// start runs named in the foreground and waits until it serves every
// zone (at most 15 s).
func (b *BIND) start(named string) error {
	b.stderr.Reset()
	cmd := exec.Command(named, "-g", "-c", filepath.Join(b.Dir, "named.conf"), "-p", fmt.Sprint(b.Port), "-n", "1")
	cmd.Stdout = b.stderr
	cmd.Stderr = b.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			return fmt.Errorf("named exited: %v", err)
		default:
		}
		if b.serves(ZoneExample, ZoneDelegate, ".") {
			b.cmd = cmd
			go func() { <-done }()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	<-done
	return fmt.Errorf("named did not serve every zone on %s within 15s", b.Addr)
}

// serves reports whether BIND answers the SOA of every zone (a zone file
// BIND refuses to load answers SERVFAIL).
func (b *BIND) serves(zones ...string) bool {
	for _, z := range zones {
		m := new(dns.Msg)
		m.SetQuestion(z, dns.TypeSOA)
		c := &dns.Client{Net: "udp", Timeout: 200 * time.Millisecond}
		in, _, err := c.Exchange(m, b.Addr)
		if err != nil || in.Rcode != dns.RcodeSuccess || len(in.Answer) == 0 {
			return false
		}
	}
	return true
}

// stop ends named (SIGTERM, then SIGKILL after 5 s).
func (b *BIND) stop() {
	if b.cmd == nil || b.cmd.Process == nil {
		return
	}
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if err := b.cmd.Process.Signal(syscall.Signal(0)); err != nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = b.cmd.Process.Kill()
}

// Log returns what named printed (for failure messages).
func (b *BIND) Log() string { return b.stderr.String() }

// TXT asks BIND directly (non-recursive, authoritative) for the TXT
// values of fqdn.
func (b *BIND) TXT(t testing.TB, fqdn string) []string {
	t.Helper()
	vs, err := QueryTXT(context.Background(), b.Addr, fqdn)
	if err != nil {
		t.Fatalf("query TXT %s at bind: %v", fqdn, err)
	}
	return vs
}

// QueryTXT asks server for the TXT values of fqdn (sorted).
func QueryTXT(ctx context.Context, server, fqdn string) ([]string, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(fqdn), dns.TypeTXT)
	m.RecursionDesired = false
	in, _, err := (&dns.Client{Net: "tcp", Timeout: 3 * time.Second}).ExchangeContext(ctx, m, server)
	if err != nil {
		return nil, err
	}
	if in.Rcode != dns.RcodeSuccess && in.Rcode != dns.RcodeNameError {
		return nil, fmt.Errorf("%s", dns.RcodeToString[in.Rcode])
	}
	var out []string
	for _, rr := range in.Answer {
		if txt, ok := rr.(*dns.TXT); ok && strings.EqualFold(txt.Hdr.Name, dns.Fqdn(fqdn)) {
			out = append(out, strings.Join(txt.Txt, ""))
		}
	}
	sort.Strings(out)
	return out, nil
}

// syncBuffer is a bytes.Buffer safe for the writer goroutines of exec.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) Reset() {
	s.mu.Lock()
	s.b.Reset()
	s.mu.Unlock()
}
