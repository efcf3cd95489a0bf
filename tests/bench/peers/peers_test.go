// Package peers is the peer benchmark: certfn beside the tools
// users would pick instead, in one run, on one machine, against the same
// ACME server and the same private CA.
//
//	go test -run '^$' -bench Peers -benchtime 1x -timeout 60m ./tests/bench/peers/
//
// (`make bench` runs it.) It builds the certfn binary and Pebble
// (tests/cmd/pebble: PEBBLE_VA_NOSLEEP, ECDSA roots, no authorization
// reuse), installs certbot, lego and cfssl from the distribution's
// packages when missing (apt-get, as root or through sudo), and drives
// every tool through its command line as a user would: certfn through
// `certfn apply`/`wait`/`get` against a running `certfn serve`, with
// serve's defaults. Every ACME request goes through a counting TLS proxy
// in front of Pebble (Pebble builds its URLs from the Host it is asked
// for, so the whole protocol stays on the proxy). Accounts are registered
// (and certfn's issuer Ready) before anything is timed; key type ECDSA
// P-256 everywhere.
//
// It prints the table, with ratios to certfn. It reports; it never
// fails on a timing. A tool that cannot be installed is reported as such,
// never given a figure. CERTFN_PEERS_N sets how many certificates each
// peer issues in the sequential rows (default 10; certfn's rows are 50 at
// once, as the goal says; 0: peers not run); CERTFN_PEERS_KEEP=1 keeps
// the scratch directory (logs, data directories; kept on failure too). CERTFN_PEERS_ROWS=acme or
// ca runs only those rows.
package peers

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// row is one line of the table.
type row struct {
	what, certfn string
	peers        []string
}

type table struct {
	mu   sync.Mutex
	rows []row
}

func (t *table) add(what, certfn string, peers ...string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rows = append(t.rows, row{what: what, certfn: certfn, peers: peers})
}

func (t *table) print() {
	fmt.Println()
	fmt.Println("| what | certfn | peers, same run |")
	fmt.Println("|---|---|---|")
	for _, r := range t.rows {
		fmt.Printf("| %s | %s | %s |\n", r.what, r.certfn, strings.Join(r.peers, "; "))
	}
	fmt.Println()
}

// BenchmarkPeers runs the whole comparison once (use -benchtime 1x).
func BenchmarkPeers(b *testing.B) {
	if b.N > 1 {
		b.Skip("run with -benchtime 1x: one comparison takes minutes")
	}
	n := 10
	if v := os.Getenv("CERTFN_PEERS_N"); v != "" {
		i, err := strconv.Atoi(v)
		if err != nil || i < 0 {
			b.Fatalf("CERTFN_PEERS_N: %q is not a number ≥ 0", v)
		}
		n = i
	}
	rows := "acme,ca"
	if v := os.Getenv("CERTFN_PEERS_ROWS"); v != "" {
		rows = v
	}
	w := newWorld(b)
	w.tools()
	fmt.Printf("peer benchmark: %s, %d CPUs, %s/%s; peers issue %d certificates in the sequential rows\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, n)
	fmt.Println("tools:", strings.Join(w.versions, "; "))
	tab := &table{}
	for _, r := range strings.Split(rows, ",") {
		switch strings.TrimSpace(r) {
		case "acme":
			w.acmeRows(tab, n)
		case "ca":
			w.caRows(tab)
		default:
			b.Fatalf("CERTFN_PEERS_ROWS: %q is not acme or ca", r)
		}
	}
	tab.print()
}

// world holds the binaries, the tools found and the scratch directory.
type world struct {
	b        *testing.B
	dir      string
	certfn   string
	pebble   string
	have     map[string]string // tool -> path ("" when missing)
	missing  map[string]string // tool -> why
	versions []string
}

func newWorld(b *testing.B) *world {
	root, err := repoRoot()
	if err != nil {
		b.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "certfn-peers-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if os.Getenv("CERTFN_PEERS_KEEP") != "" || b.Failed() {
			fmt.Printf("peer benchmark: logs and data kept in %s\n", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	w := &world{b: b, dir: dir, have: map[string]string{}, missing: map[string]string{}}
	w.certfn = filepath.Join(w.dir, "bin", "certfn")
	w.pebble = filepath.Join(w.dir, "bin", "pebble")
	for out, pkg := range map[string]string{w.certfn: "./cmd/certfn", w.pebble: "./tests/cmd/pebble"} {
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Dir = root
		if o, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("go build %s: %v\n%s", pkg, err, o)
		}
	}
	return w
}

func repoRoot() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		p := filepath.Dir(d)
		if p == d {
			return "", errors.New("no go.mod above the working directory")
		}
		d = p
	}
}

// tools finds certbot, lego, cfssl and openssl, installing the Debian
// packages of the missing ones (apt-get, as root or through sudo).
func (w *world) tools() {
	pkgs := map[string]string{"certbot": "certbot", "lego": "lego", "cfssl": "golang-cfssl", "openssl": "openssl"}
	var need []string
	for tool, pkg := range pkgs {
		if _, err := exec.LookPath(tool); err != nil {
			need = append(need, pkg)
		}
	}
	if len(need) > 0 {
		sort.Strings(need)
		var prefix []string
		if os.Geteuid() != 0 {
			prefix = []string{"sudo", "-n"}
		}
		install := append(append([]string(nil), prefix...), "apt-get", "install", "-y", "--no-install-recommends")
		install = append(install, need...)
		cmd := exec.Command(install[0], install[1:]...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Printf("peer benchmark: %s: %v\n%s\n", strings.Join(install, " "), err, tail(string(out), 800))
		}
	}
	for tool, pkg := range pkgs {
		p, err := exec.LookPath(tool)
		if err != nil {
			w.missing[tool] = fmt.Sprintf("not installed (Debian package %s could not be installed here)", pkg)
			continue
		}
		w.have[tool] = p
	}
	for _, v := range [][]string{{"certbot", "--version"}, {"lego", "--version"}, {"cfssl", "version"}, {"openssl", "version"}} {
		if w.have[v[0]] == "" {
			w.versions = append(w.versions, v[0]+": "+w.missing[v[0]])
			continue
		}
		out, _ := exec.Command(v[0], v[1:]...).CombinedOutput()
		first := strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)[0]
		if v[0] == "lego" || v[0] == "cfssl" {
			if pv := debVersion(map[string]string{"lego": "lego", "cfssl": "golang-cfssl"}[v[0]]); pv != "" {
				first += " (package " + pv + ")"
			}
		}
		w.versions = append(w.versions, first)
	}
}

func debVersion(pkg string) string {
	out, err := exec.Command("dpkg-query", "-W", "-f", "${Version}", pkg).Output()
	if err != nil {
		return ""
	}
	return pkg + " " + strings.TrimSpace(string(out))
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// ---- processes ----------------------------------------------------------

// proc is a started process in its own process group.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// start runs name in its own process group, output to logFile, stopped
// (the whole group) when the benchmark ends or stop is called.
func (w *world) start(logFile string, env []string, name string, args ...string) *proc {
	f, err := os.Create(logFile)
	if err != nil {
		w.b.Fatal(err)
	}
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		w.b.Fatalf("start %s: %v", name, err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); f.Close(); close(p.done) }()
	w.b.Cleanup(p.stop)
	return p
}

func (p *proc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

func freePort(b *testing.B) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func waitFor(what string, within time.Duration, ok func() bool) error {
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %s", what, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// ---- Pebble and the counting proxy --------------------------------------

// acmeServer is one Pebble behind a counting TLS proxy.
type acmeServer struct {
	dirURL   string // the proxy's directory URL
	caFile   string // the proxy's TLS certificate (PEM)
	caPEM    []byte
	requests atomic.Int64
	http01   int
	pebble   *proc
	proxy    *httptest.Server
}

// startACME starts Pebble (nonceReject: PEBBLE_WFE_NONCEREJECT percent)
// and the counting proxy in front of it.
func (w *world) startACME(name string, nonceReject int) *acmeServer {
	b := w.b
	d := filepath.Join(w.dir, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		b.Fatal(err)
	}
	a := &acmeServer{http01: freePort(b)}
	listen := fmt.Sprintf("127.0.0.1:%d", freePort(b))
	tlsOut, rootsOut := filepath.Join(d, "pebble-tls.pem"), filepath.Join(d, "roots.pem")
	a.pebble = w.start(filepath.Join(d, "pebble.log"), []string{"PEBBLE_WFE_NONCEREJECT=" + strconv.Itoa(nonceReject)},
		w.pebble, "-listen", listen, "-http01-port", strconv.Itoa(a.http01), "-dns", fmt.Sprintf("127.0.0.1:%d", freePort(b)),
		"-tls-cert-out", tlsOut, "-roots-out", rootsOut)
	if err := waitFor("Pebble", 30*time.Second, func() bool { st, err := os.Stat(rootsOut); return err == nil && st.Size() > 0 }); err != nil {
		log, _ := os.ReadFile(filepath.Join(d, "pebble.log"))
		b.Fatalf("%v\n%s", err, log)
	}
	pebbleTLS, err := os.ReadFile(tlsOut)
	if err != nil {
		b.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pebbleTLS)
	target, _ := url.Parse("https://" + listen)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, MaxIdleConnsPerHost: 64}
	a.proxy = httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		a.requests.Add(1)
		rp.ServeHTTP(rw, r) // r.Host stays the proxy's: Pebble's URLs point here
	}))
	a.proxy.StartTLS()
	b.Cleanup(a.proxy.Close)
	a.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.proxy.Certificate().Raw})
	a.caFile = filepath.Join(d, "proxy-ca.pem")
	if err := os.WriteFile(a.caFile, a.caPEM, 0o644); err != nil {
		b.Fatal(err)
	}
	a.dirURL = a.proxy.URL + "/dir"
	return a
}

func (a *acmeServer) stop() { a.proxy.Close(); a.pebble.stop() }

// ---- certfn through its CLI ---------------------------------------------

// certfnRun is one data directory with a `certfn serve` on it.
type certfnRun struct {
	w     *world
	data  string
	serve *proc
}

func (w *world) certfnServe(name string, args ...string) *certfnRun {
	c := &certfnRun{w: w, data: filepath.Join(w.dir, name)}
	if err := os.MkdirAll(c.data, 0o700); err != nil {
		w.b.Fatal(err)
	}
	return c.startServe(args...)
}

func (c *certfnRun) startServe(args ...string) *certfnRun {
	c.serve = c.w.start(filepath.Join(c.data, "serve.log"), []string{"CERTFN_DATA=" + c.data}, c.w.certfn, append([]string{"serve"}, args...)...)
	return c
}

func (c *certfnRun) cli(stdin []byte, args ...string) (string, error) {
	cmd := exec.Command(c.w.certfn, args...)
	cmd.Env = append(os.Environ(), "CERTFN_DATA="+c.data)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("certfn %s: %v: %s", strings.Join(args, " "), err, tail(errb.String(), 2000))
	}
	return out.String(), nil
}

func (c *certfnRun) must(stdin []byte, args ...string) string {
	out, err := c.cli(stdin, args...)
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(c.data, "serve.log"))
		c.w.b.Fatalf("%v\nserve log:\n%s", err, tail(string(log), 3000))
	}
	return out
}

// readyCount is how many Certificates `certfn get certificates -A -o json`
// shows Ready.
func (c *certfnRun) readyCount() (int, error) {
	out, err := c.cli(nil, "get", "certificates", "-A", "-o", "json")
	if err != nil {
		return 0, err
	}
	var list struct {
		Items []struct {
			Status struct {
				Conditions []struct{ Type, Status string } `json:"conditions"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		return 0, fmt.Errorf("certfn get certificates -o json: %v", err)
	}
	n := 0
	for _, it := range list.Items {
		for _, cd := range it.Status.Conditions {
			if cd.Type == "Ready" && cd.Status == "True" {
				n++
			}
		}
	}
	return n, nil
}

// waitReady polls `certfn get` until want Certificates are Ready.
func (c *certfnRun) waitReady(want int, within time.Duration) (time.Duration, int, error) {
	start := time.Now()
	deadline := start.Add(within)
	last := 0
	for time.Now().Before(deadline) {
		n, err := c.readyCount()
		if err != nil {
			return 0, last, err
		}
		last = n
		if n >= want {
			return time.Since(start), n, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return 0, last, fmt.Errorf("%d of %d Ready after %s", last, want, within)
}

func acmeIssuerYAML(a *acmeServer) []byte {
	return []byte(fmt.Sprintf(`apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: pebble}
spec:
  acme:
    server: %s
    email: bench@example.test
    caBundle: %s
    privateKeySecretRef: {name: pebble-account-key}
    solvers:
    - http01: {ingress: {}}
`, a.dirURL, base64.StdEncoding.EncodeToString(a.caPEM)))
}

func certYAML(name, issuerKind, issuer string) string {
	return fmt.Sprintf(`---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: %[1]s, namespace: default}
spec:
  secretName: %[1]s-tls
  dnsNames: [%[1]s.example.test]
  privateKey: {algorithm: ECDSA, size: 256}
  issuerRef: {name: %[3]s, kind: %[2]s}
`, name, issuerKind, issuer)
}

func manifest(prefix string, n int, issuerKind, issuer string) []byte {
	var sb strings.Builder
	for i := 0; i < n; i++ {
		sb.WriteString(certYAML(fmt.Sprintf("%s%d", prefix, i), issuerKind, issuer))
	}
	return []byte(sb.String())
}

// certfnACME is a serve on a, with its issuer Ready and one certificate
// issued (account registered, directory and nonces warm). An issuer or
// certificate that does not get Ready is reported, not fatal: the row
// says so and the other rows still run.
func (w *world) certfnACME(name string, a *acmeServer) (*certfnRun, error) {
	h01 := fmt.Sprintf("127.0.0.1:%d", a.http01)
	c := w.certfnServe(name, "--http01-listen", h01, "--http01-self-check-addr", h01)
	c.must(acmeIssuerYAML(a), "apply", "-f", "-")
	if _, err := c.cli(nil, "wait", "clusterissuer", "pebble", "--for=condition=Ready", "--timeout", "60s"); err != nil {
		return c, err
	}
	c.must([]byte(certYAML("warm", "ClusterIssuer", "pebble")), "apply", "-f", "-")
	_, err := c.cli(nil, "wait", "certificate", "warm", "--for=condition=Ready", "--timeout", "60s")
	return c, err
}

// ---- the ACME rows -------------------------------------------------------

type peerResult struct {
	ok, tried int
	total     time.Duration
	durations []time.Duration
	requests  int64
	note      string
}

func (p peerResult) perCert() float64 {
	if p.ok == 0 {
		return 0
	}
	return float64(p.requests) / float64(p.ok)
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

func ratio(peer, certfn float64) string {
	if certfn <= 0 || peer <= 0 {
		return ""
	}
	return fmt.Sprintf(" (%.1f×)", peer/certfn)
}

func (w *world) acmeRows(tab *table, n int) {
	// Phase 1: Pebble as is.
	a := w.startACME("pebble", 0)
	c, err := w.certfnACME("certfn-acme", a)
	if err != nil {
		w.b.Fatal(err)
	}
	const singles = 5
	var ds []time.Duration
	before := a.requests.Load()
	for i := 0; i < singles; i++ {
		name := fmt.Sprintf("one%d", i)
		start := time.Now()
		c.must([]byte(certYAML(name, "ClusterIssuer", "pebble")), "apply", "-f", "-")
		c.must(nil, "wait", "certificate", name, "--for=condition=Ready", "--timeout", "60s")
		ds = append(ds, time.Since(start))
	}
	// The renewal information of each new certificate is fetched once it
	// is stored (a minute later, by the Order): not counted here.
	oneReqs := float64(a.requests.Load()-before) / singles
	oneMed := median(ds)
	before = a.requests.Load()
	start := time.Now()
	c.must(manifest("fifty", 50, "ClusterIssuer", "pebble"), "apply", "-f", "-")
	el50, _, err := c.waitReady(50+singles+1, 120*time.Second)
	var fifty string
	if err != nil {
		fifty = "failed: " + err.Error()
	} else {
		el50 = time.Since(start)
		fifty = fmt.Sprintf("%s for 50, 100 %% issued, %.1f requests/cert", secs(el50), float64(a.requests.Load()-before)/50)
	}
	c.serve.stop()

	certbot1 := w.certbot(a, "certbot", n)
	lego1 := w.lego(a, "lego", n)
	a.stop()

	tab.add("ACME requests per certificate (until stored; account registered)", fmt.Sprintf("%.1f", oneReqs),
		w.reqCell("certbot", certbot1, oneReqs), w.reqCell("lego", lego1, oneReqs))
	tab.add("one ACME certificate, apply → Ready via `serve` (median of 5; certfn: `certfn apply` + `certfn wait`)", secs(oneMed),
		w.timeCell("certbot", certbot1, oneMed), w.timeCell("lego", lego1, oneMed))
	tab.add("50 ACME certificates at once", fifty,
		w.seqCell("certbot", certbot1, el50), w.seqCell("lego", lego1, el50))

	// Phase 2: Pebble rejecting half of the nonces.
	a = w.startACME("pebble-nonce", 50)
	nonce := w.certfnNonce(a, el50)
	certbot2 := w.certbot(a, "certbot-nonce", n)
	lego2 := w.lego(a, "lego-nonce", n)
	a.stop()
	tab.add("50 ACME certificates with half of all nonces rejected", nonce,
		w.nonceCell("certbot", certbot2), w.nonceCell("lego", lego2))
}

// certfnNonce issues 50 certificates at once from a, whose Pebble rejects
// half of the nonces, and describes the outcome (el50: the time without).
func (w *world) certfnNonce(a *acmeServer, el50 time.Duration) string {
	c, err := w.certfnACME("certfn-nonce", a)
	defer c.serve.stop()
	if err != nil {
		return "failed before the 50: " + tail(err.Error(), 400)
	}
	start := time.Now()
	if _, err := c.cli(manifest("nonce", 50, "ClusterIssuer", "pebble"), "apply", "-f", "-"); err != nil {
		return "failed: " + err.Error()
	}
	if _, got, err := c.waitReady(51, 300*time.Second); err != nil {
		return fmt.Sprintf("failed: %v (%d of 50)", err, got-1)
	}
	el := time.Since(start)
	out := fmt.Sprintf("%s for 50, 100 %% issued", secs(el))
	if el50 > 0 {
		out += fmt.Sprintf(" (%.1f× the time without)", el.Seconds()/el50.Seconds())
	}
	return out
}

func (w *world) reqCell(tool string, r peerResult, certfn float64) string {
	if r.note != "" {
		return tool + " " + r.note
	}
	return fmt.Sprintf("%s %.1f%s", tool, r.perCert(), ratio(r.perCert(), certfn))
}

func (w *world) timeCell(tool string, r peerResult, certfn time.Duration) string {
	if r.note != "" {
		return tool + " " + r.note
	}
	m := median(r.durations)
	return fmt.Sprintf("%s %s median%s", tool, secs(m), ratio(m.Seconds(), certfn.Seconds()))
}

func (w *world) seqCell(tool string, r peerResult, certfn50 time.Duration) string {
	if r.note != "" {
		return tool + " " + r.note
	}
	return fmt.Sprintf("%s %d sequential in %s, %d of %d issued (%.2f s each)", tool, r.tried, secs(r.total), r.ok, r.tried,
		r.total.Seconds()/float64(r.tried))
}

func (w *world) nonceCell(tool string, r peerResult) string {
	if r.note != "" {
		return tool + " " + r.note
	}
	return fmt.Sprintf("%s %d sequential in %s, %d of %d issued", tool, r.tried, secs(r.total), r.ok, r.tried)
}

// certbot issues one warm-up certificate (registering the account), then
// n certificates one after the other, each a certbot run as a cron job
// or a user would start it.
func (w *world) certbot(a *acmeServer, name string, n int) peerResult {
	if w.have["certbot"] == "" {
		return peerResult{note: w.missing["certbot"]}
	}
	d := filepath.Join(w.dir, name)
	env := []string{"REQUESTS_CA_BUNDLE=" + a.caFile}
	args := func(domain string) []string {
		return []string{"certonly", "--standalone", "--non-interactive", "--agree-tos", "-m", "bench@example.test",
			"--server", a.dirURL, "--config-dir", filepath.Join(d, "config"), "--work-dir", filepath.Join(d, "work"),
			"--logs-dir", filepath.Join(d, "logs"), "--http-01-port", strconv.Itoa(a.http01), "--http-01-address", "127.0.0.1",
			"--key-type", "ecdsa", "--elliptic-curve", "secp256r1", "--no-random-sleep-on-renew", "-d", domain}
	}
	return w.peer(a, "certbot", env, n, func(i int) []string { return args(fmt.Sprintf("%s-%d.example.test", name, i)) },
		args(name+"-warm.example.test"))
}

// lego: the same with lego's run command.
func (w *world) lego(a *acmeServer, name string, n int) peerResult {
	if w.have["lego"] == "" {
		return peerResult{note: w.missing["lego"]}
	}
	d := filepath.Join(w.dir, name)
	env := []string{"LEGO_CA_CERTIFICATES=" + a.caFile}
	args := func(domain string) []string {
		return []string{"--accept-tos", "--email", "bench@example.test", "--server", a.dirURL, "--path", d,
			"--key-type", "ec256", "--http", "--http.port", fmt.Sprintf("127.0.0.1:%d", a.http01), "--domains", domain, "run"}
	}
	return w.peer(a, "lego", env, n, func(i int) []string { return args(fmt.Sprintf("%s-%d.example.test", name, i)) },
		args(name+"-warm.example.test"))
}

func (w *world) peer(a *acmeServer, tool string, env []string, n int, args func(int) []string, warm []string) peerResult {
	if n == 0 {
		return peerResult{note: "not run (CERTFN_PEERS_N=0)"}
	}
	run := func(argv []string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, tool, argv...)
		cmd.Env = append(os.Environ(), env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, tail(string(out), 400))
		}
		return nil
	}
	var r peerResult
	if err := run(warm); err != nil {
		// The warm-up registers the account; with nonces rejected it
		// may fail: once more, then go on.
		if err := run(warm); err != nil {
			fmt.Printf("peer benchmark: %s warm-up failed: %v\n", tool, err)
		}
	}
	before := a.requests.Load()
	start := time.Now()
	for i := 0; i < n; i++ {
		t0 := time.Now()
		r.tried++
		if err := run(args(i)); err != nil {
			fmt.Printf("peer benchmark: %s certificate %d failed: %v\n", tool, i, err)
			continue
		}
		r.ok++
		r.durations = append(r.durations, time.Since(t0))
	}
	r.total = time.Since(start)
	r.requests = a.requests.Load() - before
	return r
}

// ---- the private CA rows -------------------------------------------------

const caLeaves = 500

func (w *world) caRows(tab *table) {
	b := w.b
	d := filepath.Join(w.dir, "ca")
	if err := os.MkdirAll(d, 0o700); err != nil {
		b.Fatal(err)
	}
	caPEM, keyPEM := newCA(b)
	caFile, keyFile := filepath.Join(d, "ca.pem"), filepath.Join(d, "ca-key.pem")
	if err := os.WriteFile(caFile, caPEM, 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		b.Fatal(err)
	}

	// certfn: the same CA as a CA ClusterIssuer, 500 Certificates applied at once.
	c := w.certfnServe("certfn-ca")
	c.must(nil, "create", "secret", "bench-ca", "-n", "cert-manager", "--from-file", "tls.crt="+caFile, "--from-file", "tls.key="+keyFile)
	c.must([]byte(`apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: bench-ca}
spec:
  ca: {secretName: bench-ca}
`), "apply", "-f", "-")
	c.must(nil, "wait", "clusterissuer", "bench-ca", "--for=condition=Ready", "--timeout", "60s")
	c.must([]byte(certYAML("warm", "ClusterIssuer", "bench-ca")), "apply", "-f", "-")
	c.must(nil, "wait", "certificate", "warm", "--for=condition=Ready", "--timeout", "60s")
	start := time.Now()
	c.must(manifest("leaf", caLeaves, "ClusterIssuer", "bench-ca"), "apply", "-f", "-")
	var certfnRate float64
	var certfnCell string
	if _, got, err := c.waitReady(caLeaves+1, 600*time.Second); err != nil {
		certfnCell = fmt.Sprintf("failed: %v (%d)", err, got)
	} else {
		el := time.Since(start)
		certfnRate = caLeaves / el.Seconds()
		certfnCell = fmt.Sprintf("%.0f/s (%s for %d, every secret and state write durable)", certfnRate, secs(el), caLeaves)
	}
	c.serve.stop()

	var peers []string
	if w.have["openssl"] != "" {
		peers = append(peers, w.loopCell("openssl loop", certfnRate, func(i int) []string {
			n := fmt.Sprintf("leaf%d.example.test", i)
			return []string{"openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
				"-keyout", filepath.Join(d, "o"+strconv.Itoa(i)+".key"), "-out", filepath.Join(d, "o"+strconv.Itoa(i)+".crt"),
				"-subj", "/CN=" + n, "-addext", "subjectAltName=DNS:" + n, "-CA", caFile, "-CAkey", keyFile, "-days", "90"}
		}))
	} else {
		peers = append(peers, "openssl "+w.missing["openssl"])
	}
	if w.have["cfssl"] != "" {
		peers = append(peers, w.loopCell("`cfssl gencert` loop", certfnRate, func(i int) []string {
			csr := filepath.Join(d, fmt.Sprintf("csr%d.json", i))
			n := fmt.Sprintf("leaf%d.example.test", i)
			_ = os.WriteFile(csr, []byte(fmt.Sprintf(`{"CN":%q,"hosts":[%q],"key":{"algo":"ecdsa","size":256}}`, n, n)), 0o644)
			return []string{"sh", "-c", fmt.Sprintf("cfssl gencert -loglevel 5 -ca %s -ca-key %s %s > %s", caFile, keyFile, csr,
				filepath.Join(d, fmt.Sprintf("g%d.json", i)))}
		}))
		peers = append(peers, w.cfsslServe(d, caFile, keyFile, certfnRate))
	} else {
		peers = append(peers, "cfssl "+w.missing["cfssl"])
	}
	tab.add(fmt.Sprintf("private CA, %d leaves, apply → Ready", caLeaves), certfnCell, peers...)
}

// loopCell runs argv(i) for each leaf, one process after the other, as a
// shell loop would.
func (w *world) loopCell(what string, certfnRate float64, argv func(int) []string) string {
	start := time.Now()
	for i := 0; i < caLeaves; i++ {
		a := argv(i)
		if out, err := exec.Command(a[0], a[1:]...).CombinedOutput(); err != nil {
			return fmt.Sprintf("%s failed at leaf %d: %v: %s", what, i, err, tail(string(out), 300))
		}
	}
	rate := caLeaves / time.Since(start).Seconds()
	return fmt.Sprintf("%s %.0f/s%s", what, rate, ratio(rate, certfnRate))
}

// cfsslServe measures `cfssl serve`'s newcert API (key generated by the
// server, nothing stored) with 8 concurrent clients.
func (w *world) cfsslServe(d, caFile, keyFile string, certfnRate float64) string {
	port := freePort(w.b)
	p := w.start(filepath.Join(d, "cfssl-serve.log"), nil, "cfssl", "serve", "-address", "127.0.0.1", "-port", strconv.Itoa(port),
		"-ca", caFile, "-ca-key", keyFile, "-loglevel", "5")
	defer p.stop()
	base := fmt.Sprintf("http://127.0.0.1:%d/api/v1/cfssl/newcert", port)
	if err := waitFor("cfssl serve", 20*time.Second, func() bool {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
		}
		return err == nil
	}); err != nil {
		return "`cfssl serve` API: " + err.Error()
	}
	var next, failed atomic.Int64
	var firstErr atomic.Value
	start := time.Now()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= caLeaves {
					return
				}
				n := fmt.Sprintf("api%d.example.test", i)
				body := fmt.Sprintf(`{"request":{"CN":%q,"hosts":[%q],"key":{"algo":"ecdsa","size":256}}}`, n, n)
				resp, err := http.Post(base, "application/json", strings.NewReader(body))
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				var out struct {
					Success bool `json:"success"`
				}
				_ = json.NewDecoder(resp.Body).Decode(&out)
				resp.Body.Close()
				if !out.Success {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, "HTTP "+resp.Status)
				}
			}
		}()
	}
	wg.Wait()
	if failed.Load() > 0 {
		return fmt.Sprintf("`cfssl serve` API: %d of %d failed (%v)", failed.Load(), caLeaves, firstErr.Load())
	}
	rate := caLeaves / time.Since(start).Seconds()
	return fmt.Sprintf("`cfssl serve` API %.0f/s, 8 clients, nothing stored%s", rate, ratio(rate, certfnRate))
}

// newCA is an ECDSA P-256 CA (certificate and PKCS #8 key, PEM).
func newCA(b *testing.B) ([]byte, []byte) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "certfn peer benchmark CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(365 * 24 * time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		b.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		b.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd})
}
