package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// asCLI, set in a child's environment, makes the test binary run as the
// certfn command (TestMain), so that a test can start certfn under
// another program (systemd-socket-activate) without building it.
const asCLI = "CERTFN_TEST_RUN_AS_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(asCLI) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// serve --http01-listen fd://http01 answers on the socket systemd passed
// (started by systemd's own systemd-socket-activate, as a .socket unit
// would), and stops cleanly on SIGTERM.
func TestServeSocketActivation(t *testing.T) {
	activate, err := exec.LookPath("systemd-socket-activate")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("systemd-socket-activate (Debian package systemd, installed by make deps): %v", err)
		}
		t.Skipf("systemd-socket-activate not installed (make deps installs it): %v", err)
	}
	dir := setupEnv(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, activate, "-l", addr, "--fdname=http01", "-E", asCLI+"=1",
		os.Args[0], "--data", dir, "serve", "--http01-listen", "fd://http01")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }()

	var resp *http.Response
	for deadline := time.Now().Add(20 * time.Second); ; {
		resp, err = http.Get("http://" + addr + "/.well-known/acme-challenge/no-such-token")
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("GET over the activated socket: %v\nstderr: %s", err, stderr.String())
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown token: %d %q, want 404 from certfn's responder", resp.StatusCode, body)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve after SIGTERM: %v\nstderr: %s", err, stderr.String())
	}
	if out := stderr.String(); !strings.Contains(out, "addr="+addr) || !strings.Contains(out, "listen=fd://http01") {
		t.Fatalf("serve did not log the activated socket %s:\n%s", addr, out)
	}
}

// fd://name without such a socket from systemd is refused, naming the
// flag and the unit setting that names a socket.
func TestServeSocketActivationMissing(t *testing.T) {
	dir := setupEnv(t)
	t.Setenv("LISTEN_FDS", "")
	failsWith(t, cli(t, dir, "", "serve", "--until-idle", "--http01-listen", "fd://http01"),
		"--http01-listen fd://http01: systemd passed no listening TCP socket named http01 (passed: none")
	failsWith(t, cli(t, dir, "", "serve", "--until-idle", "--http01-listen", "fd://"), "--http01-listen fd://: want fd://<name>")
}
