package dnstest

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/letsencrypt/challtestsrv"
)

// ChallTestSrv is an in-process challtestsrv DNS server.
//
// challtestsrv registers its DNS handler on miekg/dns's global mux, so
// only one instance may run in a test binary at a time.
type ChallTestSrv struct {
	Srv     *challtestsrv.ChallSrv
	DNSAddr string // "127.0.0.1:port", UDP and TCP
}

// StartChallTestSrv starts challtestsrv's DNS server in-process on a free
// loopback port and shuts it down when t ends.
func StartChallTestSrv(t testing.TB) *ChallTestSrv {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	srv, err := challtestsrv.New(challtestsrv.Config{DNSAddrs: []string{addr}, Log: log.New(io.Discard, "", 0)})
	if err != nil {
		t.Fatal(err)
	}
	srv.SetDefaultDNSIPv4("127.0.0.1")
	srv.SetDefaultDNSIPv6("")
	srv.Run()
	t.Cleanup(srv.Shutdown)
	waitTCP(t, addr)
	return &ChallTestSrv{Srv: srv, DNSAddr: addr}
}

// PebbleChallTestSrv is the pebble-challtestsrv command (Pebble v2, the
// version in go.mod) running as a child process, with its management
// HTTP API.
type PebbleChallTestSrv struct {
	DNSAddr       string
	ManagementURL string
}

// StartPebbleChallTestSrv builds pebble-challtestsrv with the go command
// (from the module cache; fast when the build cache is warm), starts it on
// free loopback ports with only DNS and the management API, and stops it
// when t ends.
func StartPebbleChallTestSrv(t testing.TB) *PebbleChallTestSrv {
	t.Helper()
	// go test puts its own GOROOT/bin first in the test's PATH.
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("pebble-challtestsrv is built with the go command, not found in PATH: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "pebble-challtestsrv")
	build := exec.Command(goBin, "build", "-o", bin, "github.com/letsencrypt/pebble/v2/cmd/pebble-challtestsrv")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build pebble-challtestsrv: %v\n%s", err, out)
	}
	p := &PebbleChallTestSrv{DNSAddr: fmt.Sprintf("127.0.0.1:%d", freePort(t))}
	mgmt := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	p.ManagementURL = "http://" + mgmt
	cmd := exec.Command(bin, "-dnsserver", p.DNSAddr, "-management", mgmt,
		"-http01", "", "-https01", "", "-tlsalpn01", "", "-doh", "", "-defaultIPv6", "")
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start pebble-challtestsrv: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	waitTCP(t, mgmt)
	waitTCP(t, p.DNSAddr)
	// The management server answers once its mux is ready.
	resp, err := http.Post(p.ManagementURL+"/clear-txt", "application/json", nil)
	if err != nil {
		t.Fatalf("pebble-challtestsrv management API: %v\n%s", err, logs.String())
	}
	resp.Body.Close()
	return p
}

// waitTCP waits (at most 10 s) until addr accepts TCP connections.
func waitTCP(t testing.TB, addr string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s never accepted connections", addr)
}
